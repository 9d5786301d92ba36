"""The report flags a judge that is no better than always answering -1 (train_judge@toy's metrics)."""

from __future__ import annotations

import json

import pytest

from prmlab.analysis.findings import FINDINGS
from prmlab.report.study import Page, build, load_metrics, to_html


def _build(d, run=None, **kw) -> str:
    return build(load_metrics(d), Page(d / "figures", run), **kw)


@pytest.mark.parametrize(("acc", "flagged"), [(0.38, True), (0.50, True), (0.70, False)])
def test_report_flags_a_judge_not_clearly_above_the_always_none_baseline(tmp_path, acc, flagged):
    (tmp_path / "train_judge.json").write_text(json.dumps({"judge_first_error_accuracy": acc, "judge_baseline_always_none": 0.48}))
    md = _build(tmp_path)
    assert ("**Weak judge.**" in md) is flagged
    assert "| judge: first-error accuracy on the policy's responses |" in md  # labelled, not a raw key


# ------------------------------------------------------------------------------------------------
# The figures a researcher expects: Best-of-N against N, ProcessBench error/correct-sample
# accuracy, the findings' intervals; each titled, axes labelled, saved and logged to the report's run.


def _sub(err, ok):
    return {"error_acc": err, "correct_acc": ok, "f1": 2 * err * ok / (err + ok), "flawed_correct_answer_acc": 0.0}


def _metrics(d):
    pb = {"items": {"toy_tune": 4, "toy": 4}, "empty_subsets": [], "models": {
        "prm/a": {"threshold_0.5": {"toy_tune": _sub(50, 50), "toy": _sub(50, 50), "average_f1": 50.0, "heldout_average_f1": 50.0},
                  "tuned": {"toy_tune": _sub(100, 100), "toy": _sub(50, 100), "average_f1": 83.3, "heldout_average_f1": 66.7,
                            "threshold": 0.4, "threshold_subset": "toy_tune", "threshold_fallback": False}},
        "critic/judge": {"toy_tune": _sub(0, 100), "toy": _sub(25, 75), "average_f1": 20.0}}}
    bon = {"problems": 2, "n": 4, "results": {
        "baselines": {"A": {"maj": 50.0, "pass": 100.0, "problems": 2, "no_responses": 0.0},
                      "average": {"maj": 50.0, "pass": 100.0, "no_responses": 0.0}},
        "a": {"A": {"prm_product": 75.0, "problems": 2}, "average": {"prm_product": 75.0}}},
        "by_n": [{"n": 1, "maj": 25.0, "pass": 25.0, "a": 25.0}, {"n": 2, "maj": 50.0, "pass": 75.0, "a": 50.0},
                 {"n": 4, "maj": 50.0, "pass": 100.0, "a": 75.0}],
        "within_problem_auc": {"a": {"product": 0.75}}}
    bias = {"policy": {}, "prms": {"a": {"min_on_last_step_all": 40.0, "min_on_last_step_bon_selected": 50.0,
                                         "mean_relative_min_position": 0.5, "tie_share": 20.0,
                                         "relative_position_hist": [{"lo": 0.0, "hi": 0.5, "share": 0.4},
                                                                                {"lo": 0.5, "hi": 1.0, "share": 0.6}]}}}
    for name, m in (("eval_processbench", pb), ("eval_bon", bon), ("analyze_bias", bias)):
        (d / f"{name}.json").write_text(json.dumps(m))
    return pb


def _labelled(ax):
    return bool(ax.get_title()) and bool(ax.get_xlabel()) and bool(ax.get_ylabel())


def test_error_correct_averages_the_held_out_subsets_only(tmp_path):
    from prmlab.report.study import error_correct

    models = _metrics(tmp_path)["models"]
    # held out: toy only -> prm/a at its tuned threshold (50, 100), not (75, 100) with toy_tune; the critic (25, 75)
    assert error_correct(models, ["toy"]) == {"prm/a": (50.0, 100.0), "critic/judge": (25.0, 75.0)}
    # both subsets: prm/a ((100 + 50) / 2, 100); critic ((0 + 25) / 2, (100 + 75) / 2)
    assert error_correct(models, ["toy_tune", "toy"]) == {"prm/a": (75.0, 100.0), "critic/judge": (12.5, 87.5)}


