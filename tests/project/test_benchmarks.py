"""The benchmarks' own arithmetic, on hand-checked tables, and bench_train's recipe run at toy size (the other
benchmarks print figures and are not run here)."""

import math

from benchmarks.bench_prm_seeds import seed_spread


def _run(source, seed, steps, f1, auc, bon):
    return {"source": source, "seed": seed, "optimizer_steps_asked": steps, "f1_heldout": f1, "step_auc_heldout": auc,
            "bon_product": bon, "bon_random": 70.0, "bon_maj": 78.0}


def test_seed_spread_mean_and_t_interval_per_source_and_steps():
    results = {"oracle:3000:0": _run("oracle", 0, 3000, 50.0, 0.7, 80.0),
               "oracle:3000:1": _run("oracle", 1, 3000, 60.0, 0.8, 82.0),
               "oracle:3000:2": _run("oracle", 2, 3000, 70.0, 0.9, 84.0),
               "oracle:8000:0": _run("oracle", 0, 8000, 99.0, 0.99, 99.0),  # another budget: not pooled
               "judge:3000:0": _run("judge", 0, 3000, 40.0, 0.6, 75.0),
               "summary": {"3000": {}}}
    s = seed_spread(results, 3000)
    assert sorted(s) == ["judge", "oracle"] and s["oracle"]["seeds"] == [0, 1, 2]
    f1 = s["oracle"]["f1_heldout"]
    # sd of 50, 60, 70 is 10; t(0.975, 2 df) = 4.303; half-width 4.303 * 10 / sqrt(3) = 24.84
    assert f1["mean"] == 60.0 and f1["points"] == [50.0, 60.0, 70.0]
    assert math.isclose(f1["hi"] - 60.0, 24.843, abs_tol=1e-3) and math.isclose(60.0 - f1["lo"], 24.843, abs_tol=1e-3)
    assert math.isclose(s["oracle"]["bon_product"]["hi"], 82.0 + 4.303 * 2 / math.sqrt(3), abs_tol=1e-9)
    assert s["oracle"]["bon_maj"] == {"mean": 78.0, "lo": 78.0, "hi": 78.0, "points": [78.0] * 3}
    one = s["judge"]["f1_heldout"]  # one seed: the value, no interval
    assert one["mean"] == 40.0 and math.isnan(one["lo"]) and math.isnan(one["hi"])
    assert seed_spread(results, 8000)["oracle"]["step_auc_heldout"]["mean"] == 0.99


def _world_row(seed, bon_min, auc, f1):
    part = {"problems": 10, "min": bon_min, "random": 60.0, "maj": 70.0, "pass": 90.0, "within_problem_auc": auc}
    return {"world": "mix0.25v25s8", "train_seed": seed, "normal": part, "hard": part, "bon_product": bon_min,
            "bon_min": bon_min, "bon_maj": 70.0, "within_problem_auc": auc, "step_auc_heldout": auc, "f1_heldout": f1,
            "sample_seconds": 60.0, "train_seconds": 600.0}


def test_world_table_has_a_row_per_training_seed_and_their_mean():
    from prmlab.report.benchmarks import prm_world

    md = prm_world({"2880x2:8000@mix0.25v25s8": _world_row(0, 70.0, 0.78, 60.0),
                    "2880x2:8000@mix0.25v25s8#seed1": _world_row(1, 74.0, 0.83, 67.0),
                    "960x6:3000@mix0.25v25s8": _world_row(0, 71.0, 0.76, 57.0)})  # one seed: no mean row
    rows = [line for line in md if line.startswith("| mix")]
    assert len(rows) == 4 and [r.split(" | ")[2] for r in rows] == ["0", "1", "0", "mean of 2"]
    assert rows[-1].split(" | ")[1] == "2880x2:8000"
    # means: min (70 + 74) / 2 = 72.0, step AUC (0.78 + 0.83) / 2 = 0.805, F1 63.5
    assert "72.0 / 60.0 / 70.0" in rows[-1] and "| 0.805 | 63.5 |" in rows[-1]


