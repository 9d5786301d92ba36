"""Stage report: the paper-shaped tables, figures and a findings table, rebuilt from metrics files.

Tables: released step labels converted (PRM800K, Math-Shepherd), label quality by source, ProcessBench like the PRM paper's Table 7, flawed-process accuracy
like Table 5, Best-of-N like Table 6 and against N, min-score position (Fig. 8). Figures (PNG): min-score
position bars and histogram, BoN vs ProcessBench per label source, label precision/recall, Best-of-N
accuracy against N, ProcessBench error/correct-sample accuracy per model, the findings' intervals (the
last three also logged to the report's MLflow run). The findings
table sets each of the paper's claims beside its number and ours, and says plainly whether ours
reproduces it.

Inputs: --metrics-dir (every stage's metrics JSON; only the files of this profile's stages and of
`train_prm.sources` are read, so metrics left by another profile never mix in). Params: `profile`,
`train_prm.sources`. Outputs: --out (Markdown), --figures folder.
Run: python -m stages.report --metrics-dir metrics --out reports/report.md --figures reports/figures
"""

from __future__ import annotations

from pathlib import Path

from prmlab.io import DataError, atomic_write_text, read_json, write_json
from prmlab.params import ParamsError, ProfileConfig, load_params, read_params
from prmlab.tracking import stage_run, summary

# ProcessBench average F1 as the PRM paper reports it (Table 4: PRMs trained on the same 860k responses;
# Table 7: released PRMs).
PAPER_PB = {"Qwen2.5-Math-PRM-7B (Table 7)": 73.5, "Math-Shepherd-PRM-7B (Table 7)": 31.5,
            "MC estimation (Table 4)": 40.1, "LLM-as-a-judge (Table 4)": 46.5, "human, PRM800K (Table 4)": 56.5}
# The paper's PRM trained on the same kind of labels as each of our sources: (row, ProcessBench avg. F1,
# Best-of-8 avg. accuracy or None). Table 3's Math-Shepherd row is a PRM trained on its released 440k set.
PAPER_BY_SOURCE = {"mc_hard": ("MC estimation (Table 4)", 40.1, None), "judge": ("LLM-as-a-judge (Table 4)", 46.5, None),
                   "prm800k": ("human annotation, PRM800K (Table 4)", 56.5, None),
                   "human": ("human annotation, PRM800K (Table 4; the toy's analogue)", 56.5, None),
                   "math_shepherd": ("MC Math-Shepherd 440k (Table 3)", 28.9, 64.3)}


def _load(d: Path, name: str) -> dict:
    p = d / f"{name}.json"
    return read_json(p) if p.exists() else {}


def fmt(x, nd=1) -> str:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    return f"{x:.3f}" if abs(x) < 1 else f"{x:.{nd}f}"  # shares keep 3 decimals, percentages 1


def table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


# Where our Best-of-N protocol differs from Qwen2.5-Math's evaluation (Table 6 of the paper).
PROTOCOL_NOTES = [
    "Every benchmark is asked zero-shot with the Qwen2.5-Math-Instruct CoT chat prompt (system: reason step by step, "
    "answer in \\boxed{}); Qwen's harness has benchmark-specific prompt types.",
    "MMLU STEM is asked zero-shot as a multiple-choice question with the options listed as (A)-(D) and graded on the letter.",
    "MATH is the full 5,000-problem test set in its original per-problem files (`real.eval.math`); MATH500 can be named instead.",
    "Answers are compared with math-verify (`verify(gold, pred)`), not Qwen's own grader.",
]


def mean_f1(t: dict, subsets: list[str]) -> float:
    return sum(t[s]["f1"] for s in subsets) / len(subsets)


def findings_records(pbm: dict, pb_scores: Path | None, bon_scores: Path | None, cons: dict, n_boot: int) -> list[dict]:
    from prmlab.findings import Findings
    from prmlab.io import read_jsonl

    if not pbm or not pb_scores or not bon_scores or not Path(pb_scores).exists() or not Path(bon_scores).exists():
        return []
    subsets = list(pbm["items"])
    tune = next((v["tuned"].get("threshold_subset") for v in pbm["models"].values() if "tuned" in v), None)
    pb_rows = [r for r in read_jsonl(pb_scores) if "step_scores" in r]
    f = Findings(pb_rows, subsets, tune, read_jsonl(bon_scores), cons, n_boot=n_boot)
    return f.records()


def _figure(fig, figdir: Path, name: str, run, alt: str) -> str:
    """Save a figure under the report's figures folder, log it to the report's MLflow run (when there is
    one), and return its Markdown line."""
    fig.savefig(figdir / name, dpi=110)
    if run is not None:
        run.figure(fig, f"figures/{name}")
    return f"![{alt}](figures/{name})"


def error_correct(models: dict, subsets: list[str]) -> dict[str, tuple[float, float]]:
    """Per model: (error-sample, correct-sample) accuracy averaged over `subsets`, unweighted as the F1
    headline is; a PRM at its tuned threshold (the critic has none)."""
    return {name: tuple(sum(res.get("tuned", res)[s][k] for s in subsets) / len(subsets)
                        for k in ("error_acc", "correct_acc")) for name, res in models.items()}


