import pytest
from conftest import need_data

from prmlab.core.grading import is_equivalent
from prmlab.core.io import DataError, read_json
from prmlab.core.steps import duplicate_key
from prmlab.pipeline.data import (
    BON_BENCHMARKS,
    PROCESSBENCH_SUBSETS,
    dedup,
    load_benchmark,
    load_processbench,
)

pytestmark = pytest.mark.realdata


def test_all_processbench_cases_load():
    root = need_data("processbench")
    sizes = {s: len(load_processbench(s, str(root))) for s in PROCESSBENCH_SUBSETS}
    assert sizes == {"gsm8k": 400, "math": 1000, "olympiadbench": 1000, "omnimath": 1000}
    items = load_processbench("gsm8k", str(root))
    assert all(-1 <= i.label < len(i.steps) for i in items)
    assert {i.label == -1 for i in items} == {True, False}


BENCH_FILES = {"math500": "math500/test_first100.jsonl", "math": "bon_benchmarks/math/test",
               "gsm8k_train": "train/gsm8k_train.jsonl", "math_train": "train/math_train",
               **{b: f"bon_benchmarks/{b}/test.jsonl" for b in BON_BENCHMARKS if b != "math"}}
SIZES = {"gsm8k": 1319, "minerva_math": 272, "gaokao2023en": 385, "olympiadbench": 675, "college_math": 2818,
         "mmlu_stem": 3018, "math500": 100, "math": 5000, "gsm8k_train": 7473, "math_train": 7500}


@pytest.mark.parametrize("name", list(BENCH_FILES))
def test_benchmarks_map_to_problems_with_parsing_gold(name):
    from math_verify import parse

    probs = load_benchmark(name, need_data(BENCH_FILES[name]))
    assert len(probs) == SIZES[name]
    assert all(p.question for p in probs)
    no_gold = sum(p.gold_answer is None for p in probs)
    # Two gaokao rows really have an empty answer; two MATH train solutions end in an empty \\boxed{}.
    assert no_gold == (2 if name in ("gaokao2023en", "math_train") else 0)
    probs = [p for p in probs if p.gold_answer]
    if name == "mmlu_stem":
        assert {p.gold_answer for p in probs} <= set("ABCD")
        return
    unparsed = [p.gold_answer for p in probs if not parse(f"\\boxed{{{p.gold_answer}}}")]
    assert len(unparsed) <= 0.01 * len(probs), unparsed[:5]


def test_gsm8k_gold_is_the_number_after_hashes():
    probs = load_benchmark("gsm8k", need_data("bon_benchmarks/gsm8k/test.jsonl"))
    assert probs[0].gold_answer == "18"


def test_bad_rows_name_file_and_line(tmp_path):
    p = tmp_path / "test.jsonl"
    p.write_text('{"question": "q", "answer": "no hashes"}\n{"answer": "#### 3"}\n')
    with pytest.raises(DataError, match=r"test\.jsonl:2: cannot read a gsm8k problem"):
        load_benchmark("gsm8k", p)
    with pytest.raises(DataError, match="no gsm8k.json"):
        load_processbench("gsm8k", str(tmp_path))


def test_math_folders_read_the_original_layout_with_gold_from_the_last_boxed():
    test = load_benchmark("math", need_data("bon_benchmarks/math/test"))
    by_id = {p.id: p for p in test}
    # MATH500's rows are MATH test files (its unique_id is the file path): same problem, same gold.
    for row in load_benchmark("math500", need_data("math500/test_first100.jsonl"))[:20]:
        uid = row.id.removeprefix("math500-test/").removesuffix(".json")
        twin = by_id[f"math-{uid}"]
        assert twin.question == row.question
        assert is_equivalent(row.gold_answer, twin.gold_answer), (uid, row.gold_answer, twin.gold_answer)
    train = load_benchmark("math_train", need_data("train/math_train"))
    openr = {d["problem"]: d["final_answer"] for d in read_json(need_data("train/openr_math_train_problems_answers.json"))}
    # OpenR's list keeps the boxed content unstripped; stripped, it differs only at algebra/1397 ("{17}.").
    # (Two solutions end in an empty \\boxed{}: no gold on either side; the stages count and skip them.)
    differ = [p.id for p in train if (openr.get(p.question) or "").strip() != (p.gold_answer or "")]
    assert differ == ["math_train-algebra/1397"]


def test_dedup_drops_training_problems_that_are_evaluation_problems_and_counts_them():
    from prmlab.core.records import Problem

    mk = lambda i, q: Problem(id=f"t{i}", source="gsm8k_train", question=q, gold_answer="1")  # noqa: E731
    train = [mk(0, "What is $2+2$?"), mk(1, "what is 2 + 2 ?"), mk(2, "Find x."), mk(3, "Find  X"), mk(4, "New one")]
    kept, counts = dedup(train, {"processbench_gsm8k": ["What is 2+2?"], "mmlu_stem": ["Find x\nAnswer Choices: (A) 1"]})
    assert [p.id for p in kept] == ["t4"]
    assert counts == {"removed_processbench_gsm8k": 2, "removed_mmlu_stem": 2, "removed_train_repeats": 0, "removed_total": 4}
    kept, counts = dedup([mk(0, "A b"), mk(1, "a, B."), mk(2, "c")], {"gsm8k": []})
    assert [p.id for p in kept] == ["t0", "t2"] and counts["removed_train_repeats"] == 1


def test_real_train_sets_share_no_problem_with_the_evaluation_sets_after_dedup():
    """On the real files: how many GSM8K/MATH train problems are evaluation problems (printed), none kept."""
    train = load_benchmark("gsm8k_train", need_data("train/gsm8k_train.jsonl"))
    evals = {"gsm8k": [p.question for p in load_benchmark("gsm8k", need_data("bon_benchmarks/gsm8k/test.jsonl"))],
             "processbench_gsm8k": [i.problem for i in load_processbench("gsm8k", str(need_data("processbench")))]}
    kept, counts = dedup(train, evals)
    print("gsm8k_train dedup:", counts)
    keys = {duplicate_key(t) for ts in evals.values() for t in ts}
    assert not any(duplicate_key(p.question) in keys for p in kept)
    assert len(kept) + counts["removed_total"] == 7473