def test_world_table_keeps_a_train_setting_and_another_world_draw_apart_from_the_budget():
    from prmlab.report.benchmarks import prm_world

    wd = {**_world_row(0, 90.0, 0.95, 80.0), "train_set": {"weight_decay": 0.1}}
    w2 = {**_world_row(0, 50.0, 0.50, 40.0), "world": "mix0.25v25s8w2"}
    md = prm_world({"2880x2:8000@mix0.25v25s8": _world_row(0, 70.0, 0.78, 60.0),
                    "2880x2:8000@mix0.25v25s8#seed1": _world_row(1, 74.0, 0.83, 67.0),
                    "2880x2:8000@mix0.25v25s8~weight_decay=0.1": wd, "2880x2:8000@mix0.25v25s8w2": w2})
    rows = [[c.strip() for c in line.split("|")[1:4]] for line in md if line.startswith("| mix")]
    assert ["mix0.25v25s8", "2880x2:8000 weight_decay=0.1", "0"] in rows and ["mix0.25v25s8w2", "2880x2:8000", "0"] in rows
    mean = next(line for line in md if "mean of" in line)  # only the two plain seed-0 world rows are pooled
    assert "mean of 2" in mean and "| 0.805 | 63.5 |" in mean and sum("mean of" in line for line in md) == 1


def test_issue_26_targets_need_the_auc_and_an_interval_above_maj():
    from prmlab.report.benchmarks import world_targets

    assert world_targets({"step_auc_heldout": 0.860, "product_over_maj": [4.75, 0.75, 9.25],
                          "min_over_maj": [3.25, -0.75, 7.5]}) == "met"  # product's interval clears maj@8
    assert world_targets({"step_auc_heldout": 0.810, "min_over_maj": [4.5, 0.75, 8.75]}) == "**missed**"  # AUC < 0.85
    assert world_targets({"step_auc_heldout": 0.900, "product_over_maj": [3.0, -1.0, 7.0]}) == "**missed**"
    assert world_targets({"step_auc_heldout": 0.900}) == "-"  # measured before the interval was


def test_f1_order_leaves_out_the_critic_and_the_ceiling_prm():
    # The expected F1 order (the oracle first, the MC PRMs last) compares PRMs at the study's budget: a ceiling PRM above the oracle must not fail it,
    # and an MC PRM above the judge must.
    from prmlab.report.benchmarks import _f1_order_ok

    f1 = {"oracle_ceiling": 93.4, "critic_judge": 87.1, "oracle": 58.8, "judge": 47.5, "consensus": 42.5,
          "mc_soft": 40.2, "mc_hard": 36.7}
    assert _f1_order_ok(f1)
    assert not _f1_order_ok({**f1, "mc_soft": 48.0})
    assert not _f1_order_ok({**f1, "judge": 60.0})


def test_mc_search_agreement_on_a_hand_checked_table():
    """labeling.agreement (bench_mc_search's table and label_mc's comparison): first errors equal on 2 of 3; steps compared where both label (each stops at its
    own first error): a [1, 0] vs [1, 0] 2 of 2, b [1, 1, 1] vs [1, 0] 1 of 2, c [0] vs [0] 1 of 1 -> 4 of 5;
    the verifier (first errors 1, 1, 0) agrees with the second list on all three."""
    from prmlab.core.records import MCLabel, Response
    from prmlab.pipeline.labeling import agreement

    def lab(rid, hard):
        fe = next((i for i, h in enumerate(hard) if h == 0), -1)
        return MCLabel(rid, [float(h) for h in hard], hard, fe, 8)

    rs = [Response(problem_id="p", response_id=r, steps=["s"] * 3, answer="1", correct=False, true_first_error=t)
          for r, t in (("a", 1), ("b", 1), ("c", 0))]
    ex = [lab("a", [1, 0]), lab("b", [1, 1, 1]), lab("c", [0])]
    opt = [lab("a", [1, 0]), lab("b", [1, 0]), lab("c", [0])]
    assert agreement(ex, opt, rs) == {"first_error_agreement": 2 / 3, "step_label_agreement": 4 / 5,
                                      "verifier_first_error_accuracy": 1.0}