def table6(res: dict, n: int) -> str:
    """Per-benchmark accuracy, rows per method, like the paper's Table 6."""
    benches = [b for b in res["baselines"] if b != "average"]
    rows = [[f"maj@{n}", *[res["baselines"][b]["maj"] for b in benches], res["baselines"]["average"]["maj"]],
            [f"pass@{n}", *[res["baselines"][b]["pass"] for b in benches], res["baselines"]["average"]["pass"]]]
    for name, t in res.items():
        if name != "baselines" and "prm_product" in t.get("average", {}):
            rows.append([f"{name} prm@{n} (product)", *[t[b].get("prm_product", "-") for b in benches],
                         t["average"]["prm_product"]])
    return table(["method", *benches, "avg"], rows)


def pb_heldout_f1(res: dict, held: list[str]) -> float | None:
    """A ProcessBench model's headline F1: over the subsets its threshold was not tuned on (a critic has none)."""
    t = res.get("tuned", res)
    if "tuned" in res:
        return t.get("heldout_average_f1")
    return mean_f1(t, held) if held else t.get("average_f1")


def _auc(res: dict, held: list[str]):
    """A PRM's step AUC, averaged over the held-out subsets (all if none is held out); '-' for a critic."""
    auc = res.get("step_auc")
    if not auc:
        return "-"
    if held:  # eval_processbench averaged them already
        return "-" if auc["heldout_average"] is None else f"{auc['heldout_average']:.3f}"
    vals = [v for k, v in auc.items() if k != "heldout_average" and v is not None]
    return f"{sum(vals) / len(vals):.3f}" if vals else "-"


def weak_prm_note(bon: dict, pbm: dict, n: int) -> list[str]:
    """A flag when even the PRM trained on exact labels (toy `oracle`) has not learned them: it picks
    no better than a random pick or maj@N, or its step AUC is under 0.8 (issue #19's bar). The comparisons between PRMs
    then say more about training budget than about label sources."""
    o = bon.get("oracle", {}).get("average", {}).get("prm_product")
    rnd, maj = bon["baselines"]["average"].get("random"), bon["baselines"]["average"].get("maj")
    auc = (pbm.get("models", {}).get("prm/oracle", {}).get("step_auc") or {}).get("heldout_average")
    if o is None or rnd is None:
        return []
    weak = o <= max(rnd, maj) or (auc is not None and auc < 0.8)
    if not weak:
        return []
    return [f"**Weak PRMs.** The oracle PRM, trained on the verifier's exact labels, picks {o:.1f}% against "
            f"{rnd:.1f}% for a random pick and {maj:.1f}% for maj@{n}"
            + (f"; its step AUC is {auc:.2f} (bar: 0.8)" if auc is not None else "")
            + ". The PRMs have not fully learned even exact labels with this training budget, so differences between "
              "label sources below are weaker evidence than their intervals suggest. What closes it is distinct training "
              "responses together with optimizer steps (more steps alone memorise): reports/benchmarks.md has the "
              "measured budgets and minutes, docs/DESIGN.md the levers tried.", ""]


def study_metrics(h: dict, recs: list[dict]) -> dict:
    """reports/metrics.json, the one file DVC declares as metrics: a handful of numbers that fit a
    120-column `dvc metrics show` / `dvc exp show` (the headline and the detailed files hold the rest):
    the verdict counts, held-out F1 of the MC, judge and human-label PRMs, and consensus's kept share."""
    from collections import Counter

    counts = Counter(f["verdict"] for f in recs)
    f1 = h.get("processbench_f1", {})
    human = next((n for n in ("prm800k", "human") if n in f1), None)
    out = {"reproduced": counts.get("reproduced", 0), "inconclusive": counts.get("inconclusive", 0),
           "not_reproduced": counts.get("not reproduced", 0),
           "f1": {k: f1[k] for k in ("mc_hard", "judge", human) if k and f1.get(k) is not None}}
    if h.get("consensus_kept") is not None:
        out["kept"] = h["consensus_kept"]
    return out


