from pathlib import Path

import pytest

from prmlab.data import BON_BENCHMARKS, PROCESSBENCH_SUBSETS, load_benchmark, load_processbench
from prmlab.io import DataError

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
pytestmark = pytest.mark.realdata


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real data not found at {path} (see ../shared/data/README.md)")
    return path


def test_all_processbench_cases_load():
    root = need(DATA / "processbench")
    sizes = {s: len(load_processbench(s, str(root))) for s in PROCESSBENCH_SUBSETS}
    assert sizes == {"gsm8k": 400, "math": 1000, "olympiadbench": 1000, "omnimath": 1000}
    items = load_processbench("gsm8k", str(root))
    assert all(-1 <= i.label < len(i.steps) for i in items)
    assert {i.label == -1 for i in items} == {True, False}


BENCH_FILES = {"math500": "math500/test_first100.jsonl", **{b: f"bon_benchmarks/{b}/test.jsonl" for b in BON_BENCHMARKS if b != "math500"}}
SIZES = {"gsm8k": 1319, "minerva_math": 272, "gaokao2023en": 385, "olympiadbench": 675, "college_math": 2818,
         "mmlu_stem": 3018, "math500": 100}


@pytest.mark.parametrize("name", list(BENCH_FILES))
def test_benchmarks_map_to_problems_with_parsing_gold(name):
    from math_verify import parse

    probs = load_benchmark(name, need(DATA / BENCH_FILES[name]))
    assert len(probs) == SIZES[name]
    assert all(p.question for p in probs)
    no_gold = sum(p.gold_answer is None for p in probs)
    assert no_gold == (2 if name == "gaokao2023en" else 0)  # two gaokao rows really have an empty answer
    probs = [p for p in probs if p.gold_answer]
    if name == "mmlu_stem":
        assert {p.gold_answer for p in probs} <= set("ABCD")
        return
    unparsed = [p.gold_answer for p in probs if not parse(f"\\boxed{{{p.gold_answer}}}")]
    assert len(unparsed) <= 0.01 * len(probs), unparsed[:5]


def test_gsm8k_gold_is_the_number_after_hashes():
    probs = load_benchmark("gsm8k", need(DATA / "bon_benchmarks/gsm8k/test.jsonl"))
    assert probs[0].gold_answer == "18"


def test_bad_rows_name_file_and_line(tmp_path):
    p = tmp_path / "test.jsonl"
    p.write_text('{"question": "q", "answer": "no hashes"}\n{"answer": "#### 3"}\n')
    with pytest.raises(DataError, match=r"test\.jsonl:2: cannot read a gsm8k problem"):
        load_benchmark("gsm8k", p)
    with pytest.raises(DataError, match="no gsm8k.json"):
        load_processbench("gsm8k", str(tmp_path))