def test_report_draws_the_curve_and_bars_and_logs_them_to_its_mlflow_run(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from prmlab.core.tracking import stage_run

    _metrics(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'ml.db'}")
    monkeypatch.setenv("PRMLAB_EXPERIMENT", "report-test")
    with stage_run("report") as run:
        md = _build(tmp_path, run)
    for png in ("bon_curve.png", "processbench_error_correct.png"):
        assert (tmp_path / "figures" / png).stat().st_size > 0 and f"(figures/{png})" in md
    logged = {a.path for a in MlflowClient(f"sqlite:///{tmp_path / 'ml.db'}").list_artifacts(run.id, "figures")}
    assert {"figures/bon_curve.png", "figures/processbench_error_correct.png"} <= logged
    assert {f"figures/{p.name}" for p in (tmp_path / "figures").glob("*.png")} <= logged  # every figure, not some
    assert "| maj@N | 25 | 50 | 50 |" in md and "| a prm@N (product) | 25 | 50 | 75 |" in md
    assert "| a | 40 | 50 | 0.500 | 20 |" in md  # Fig. 8 table with the tie share


def test_figures_are_titled_labelled_and_draw_the_numbers_given():
    from prmlab.analysis import plots

    fig = plots.bon_curve([{"n": 1, "maj": 25.0, "pass": 25.0, "a": 25.0}, {"n": 2, "maj": 50.0, "pass": 75.0, "a": 60.0}])
    ax = fig.axes[0]
    assert _labelled(ax) and "%" in ax.get_ylabel()
    assert [(list(c.lines[0].get_xdata()), list(c.lines[0].get_ydata())) for c in ax.containers] == [
        ([1, 2], [25.0, 50.0]), ([1, 2], [25.0, 75.0]), ([1, 2], [25.0, 60.0])]
    # with the problem count, binomial 95% error bars: at N=2, a's 60% over 10 problems is +-1.96 sqrt(60 x 40 / 10)
    fig = plots.bon_curve([{"n": 1, "a": 25.0}, {"n": 2, "a": 60.0}], n_problems=10)
    seg = fig.axes[0].containers[0].lines[2][0].get_segments()[1]
    assert abs((seg[1][1] - seg[0][1]) / 2 - 1.96 * (60 * 40 / 10) ** 0.5) < 1e-9

    # a dozen methods in one figure get a dozen colours (matplotlib's default cycle repeats after 10)
    many = plots.bon_curve([{"n": 1, **{f"m{i}": float(i) for i in range(12)}}])
    assert len({tuple(ln.get_color()) if not isinstance(ln.get_color(), str) else ln.get_color()
                for ln in many.axes[0].lines}) >= 12

    # sorted by F1 (the critic's 80 first), each bar with its interval over problems
    fig = plots.processbench_error_correct({"prm/a": {"f1": [66.7, 60.0, 70.0], "error_acc": [50.0, 40.0, 60.0],
                                                      "correct_acc": [100.0, 90.0, 100.0]},
                                            "critic/judge": {"f1": [80.0, 70.0, 90.0], "error_acc": [25.0, 20.0, 30.0],
                                                             "correct_acc": [75.0, 70.0, 80.0]}}, "toy")
    ax = fig.axes[0]
    assert _labelled(ax) and "%" in ax.get_ylabel()
    assert [p.get_height() for p in ax.patches] == [25.0, 50.0, 75.0, 100.0]  # error bars first, then correct
    assert [t.get_text() for t in ax.get_xticklabels()] == ["critic/judge", "prm/a"]
    seg = ax.containers[0].lines[2][0].get_segments()  # the erroneous samples' error bars: critic's 20-30, a's 40-60
    assert [(s_[0][1], s_[1][1]) for s_ in seg] == [(20.0, 30.0), (40.0, 60.0)]

    # ranked bars: highest first, intervals drawn, each kind its own colour and a legend entry
    fig = plots.ranked_bars([{"name": "maj@8", "value": 60.0, "lo": None, "hi": None, "kind": "baseline"},
                             {"name": "a", "value": 40.0, "lo": 35.0, "hi": 45.0, "kind": "trained"},
                             {"name": "ceiling", "value": 70.0, "lo": 65.0, "hi": 75.0, "kind": "reference"}], "F1", "t")
    ax = fig.axes[0]
    ys = {t.get_text(): y for t, y in zip(ax.get_yticklabels(), ax.get_yticks())}
    assert sorted(ys, key=ys.get) == ["a", "maj@8", "ceiling"]  # bottom to top: the highest on top
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["baseline", "reference", "trained"]
    assert len({p.get_facecolor() for p in ax.patches}) == 3
    assert sorted(tuple(c.lines[2][0].get_segments()[0][:, 0]) for c in ax.containers if hasattr(c, "has_xerr")) == [
        (35.0, 45.0), (65.0, 75.0)]  # two intervals: the baseline has none

    recs = [{"id": "hard_soft", "verdict": "inconclusive", "estimates": {"f1_hard_minus_soft": [1.0, -2.0, 4.0]}},
            {"id": "rankings", "verdict": "reproduced",  # the multi-seed aggregate's form
             "estimates": {"bon_residual_mc_hard_minus_oracle": {"mean": 0.2, "lo": -0.4, "hi": 0.8}}}]
    fig = plots.findings_intervals(recs)
    assert fig.get_suptitle() and fig.axes[-1].get_xlabel()
    for ax, rec in zip(fig.axes, recs):
        # the claim in a few words (its entry's `short`), so the verdict is never cut off
        assert next(f.short for f in FINDINGS if f.id == rec["id"]) in ax.get_title() and rec["verdict"] in ax.get_title()
        point = ax.lines[0].get_xdata()[0]
        assert point == (1.0 if rec["id"] == "hard_soft" else 0.2)
        assert any(list(ln.get_xdata()) == [0, 0] for ln in ax.lines)  # the line at 0
        assert "_" not in ax.get_yticklabels()[0].get_text()  # the estimate in words, not its id
        assert ("F1 points" if rec["id"] == "hard_soft" else "points") in ax.get_xlabel()  # each panel's unit
    # the interval's ends: the error bar spans lo .. hi
    seg = fig.axes[0].collections[0].get_segments()[0]
    assert [seg[0][0], seg[1][0]] == [-2.0, 4.0]
    # hard = soft counts within +-3: the margin is drawn, so "inconclusive" over [-2, 4] reads at a glance
    band = [c for c in fig.axes[0].collections if type(c).__name__ != "LineCollection"]
    xs = band[0].get_paths()[0].vertices[:, 0]
    assert (xs.min(), xs.max()) == (-3.0, 3.0)
    # the consensus kept share is calibration: labelled so, and the paper's effects are marked where given
    recs = [{"id": "consensus", "verdict": "reproduced", "estimates": {"kept_share": [55.0, 54.0, 56.0],
                                                                       "f1_consensus_minus_mc": [8.0, 3.0, 13.0]}}]
    fig = plots.findings_intervals(recs)
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert any("(calibration)" in t for t in labels) and not all("(calibration)" in t for t in labels)
    diamonds = [ln for ax in fig.axes for ln in ax.lines if ln.get_marker() == "D"]
    assert [ln.get_xdata()[0] for ln in diamonds] == [6.2]  # Fig. 2: 46.3 - 40.1
    import matplotlib.pyplot as plt

    plt.close("all")


def test_report_shows_one_judged_erroneous_response_and_the_reply_verbatim(tmp_path):
    from prmlab.core.io import write_jsonl
    from prmlab.core.records import JudgeLabel, Response
    from prmlab.report.study import judge_example

    resp = [Response("p0", "r0", ["1 + 1 = 2", "2 * 3 = 6, so \\boxed{6}."], "6", True, true_first_error=-1),
            Response("p1", "r1", ["2 + 2 = 5", "5 * 2 = 10, so \\boxed{10}."], "10", False, true_first_error=0),
            Response("p2", "r2", ["3 + 3 = 6"], "6", True, true_first_error=-1)]
    reply = "0: 2 + 2 -> 4, claimed 5, wrong\nThe earliest error is in \\boxed{0}."
    labels = [JudgeLabel("r0", -1, True, ["0: ok\nThe earliest error is in \\boxed{-1}."]), JudgeLabel("r1", 0, True, [reply]),
              JudgeLabel("r2", None, False, ["garbled"])]
    write_jsonl(tmp_path / "s.jsonl", resp)
    write_jsonl(tmp_path / "j.jsonl", labels)
    md = "\n".join(judge_example(tmp_path / "s.jsonl", tmp_path / "j.jsonl"))
    # The first response the verifier says is wrong, its steps numbered from 0, and the reply as written.
    assert "Response `r1`" in md and "the judge's verdict 0; the verifier's: 0" in md
    assert "[0] 2 + 2 = 5" in md and reply in md and "garbled" not in md
    assert "## The judge's reply format" in _build(tmp_path, example=md.splitlines())


def test_headline_holds_the_numbers_to_read_first(tmp_path):
    from prmlab.report.study import headline

    _metrics(tmp_path)
    (tmp_path / "sample.json").write_text(json.dumps({"accuracy": 0.6543}))
    (tmp_path / "train_judge.json").write_text(json.dumps({"judge_first_error_accuracy": 0.81, "judge_baseline_always_none": 0.55}))
    (tmp_path / "consensus.json").write_text(json.dumps({"consensus_kept_share": 0.4, "audit": {"mc": {"first_error_accuracy": 0.7}}}))
    h = headline(load_metrics(tmp_path))
    assert h["policy_accuracy"] == 65.4 and h["judge_first_error_accuracy"] == 81.0 and h["judge_baseline_always_no_error"] == 55.0
    assert h["consensus_kept"] == 40.0 and h["label_first_error_accuracy"] == {"mc": 70.0}
    # held-out F1 for a PRM (its threshold was tuned on toy_tune), the critic's F1 over the held-out subset
    assert h["processbench_f1"] == {"a": 66.7, "critic_judge": 37.5}
    assert "processbench_step_auc" not in h  # no PRM here reports one
    assert h["best_of_n"]["n"] == 4 and h["best_of_n"]["maj"] == 50.0 and h["best_of_n"]["pass"] == 100.0
    assert set(headline(load_metrics(tmp_path, profile="real"))) == set(h) - {"judge_first_error_accuracy", "judge_baseline_always_no_error"}


def test_prm_results_land_once_with_model_and_dataset_and_runs_say_what_they_made(tmp_path, monkeypatch):
    """On a real MLflow store: each PRM's eval metric is logged once (the run's value and the model's
    are one record), with the logged model and the dataset its eval stage read; Best-of-N against N is a stepped
    metric on the PRM's run and on eval_bon's; a report rerun adds no point; each stage run gets a description."""
    from mlflow.tracking import MlflowClient

    from prmlab.core.tracking import stage_run
    from prmlab.report.study import headline, leaderboard, log_prm_results, run_descriptions

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'ml.db'}")
    monkeypatch.setenv("PRMLAB_EXPERIMENT", "results-test")
    (tmp_path / "data/eval_samples").mkdir(parents=True)
    (tmp_path / "data/eval_samples/eval.jsonl").write_text('{"id": 1}\n')
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt/config.json").write_text("{}")
    with stage_run("eval_bon", inputs=["data/eval_samples/eval.jsonl"]) as bon_run:
        pass
    with stage_run("train_prm@a") as prm_run:
        model_id = prm_run.model(tmp_path / "ckpt", "prm-a", "prm")
    runs = {"eval_bon": bon_run.id, "train_prm@a": prm_run.id}
    by_n = [{"n": 1, "maj": 25.0, "a": 25.0}, {"n": 2, "maj": 50.0, "a": 60.0}]
    for _ in range(2):  # the second: a report rerun
        assert log_prm_results(runs, {"a": {"eval.bon_product": 60.0}}, by_n) == ["a"]
    client = MlflowClient()
    (m,) = client.get_metric_history(prm_run.id, "eval.bon_product")  # once, across two reports
    assert m.value == 60.0  # the run's history: one point, the same record as the model's below
    (lm,) = [x for x in client.get_logged_model(model_id).metrics if x.key == "eval.bon_product"]
    assert (lm.value, lm.model_id, lm.dataset_name) == (60.0, model_id, "data/eval_samples/eval.jsonl") and lm.dataset_digest
    assert [(x.step, x.value) for x in client.get_metric_history(prm_run.id, "eval.bon_at_n_product")] == [(1, 25.0), (2, 60.0)]
    assert [(x.step, x.value) for x in client.get_metric_history(bon_run.id, "bon_at_n.maj")] == [(1, 25.0), (2, 50.0)]

    _metrics(tmp_path)
    got = load_metrics(tmp_path)
    h = headline(got)
    d = run_descriptions(h, leaderboard(got))
    assert d["train_prm@a"].startswith("Held-out ProcessBench F1 **66.7** (rank 1 of 2)"), d["train_prm@a"]
    assert "Best-of-4 min" in d["train_prm@a"] and "product 75.0 [15.0, 100.0]" in d["train_prm@a"]
    assert d["eval_bon"].startswith("Best-of-4 accuracy (product), ranked: pass 100.0%, a 75.0%, maj 50.0%")
    assert "critic_judge" not in d and all(v.endswith("(stage `report`).") for v in d.values())