def headline(mdir: Path, profile: str = "toy") -> dict:
    """The numbers a reader wants first, from the metrics files: reports/headline.json, which `prmlab
    metrics` prints a line each (the detailed files stay as they are; reports/metrics.json is DVC's)."""
    r1 = lambda x: None if x is None else round(float(x), 1)  # noqa: E731
    h: dict = {}
    sample, cons = _load(mdir, "sample"), _load(mdir, "consensus")
    if sample.get("accuracy") is not None:
        h["policy_accuracy"] = r1(100 * sample["accuracy"])
    boot = _load(mdir, "train_judge") if profile == "toy" else {}
    if boot:
        h["judge_first_error_accuracy"] = r1(100 * boot["judge_first_error_accuracy"])
        h["judge_baseline_always_no_error"] = r1(100 * boot["judge_baseline_always_none"])
    if cons.get("consensus_kept_share") is not None:
        h["consensus_kept"] = r1(100 * cons["consensus_kept_share"])
    if cons.get("audit"):
        h["label_first_error_accuracy"] = {s: r1(100 * a["first_error_accuracy"]) for s, a in cons["audit"].items()}
    pbm = _load(mdir, "eval_processbench")
    if pbm.get("models"):
        models = pbm["models"]
        tune = next((v["tuned"].get("threshold_subset") for v in models.values() if "tuned" in v), None)
        held = [x for x in pbm["items"] if x != tune]
        # PRMs by label source; the judge evaluated as a critic apart from the PRM trained on its labels.
        key = lambda name: name[4:] if name.startswith("prm/") else name.replace("critic/", "critic_")  # noqa: E731
        h["processbench_f1"] = {key(name): r1(pb_heldout_f1(res, held)) for name, res in models.items()}
        auc = {key(name): res["step_auc"]["heldout_average"] for name, res in models.items() if "step_auc" in res}
        if auc:  # a PRM's threshold-free step AUC (0-1; issue #19's target for the oracle PRM: >= 0.8)
            h["processbench_step_auc"] = {k: None if v is None else round(v, 3) for k, v in auc.items()}
    bonm = _load(mdir, "eval_bon")
    if bonm.get("results"):
        n, res = bonm["n"], bonm["results"]
        # One key whatever eval_bon.n is, so `dvc exp show` keeps its columns across a sweep of N.
        h["best_of_n"] = {"n": n} | {k: r1(v) for k, v in res["baselines"]["average"].items() if k in ("maj", "pass", "random")}
        h["best_of_n"] |= {name: r1(t["average"].get("prm_product")) for name, t in res.items() if name != "baselines"}
    bias = _load(mdir, "analyze_bias")
    if bias.get("prms"):
        h["min_on_final_step_share"] = {k: r1(v["min_on_last_step_all"]) for k, v in bias["prms"].items()}
    return h


VERDICT_MARKS = {"reproduced": "✅ reproduced", "not reproduced": "❌ not reproduced", "inconclusive": "❔ inconclusive"}
# The toy models' measures worth a reader's eye, in words (metrics/bootstrap.json, metrics/train_judge.json).
BOOT_LABELS = {"policy_accuracy": "policy: final-answer accuracy (fraction)",
               "policy_flawed_correct_share": "policy: right answers through a wrong step (fraction of responses)",
               "policy_first_error_slip_share": "policy: first error an arithmetic slip (fraction)",
               "policy_first_error_operand_share": "policy: first error a misread quantity (fraction)",
               "judge_first_error_accuracy": "judge: first-error accuracy on the policy's responses",
               "judge_baseline_always_none": "judge baseline: always answering 'no error'",
               "judge_accuracy_on_erroneous": "judge: accuracy on erroneous responses",
               "judge_accuracy_on_correct": "judge: accuracy on error-free responses",
               "judge_unparsed_share": "judge: replies it could not parse (fraction)",
               "base_params": "parameters per model", "eval_problems": "held-out problems measured on",
               "base_train_seconds": "base LM training (s)", "judge_train_seconds": "judge training (s)"}


def mark(verdict: str) -> str:
    return VERDICT_MARKS.get(verdict, verdict)


def summary_section(recs: list[dict]) -> list[str]:
    """What reproduced and what did not, first: a verdict count, then each claim with its estimates."""
    if not recs:
        return []
    from collections import Counter

    from prmlab.plots import estimate_label

    counts = Counter(f["verdict"] for f in recs)

    def est(f: dict) -> str:
        return "; ".join(f"{estimate_label(k)} {v[0]:.1f} [{v[1]:.1f}, {v[2]:.1f}]" for k, v in f["estimates"].items())

    return ["## Summary", "",
            f"Of the paper's {len(recs)} claims tested here: {counts.get('reproduced', 0)} reproduced, "
            f"{counts.get('not reproduced', 0)} not reproduced, {counts.get('inconclusive', 0)} inconclusive "
            "(95% bootstrap intervals, one seed; the paper's quotes, the tests and the interval widths are under "
            "\"Findings in detail\" below; the spread over seeds is reports/seeds.md once `make study-seeds SEEDS=3` has "
            "run on this study: it names the commit whose study it covers).", "",
            table(["claim", "estimate [95% interval], points", "verdict"], [[f["claim"], est(f), mark(f["verdict"])] for f in recs]),
            ""]


def run_links(run) -> dict[str, str]:
    """{stage: MLflow UI URL of its latest finished run}, for the report's links (`make ui` serves them
    at PRMLAB_UI_URL, default http://127.0.0.1:5000)."""
    if run is None:
        return {}
    import os

    base = os.environ.get("PRMLAB_UI_URL", "http://127.0.0.1:5000").rstrip("/")
    eid = run.run.info.experiment_id
    return {name: f"{base}/#/experiments/{eid}/runs/{rid}" for name, rid in run.stage_runs().items()}