def test_bench_train_runs_its_gpu_recipe_at_toy_size(tmp_path):
    """benchmarks/bench_train.py's big-model recipe (`--shape smoke`: the 1.5B variants, shrunk) runs end to end
    on a CPU, today's trainer from git included, and records every variant: a GPU's minutes are not the place
    to find that the benchmark itself broke (today's trainer once failed on a moved import)."""
    import json
    import subprocess
    import sys

    from conftest import ROOT, need_data

    pb = need_data("processbench")
    out = tmp_path / "train.json"
    subprocess.run([sys.executable, "-m", "benchmarks.bench_train", "--shape", "smoke", "--examples", "processbench",
                    "--processbench", str(pb), "--max-examples", "24", "--steps", "3", "--batch-size", "4", "--repeats", "1",
                    "--out", str(out)], cwd=ROOT, check=True, capture_output=True, text=True)
    (run,) = json.loads(out.read_text()).values()
    assert run["shape"] == "smoke" and run["steps"] == 3 and run["parameters"] > 0
    assert set(run["variants"]) == {"trainer", "padded", "packed", "grouped", "fsdp bf16 sdpa", "fsdp bf16 sdpa + checkpointing"}
    for name, r in run["variants"].items():
        assert r["tokens_per_s"] > 0 and "mfu" in r and len(r["seconds_all"]) == 1, name
    assert run["variants"]["packed"]["padding_share"] == 0 < run["variants"]["padded"]["padding_share"]


def test_bench_prmbench_scores_equal_the_harness_procedure_and_reach_the_report(tmp_path):
    """benchmarks/bench_prmbench.py (PRMBench scoring throughput) run small: prmlab's scores equal its rewrite of
    the official harness's QwenPRM loop on real PRMBench items (a figure beside a wrong reference would be
    meaningless), and reports/benchmarks.md's section renders from its JSON."""
    import json
    import subprocess
    import sys

    from conftest import ROOT, need_data

    from prmlab.report.benchmarks import prmbench_speed

    data = need_data("prmbench")
    out = tmp_path / "prmbench.json"
    subprocess.run([sys.executable, "-m", "benchmarks.bench_prmbench", "--prmbench", str(data), "--per-class", "2",
                    "--dims", "tiny", "--repeats", "1", "--out", str(out)], cwd=ROOT, check=True, capture_output=True, text=True)
    b = json.loads(out.read_text())
    # 2 of each of the 9 classes and of the `correct` copies
    assert b["items"] == 2 * 10 and b["compared_items"] == b["items"] and b["max_abs_diff"] < 1e-5
    assert b["prmlab_items_per_s"] > 0 and b["harness_items_per_s"] > 0
    md = "\n".join(prmbench_speed(b))
    assert f"| {b['speedup']:.2f}x |" in md and "QwenPRM" in md