def test_leaderboard_ranks_every_prm_with_references_and_baselines_marked(tmp_path):
    """The leaderboard, from the fixture: PRM `a` (held-out F1 66.7, Best-of-4 product 75 over 2 problems:
    75 +- 1.96 sqrt(75 x 25 / 2) = +-60.0, capped at 100), the judge as a critic (37.5, a reference), then the
    baselines (no F1) by Best-of-N; the report shows it after the summary and `prmlab metrics` prints it first."""
    import subprocess
    import sys
    from pathlib import Path

    from prmlab.report.study import headline, leaderboard, leaderboard_lines

    _metrics(tmp_path)
    m = load_metrics(tmp_path)
    rows = leaderboard(m)
    assert [(r["name"], r["kind"]) for r in rows] == [("a", "trained"), ("critic/judge", "reference"),
                                                     ("pass@4", "baseline"), ("maj@4", "baseline")]
    a = rows[0]
    assert a["processbench_f1"] == 66.7 and a["bon"]["product"] == [75.0, 15.0, 100.0] and a["min_on_final_step"] == 40.0
    md = "\n".join(leaderboard_lines(rows, 4))
    assert "| a | trained | 66.7 |" in md and "75.0 [15.0, 100.0]" in md and "| maj@4 | baseline | - |" in md
    assert md.index("## PRM leaderboard") < md.index("| critic/judge |")
    f = tmp_path / "headline.json"
    f.write_text(json.dumps(headline(m)))
    out = subprocess.run([sys.executable, "-m", "flows.cli", "metrics", "--file", str(f)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2])
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and lines[0].split()[:3] == ["PRM", "kind", "PB"] and lines[1].startswith("a ")
    # the table covers the per-PRM keys, which are not repeated as lines below it
    assert not any(x.startswith(("processbench_f1", "best_of_n")) for x in lines) and "75.0 [15.0, 100.0]" in lines[1]