def prm_results(mdir: Path) -> dict[str, dict[str, float]]:
    """Each PRM's evaluation results, as the eval stages and analyze_bias wrote them: held-out ProcessBench
    F1 and step AUC, Best-of-N accuracy and within-problem AUC per aggregation, min-on-final-step share."""
    pbm, bonm, bias = _load(mdir, "eval_processbench"), _load(mdir, "eval_bon"), _load(mdir, "analyze_bias")
    out: dict[str, dict[str, float]] = {}
    for key, m in (pbm.get("models") or {}).items():
        if key.startswith("prm/"):
            out.setdefault(key[4:], {}).update({"eval.processbench_heldout_f1": m["tuned"].get("heldout_average_f1"),
                                                "eval.processbench_heldout_step_auc": m.get("step_auc", {}).get("heldout_average")})
    for name, r in (bonm.get("results") or {}).items():
        for k, v in (r.get("average") or {}).items():
            if k.startswith("prm_") and not k.endswith("_process_verified"):
                out.setdefault(name, {})[f"eval.bon_{k[4:]}"] = v
    for name, by_agg in (bonm.get("within_problem_auc") or {}).items():
        for agg, v in by_agg.items():
            out.setdefault(name, {})[f"eval.bon_within_problem_auc_{agg}"] = v
    for name, v in (bias.get("prms") or {}).items():
        out.setdefault(name, {})["eval.min_on_final_step_pct"] = v.get("min_on_last_step_all")
    return {n: {k: float(v) for k, v in m.items() if isinstance(v, (int, float))} for n, m in out.items()}


def log_prm_results(run, results: dict[str, dict[str, float]]) -> list[str]:
    """Each PRM's evaluation results onto its own train_prm@<source> run and that run's logged model, so
    MLflow's runs table and compare view rank the PRMs by quality, not by training loss. Returns the
    sources logged (a reference PRM has no training run here)."""
    if run is None:
        return []
    import mlflow

    client, runs, done = mlflow.MlflowClient(), run.stage_runs(), []
    for name, metrics in results.items():
        rid = runs.get(f"train_prm@{name}")
        if rid is None or not metrics:
            continue
        exp = client.get_run(rid).info.experiment_id
        models = mlflow.search_logged_models(experiment_ids=[exp], filter_string=f"source_run_id = '{rid}'",
                                             output_format="list")
        for k, v in metrics.items():
            client.log_metric(rid, k, v, step=0)
            for lm in models:
                client.log_metric(rid, k, v, step=0, model_id=lm.model_id)
        # The model as the run's output, so the run page's "Logged models" field names it (creating it
        # with source_run_id links it one way only: the runs table shows it, the run page did not).
        from mlflow.entities import LoggedModelOutput

        linked = {o.model_id for o in (client.get_run(rid).outputs.model_outputs or [])} if models else set()
        new = [LoggedModelOutput(lm.model_id, 0) for lm in models if lm.model_id not in linked]
        if new:  # once: a report rerun (dvc exp run) must not link the same model again (a unique key)
            client.log_outputs(rid, new)
        done.append(name)
    return done


def to_html(md: str) -> str:
    """reports/report.html: the report as a page (tables, images beside it in figures/); MLflow's artifact
    view shows markdown image links as text, a page it renders."""
    import markdown

    body = markdown.markdown(md, extensions=["tables", "fenced_code"])
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.45}"
             "table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px;"
             "vertical-align:top}th{background:#f3f3f3}img{max-width:100%}code{background:#f6f6f6}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>prmlab report</title><style>{style}</style>"
            f"</head><body>\n{body}\n</body></html>\n")


def provenance(run) -> str:
    """Where every number came from: the commit and the MLflow runs (`make ui`, experiment page)."""
    import os

    from prmlab.tracking import git_commit

    parent = os.environ.get("PRMLAB_PARENT_RUN_ID")
    links = run_links(run)
    rows = [[name, f"[`{rid}`]({links[name]})"] for name, rid in run.stage_runs().items() if name != "report"]
    return "\n".join(["", "## Provenance", "",
                      f"Commit `{git_commit()}`; this report's MLflow run `{run.id}`"
                      + (f", under the flow run `{parent}`" if parent else "") + ". The latest finished run of each stage "
                      "in the same MLflow experiment (`make ui`):", "", table(["stage", "MLflow run id"], rows), ""])


def plot_tables(mdir: Path, h: dict) -> dict[str, list[dict]]:
    """The data behind dvc.yaml's plots (reports/plots/<name>.json), rows DVC renders and `dvc plots
    diff` overlays across experiments: Best-of-N against N, ProcessBench F1, Best-of-N per method,
    label quality per source, min-score position. From the headline and eval_bon's `by_n`."""
    from prmlab import plots

    rows = lambda d, key, val: [{key: k, val: v} for k, v in (d or {}).items() if v is not None]  # noqa: E731
    bon = dict(h.get("best_of_n", {}))
    bon.pop("n", None)
    bonm = _load(mdir, "eval_bon")
    n_problems = bonm.get("problems", 0)

    def interval(acc: float) -> dict:
        """A binomial 95% interval (normal approximation) over the Best-of-N problems, in points: the error bars."""
        half = plots.binomial_half_width(acc, n_problems)
        return {"lo": max(acc - half, 0.0), "hi": min(acc + half, 100.0)}

    # Long rows, one per (N, method): DVC's plot colours each method (a wide row per N drew every method
    # in one colour, told apart by dash patterns only).
    by_n = [{"n": r["n"], "method": k, "accuracy": v, **interval(v)}
            for r in bonm.get("by_n", []) for k, v in r.items() if k != "n" and v is not None]
    return {"bon_by_n": by_n,
            "bon_accuracy": [dict(r, **interval(r["accuracy"])) for r in rows(bon, "method", "accuracy")],
            "processbench_f1": rows(h.get("processbench_f1"), "model", "f1"),
            "label_quality": rows(h.get("label_first_error_accuracy"), "source", "first_error_accuracy"),
            "min_on_final_step": rows(h.get("min_on_final_step_share"), "prm", "share")}