def test_labelling_methods_scores_frontier_and_guide_on_a_hand_checked_table():
    """bench_labelling's scoring against the verifier, its frontier and the guide docs/labelling-methods.md gets:
    3 responses of 2 problems (true first errors -1, 1, 0); method A (10 calls) names 2 first errors, both right;
    B (5 calls) all 3, 1 right; C (20 calls) all 3, 2 right: by cost B, A, C; frontier B (1/3) and A (1.0), not C."""
    from benchmarks.bench_labelling import frontier, prm_figures, score
    from benchmarks.bench_prm_seeds import seed_spread
    from prmlab.core.records import Response
    from prmlab.report.benchmarks import GUIDE_BEGIN, GUIDE_END, fill_guide, labelling_methods

    rs = [Response(problem_id=p, response_id=r, steps=["a", "b", "c"], answer="1", correct=c, true_first_error=t)
          for p, r, c, t in (("p", "x", True, -1), ("p", "y", False, 1), ("q", "z", False, 0))]
    a = score(rs, {"x": -1, "y": 1}, {"x": [1, 1, 1], "y": [1, 0]}, boot=50)
    assert (a["kept"], a["first_error_accuracy"], a["first_error_accuracy_right_answers"], a["step_label_agreement"]) == \
        (2, 1.0, 1.0, 1.0)
    b = score(rs, {"x": 0, "y": 1, "z": 2}, {"x": [0], "y": [1, 0], "z": [1, 1, 0]}, boot=50)
    # steps: x [0] against 1 (0 of 1), y [1, 0] (2 of 2), z [1, 1, 0] against wrong-from-step-0 (1 of 3)
    assert b["first_error_accuracy"] == 1 / 3 and b["step_label_agreement"] == 3 / 6
    assert b["first_error_accuracy_wrong_answers"] == 0.5 and b["first_error_accuracy_ci"][0] <= 1 / 3
    c = score(rs, {"x": -1, "y": 1, "z": 2}, {}, boot=50)
    rows = [{"method": m, "labels": "run now", "cost": {"generations": g}, "accuracy": s, "notes": ""}
            for m, g, s in (("A", 10, a), ("B", 5, b), ("C", 20, c))]
    # an annotator (no model calls, every kept first error right) is outside a frontier over model calls
    rows.append({"method": "D", "labels": "read back", "cost": {"generations": 0, "annotator_labels": 2}, "accuracy": a,
                 "notes": ""})
    frontier(rows)
    assert [(r["method"], r["frontier"]) for r in rows] == [("D", False), ("B", True), ("A", True), ("C", False)]
    # a PRM trained on A's labels: bench_prm_seeds' runs at the study's steps, averaged over seeds; other steps left out
    runs = {f"a:{st}:{sd}": {"source": "a", "seed": sd, "optimizer_steps_asked": st, "f1_heldout": f1,
                             "step_auc_heldout": auc, "bon_product": 60.0, "bon_random": 50.0, "bon_maj": 55.0}
            for st, sd, f1, auc in ((3000, 0, 40.0, 0.70), (3000, 1, 44.0, 0.72), (1500, 0, 10.0, 0.5))}
    summary = {str(st): seed_spread(runs, st) for st in (3000, 1500)}  # as bench_prm_seeds writes it
    rows[1]["prm"] = prm_figures({**runs, "summary": summary}, 3000)["a"]
    assert rows[1]["prm"]["seeds"] == [0, 1]
    bench = {"responses": 3, "problems": 2, "limit": 0, "boot": 50, "rows": rows}
    md = "\n".join(labelling_methods(bench))
    assert "| **A** |" in md and "| 42.0 / 0.710 (2 seeds) |" in md and md.count("| - |\n") >= 1
    doc = fill_guide(f"x\n{GUIDE_BEGIN}\nold\n{GUIDE_END}\ny", bench)
    assert "old" not in doc and "| 3.33 | A | 100.0" in doc and "| 1.67 | B | 33.3" in doc and "C |" not in doc


def test_mc_dose_table_and_curve_mark_the_studys_own_temperature(tmp_path):
    """bench_mc_dose's JSON as the page shows it: a row per temperature in order, the study's own in bold, each
    interval as [lo, hi]; the curve is written as a PNG."""
    from benchmarks.bench_mc_dose import plot
    from prmlab.report.benchmarks import mc_dose

    def point(t, acc, gap, default=False):
        return {"temperature": t, "steps": 1500, "study_default": default, "mc_first_error_accuracy": acc,
                "consensus_kept": 50.0, "mc_hard": {"f1_heldout": 40.0, "step_auc_heldout": 0.6}, "label_mc_seconds": 700,
                "f1_judge_minus_mc": gap, "machine": "2 CPU cores"}

    b = {"points": {"1.3:1500": point(1.3, [59.4, 56.0, 62.8], [10.1, 6.3, 13.8], True),
                    "0.7:1500": point(0.7, [82.9, 80.1, 85.0], [1.0, -2.2, 4.1])},
         "judge": {"f1_heldout": 46.4, "step_auc_heldout": 0.694}, "study": {"dir": "/x/seed-1", "seed": 1}}
    md = "\n".join(mc_dose(b))
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and "completer T" not in ln]
    assert rows[0].startswith("| 0.7 | 1500 | 82.9 [80.1, 85.0] |") and rows[1].startswith("| **1.3** |")
    assert "10.1 [6.3, 13.8]" in rows[1] and "seed-1, label_mc seed 1" in md and "F1 46.4" in md
    from prmlab.report.study import dose_response

    section = dose_response(b)  # the report's section: the same table under its own heading, and the curve
    assert section[0] == "## MC's dose-response (Table 4's first half as a curve)" and rows[1] in section
    assert "![MC's dose-response](benchmarks/mc_dose.png)" in section and dose_response(None) == []
    plot(b, tmp_path / "dose.png")
    assert (tmp_path / "dose.png").read_bytes()[:4] == b"\x89PNG"