def test_plot_tables_are_rows_dvc_plots_reads(tmp_path):
    """reports/plots/*.json, hand-checked from the fixture: one row per N (Best-of-N curve), one row
    per model, method, source or PRM; no None values (a missing number is a missing row)."""
    from prmlab.report.study import headline, plot_tables

    _metrics(tmp_path)
    (tmp_path / "consensus.json").write_text(json.dumps({"audit": {"mc": {"first_error_accuracy": 0.7}}}))
    m = load_metrics(tmp_path)
    t = plot_tables(m, headline(m))
    # Best-of-N against N: a row per (N, method), so each method gets its own colour; error bars are binomial
    # 95% intervals over the 2 problems, capped to 0..100: 75 +- 1.96 sqrt(75 x 25 / 2) = 75 +- 60.0 -> [15.0, 100]
    assert [(r["n"], r["method"]) for r in t["bon_by_n"][:3]] == [(1, "maj"), (1, "pass"), (1, "a")]
    a4 = next(r for r in t["bon_by_n"] if r["n"] == 4 and r["method"] == "a")
    assert a4["accuracy"] == 75.0 and a4["lo"] == pytest.approx(75 - 1.96 * (75 * 25 / 2) ** 0.5) and a4["hi"] == 100.0
    # a plot's rows highest first, each with its kind (references and baselines marked)
    assert [(r["method"], r["accuracy"], r["kind"]) for r in t["bon_accuracy"]] == [
        ("pass", 100.0, "baseline"), ("a", 75.0, "trained"), ("maj", 50.0, "baseline")]
    assert t["bon_accuracy"][2]["lo"] == 0.0 and t["bon_accuracy"][0]["hi"] == 100.0
    # without `intervals` (no per-item scores) a row says it has none; with them, each row its own
    assert t["processbench_f1"] == [{"model": "a", "f1": 66.7, "lo": None, "hi": None, "kind": "trained"},
                                    {"model": "critic_judge", "f1": 37.5, "lo": None, "hi": None, "kind": "reference"}]
    iv = {"processbench": {"prm/a": {"f1": [66.7, 60.0, 72.0]}, "critic/judge": {"f1": [37.5, 30.0, 45.0]}},
          "min_on_final_step": {"a": [40.0, 31.0, 49.0]}}
    t = plot_tables(m, headline(m), iv)
    assert [(r["model"], r["lo"], r["hi"]) for r in t["processbench_f1"]] == [("a", 60.0, 72.0), ("critic_judge", 30.0, 45.0)]
    assert t["min_on_final_step"] == [{"prm": "a", "share": 40.0, "lo": 31.0, "hi": 49.0, "kind": "trained"}]
    # label quality: binomial over the audited responses (none in this fixture: no width)
    assert t["label_quality"] == [{"source": "mc", "first_error_accuracy": 70.0, "lo": 70.0, "hi": 70.0, "kind": "label source"}]


