"""PRMBench as its official harness scores it (prmlab.pipeline.prmbench) and scores from anywhere (`prmlab score`,
prmlab.pipeline.scorefile): hand-worked tables, every edge of the harness, the real data's counts, the CLI end to end,
bad input as one line naming file, line and field, and every layout's tiny checkpoint on real PRMBench items."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from conftest import ROOT, need_data

from prmlab.core.io import DataError, write_jsonl
from prmlab.core.records import ProcessBenchItem
from prmlab.pipeline.prmbench import (
    f1_pair,
    ground_truth_steps,
    item_counts,
    load_prmbench,
    prmbench_table,
    prmscore,
    strip_step_prefix,
)
from prmlab.pipeline.scorefile import score_file

T, F = 0.9, 0.1  # a step judged correct / wrong (the harness: score > 0.5)


def row(cls: str, idx: str, n: int, error_steps: list[int], **kw) -> dict:
    return {"original_question": f"orig {idx}", "modified_question": f"q {idx}",
            "original_process": kw.get("original", [f"o{k}" for k in range(n)]),
            "modified_process": kw.get("steps", [f"s{k}" for k in range(n)]), "modified_steps": error_steps,
            "error_steps": error_steps, "reason": "", "idx": idx, "question": "", "classification": cls}


@pytest.fixture()
def bench(tmp_path):
    """A made-up PRMBench folder with every edge, and its scores (see test_hand_worked_prmscores)."""
    d = tmp_path / "prmbench"
    write_jsonl(d / "x_4o_counterfactual.jsonl", [row("counterfactual", "p_1", 4, [3]),
                                                   row("counterfactual", "p_2", 4, [2, 4, 9])])
    write_jsonl(d / "x_multi_solutions.jsonl", [row("multi_solutions", "p_3", 2, []),
                                                row("multi_solutions", "p_3", 5, [])])  # repeated id: dropped
    write_jsonl(d / "x_4o_redundency.jsonl", [row("redundency", "p_4", 2, [2], original=["a", "b", "c"])])
    write_jsonl(d / "x_4o_circular.jsonl", [row("circular", "p_5", 3, [1, 2])])
    (d / "debug").mkdir()
    write_jsonl(d / "debug" / "debug.jsonl", [row("circular", "p_9", 3, [1])])  # not the top level: not loaded
    scores = {"counterfactual_p_1": [T, T, T, 0.5],  # TP TP FP FN (0.5 is not above 0.5)
              "counterfactual_p_2": [T, F, F],       # TP TN FN; step 4 cut (error step 4 and 9 never seen)
              "multi_solutions_p_3": [T, F],         # TP FN
              "redundency_p_4": [T, T],              # TP FP
              "correct_p_4": [T, T, F],              # TP TP FN, class `correct` only
              "circular_p_5": [T, F, F]}             # FP TN FN
    return d, scores


def test_hand_worked_item_counts_and_f1():
    # error step 3 judged correct: FP; step 4 judged wrong: FN; out-of-range error step 7 ignored
    assert item_counts([3, 7], [True, True, True, False]) == Counter(TP=2, FP=1, TN=0, FN=1)
    assert item_counts([], []) == Counter(TP=0, FP=0, TN=0, FN=0)
    # TP3 FP1 TN1 FN2: f1 = 2(3/4)(3/5)/(3/4+3/5) = 2/3; negative: P = 1/3, R = 1/2 -> 2(1/6)/(5/6) = 2/5
    c = Counter(TP=3, FP=1, TN=1, FN=2)
    assert f1_pair(c) == pytest.approx((2 / 3, 2 / 5))
    assert prmscore(c) == pytest.approx(0.5 * 2 / 3 + 0.5 * 2 / 5)
    # -1 where a denominator is 0, quirks kept: no erroneous step (TN = FP = 0): negative recall -1, negative
    # precision 0/(0+1) = 0, so negative_f1 = 2*0*(-1)/(0-1) = 0; an empty matrix: both -1.
    assert f1_pair(Counter(TP=1, FP=0, TN=0, FN=1)) == pytest.approx((2 / 3, 0.0))
    assert f1_pair(Counter(TP=0, FP=0, TN=0, FN=0)) == (-1, -1)
    # precision = recall = 0 -> f1 -1; with negative_f1 1/2 the score is -1/4: clamped to 0
    assert f1_pair(Counter(TP=0, FP=1, TN=1, FN=1)) == (-1, 0.5)
    assert prmscore(Counter(TP=0, FP=1, TN=1, FN=1)) == 0.0
    assert prmscore(Counter(TP=1, FN=1, FP=0, TN=0), f1_only=True) == pytest.approx(2 / 3)


def test_step_prefix_stripped_as_the_harness_does():
    assert strip_step_prefix("Step 2. Then x = 3.") == "Then x = 3."
    assert strip_step_prefix("step12.x") == "x"
    assert strip_step_prefix("3.  So") == "So"
    assert strip_step_prefix("3.5 is the answer") == "5 is the answer"  # the harness's regex, kept
    assert strip_step_prefix("We have 2. cases") == "We have 2. cases"


def test_loader_keeps_the_harness_quirks(bench):
    d, _ = bench
    items = {it.id: it for it in load_prmbench(d)}
    assert sorted(items) == ["circular_p_5", "correct_p_4", "counterfactual_p_1", "counterfactual_p_2",
                             "multi_solutions_p_3", "redundency_p_4"]
    assert len(items["multi_solutions_p_3"].steps) == 2  # the first of a repeated id
    assert items["correct_p_4"].steps == ["a", "b", "c"] and items["correct_p_4"].error_steps == []
    assert items["correct_p_4"].question == "orig p_4" and items["redundency_p_4"].question == "q p_4"
    # pooled ground truth: every non-`correct` step, error steps in range only (9 is past counterfactual_p_2's 4):
    # correct 3 + 2 + 2 + 1 + 1, erroneous 1 + 2 + 0 + 1 + 2
    assert ground_truth_steps(list(items.values())) == {"correct": 9, "erroneous": 6}


def test_hand_worked_prmscores(bench):
    d, scores = bench
    t = prmbench_table(load_prmbench(d), scores)
    # counterfactual: TP3 FP1 TN1 FN2 -> 0.5(2/3) + 0.5(2/5) = 0.5333
    # multi_solutions: TP1 FN1 -> f1 alone 2/3 (with negative_f1: 1/3)
    # redundency: TP1 FP1 -> f1 2/3, negative_f1 0 (P = 0/(0+0) = -1, R = 0/1 = 0) -> 1/3; `correct` not in it
    # circular: FP1 TN1 FN1 -> f1 -1, negative 1/2 -> -1/4 -> 0
    assert t["classes"] == pytest.approx({"NR": 33.3, "NCL": 0.0, "ES": 53.3, "MS": 66.7}, abs=0.05)
    assert t["classes"]["MS"] != 66.7  # full precision in the file (2/3 of a hundred): tables round, files do not
    # pooled (no `correct`): TP5 FP3 TN2 FN4: f1 = 2(5/8)(5/9)/(5/8+5/9) = 10/17; negative P 2/6, R 2/5 -> 4/11;
    # overall 0.5(10/17 + 4/11) = 89/187 = 0.4759
    assert t["matrix"] == {"TP": 5, "FP": 3, "TN": 2, "FN": 4}
    assert (t["f1"], t["negative_f1"]) == pytest.approx((10 / 17, 4 / 11))
    assert t["prmscore"] == pytest.approx(47.6, abs=0.05)
    # categories: unweighted means of their classes present: (1/3 + 0)/2, ES alone, MS alone
    assert t["categories"] == pytest.approx({"Simplicity": 100 / 6, "Soundness": 160 / 3, "Sensitivity": 200 / 3})
    assert t["class_matrices"]["correct"] == {"TP": 2, "FP": 0, "TN": 0, "FN": 1}
    assert (t["items"], t["scored_items"], t["truncated_items"]) == (6, 6, 1)
    # without the `correct` copy the per-class and pooled numbers are the same: it counts nowhere else
    t2 = prmbench_table(load_prmbench(d), {k: v for k, v in scores.items() if k != "correct_p_4"})
    assert {k: t2[k] for k in ("prmscore", "classes", "categories", "matrix")} == \
        {k: t[k] for k in ("prmscore", "classes", "categories", "matrix")}


def test_real_prmbench_counts():
    d = need_data("prmbench")
    items = load_prmbench(d)
    by = Counter(it.classification for it in items)
    assert len(items) == 6969 and by["correct"] == 758 and by["multi_solutions"] == 160
    assert ground_truth_steps(items) == {"correct": 70222, "erroneous": 13149}
    assert sum(any(e > len(it.steps) for e in it.error_steps) for it in items) == 100
    # every step judged correct: f1 = 2(70222/83371)/(1 + 70222/83371), no TN: negative_f1 0 (harness quirk)
    t = prmbench_table(items, {it.id: [1.0] * len(it.steps) for it in items})
    assert t["matrix"] == {"TP": 70222, "FP": 13149, "TN": 0, "FN": 0} and t["negative_f1"] == 0
    p = 70222 / 83371
    assert t["f1"] == pytest.approx(2 * p / (1 + p)) and t["classes"]["MS"] == 100.0


def _cli(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, "-m", "flows.cli", "score", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _pb_items(tmp_path):
    def it(i, subset, label, n):
        return ProcessBenchItem(id=i, generator="g", problem=f"p {i}", steps=[f"s{k}" for k in range(n)],
                                final_answer_correct=label == -1, label=label, subset=subset)

    path = tmp_path / "items.jsonl"
    write_jsonl(path, [it("gsm8k-0", "gsm8k", 1, 3), it("gsm8k-1", "gsm8k", -1, 2), it("math-0", "math", 0, 2),
                       it("math-1", "math", -1, 3)])
    return path


def test_prmlab_score_end_to_end(bench, tmp_path):
    d, scores = bench
    f = tmp_path / "scores.jsonl"
    write_jsonl(f, [{"id": k, "step_scores": v} for k, v in scores.items()])
    p = _cli("--benchmark", "prmbench", f, "--data", d)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["prmscore"] == pytest.approx(47.6, abs=0.05)
    assert got["classes"] == pytest.approx({"NR": 33.3, "NCL": 0.0, "ES": 53.3, "MS": 66.7}, abs=0.05)
    assert got["categories"] == pytest.approx({"Simplicity": 100 / 6, "Soundness": 160 / 3, "Sensitivity": 200 / 3})
    assert (got["missing_items"], got["truncated_items"]) == (0, 1)
    # ProcessBench: gsm8k-0 first below at step 1 = label; gsm8k-1 none below: -1, right; math-0 none below: wrong;
    # math-1 cut (2 of 3 scored) and none below: graded wrong. gsm8k 100/100/100, math 0/0/0, f1_avg 50.
    # Tuned on gsm8k: candidates 0, 0.5, 0.85, ...: 0.5 is the first to reach F1 100.
    f = tmp_path / "pb.jsonl"
    write_jsonl(f, [{"id": "gsm8k-0", "step_scores": [0.9, 0.2, 0.9]}, {"id": "gsm8k-1", "step_scores": [0.9, 0.8]},
                    {"id": "math-0", "step_scores": [0.9, 0.9]}, {"id": "math-1", "step_scores": [0.9, 0.9]}])
    p = _cli("--benchmark", "processbench", f, "--data", _pb_items(tmp_path))
    assert p.returncode == 1 and "no item of subset 'toy_tune'" in p.stderr  # the toy profile's tuning subset
    p = _cli("--benchmark", "processbench", f, "--data", _pb_items(tmp_path), "--params", ROOT / "params/paper.yaml")
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert {k: got["gsm8k"][k] for k in ("error_acc", "correct_acc", "f1")} == {"error_acc": 100, "correct_acc": 100,
                                                                                "f1": 100}
    assert got["math"]["f1"] == 0 and got["f1_avg"] == 50
    assert (got["threshold"], got["threshold_subset"], got["truncated_items"]) == (0.5, "gsm8k", 1)
    p = _cli("--benchmark", "processbench", f, "--data", _pb_items(tmp_path), "--threshold", "0.1")
    got = json.loads(p.stdout)  # nothing below 0.1: every prediction -1 (math-1 cut: None)
    assert got["threshold_subset"] is None and got["gsm8k"]["error_acc"] == 0 and got["gsm8k"]["correct_acc"] == 100


@pytest.mark.parametrize("line, field", [
    ({"id": "counterfactual_p_7", "step_scores": [0.5]}, "field 'id'"),                     # unknown id
    ({"id": "counterfactual_p_1", "step_scores": [0.5] * 5}, "field 'step_scores'"),        # 5 scores, 4 steps
    ({"id": "counterfactual_p_1", "step_scores": [0.5, "high"]}, "field 'step_scores[1]'"),  # not a number
    ({"id": "counterfactual_p_1", "step_scores": [0.5, float("nan")]}, "field 'step_scores[1]'"),
    ({"id": "counterfactual_p_1", "scores": [0.5]}, "field 'scores'"),                       # another key
    ({"id": "redundency_p_4", "step_scores": [0.5]}, "field 'id'"),                          # repeated id
    ({"id": "counterfactual_p_1", "step_scores": [0.5, 3.2]}, "field 'step_scores[1]'"),     # a logit, not a probability
])
def test_bad_scores_are_one_line_naming_file_line_and_field(bench, tmp_path, line, field):
    d, _ = bench
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps({"id": "redundency_p_4", "step_scores": [0.9]}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(DataError) as e:
        score_file("prmbench", f, d)
    assert f"{f}:2: {field}" in str(e.value)


def test_bad_scores_end_the_cli_in_one_line_and_missing_items_are_counted(bench, tmp_path):
    d, _ = bench
    f = tmp_path / "bad.jsonl"
    f.write_text('{"id": "counterfactual_p_1", "step_scores": [0.5, 0.5, 0.5, 0.5, 0.5]}\n')
    p = _cli("--benchmark", "prmbench", f, "--data", d)
    assert p.returncode != 0 and p.stdout == ""
    assert p.stderr.strip().count("\n") == 0 and f"{f}:1: field 'step_scores': 5 scores" in p.stderr, p.stderr
    f.write_text('{"id": "counterfactual_p_1", "step_scores": [0.9, 0.9, 0.9, 0.9]}\n')
    p = _cli("--benchmark", "prmbench", f, "--data", d)
    assert p.returncode == 0 and json.loads(p.stdout)["missing_items"] == 5 and "5 of 6" in p.stderr
    p = _cli("--benchmark", "prmbench", f, "--data", d, "--threshold", "1.5")  # the stage refuses it: so does score
    assert p.returncode != 0 and "--threshold 1.5: PRMBench's threshold is a probability in [0, 1]" in p.stderr, p.stderr


def test_every_layout_scores_real_prmbench_items(tmp_path):
    """Each layout's tiny random checkpoint (benchmarks.layout_models) through make_scorer on real PRMBench items
    (two per classification, prefixes stripped as the harness's Qwen wrapper does): the metric pipeline runs and
    every value is in range; a short max_length cuts solutions, counted, scored over the steps returned."""
    from benchmarks.layout_models import build
    from prmlab.pipeline.prmbench import head_per_class, score_items
    from prmlab.prms.layouts import LAYOUTS, make_scorer

    items = head_per_class(load_prmbench(need_data("prmbench")), 2)
    assert len(items) == 20
    for layout in LAYOUTS:
        spec = build(layout, tmp_path / layout, str(ROOT / "models/policy"))
        max_length = 384 if layout == "qwen" else 4096
        with make_scorer("transformers", spec.model, batch_size=8, max_length=max_length, layout=spec.layout,
                         reference=spec.reference) as scorer:
            scores = score_items(scorer, items, strip=True, name=layout)
        t = prmbench_table(items, scores)
        assert all(0 <= s <= 1 for sc in scores.values() for s in sc), layout
        assert 0 <= t["prmscore"] <= 100 and set(t["classes"]) == {"NR", "NCL", "ES", "SC", "DC", "CI", "PS", "DR", "MS"}
        assert all(0 <= v <= 100 for v in [*t["classes"].values(), *t["categories"].values()]), layout
        assert (t["truncated_items"] > 0) == (layout == "qwen"), (layout, t["truncated_items"])
        assert all(len(scores[it.id]) <= len(it.steps) for it in items)


def test_prmlab_eval_only_prmbench_end_to_end(tmp_path):
    """`prmlab eval --only prmbench` on a tiny qwen-layout checkpoint: stage eval_prmbench through the CLI, on a
    folder of real PRMBench rows (params eval_prmbench.data), the table with a PRMBench section."""
    import yaml

    from benchmarks.layout_models import build

    src = need_data("prmbench")
    d = tmp_path / "pbm"
    d.mkdir()
    for name in ("prm800k_test_p1_4o_redundency.jsonl", "prm_test_p12_multi_solutions.jsonl"):
        (d / name).write_text("".join((src / name).read_text().splitlines(keepends=True)[:3]))
    spec = build("qwen", tmp_path / "qwen", str(ROOT / "models/policy"))
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["eval_prmbench"].update(data=str(d), batch_size=8)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{ROOT}"
    p = subprocess.run([sys.executable, "-m", "flows.cli", "eval", spec.model, "--name", "tiny", "--only", "prmbench",
                        "--out", "out"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    m = json.loads((tmp_path / "out/tiny/prmbench.json").read_text())
    assert m["items"] == 9  # 3 redundency rows, their 3 `correct` copies, 3 multi_solutions
    res = m["models"]["prm/tiny"]
    assert 0 <= res["prmscore"] <= 100 and set(res["classes"]) == {"NR", "MS"}
    rows = json.loads((tmp_path / "out/table.json").read_text())
    assert rows[0]["prmbench"]["prmscore"] == res["prmscore"]
    assert "PRMBench (arXiv 2501.03124)" in (tmp_path / "out/table.md").read_text()


def test_prmbench_table_sets_the_harness_row_beside_a_known_checkpoint(tmp_path):
    from prmlab.analysis.paper import PRMBENCH
    from prmlab.core.io import write_json
    from prmlab.report.tables import PRMBENCH_COLUMNS, markdown_table, table_row

    res = {"prmscore": 60.0, "classes": {"NR": 40.0, "MS": 99.0}, "categories": {"Simplicity": 40.0}, "truncated_items": 3}
    write_json(tmp_path / "q" / "prmbench.json", {"models": {"prm/q": res}})
    row = table_row("q", "Qwen/Qwen2.5-Math-PRM-7B", tmp_path / "q", ["prmbench"])
    md = markdown_table([row])
    assert PRMBENCH_COLUMNS[:4] == ["prmscore", "NR", "NCL", "Simplicity"] and len(PRMBENCH_COLUMNS) == 13
    assert "| q | 60.0 | 40.0 | - | 40.0 |" in md and md.split("PRMBench in context")[0].count("| 3 |") == 1
    ref = PRMBENCH["Qwen/Qwen2.5-Math-PRM-7B"]
    assert f"| Qwen/Qwen2.5-Math-PRM-7B (PRMBench harness) | {ref['prmscore']} | {ref['NR']} |" in md
    assert ref["prmscore"] == 65.5 and ref["MS"] == 99.7  # the harness notebook's saved outputs


def test_published_rows_agree_with_their_own_arithmetic():
    """Every published row as typed (prmlab.analysis.paper.TABLE7_ROWS, prmlab.analysis.published): a subset's F1 is the harmonic mean
    of its error and correct accuracies, the average is the mean of the four F1s, a PRMBench category is the mean of
    its classes, each to the sources' rounding (0.1). A mistyped cell fails here (this caught four misprints of the
    PRM paper's Table 7, ProcessBench's own tables agreeing with its F1s)."""
    from prmlab.analysis.paper import TABLE7, TABLE7_ROWS
    from prmlab.analysis.published import PRMBENCH_FIELD, PROCESSBENCH_FIELD

    rows = {**{n: (c, a) for n, (_, _, c, a) in TABLE7_ROWS.items()},
            **{n: (c, a) for n, (_, _, c, a, _) in PROCESSBENCH_FIELD.items()}}
    assert len(rows) == len(TABLE7_ROWS) + len(PROCESSBENCH_FIELD)  # no name in both
    for name, (cells, avg) in rows.items():
        assert len(cells) == 4, name
        f1 = [c[2] if isinstance(c, tuple) else c for c in cells]
        assert abs(sum(f1) / 4 - avg) <= 0.1, name
        for c in cells:
            if isinstance(c, tuple):
                assert abs(2 * c[0] * c[1] / (c[0] + c[1]) - c[2]) <= 0.1, (name, c)
    for name, (_, vals, _) in PRMBENCH_FIELD.items():
        for cat, classes in (("Simplicity", ("NR", "NCL")), ("Soundness", ("ES", "SC", "DC", "CI")),
                             ("Sensitivity", ("PS", "DR", "MS"))):
            if all(c in vals for c in classes):
                assert abs(sum(vals[c] for c in classes) / len(classes) - vals[cat]) <= 0.1, (name, cat)
    assert TABLE7["Qwen/Qwen2.5-Math-PRM-7B"] == 73.5 and TABLE7["Qwen/Qwen2.5-Math-PRM-72B"] == 78.3 and len(TABLE7) == 10


def _pb_row(name: str, f1s: list[float], subsets=("gsm8k", "math", "olympiadbench", "omnimath")) -> dict:
    return {"name": name, "model": name, "paper_table7_f1": None, "threshold_subset": subsets[0],
            "processbench": {s: {"error_acc": f, "correct_acc": f, "f1": f} for s, f in zip(subsets, f1s)},
            "processbench_heldout_avg_f1": sum(f1s[1:]) / 3, "processbench_avg_f1": sum(f1s) / 4,
            "processbench_avg_f1_at_0.5": None, "step_auc_heldout": None}


def test_a_new_prm_is_ranked_among_the_published_rows():
    """`prmlab eval`'s tables rank the PRMs evaluated among the PRM paper's Table 7 and the field's
    published rows, each with its source: an average F1 of 74.0 lands between Universal-PRM-7B (74.3, as GenPRM and
    ActPRM quote it) and Qwen2.5-Math-PRM-7B (73.5, Table 7); a PRMScore of 66.2 between ActPRM-X (66.7) and
    Gemini-2.0-flash-exp (66.0); the harness's saved row only where it differs from the leaderboard's. A toy benchmark's subsets are not ranked with ProcessBench's rows."""
    from prmlab.report.tables import markdown_table

    md = markdown_table([_pb_row("mine", [80.0, 76.0, 70.0, 70.0])])
    ctx = md[md.index("ProcessBench in context"):].splitlines()
    names = [ln.split(" | ")[1] for ln in ctx if ln.startswith("| ") and not ln.startswith("| #")]
    i = names.index("**mine** (this run)")
    assert names[i - 1] == "Universal-PRM-7B" and names[i + 1] == "Qwen2.5-Math-PRM-7B", names
    assert names[0] == "o1-mini" and "GenPRM-32B (Maj@8)" in names[1:3]  # 87.9, then GenPRM-32B's 82.6
    mine = next(ln for ln in ctx if "**mine**" in ln)
    assert f"| {i + 1} | **mine** (this run) | evaluated | 80.0 | 76.0 | 70.0 | 70.0 | 74.0 |" in mine
    assert "| Qwen2.5-Math-PRM-7B | PRM | 82.4 | 77.6 | 67.5 | 66.3 | 73.5 |  | PRM paper (arXiv 2501.07301), Table 7 |" in md
    assert "R-PRM, arXiv 2503.21295, Table 1" in md and "ThinkPRM" not in md

    toy = markdown_table([_pb_row("toy", [50.0, 40.0], subsets=("easy", "hard"))])
    assert "ProcessBench in context" not in toy and "subsets easy, hard are not ProcessBench's" in toy

    row = {"name": "mine", "model": "mine", "prmbench": {"prmscore": 66.2, "Simplicity": 50.0, "Soundness": 70.0,
                                                           "Sensitivity": 75.0}, "prmbench_truncated_items": 0}
    md = markdown_table([row])
    ctx = md[md.index("PRMBench in context"):].splitlines()
    names = [ln.split(" | ")[1] for ln in ctx if ln.startswith("| ") and not ln.startswith("| #")]
    i = names.index("**mine** (this run)")
    assert names[i - 1] == "ActPRM-X" and names[i + 1] == "Gemini-2.0-flash-exp", names  # 66.7 > 66.2 > 66.0
    assert "Skywork-PRM-7B" in names and "Skywork/Skywork-o1-Open-PRM-Qwen-2.5-7B (harness's saved output)" in names
    assert sum("Qwen2.5-Math-PRM-7B" in n for n in names) == 1  # the harness's 65.5 is the leaderboard's


def test_prmlab_score_defaults_to_the_real_processbench(tmp_path):
    """`prmlab score --benchmark processbench FILE --threshold 0.5` with no --data scores the real benchmark beside the
    checkout (../shared/data/processbench): scores that are 0 exactly at each item's labelled first error give F1 100
    on every subset, one below gives less, and the JSON keeps full precision."""
    src = need_data("processbench")
    rows, subsets = [], sorted(p.stem for p in src.glob("*.json"))
    for sub in subsets:
        for it in json.loads((src / f"{sub}.json").read_text()):
            n, lab = len(it["steps"]), it["label"]
            rows.append({"id": it["id"], "step_scores": [0.0 if i == lab else 1.0 for i in range(n)]})
    f = tmp_path / "oracle.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = json.loads(_cli("--benchmark", "processbench", f, "--threshold", "0.5", cwd=tmp_path).stdout)
    assert set(subsets) <= set(got) and all(got[s]["f1"] == 100.0 for s in subsets) and got["f1_avg"] == 100.0
    assert got["scored_items"] == len(rows) and got["missing_items"] == 0
    early = [dict(r, step_scores=[0.0] + r["step_scores"][1:]) for r in rows[::7]]  # an early alarm on some items
    f.write_text("".join(json.dumps(r) + "\n" for r in early + [r for i, r in enumerate(rows) if i % 7]))
    worse = json.loads(_cli("--benchmark", "processbench", f, "--threshold", "0.5", cwd=tmp_path).stdout)
    assert worse["f1_avg"] < 100.0 and worse["f1_avg"] != round(worse["f1_avg"], 1)
