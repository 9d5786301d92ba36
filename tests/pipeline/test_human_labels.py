"""Released step labels (PRM800K, Math-Shepherd) as PRM examples: the staged real rows converted to the
examples worked out by hand from each row, the conversion rules on small rows built here, the
named errors and counted skips, the deduplication against evaluation sets, and the stage CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, need_data

from prmlab.core.io import DataError
from prmlab.core.params import ParamsError
from prmlab.pipeline.human_labels import check_sources, drop_eval_problems, load_human


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _steps(row: dict, picks: list[tuple[int, int]]) -> list[str]:
    return [row["label"]["steps"][i]["completions"][j]["text"] for i, j in picks]


def test_prm800k_staged_rows_give_the_hand_worked_examples():
    path = need_data("prm_samples/samples_prm800k.jsonl")
    rows = _rows(path)
    examples, counts = load_human("prm800k", path)
    # Worked out by hand from each row: (row, [(step, completion) taken], labels). See human_labels' rules.
    expected = [
        # phase 1: step 1 has five completions all rated -1 and a human-written one: the first -1 ends it.
        (0, [(0, 0), (1, 0)], [1, 0]),
        # phase 2, found_error: steps 0-5 chosen (step 1 rated 0, neutral -> 1); step 6 none chosen: its -1 first completion.
        (1, [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0)], [1, 1, 1, 1, 1, 1, 0]),
        # phase 1, solution: step 4 chose completion 1 (completion 0, rated 0, was not chosen).
        (2, [(0, 0), (1, 0), (2, 0), (3, 0), (4, 1)], [1, 1, 1, 1, 1]),
        # phase 1, solution: step 5 chose completion 3 among seven rated 1 / -1.
        (3, [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 3), (6, 0)], [1] * 7),
        # phase 1, give_up: step 7 all six completions -1 (plus a human one): the first; step 8 (completions null) dropped.
        (4, [(i, 0) for i in range(8)], [1] * 7 + [0]),
        # row 5 is an initial-screening question: skipped and counted.
    ]
    assert len(examples) == len(expected) == 5
    for ex, (r, picks, labels) in zip(examples, expected):
        assert ex.prompt == rows[r]["question"]["problem"]
        assert ex.completions == _steps(rows[r], picks), r
        assert ex.labels == labels, r
        assert ex.response_id == f"{path.name}:{r + 1}"
    assert examples[0].completions[1].startswith("The first equation is 3p + e = 124")
    assert counts["rows"] == 6 and counts["skipped_screening"] == 1 and counts["examples"] == 5
    assert counts["neutral_steps_as_positive"] == 1 and counts["with_wrong_step"] == 3 and counts["steps"] == 29
    assert counts["cut_after_first_error"] == 2  # rows 0 and 4 had steps after their first error
    assert (counts["finish_solution"], counts["finish_found_error"], counts["finish_give_up"]) == (3, 1, 1)


def test_math_shepherd_staged_rows_give_the_hand_worked_examples():
    path = need_data("prm_samples/samples_math-shepherd.jsonl")
    examples, counts = load_human("math_shepherd", path)
    # (labels up to the first '-', first words of the problem, first step) by hand from each row.
    expected = [
        ([1, 1, 1, 1, 0], "Janet pays $40/hour", "Janet spends 3 hours + 5 hours = <<3+5=8>>8 hours per week on music lessons."),
        ([0], "Val cuts a single watermelon", "There are 20 x 40 = <<20*40=8000>>8000 black seeds."),
        ([0], "Sue is traveling", None),
        ([0], "Grant spends $200.00", "Juanita spends 6 days * $0.50/day = $<<6*0.5=3.00>>3.00/day on the newspaper"),
        ([1, 0], "If Buzz bought a pizza", "The total ratio representing the pizza is 5+8 = <<5+8=13>>13."),
        ([0], "Marly has ten $20 bills", None),
        ([0], "Running for 2 hours", "Jonah would have burnt 30*5=<<30*5=150>>150 more calories if he had run for five hours."),
    ]
    assert len(examples) == 7
    for ex, (labels, head, first) in zip(examples, expected):
        assert ex.labels == labels and len(ex.completions) == len(labels)
        assert ex.prompt.startswith(head) and not ex.prompt.endswith(" ") and "Step 1" not in ex.prompt
        if first:
            assert ex.completions[0] == first
        assert not any(s.startswith("Step ") or "ки" in s for s in ex.completions)
    assert examples[4].completions[1] == "The waiter ate 13 x 8 / 13 = <<13*8/13=6>>6 slices of the pizza."
    assert examples[0].completions[4].endswith("The answer is: 13520")
    assert counts == {"rows": 7, "task_GSM8K": 7, "cut_after_first_error": 6, "examples": 7, "with_wrong_step": 7, "steps": 12}


# ---- rules and bad input on rows built here ------------------------------------------------------------

def _prm800k(steps: list[dict], **top) -> dict:
    return {"labeler": "x", "timestamp": "t", "generation": None, "is_quality_control_question": False,
            "is_initial_screening_question": False, "question": {"problem": "What is 1+1?", "ground_truth_answer": "2"},
            "label": {"steps": steps, "total_time": 1, "finish_reason": "solution"}, **top}


def _step(*ratings, chosen=0, human=None) -> dict:
    return {"completions": [{"text": f"s{r}", "rating": r, "flagged": False} for r in ratings],
            "human_completion": human, "chosen_completion": chosen}


def _write(tmp_path: Path, rows: list, name: str = "f.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_prm800k_rules_on_built_rows(tmp_path):
    rows = [
        _prm800k([_step(1), _step(0), _step(1)]),                        # neutral is positive
        _prm800k([_step(1), _step(-1), _step(1)]),                       # a chosen -1 ends it
        _prm800k([_step(1), _step(1, 1, chosen=None, human={"text": "h", "rating": None})]),  # no -1: the human step
        _prm800k([_step(1), _step(None)]),                               # an unrated chosen step ends it
        _prm800k([_step(None)]),                                         # nothing rated: a counted skip
        _prm800k([_step(1)], is_quality_control_question=True),          # quality control: a counted skip
        _prm800k([]),                                                    # no steps: a counted skip
    ]
    examples, counts = load_human("prm800k", _write(tmp_path, rows))
    assert [e.labels for e in examples] == [[1, 1, 1], [1, 0], [1, 1], [1]]
    assert [e.completions for e in examples] == [["s1", "s0", "s1"], ["s1", "s-1"], ["s1", "h"], ["s1"]]
    assert counts["skipped_no_rated_step"] == 2 and counts["skipped_quality_control"] == 1
    assert counts["human_written_steps"] == 1 and counts["cut_at_unrated_step"] == 2 and counts["cut_after_first_error"] == 1


def test_a_folder_is_read_in_name_order(tmp_path):
    d = tmp_path / "prm800k"
    d.mkdir()
    _write(d, [_prm800k([_step(1)])], "phase2_train.jsonl")
    _write(d, [_prm800k([_step(-1)])], "phase1_train.jsonl")
    (d / "README.md").write_text("not data")
    examples, _ = load_human("prm800k", d)
    assert [e.labels for e in examples] == [[0], [1]]
    assert [e.response_id for e in examples] == ["phase1_train.jsonl:1", "phase2_train.jsonl:1"]


SHEPHERD = {"input": "Q? Step 1: a ки\nStep 2: b ки", "label": "Q? Step 1: a +\nStep 2: b -", "task": "MATH"}


@pytest.mark.parametrize("source, row, message", [
    ("prm800k", _prm800k([_step(2)]), "f.jsonl:1: field 'label.steps[0].completions[0].rating': 2 is not -1, 0 or 1"),
    ("prm800k", _prm800k([_step(1, chosen=3)]), "f.jsonl:1: field 'label.steps[0].chosen_completion': 3 is not an index"),
    ("prm800k", _prm800k([{"completions": "x"}]), "f.jsonl:1: field 'label.steps[0].completions': expected a list"),
    ("prm800k", {"problem": "x", "steps": []}, "f.jsonl:1: not a prm800k row: neither schema"),
    ("prm800k", SHEPHERD, "f.jsonl:1: not a prm800k row: a math_shepherd row; human_labels.prm800k must name"),
    ("math_shepherd", _prm800k([_step(1)]), "f.jsonl:1: not a math_shepherd row: a prm800k row"),
    ("math_shepherd", {**SHEPHERD, "input": "Q? Step 1: a\nStep 2: b"}, "f.jsonl:1: field 'input': no step tag 'ки'"),
    ("math_shepherd", {**SHEPHERD, "label": "Q? Step 1: a +\nStep 2: c -"}, "f.jsonl:1: field 'label': step 2 is not the input's step"),
    ("math_shepherd", {**SHEPHERD, "label": "Q? Step 1: a *\nStep 2: b -"}, "f.jsonl:1: field 'label': step 1 is not"),
    ("math_shepherd", {**SHEPHERD, "input": "Q? a ки\nb ки"}, "f.jsonl:1: field 'input': no 'Step 1:'"),
])
def test_bad_rows_are_named_by_file_line_field(tmp_path, source, row, message):
    path = _write(tmp_path, [row])
    with pytest.raises(DataError) as e:
        load_human(source, path)
    assert message in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)


def test_math_shepherd_rule_on_a_built_row(tmp_path):
    examples, counts = load_human("math_shepherd", _write(tmp_path, [SHEPHERD, {**SHEPHERD, "label": SHEPHERD["label"].replace("-", "+")}]))
    assert [(e.prompt, e.completions, e.labels) for e in examples] == [("Q?", ["a", "b"], [1, 0]), ("Q?", ["a", "b"], [1, 1])]
    assert counts["task_MATH"] == 2 and counts.get("cut_after_first_error", 0) == 0


def test_evaluation_problems_are_dropped_by_normalised_text(tmp_path):
    rows = [_prm800k([_step(1)]), {**_prm800k([_step(1)]), "question": {"problem": "What is $2+2$?"}},
            {**_prm800k([_step(1)]), "question": {"problem": "What is 3+3?"}}]
    examples, _ = load_human("prm800k", _write(tmp_path, rows))
    kept, removed = drop_eval_problems(examples, {"math": ["what is 2 + 2?"], "processbench_math": ["What is 1+1?", "What is 2+2?"]})
    assert [e.prompt for e in kept] == ["What is 3+3?"]
    assert removed == {"removed_math": 1, "removed_processbench_math": 1, "removed_total": 2}


@pytest.mark.parametrize("params, message", [
    ({"human_labels": {"prm800": "x"}}, "human_labels: unknown source 'prm800'"),
    ({"human_labels": {"prm800k": ""}}, "human_labels.prm800k: expected the path"),
    ({"human_labels": {}, "train_prm": {"sources": ["judge", "prm800k"]}}, "train_prm.sources names 'prm800k', but params human_labels names no prm800k file"),
    ({"human_labels": ["a"]}, "human_labels: expected {source: path}"),
])
def test_human_sources_checked_against_params(params, message):
    with pytest.raises(ParamsError, match=message.replace("{", r"\{").replace("}", r"\}").replace("(", r"\(")):
        check_sources(params)
    check_sources({"human_labels": {"prm800k": "p"}, "train_prm": {"sources": ["prm800k"]}})


def test_human_data_stage_converts_dedups_and_counts(tmp_path):
    path = need_data("prm_samples/samples_prm800k.jsonl")
    rows = _rows(path)
    texts = tmp_path / "eval_texts.json"
    # Two of the staged problems, as an evaluation set writes them (spacing and case differ).
    texts.write_text(json.dumps({"math": [rows[2]["question"]["problem"].upper()],
                                 "processbench_math": ["  " + rows[3]["question"]["problem"]]}))
    out, metrics = tmp_path / "human" / "prm800k.jsonl", tmp_path / "m.json"
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}", "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.run([sys.executable, "-m", "stages.human_data", "--source", "prm800k", "--file", str(path), "--eval-texts",
                        str(texts), "--out", str(out), "--metrics", str(metrics)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    m = json.loads(metrics.read_text())
    assert (m["rows"], m["converted"], m["removed_math"], m["removed_processbench_math"], m["examples"]) == (6, 5, 1, 1, 3)
    assert [json.loads(x)["response_id"] for x in out.read_text().splitlines()] == [f"{path.name}:{i}" for i in (1, 2, 5)]
    assert "6 rows -> 5 examples (skipped: screening 1); 2 share a problem with an evaluation set" in p.stdout
    bad = subprocess.run([sys.executable, "-m", "stages.human_data", "--source", "math_shepherd", "--file", str(path),
                          "--eval-texts", str(texts), "--out", str(out), "--metrics", str(metrics)],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert bad.stderr.startswith(f"[human_data@math_shepherd] error: {path}:1: not a math_shepherd row: a prm800k row")
    # As `dvc repro` runs it: the source from DVC_STAGE, the file from params, `{source}` in paths.
    (tmp_path / "params.yaml").write_text(json.dumps({"human_labels": {"prm800k": str(path)}}))
    templ = str(tmp_path / "dvc" / "{source}.jsonl")
    p = subprocess.run([sys.executable, "-m", "stages.human_data", "--eval-texts", str(texts), "--out", templ, "--metrics",
                        str(metrics), "--params", str(tmp_path / "params.yaml")], cwd=ROOT, capture_output=True, text=True,
                       env={**env, "DVC_STAGE": "human_data@prm800k", "DVC_ROOT": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "dvc" / "prm800k.jsonl").read_text() == out.read_text()


def test_a_row_repeated_across_files_is_one_example(tmp_path):
    """Before: the same PRM800K row in two shard files trained and counted twice. It is one example and a
    count; the same solution with other ratings (another rater) stays."""
    d = tmp_path / "prm800k"
    d.mkdir()
    _write(d, [_prm800k([_step(1), _step(-1)])], "phase1_train.jsonl")
    _write(d, [_prm800k([_step(1), _step(-1)]), _prm800k([_step(1), _step(1)])], "phase2_train.jsonl")
    examples, counts = load_human("prm800k", d)
    assert [e.labels for e in examples] == [[1, 0], [1, 1]] and counts["duplicate_rows_dropped"] == 1
    assert counts["rows"] == 3 and counts["examples"] == 2