@pytest.mark.parametrize(("auc", "over", "met"),
                         [(0.86, {"product": [4.75, 0.75, 9.25], "min": [3.25, -0.75, 7.5]}, True),  # product clears maj
                          (0.86, {"product": [4.0, -0.5, 8.5], "min": [5.0, 0.25, 9.5]}, True),    # min clears it
                          (0.84, {"product": [9.0, 5.0, 13.0], "min": [9.0, 5.0, 13.0]}, False),  # AUC below 0.85
                          (0.90, {"product": [3.0, -1.0, 7.0], "min": [2.0, -2.0, 6.0]}, False),  # above maj, not surely
                          (0.90, {"product": [3.0, 0.0, 7.0], "last": [9.0, 5.0, 13.0]}, False),  # lo = 0 is not above;
                          (None, {"product": [9.0, 5.0, 13.0]}, None),                            # `last` is no target
                          (0.90, {}, None)])
def test_issue_26_targets_need_the_auc_and_an_interval_above_maj(auc, over, met):
    from prmlab.report.study import meets_exact_label_targets

    assert meets_exact_label_targets(auc, {agg: over.get(agg) for agg in ("product", "min")}) is met


def _oracles(d, oracle: tuple, ceiling: tuple | None):
    """eval_bon/eval_processbench metrics with the oracle PRM (and the ceiling's) as (step AUC, over_maj)."""
    pb = _metrics(d)
    bon = json.loads((d / "eval_bon.json").read_text())
    bon["over_maj"] = {"a": {"product": [1.0, -3.0, 5.0]}}
    for name, got in (("oracle", oracle), ("oracle_ceiling", ceiling)):
        if got:
            bon["results"][name] = {"A": {"prm_product": 70.0}, "average": {"prm_product": 70.0}}
            bon["over_maj"][name] = {"product": got[1], "min": got[1], "last": got[1]}
            pb["models"][f"prm/{name}"] = pb["models"]["prm/a"] | {"step_auc": {"toy": got[0], "heldout_average": got[0]}}
    (d / "eval_bon.json").write_text(json.dumps(bon))
    (d / "eval_processbench.json").write_text(json.dumps(pb))
    if ceiling:
        (d / "ceiling.json").write_text(json.dumps({"problems": 5760, "n": 2, "distinct_responses": 7751, "optimizer_steps": 8000}))