def judge_example(samples: Path, labels: Path, max_chars: int = 3000) -> list[str]:
    """One judged response with an error and the judge's reply, verbatim: the reply format a reader
    should see (the toy judge writes a check per paragraph before its verdict, as the paper's does)."""
    from prmlab.io import read_jsonl
    from prmlab.records import JudgeLabel, Response

    resp = {r.response_id: r for r in read_jsonl(samples, Response)}
    picks = [(resp[j.response_id], j) for j in read_jsonl(labels, JudgeLabel) if j.parsed and j.response_id in resp]
    # The first response the verifier (toy) or else the judge says is wrong, so the reply shows a check failing.
    wrong = [(r, j) for r, j in picks if (r.true_first_error if r.true_first_error is not None else j.first_error) not in (-1, None)]
    if not (wrong or picks):
        return []
    r, j = (wrong or picks)[0]
    reply = j.raw[0] if j.raw else ""
    cut = f"\n... ({len(reply) - max_chars} more characters)" if len(reply) > max_chars else ""
    truth = f"; the verifier's: {r.true_first_error}" if r.true_first_error is not None else ""
    steps = "\n\n".join(f"[{i}] {s}" for i, s in enumerate(r.steps))
    return ["## The judge's reply format", "",
            f"Response `{r.response_id}` (steps numbered from 0), the judge's verdict {j.first_error}{truth}:", "",
            "```text", steps[:max_chars], "```", "", "Its reply, verbatim:", "", "```text", reply[:max_chars] + cut, "```", ""]