def test_fewer_steps_check_compares_a_seed_with_its_filed_record(tmp_path):
    """bench_fewer_steps on a hand-made pair: a filed seed and a copy of it at 1,000 steps (its findings, headline,
    params and stage markers); the AUC and estimate changes, the verdict that moved, the stages' minutes, and the
    sd across seeds once two seeds are in; the page names the moved verdict."""
    import json

    from benchmarks.bench_fewer_steps import compare, summary
    from prmlab.report.benchmarks import fewer_steps

    def filed(seed, est, verdict="reproduced"):
        return {"seed": seed, "machine": "Intel", "headline": {"processbench_f1": {"judge": 50.0, "mc_hard": 36.0},
                                                                "processbench_step_auc": {"judge": 0.75, "mc_hard": 0.60}},
                "findings": [{"id": "mc_judge", "verdict": verdict, "estimates": {"f1_judge_minus_mc": est}}]}

    def copy(seed, est, verdict):
        d = tmp_path / f"seed-{seed}"
        (d / "reports").mkdir(parents=True)
        (d / ".done").mkdir()
        (d / "params.yaml").write_text("toy: {steps: 5}\ntrain_prm:\n  steps: 1000\nceiling:\n  steps: 8000\n")
        (d / "reports" / "findings.json").write_text(json.dumps(
            {"machines": ["AMD"], "findings": [{"id": "mc_judge", "verdict": verdict, "estimates": {"f1_judge_minus_mc": est}}]}))
        (d / "reports" / "headline.json").write_text(json.dumps(
            {"processbench_f1": {"judge": 48.0, "mc_hard": 37.0}, "processbench_step_auc": {"judge": 0.74, "mc_hard": 0.58}}))
        for st, sec in (("sample", 120.0), ("train_prm@judge", 150.0), ("train_prm@mc_hard", 150.0)):
            (d / ".done" / st).write_text(f"{sec}\n")
        return d

    r1 = compare(filed(1, [14.0, 10.0, 18.0]), copy(1, [11.0, 7.0, 15.0], "reproduced"))
    assert r1["steps"] == 1000 and r1["stage_minutes"] == 7.0 and r1["train_prm_minutes"] == 5.0
    assert r1["prms"]["judge"] == {"f1": [50.0, 48.0], "step_auc": [0.75, 0.74]}
    r2 = compare(filed(2, [8.0, 4.0, 12.0]), copy(2, [2.0, -2.0, 6.0], "inconclusive"))
    sm = summary([r1, r2])
    assert math.isclose(sm["prms"]["mc_hard"]["step_auc_change"], -0.02) and sm["prms"]["judge"]["f1_change"] == -2.0
    e = sm["estimates"]["f1_judge_minus_mc"]
    assert e["change"] == -4.5 and math.isclose(e["sd_filed"], math.sqrt(18)) and math.isclose(e["sd_fewer"], math.sqrt(40.5))
    assert sm["verdicts_changed"] == ["seed 2: mc_judge reproduced -> inconclusive"]
    md = "\n".join(fewer_steps({"study": "s", "runs": {"1000/seed-1": r1, "1000/seed-2": r2}, "summary": {"1000": sm}}))
    assert "**reproduced -> inconclusive**" in md and "| mc_hard | 0.600 | 0.580 | 36.0 | 37.0 |" in md