def test_report_judges_the_oracle_and_its_ceiling_by_issue_26_and_flags_weak_prms(tmp_path):
    _oracles(tmp_path, (0.764, [-2.9, -6.0, 0.2]), (0.893, [9.0, 6.0, 12.0]))
    md = _build(tmp_path)
    assert "### The PRMs trained on exact labels against issue #26's targets" in md
    assert "| oracle | 0.764 | -2.9 [-6.0, +0.2] | -2.9 [-6.0, +0.2] | **missed** |" in md
    assert "| oracle_ceiling | 0.893 | +9.0 [+6.0, +12.0] | +9.0 [+6.0, +12.0] | met |" in md
    assert "5760 problems x 2 responses, 7751 distinct, 8000 optimizer steps" in md and "+1.0 [-3.0, +5.0]" not in md  # only PRMs on exact labels
    assert "**Weak PRMs.**" in md and "At the ceiling's budget the recipe meets them" in md


def test_report_raises_no_weak_prm_flag_when_the_oracle_meets_the_targets(tmp_path):
    _oracles(tmp_path, (0.86, [4.0, 0.5, 8.0]), None)
    md = _build(tmp_path)
    assert "| oracle | 0.860 | +4.0 [+0.5, +8.0] | +4.0 [+0.5, +8.0] | met |" in md
    assert "**Weak PRMs.**" not in md and "oracle_ceiling" not in md


def test_report_without_an_oracle_prm_raises_no_prm_flag(tmp_path):
    _metrics(tmp_path)
    assert "**Weak PRMs.**" not in _build(tmp_path)


def test_study_metrics_are_the_few_numbers_dvc_shows():
    from prmlab.report.study import study_metrics

    h = {"processbench_f1": {"mc_hard": 30.1, "judge": 35.2, "human": 40.3, "oracle": 60.0, "critic_judge": 80.0},
         "consensus_kept": 71.5, "best_of_n": {"maj": 60.0}}
    recs = [{"verdict": "reproduced"}, {"verdict": "reproduced"}, {"verdict": "inconclusive"}, {"verdict": "not reproduced"}]
    # no seeds of this study: this run's counts alone ("+": reproduced, "-": not reproduced, "?": inconclusive), one seed
    assert study_metrics(h, recs) == {"one_seed": "2+ 1- 1?", "seeds": 1,
                                      "f1": {"mc_hard": 30.1, "judge": 35.2, "human": 40.3}, "kept": 71.5}
    # with them: the counts across seeds beside this run's
    g = {"seeds": 6, "across_seeds": [{"verdict": "reproduced"}] * 3 + [{"verdict": "inconclusive"}]}
    assert study_metrics(h, recs, g) == {"across_seeds": "3+ 0- 1?", "one_seed": "2+ 1- 1?", "seeds": 6,
                                         "f1": {"mc_hard": 30.1, "judge": 35.2, "human": 40.3}, "kept": 71.5}
    # the paper profile: PRM800K is the human-label PRM; no toy consensus share
    assert study_metrics({"processbench_f1": {"mc_hard": 1.0, "prm800k": 2.0}}, [])["f1"] == {"mc_hard": 1.0, "prm800k": 2.0}


# ------------------------------------------------------------------------------------------------
# The study at a glance: verdicts across seeds first where reports/seeds.json holds this run's study's,
# verdict first, the claim short, one interval a cell, marks that need no emoji font; this run's one seed below.

# records carry their entry's claim (prmlab.analysis.findings.FINDINGS), as the report writes them
INFLATION_CLAIM = next(f.claim for f in FINDINGS if f.id == "inflation")
ONE_SEED = [{"id": "hard_soft", "claim": "Before filtering, hard and soft MC labels are equal", "verdict": "inconclusive",
             "paper": "Fig. 3-4", "ours": "-3.5", "estimates": {"f1_hard_minus_soft": [-3.5, -6.1, -0.9]}},
            {"id": "inflation", "claim": INFLATION_CLAIM, "verdict": "reproduced",
             "paper": "Fig. 6-7", "ours": "1.3", "estimates": {"inflation_excess_judge": [-1.1, -2.0, -0.2],
                                                "inflation_excess_mc_hard": [1.3, 0.1, 2.6]}}]


def _est(points, lo, hi):
    m = sum(points) / len(points)
    return {"mean": m, "lo": lo, "hi": hi, "half_width": (hi - lo) / 2, "seeds": len(points), "points": points,
            "within_seed_lo": lo - 1, "within_seed_hi": hi + 1, "paper_effect": None}