def build(mdir: Path, figdir: Path, run=None, profile: str = "toy", sources: list[str] | None = None,
          pb_scores: Path | None = None, bon_scores: Path | None = None, n_boot: int = 1000,
          findings_json: Path | None = None, example: list[str] | None = None) -> str:
    from prmlab import plots

    # Only this profile's metrics: a toy run's bootstrap.json must not show up in a real run's report.
    boot = (_load(mdir, "bootstrap") | _load(mdir, "train_judge")) if profile == "toy" else {}
    inputs = _load(mdir, "inputs") if profile == "real" else {}
    cons = _load(mdir, "consensus")
    pbm, bonm, bias = _load(mdir, "eval_processbench"), _load(mdir, "eval_bon"), _load(mdir, "analyze_bias")
    sample, mc, jd = _load(mdir, "sample"), _load(mdir, "label_mc"), _load(mdir, "label_judge")
    figdir.mkdir(parents=True, exist_ok=True)
    recs = findings_records(pbm, pb_scores, bon_scores, cons, n_boot)
    links = run_links(run)

    def see(*stages: str) -> list[str]:
        """The MLflow runs behind a section's numbers, as links (when the report runs under MLflow)."""
        got = [f"[{st}]({links[st]})" for st in stages if st in links]
        return [f"MLflow: {', '.join(got)}", ""] if got else []

    md = ["# prmlab report", "",
          "Rebuilt by `dvc repro` from the metrics files; every number below comes from this run. "
          "In the toy profile the models are tiny and the world is synthetic, so compare *directions* with the paper, not levels.", "",
          *summary_section(recs)]
    if inputs:
        md += ["## The data", "",
               f"{inputs['train_problems']} training problems (after removing {inputs.get('removed_total', 0)} that are "
               f"evaluation problems), {inputs['eval_problems']} Best-of-N problems, {inputs['processbench_items']} ProcessBench items; "
               "models: " + ", ".join(f"{k} {v}" for k, v in inputs.get("models", {}).items()) + ".", ""]
    if boot:
        md += ["## The toy models", "", "Measured on held-out problems by the exact verifier (bootstrap@toy: policy; "
               "train_judge@toy: the judge on the policy's responses).", "",
               table(["measure", "value"], [[BOOT_LABELS[k], boot[k]] for k in BOOT_LABELS if isinstance(boot.get(k), int | float)]), ""]
        jacc, jbase = boot.get("judge_first_error_accuracy"), boot.get("judge_baseline_always_none")
        if jacc is not None and jbase is not None and jacc < jbase + 0.05:
            md += [f"**Weak judge.** Its first-error accuracy ({jacc:.2f}) is not clearly above always answering -1 ({jbase:.2f}): "
                   "the judge and consensus labels, and every finding below built on them, come from a judge that finds few errors.", ""]
    md += example or []
    if sample:
        md += ["## Data synthesis", "", *see("sample", "label_mc", "label_judge", "consensus"),
               f"Sampled {sample.get('kept')} responses ({fmt(100 * sample.get('accuracy', 0))}% correct); "
               f"MC spent {mc.get('rollouts')} rollouts ({mc.get('truncated_rollouts', 0)} cut by a length limit, counted as failing); "
               f"the judge left {jd.get('unparsed')} answers unparsed ({jd.get('truncated_replies', 0)} replies cut by a length limit); "
               f"consensus kept {cons.get('agree')} of {cons.get('responses')} ({fmt(100 * cons.get('consensus_kept_share', 0))}%, paper: ~40%).", ""]
    human = {src: _load(mdir / "human_data", src) for src in (sources or []) if (mdir / "human_data" / f"{src}.json").exists()}
    if human:
        md += ["## Released step labels (PRM800K, Math-Shepherd)", "",
               "Converted by human_data@<source> (rules: src/prmlab/human_labels.py); examples whose problem is in an "
               "evaluation set were dropped.", "",
               table(["source", "rows", "skipped (quality control / screening / no rated step)", "examples",
                      "dropped as evaluation problems", "kept", "kept with a wrong step"],
                     [[src, h.get("rows", 0), f"{h.get('skipped_quality_control', 0)} / {h.get('skipped_screening', 0)} / "
                       f"{h.get('skipped_no_rated_step', 0)}", h.get("converted", 0), h.get("removed_total", 0),
                       h.get("examples", 0), h.get("with_wrong_step", 0)] for src, h in human.items()]), ""]
    audit = cons.get("audit") or {}
    if audit:
        md += ["## Label quality by source (against the exact verifier)", "",
               table(["source", "first-error acc", "precision (wrong)", "recall (wrong)", "missed errors", "false alarms", "responses"],
                     [[s, a["first_error_accuracy"], a["step_precision_wrong"], a["step_recall_wrong"], a["missed_error_rate"],
                       a["false_alarm_rate"], a["responses"]] for s, a in audit.items()]), ""]
        md += [_figure(plots.label_quality(audit), figdir, "label_quality.png", run, "label quality"), ""]
    by = cons.get("audit_by") or {}
    if by:
        def pct(x: float) -> str:
            return f"{100 * x:.1f}"

        md += ["### Where each labeller fails (the world's mechanisms)", "",
               "False alarm: a correct step called wrong (for MC: the completer fails from a good prefix, the paper's "
               "incorrect answers from correct steps); missed: a wrong step called right (for MC: later steps recover "
               "the answer, correct answers from wrong steps). Hard problems are longer and use larger numbers than "
               "the toy models trained on; error kinds are the verifier's first error (the judge is blind to "
               "`operand`, a misread quantity, where `toy_judge.blind_spots` says so). Percentages.", "",
               table(["responses", "n", "consensus keeps", "MC first-error acc", "MC false alarms", "MC missed",
                      "judge first-error acc", "judge false alarms", "judge missed"],
                     [[f"{group}: {name}", d["responses"], pct(d["consensus_kept_share"]),
                       pct(d["mc"]["first_error_accuracy"]), pct(d["mc"]["false_alarm_rate"]), pct(d["mc"]["missed_error_rate"]),
                       pct(d["judge"]["first_error_accuracy"]), pct(d["judge"]["false_alarm_rate"]),
                       pct(d["judge"]["missed_error_rate"])]
                      for group, parts in (("difficulty", by["difficulty"]), ("first error", by["first_error_kind"]))
                      for name, d in parts.items()]), ""]
    pb_f1: dict[str, float] = {}
    if pbm:
        models = pbm["models"]
        subsets = [s for s in pbm["items"]]
        rows, rows5 = [], []
        tune = next((v["tuned"].get("threshold_subset") for v in models.values() if "tuned" in v), None)
        held = [s for s in subsets if s != tune]
        for name, res in models.items():
            t = res.get("tuned", res)
            t05 = res.get("threshold_0.5", t)
            head = pb_heldout_f1(res, held)
            paper = PAPER_BY_SOURCE.get(name[4:]) if name.startswith("prm/") else None
            rows.append([name] + [f"{t[s]['error_acc']:.1f} / {t[s]['correct_acc']:.1f} / {t[s]['f1']:.1f}" for s in subsets]
                        + [head if head is not None else "-", t05.get("heldout_average_f1") or t05["average_f1"],
                           t.get("threshold", "-"), _auc(res, held), f"{paper[1]} ({paper[0]})" if paper else "-"])
            rows5.append([name] + [t[s]["flawed_correct_answer_acc"] for s in subsets])
            if name.startswith("prm/"):
                pb_f1[name[4:]] = head if head is not None else t["average_f1"]
        scope = f"held-out subsets ({', '.join(held)}; threshold tuned on {tune})" if tune and held else "all subsets"
        md += ["## ProcessBench (like Table 7)", "", *see("eval_processbench"),
               f"error acc / correct acc / F1 per subset; average F1 over the {scope}, at the tuned threshold and at 0.5.", "",
               table(["model", *subsets, "avg F1 (tuned)", "avg F1 (0.5)", "threshold", "step AUC",
                      "paper avg F1, same label source"], rows), "",
               "Step AUC: the chance that a step before the first error scores above the first wrong step "
               f"({'held-out subsets' if held else 'all subsets'}; threshold-free; 0.5 is chance).", "",
               "Paper, average F1: " + ", ".join(f"{k} {v}" for k, v in PAPER_PB.items()) + ".", "",
               "## Accuracy on correct answers with flawed processes (like Table 5)", "",
               table(["model", *subsets], rows5), ""]
        # Which half of F1 a model loses: erroneous vs error-free samples, on the subsets the threshold never saw.
        over = held or subsets
        if over:  # no subset had items (e.g. a weak tiny policy built an empty toy ProcessBench): nothing to plot
            acc = error_correct(models, over)
            where = f"{', '.join(over)}, tuned threshold" if held else "all subsets, tuned threshold"
            md += ["### Error-sample and correct-sample accuracy", "",
                   _figure(plots.processbench_error_correct(acc, where), figdir, "processbench_error_correct.png", run,
                           "ProcessBench error/correct accuracy"), ""]
        if pbm.get("empty_subsets"):
            md += [f"**No items** in subset(s) {', '.join(pbm['empty_subsets'])}: skipped.", ""]
    bon_avg: dict[str, dict] = {}
    if bonm:
        res = bonm["results"]
        base = res["baselines"]["average"]
        n = bonm["n"]
        within = bonm.get("within_problem_auc", {})
        rows = [[f"maj@{n}", base["maj"], "-", "-"], [f"pass@{n}", base["pass"], "-", "-"]]
        if "random" in base:  # a PRM below this ranks responses no better than chance
            rows.insert(0, [f"random pick of {n}", base["random"], "-", 0.5])
        for name, t in res.items():
            if name == "baselines":
                continue
            bon_avg[name] = t["average"]
            for agg in ("product", "min", "last"):
                if f"prm_{agg}" in t["average"]:
                    auc = within.get(name, {}).get(agg)
                    rows.append([f"{name} prm@{n} ({agg})", t["average"][f"prm_{agg}"],
                                 t["average"].get(f"prm_{agg}_process_verified", "-"), "-" if auc is None else f"{auc:.3f}"])
        paper_bon = [f"{row} {bon}" for src, (row, _, bon) in PAPER_BY_SOURCE.items() if bon is not None and src in res]
        md += ["## Best-of-N (like Table 6)", "", *see("eval_bon"), f"{bonm['problems']} problems, up to {n} responses each.", "",
               table(["method", "accuracy", "process-verified accuracy", "within-problem AUC"], rows), "",
               "Within-problem AUC (where the verifier labels the candidates): the chance that the response score ranks "
               "an error-free response above a flawed one of the same problem, what Best-of-N needs (a random pick: "
               "0.5). ProcessBench's step AUC pools items and also rewards telling hard problems from easy ones.", ""]
        if paper_bon:
            md += ["Paper, Best-of-8 average accuracy with a PRM from the same label source: " + ", ".join(paper_bon) + ".", ""]
        md += weak_prm_note(res, pbm, n)
        if len(res["baselines"]) > 2:  # more than one benchmark besides the average
            md += ["## Best-of-N per benchmark (like Table 6)", "", table6(res, n), "",
                   "Differences from Qwen's evaluation protocol:", "", *[f"- {x}" for x in PROTOCOL_NOTES], ""]
        by_n = bonm.get("by_n")
        if by_n:
            ns = [r["n"] for r in by_n]
            names = list(dict.fromkeys(k for r in by_n for k in r if k != "n"))
            curve = [[f"{k}@N" if k in ("maj", "pass") else f"{k} prm@N (product)", *[r.get(k, "-") for r in by_n]]
                     for k in names]
            md += ["## Best-of-N against N", "", "Averaged accuracy (%) from each problem's first N responses.", "",
                   table(["method", *[f"N={x}" for x in ns]], curve), "",
                   _figure(plots.bon_curve(by_n, bonm.get("problems", 0)), figdir, "bon_curve.png", run, "Best-of-N against N"), ""]
    if bias:
        prms = bias.get("prms", {})
        md += ["## Where the lowest step score sits (like Fig. 8)", "", *see("analyze_bias"),
               "Fig. 8 counts all Best-of-8 responses; the BoN-selected share is shown beside it. A minimum shared by "
               "several steps counts as the earliest of them; the last column says how often that rule decided.", "",
               table(["PRM", "all: min on final step (%)", "BoN-selected: min on final step (%)", "mean relative position",
                      "min tied between steps (%)"],
                     [[k, v["min_on_last_step_all"], v["min_on_last_step_bon_selected"], v["mean_relative_min_position"],
                       v.get("tie_share", "-")] for k, v in prms.items()]), ""]
        if prms:
            md += [_figure(plots.min_position_bars({k: v["min_on_last_step_all"] for k, v in prms.items()}), figdir,
                           "min_position.png", run, "min position"), "",
                   _figure(plots.min_position_hist({k: v["relative_position_hist"] for k, v in prms.items()}), figdir,
                           "min_position_hist.png", run, "min position histogram"), ""]
        if bias.get("policy"):
            p = bias["policy"]
            md += [f"Policy on the BoN problems: {p['accuracy']:.1f}% correct, of which {p['flawed_among_correct']:.1f}% reached "
                   f"through a flawed step (paper Fig. 6 reports this bias for real policies).", ""]
    points = {k: (bon_avg[k]["prm_product"], pb_f1[k]) for k in pb_f1 if k in bon_avg}
    if points:
        md += [_figure(plots.bon_vs_processbench(points), figdir, "bon_vs_processbench.png", run, "BoN vs ProcessBench"), ""]
    untrained = [p.stem for p in sorted((mdir / "train_prm").glob("*.json"))
                 if (sources is None or p.stem in sources) and read_json(p).get("trained") is False]
    if untrained:
        md += [f"**Untrained PRMs** (their label source produced no examples; their rows above are meaningless): "
               f"{', '.join(untrained)}.", ""]
    md += ["## Findings in detail: the paper's claims and ours", "",
           "Each claim is quoted from the paper with its table or figure, beside what this run measured, with a 95% "
           f"bootstrap interval ({n_boot} resamples of problems or ProcessBench items, paired between PRMs). The verdict "
           "follows the interval: *reproduced* if it lies wholly on the claimed side, *not reproduced* if wholly on the "
           "other, *inconclusive* if it straddles it. One seed: intervals cover sampling of problems, not of training. "
           "The last column sets each interval's half-width beside the effect the paper reports: a half-width above "
           "it cannot resolve that effect.", "",
           "What varies between machines: labels and evaluation sets are identical for the same params; PRM training is "
           "deterministic run to run on one machine, but the number of torch threads (and the CPU's kernels) changes the "
           "order of floating-point sums, so another machine trains other weights from the same data "
           "(benchmarks/bench_determinism.py). Every PRM figure (F1, Best-of-N accuracy, where the lowest score sits) "
           "therefore moves between machines; the verdicts are meant to hold within the across-seed intervals of "
           "reports/seeds.md (when it covers this study's commit), not to repeat to the digit.", ""]
    if findings_json is not None:
        write_json(findings_json, {"n_boot": n_boot, "findings": recs})
    def precision(f: dict) -> str:
        return "; ".join(f"+-{p['half_width']:.1f}" + (f" vs {p['paper_effect']:g}" if p.get("paper_effect") else "")
                         for p in f.get("precision", {}).values()) or "-"

    md += [table(["claim", "paper", "ours (95% interval)", "verdict", "half-width vs the paper's effect (points)"],
                 [[f["claim"], f["paper"], f["ours"], mark(f["verdict"]), precision(f)] for f in recs]) if recs
           else "No findings: the per-item scores files are missing.", ""]
    if recs:
        md += [_figure(plots.findings_intervals(recs), figdir, "findings_intervals.png", run, "findings intervals"), ""]
    import matplotlib.pyplot as plt

    plt.close("all")
    return "\n".join(md)


def main() -> None:
    from stages._common import fail, parse_args

    a = parse_args("build the report", metrics_dir="folder of metrics JSON", out="report Markdown", figures="figures folder",
                   pb_scores="ProcessBench per-item scores JSONL", bon_scores="Best-of-N per-response scores JSONL",
                   findings="findings JSON (estimates, intervals, verdicts)", samples="?training responses JSONL",
                   judge_labels="?judge labels JSONL (with --samples: the report shows one reply)",
                   headline="?headline metrics JSON (the dozen numbers to read first)",
                   plots="?folder for the plots' data (with --headline; dvc.yaml's plots)",
                   summary="?the few numbers DVC shows as metrics (with --headline): verdict counts, key F1s")
    try:
        profile = load_params("profile", ProfileConfig, a.params).name
        sources = read_params(a.params).get("train_prm", {}).get("sources")
    except ParamsError as e:
        fail("report", e)
    with stage_run("report", {"profile": profile}, inputs=[]) as run:
        try:
            example = judge_example(Path(a.samples), Path(a.judge_labels)) if a.samples and a.judge_labels else None
            text = build(Path(a.metrics_dir), Path(a.figures), run, profile, sources, Path(a.pb_scores), Path(a.bon_scores),
                         findings_json=Path(a.findings), example=example)
        except DataError as e:
            fail("report", e)
        text += provenance(run)
        atomic_write_text(a.out, text)
        run.artifact(a.out)
        html = Path(a.out).with_suffix(".html")
        atomic_write_text(html, to_html(text))
        run.artifact(html)
        log_prm_results(run, prm_results(Path(a.metrics_dir)))
        if a.headline:
            h = headline(Path(a.metrics_dir), profile)
            write_json(a.headline, h)
            run.artifact(a.headline)
            if a.summary:
                write_json(a.summary, study_metrics(h, read_json(Path(a.findings)).get("findings", [])))
            if a.plots:
                for name, rows in plot_tables(Path(a.metrics_dir), h).items():
                    write_json(Path(a.plots) / f"{name}.json", rows)
        run.artifact(a.findings)
        run.artifact(a.figures, "figures")
    summary("report", f"wrote {a.out} ({len(text.splitlines())} lines) and {len(list(Path(a.figures).glob('*.png')))} figures")


if __name__ == "__main__":
    from stages._common import run_main

    run_main("report", main)