def _seeds(seed0_mc_hard=1.3, pending=None):
    """A hand-made reports/seeds.json: two seeds, seed 0's points those of ONE_SEED (unless told otherwise)."""
    if pending:
        return {"commit": "abc1234", "runs": {"seed-0": "abc1234"}, "ran": {"seed-0": "x"}, "pending": pending, "findings": []}
    agg = [{"id": "hard_soft", "claim": ONE_SEED[0]["claim"], "paper": "Fig. 3-4", "seeds": 2, "verdict": "reproduced",
            "estimates": {"f1_hard_minus_soft": _est([-3.5, 0.5], -2.6, 0.4)}, "holds_on_every_seed": False,
            "per_seed_verdicts": ["inconclusive", "reproduced"], "why_inconclusive": ""},
           {"id": "inflation", "claim": ONE_SEED[1]["claim"], "paper": "Fig. 6-7", "seeds": 2, "verdict": "inconclusive",
            "estimates": {"inflation_excess_judge": _est([-1.1, -0.9], -1.8, -0.2),
                          "inflation_excess_mc_hard": _est([seed0_mc_hard, 0.1], -0.4, 1.9)},
            "holds_on_every_seed": False, "per_seed_verdicts": ["reproduced", "inconclusive"], "why_inconclusive": "wide"}]
    return {"commit": "abc1234", "runs": {"seed-0": "abc1234", "seed-1": "abc1234"}, "ran": {"seed-0": "x", "seed-1": "y"},
            "wall_seconds": None, "findings": agg}


def test_summary_leads_with_the_verdicts_across_seeds_of_this_run(tmp_path):
    from prmlab.report.study import summary

    md = "\n".join(summary(ONE_SEED, _seeds()))
    assert md.isascii()  # marks that render without an emoji font
    across, one = md.index("**The study, across 2 seeds**"), md.index("This run alone (seed 0 of those, the development seed; one seed)")
    assert across < one
    # verdict first, the claim short, the deciding estimate with its mean and its interval in cells of their own
    assert "| verdict | claim | deciding estimate | mean over seeds | 95% interval across seeds |" in md
    assert "| [+] reproduced | hard = soft MC labels (unfiltered) | F1: hard - soft | -1.5 | [-2.6, 0.4] |" in md
    assert "| [?] inconclusive | flawed right answers inflate Best-of-N | excess over random: mc hard | 0.7 | [-0.4, 1.9] |" in md
    assert md.index("| [+] reproduced | hard = soft") < one < md.index("| [?] inconclusive | hard = soft")  # seed 0's below
    assert "| [+] reproduced | flawed right answers inflate Best-of-N | excess over random: mc hard | 1.3 | [0.1, 2.6] |" in md
    assert "1 reproduced, 0 not reproduced, 1 inconclusive" in md
    # reports/seeds.md linked (the report is reports/report.md) and its table of every estimate shown
    assert "](seeds.md)" in md and "| finding | estimate | mean | 95% across seeds |" in md and "| inflation_excess_judge |" in md
    # the page: the same, the link kept
    _metrics(tmp_path)
    page = _build(tmp_path, recs=ONE_SEED, seeds=_seeds())
    assert page.index("## Summary") < page.index("**The study, across 2 seeds**") and 'href="seeds.md"' in to_html(page)
    assert "✅" not in page and "❌" not in page and "❔" not in page


@pytest.mark.parametrize(("seeds", "why"), [(None, "no seeds have run"),
                                            (_seeds(seed0_mc_hard=2.2), "are another run's"),
                                            (_seeds(pending={"seed-1": "not run"}), "the seeds are pending (1 of 2")])
def test_without_this_runs_seeds_the_summary_is_one_seed_labelled_so(seeds, why):
    from prmlab.report.seeds import glance
    from prmlab.report.study import summary

    md = "\n".join(summary(ONE_SEED, seeds))
    assert "across 2 seeds" not in md and "| finding | estimate | mean | 95% across seeds |" not in md
    assert "**This run, one seed** (no verdicts across seeds: " in md and why in md, md
    assert "| verdict (one seed) | claim | deciding estimate | this run | 95% bootstrap interval |" in md
    assert "| [?] inconclusive | hard = soft MC labels (unfiltered) | F1: hard - soft | -3.5 | [-6.1, -0.9] |" in md
    assert "](seeds.md)" in md and md.isascii()
    g = glance(ONE_SEED, seeds)
    assert g["seeds"] == 1 and g["across_seeds"] == [] and why in g["why_one_seed"]


def test_the_prefect_artifact_leads_with_the_glance(tmp_path):
    from prmlab.report.dashboards import study_artifact
    from prmlab.report.seeds import glance

    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "findings.json").write_text(json.dumps({"findings": ONE_SEED, "glance": glance(ONE_SEED, _seeds())}))
    art = study_artifact(tmp_path, {"report": "http://x/runs/1"})
    assert art.isascii() and art.index("**The study, across 2 seeds**") < art.index("This run alone")
    assert "| [+] reproduced | hard = soft MC labels (unfiltered) | F1: hard - soft | -1.5 | [-2.6, 0.4] |" in art
    assert ONE_SEED[1]["claim"] not in art  # the claim short: the verdict column stays on screen
    assert "- [report](http://x/runs/1)" in art
    # a findings file written before the glance: this run's verdicts, one seed
    (tmp_path / "reports" / "findings.json").write_text(json.dumps({"findings": ONE_SEED}))
    assert "**This run, one seed**" in study_artifact(tmp_path, {})


def test_best_of_n_table_and_prm_results_carry_the_within_problem_auc(tmp_path):
    from prmlab.report.study import prm_results

    _metrics(tmp_path)
    md = _build(tmp_path)
    assert "| a prm@4 (product) | 75 | - | 0.750 |" in md and "| maj@4 | 50 | - | - |" in md
    assert prm_results(load_metrics(tmp_path))["a"]["eval.bon_within_problem_auc_product"] == 0.75


def test_sweep_page_gives_each_value_its_mean_and_interval_over_seeds():
    """reports/sweeps/<key>.md from hand-made points: 0.7 on seeds 0, 1 (MC accuracy 80 and 84: mean 82, sd 2.83,
    t(1 df) 12.706 x 2.83 / sqrt(2) = +-25.4); 1.3, the study's value, on seed 0 alone (its value, no interval)."""
    from prmlab.report.sweep import point_measures, sweep_page

    def point(v, k, acc, gap):
        return {"value": v, "seed": k, "measures": {"mc_first_error_accuracy": acc, "f1_judge_minus_mc": gap}}

    rec, md = sweep_page("label_mc.temperature", 1.3, [point(0.7, 1, 84.0, [2.0, 1.0, 3.0]), point(0.7, 0, 80.0, [4.0, 3.0, 5.0]),
                                                        point(1.3, 0, 59.4, [10.8, 6.0, 15.6])])
    a = rec["values"]["0.7"]["mc_first_error_accuracy"]
    assert a["mean"] == 82.0 and a["seeds"] == 2 and abs(a["hi"] - 82.0 - 12.706 * 8 ** 0.5 / 2 ** 0.5) < 1e-9
    assert rec["values"]["0.7"]["seeds"] == [0, 1] and rec["values"]["1.3"]["f1_judge_minus_mc"]["mean"] == 10.8
    assert "| 1.3 (the study) | 0 | 59.4 |" in md and "| 0.7 | 0, 1 | 82.0 [" in md
    # measures of one study: the consensus audit's first-error accuracies (as %) and the findings' Table 4 estimate
    m = point_measures({"findings": [{"id": "mc_judge", "estimates": {"f1_judge_minus_mc": [6.0, 1.0, 11.0]}}]},
                       {"consensus_kept_share": 0.55, "audit": {"mc": {"first_error_accuracy": 0.594},
                                                                "judge": {"first_error_accuracy": 0.833}}})
    assert m.pop("f1_judge_minus_mc") == [6.0, 1.0, 11.0]
    assert m == pytest.approx({"mc_first_error_accuracy": 59.4, "judge_first_error_accuracy": 83.3, "consensus_kept": 55.0})


def test_prmlab_metrics_leads_with_the_studys_verdicts(tmp_path):
    """`prmlab metrics`: the verdicts of the report's glance first (across seeds where there are, the development
    seed's counts below them; else one seed's), then the headline numbers; a broken findings.json is one line naming it."""
    from prmlab.core.io import DataError
    from prmlab.report.dashboards import headline_text

    def row(verdict, claim):
        return {"id": claim, "verdict": verdict, "claim": claim, "estimate": "F1: a - b", "value": 2.0, "lo": 1.0, "hi": 3.0}

    head = tmp_path / "headline.json"
    head.write_text(json.dumps({"policy_accuracy": 61.6}))
    assert headline_text(head) == "policy_accuracy  61.6"  # no findings.json beside it: the numbers alone
    g = {"seeds": 6, "commit": "abc1234", "confirmation": True, "why_one_seed": None,
         "across_seeds": [row("reproduced", "x"), row("inconclusive", "y")], "one_seed": [row("reproduced", "x")]}
    (tmp_path / "findings.json").write_text(json.dumps({"findings": [], "glance": g}))
    lines = headline_text(head).splitlines()
    assert lines[0] == ("The study, across 6 seeds (commit abc1234; reports/seeds.md): 1 reproduced, 0 not reproduced, "
                        "1 inconclusive.")
    assert lines[1].startswith("[+] reproduced ") and lines[1].endswith(" F1: a - b  2.0 [1.0, 3.0]")
    assert lines[2].startswith("[?] inconclusive ") and lines[3].startswith("The development seed 0 alone, never counted")
    assert lines[4:] == ["", "policy_accuracy  61.6"]
    g1 = {**g, "seeds": 1, "commit": None, "why_one_seed": "the seeds are pending", "across_seeds": []}
    (tmp_path / "findings.json").write_text(json.dumps({"findings": [], "glance": g1}))
    assert headline_text(head).splitlines()[:2] == [
        "This run, one seed (no verdicts across seeds: the seeds are pending): 1 reproduced, 0 not reproduced, 0 inconclusive.",
        "[+] reproduced  x  F1: a - b  2.0 [1.0, 3.0]"]
    (tmp_path / "findings.json").write_text('{"glance": ')
    with pytest.raises(DataError, match=r"findings\.json is not valid JSON"):
        headline_text(head)
