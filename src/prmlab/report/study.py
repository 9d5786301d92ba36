"""The study's report (stage report's core), rebuilt from the metrics files: the paper-shaped tables,
the figures, and the findings table that sets each of the paper's claims beside its number and ours.

    m = load_metrics(Path("metrics"), "toy", sources)   # every metrics file the report reads, once
    recs, iv = evidence(m, pb_scores, bon_scores)      # the findings and the intervals, from the per-item scores
    md = build(m, Page(Path("reports/figures"), run), recs, iv=iv)

One function per section returns its Markdown lines (`build` lists them in order); every figure goes
through `Page.figure` (the PNG, logged to the MLflow run, its image line). Beside the report: the
headline, DVC's metrics, the data of dvc.yaml's plots, each PRM's results on its own training run.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prmlab.analysis import plots
from prmlab.analysis.findings import Findings, pb_intervals
from prmlab.analysis.metrics import read_score_rows
from prmlab.analysis.paper import BY_SOURCE, CONSENSUS_KEPT, PB_F1
from prmlab.analysis.stats import N_BOOT
from prmlab.core.credentials import redact
from prmlab.core.io import atomic_write_text, read_json, read_jsonl, write_json
from prmlab.core.params import PROFILE_OF, PROFILE_ONLY
from prmlab.core.provenance import study_commits, tracking_uri, ui_url
from prmlab.core.records import JudgeLabel, Response
from prmlab.core.result import Done
from prmlab.core.sources import CEILING
from prmlab.report.markdown import ci, f3, fmt, signed_ci, table, with_ci
from prmlab.report.seeds import MARKS, across_table, glance, glance_lines

# The stages whose metrics file the report reads; one profile's own (params.PROFILE_ONLY) only in that profile: a
# toy run's bootstrap.json must not show up in a real run's report.
STAGES = ["sample", "label_mc", "label_judge", "consensus", "eval_processbench", "eval_bon", "analyze_bias",
          "bootstrap", "train_judge", "inputs", "ceiling"]
AUC_TARGET = 0.85  # the exact-label PRMs' step AUC target on the held-out toy ProcessBench
LEARNED_AUC_BAR = 0.8  # below this step AUC, a PRM trained on exact labels has not learned (`prm_learned`)
# findings.json's key for the exact-label targets: an output of this stage, kept as it is (report.seeds reads it and
# the seed files' newer key alike)
TARGETS_KEY = "targets_26"


def load_metrics(mdir: Path, profile: str = "toy", sources: list[str] | None = None) -> dict[str, Any]:
    """{stage: its metrics, {} where absent} for this profile's stages, and {source: metrics} of `human_data`
    and `train_prm` for `sources` (all when None): metrics another profile left never mix in. Plus `tune`, the
    subset eval_processbench tuned the PRMs' thresholds on, and `held`, the others: every ProcessBench number
    the report headlines is over those."""
    m: dict[str, Any] = {s: read_json(p) if PROFILE_OF[PROFILE_ONLY.get(s, profile)] == profile and (p := mdir / f"{s}.json").exists()
                         else {} for s in STAGES}
    m["human_data"] = {s: read_json(p) for s in sources or [] if (p := mdir / "human_data" / f"{s}.json").exists()}
    m["train_prm"] = {p.stem: read_json(p) for p in sorted((mdir / "train_prm").glob("*.json"))
                      if sources is None or p.stem in sources}
    models = m["eval_processbench"].get("models", {})
    m["tune"] = next((v["tuned"].get("threshold_subset") for v in models.values() if "tuned" in v), None)
    m["held"] = [s for s in m["eval_processbench"].get("items", []) if s != m["tune"]]
    return m


class Page:
    """Where the report's figures go (the figures folder; the report's MLflow run, when there is one) and
    the stage runs its sections link to: the latest finished run of each (`make ui` serves the links at
    PRMLAB_UI_URL, default http://127.0.0.1:5000)."""

    def __init__(self, figdir: Path, run=None):
        self.figdir, self.run = Path(figdir), run
        self.runs = run.stage_runs() if run is not None else {}  # {stage: run id}
        base = ui_url()
        self.links = {name: f"{base}/#/experiments/{run.run.info.experiment_id}/runs/{rid}" for name, rid in self.runs.items()}

    def figure(self, fig, name: str, alt: str) -> str:
        """Save a figure under the figures folder, log it to the report's MLflow run (when there is one),
        close it, and return its Markdown line."""
        import matplotlib.pyplot as plt

        fig.savefig(self.figdir / name, dpi=110)
        if self.run is not None:
            self.run.figure(fig, f"figures/{name}")
        plt.close(fig)
        return f"![{alt}](figures/{name})"

    def see(self, *stages: str) -> list[str]:
        """The MLflow runs behind a section's numbers, as links (when the report runs under MLflow); they open in the
        store that made the report (Provenance says where)."""
        got = [f"[{st}]({self.links[st]})" for st in stages if st in self.links]
        return [f"MLflow (the store that made this report, `make ui`): {', '.join(got)}", ""] if got else []


def pb_heldout_f1(res: dict, held: list[str]) -> float | None:
    """A ProcessBench model's headline F1: over the subsets its threshold was not tuned on (a critic has none)."""
    t = res.get("tuned", res)
    if "tuned" in res:
        return t.get("heldout_average_f1")
    return sum(t[s]["f1"] for s in held) / len(held) if held else t.get("average_f1")


def error_correct(models: dict, subsets: list[str]) -> dict[str, tuple[float, float]]:
    """Per model: (error-sample, correct-sample) accuracy averaged over `subsets`, unweighted as the F1
    headline is; a PRM at its tuned threshold (the critic has none)."""
    return {name: tuple(sum(res.get("tuned", res)[s][k] for s in subsets) / len(subsets)
                        for k in ("error_acc", "correct_acc")) for name, res in models.items()}


def _auc(res: dict, held: list[str]):
    """A PRM's step AUC, averaged over the held-out subsets (all if none is held out); '-' for a critic."""
    auc = res.get("step_auc")
    if not auc:
        return "-"
    if held:  # eval_processbench averaged them already
        return f3(auc["heldout_average"])
    vals = [v for k, v in auc.items() if k != "heldout_average" and v is not None]
    return f3(sum(vals) / len(vals) if vals else None)


def evidence(m: dict, pb_scores: Path | None, bon_scores: Path | None,
             n_boot: int = N_BOOT) -> tuple[list[dict], dict[str, dict]]:
    """From the eval stages' per-item scores (each file read once, one `Findings` over them): the findings
    (prmlab.analysis.findings) and the 95% intervals over problems behind the leaderboard and the ranked figures (no
    estimate without one): `processbench`, each model's held-out F1 and error/correct-sample accuracy
    (findings.pb_intervals, keyed as eval_processbench's models), and `min_on_final_step`, each PRM's share [point,
    lo, hi]. ([], {}) without the scores."""
    pbm = m["eval_processbench"]
    if not pbm or not pb_scores or not bon_scores or not Path(pb_scores).exists() or not Path(bon_scores).exists():
        return [], {}
    # read checked (prmlab.analysis.metrics.read_score_rows): a NaN step score had moved the findings' intervals silently
    pb_rows = read_score_rows(pb_scores, ("model", "subset", "id"), scored=False)
    f = Findings([r for r in pb_rows if "step_scores" in r], list(pbm["items"]), m["tune"],
                 read_score_rows(bon_scores, ("prm", "problem_id", "response_id")), m["consensus"], n_boot=n_boot)
    iv = {"processbench": pb_intervals(pb_rows, m["held"] or list(pbm["items"]), n_boot),
          "min_on_final_step": {prm: list(f.min_on_last_interval(prm)) for prm in f.prms}}
    return f.records(), iv


# What a row of the leaderboard and the ranked figures is: a PRM trained on one of the study's label
# sources, a reference (the ceiling PRM, trained at another budget; the judge as a critic, ProcessBench only) or a
# Best-of-N baseline (no PRM at all).
BASELINES = ("maj", "pass", "random")


def kind_of(name: str) -> str:
    """'trained', 'reference' or 'baseline', by a row's name as the headline keys it (critic_judge, maj@8, ...) or as
    the eval stages do (prm/oracle_ceiling): one kind per PRM in every figure (the ceiling had been a reference in one
    and trained in another)."""
    name = name.removeprefix("prm/")
    if name.split("@")[0] in BASELINES:
        return "baseline"
    return "reference" if name == CEILING or name.startswith(("critic/", "critic_")) else "trained"


# ---------------------------------------------------------------------------------------------- sections

def summary(recs: list[dict], seeds: dict | None = None, g: dict | None = None) -> list[str]:
    """What reproduced and what did not, first: the verdicts across seeds where reports/seeds.json holds this run's
    study's (`glance` `g`, made here where the caller has not), then this run's own; a link to reports/seeds.md,
    and its table of every estimate."""
    if not recs:
        return []
    g = glance(recs, seeds) if g is None else g
    agg = seeds["findings"] if g["across_seeds"] else []  # glance took them: this run's study's
    return ["## Summary", "",
            "Each of the paper's claims tested here, verdict first (" + ", ".join(MARKS.values()) + "), with the "
            "estimate that decides it. One seed's intervals cover the sampling of its evaluation problems only; a new "
            "seed also redraws the world and retrains every PRM, so the study's verdicts are the ones across seeds "
            "([reports/seeds.md](seeds.md), `make study-seeds`). The paper's quotes, the tests and the interval widths "
            "are under \"Findings in detail\" below.", "",
            *glance_lines(g, "[reports/seeds.md](seeds.md)"),
            *(["### Across seeds: every estimate ([reports/seeds.md](seeds.md)'s table)", "", *across_table(agg)] if agg else [])]


def the_data(m: dict) -> list[str]:
    inputs = m["inputs"]
    return ["## The data", "",
            f"{inputs['train_problems']} training problems (after removing {inputs.get('removed_total', 0)} that are "
            f"evaluation problems), {inputs['eval_problems']} Best-of-N problems, {inputs['processbench_items']} ProcessBench items; "
            "models: " + ", ".join(f"{k} {v}" for k, v in inputs.get("models", {}).items()) + ".", ""] if inputs else []


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


def toy_models(m: dict) -> list[str]:
    """The toy policy's and judge's measures, and a flag on a judge no better than always answering -1."""
    boot = m["bootstrap"] | m["train_judge"]
    if not boot:
        return []
    md = ["## The toy models", "", "Measured on held-out problems by the exact verifier (bootstrap@toy: policy; "
          "train_judge@toy: the judge on the policy's responses).", "",
          table(["measure", "value"], [[BOOT_LABELS[k], boot[k]] for k in BOOT_LABELS if isinstance(boot.get(k), int | float)]), ""]
    jacc, jbase = boot.get("judge_first_error_accuracy"), boot.get("judge_baseline_always_none")
    if jacc is not None and jbase is not None and jacc < jbase + 0.05:
        md += [f"**Weak judge.** Its first-error accuracy ({jacc:.2f}) is not clearly above always answering -1 ({jbase:.2f}): "
               "the judge and consensus labels, and every finding below built on them, come from a judge that finds few errors.", ""]
    return md


def judge_example(samples: Path, labels: Path, max_chars: int = 3000) -> list[str]:
    """One judged response with an error and the judge's reply, verbatim: the reply format a reader
    should see (the toy judge writes a check per paragraph before its verdict, as the paper's does)."""
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


def synthesis(m: dict, page: Page) -> list[str]:
    sample, mc, jd, cons = m["sample"], m["label_mc"], m["label_judge"], m["consensus"]
    return ["## Data synthesis", "", *page.see("sample", "label_mc", "label_judge", "consensus"),
            f"Sampled {sample.get('kept')} responses ({fmt(100 * sample.get('accuracy', 0))}% correct); "
            f"MC spent {mc.get('rollouts')} rollouts ({mc.get('truncated_rollouts', 0)} cut by a length limit, counted as failing); "
            f"the judge left {jd.get('unparsed')} answers unparsed ({jd.get('truncated_replies', 0)} replies cut by a length limit); "
            f"consensus kept {cons.get('agree')} of {cons.get('responses')} ({fmt(100 * cons.get('consensus_kept_share', 0))}%, "
            f"paper: ~{CONSENSUS_KEPT}%).", ""] if sample else []


def released_labels(m: dict) -> list[str]:
    human = m["human_data"]
    return ["## Released step labels (PRM800K, Math-Shepherd)", "",
            "Converted by human_data@<source> (rules: src/prmlab/pipeline/human_labels.py); examples whose problem is in an "
            "evaluation set were dropped.", "",
            table(["source", "rows", "skipped (quality control / screening / no rated step)", "examples",
                   "dropped as evaluation problems", "kept", "kept with a wrong step"],
                  [[src, h.get("rows", 0), f"{h.get('skipped_quality_control', 0)} / {h.get('skipped_screening', 0)} / "
                    f"{h.get('skipped_no_rated_step', 0)}", h.get("converted", 0), h.get("removed_total", 0),
                    h.get("examples", 0), h.get("with_wrong_step", 0)] for src, h in human.items()]), ""] if human else []


def label_quality(m: dict, page: Page) -> list[str]:
    audit, by, md = m["consensus"].get("audit") or {}, m["consensus"].get("audit_by") or {}, []
    if audit:
        md += ["## Label quality by source (against the exact verifier)", "",
               table(["source", "first-error acc", "precision (wrong)", "recall (wrong)", "missed errors", "false alarms", "responses"],
                     [[s, a["first_error_accuracy"], a["step_precision_wrong"], a["step_recall_wrong"], a["missed_error_rate"],
                       a["false_alarm_rate"], a["responses"]] for s, a in audit.items()]), "",
               page.figure(plots.label_quality(audit), "label_quality.png", "label quality"), ""]
    if by:
        rates = ("first_error_accuracy", "false_alarm_rate", "missed_error_rate")  # MC's, then the judge's
        md += ["### Where each labeller fails (the world's mechanisms)", "",
               "False alarm: a correct step called wrong (for MC: the completer fails from a good prefix, the paper's "
               "incorrect answers from correct steps); missed: a wrong step called right (for MC: later steps recover "
               "the answer, the paper's correct answers from incorrect steps). Hard problems are longer (up to "
               "`toy.hard_max_steps` steps) than the toy models trained on, with larger numbers only where "
               "`toy.hard_max_value` exceeds the normal problems' cap; error kinds are the verifier's first error "
               "(the judge is blind to `operand`, a misread quantity, where `toy_judge.blind_spots` says so). Percentages.", "",
               table(["responses", "n", "consensus keeps", "MC first-error acc", "MC false alarms", "MC missed",
                      "judge first-error acc", "judge false alarms", "judge missed"],
                     [[f"{group}: {name}", d["responses"], *(f"{100 * x:.1f}" for x in
                       [d["consensus_kept_share"], *(d[who][k] for who in ("mc", "judge") for k in rates)])]
                      for group, parts in (("difficulty", by["difficulty"]), ("first error", by["first_error_kind"]))
                      for name, d in parts.items()]), ""]
    return md


def processbench(m: dict, page: Page, iv: dict | None = None) -> list[str]:
    pbm = m["eval_processbench"]
    if not pbm:
        return []
    models, subsets, tune, held, iv = pbm["models"], list(pbm["items"]), m["tune"], m["held"], iv or {}
    rows, rows5 = [], []
    for name, res in models.items():
        t = res.get("tuned", res)
        t05, head = res.get("threshold_0.5", t), pb_heldout_f1(res, held)
        paper = BY_SOURCE.get(name[4:]) if name.startswith("prm/") else None
        rows.append([name] + [f"{t[s]['error_acc']:.1f} / {t[s]['correct_acc']:.1f} / {t[s]['f1']:.1f}" for s in subsets]
                    + [head if head is not None else "-", t05.get("heldout_average_f1") or t05["average_f1"],
                       t.get("threshold", "-"), _auc(res, held), f"{paper[1]} ({paper[0]})" if paper else "-"])
        rows5.append([name] + [t[s]["flawed_correct_answer_acc"] for s in subsets])
    scope = f"held-out subsets ({', '.join(held)}; threshold tuned on {tune})" if tune and held else "all subsets"
    md = ["## ProcessBench (like Table 7)", "", *page.see("eval_processbench"),
          f"error acc / correct acc / F1 per subset; average F1 over the {scope}, at the tuned threshold and at 0.5.", "",
          table(["model", *subsets, "avg F1 (tuned)", "avg F1 (0.5)", "threshold", "step AUC",
                 "paper avg F1, same label source"], rows), "",
          "Step AUC: the chance that a step before the first error scores above the first wrong step "
          f"({'held-out subsets' if held else 'all subsets'}; threshold-free; 0.5 is chance).", "",
          "Paper, average F1: " + ", ".join(f"{k} {v}" for k, v in PB_F1.items()) + ".", "",
          "## Accuracy on correct answers with flawed processes (like Table 5)", "",
          table(["model", *subsets], rows5), ""]
    # Which half of F1 a model loses: erroneous vs error-free samples, on the subsets the threshold never saw.
    if over := held or subsets:  # no subset had items (e.g. a weak tiny policy built an empty toy ProcessBench): nothing to plot
        where = f"{', '.join(over)}, tuned threshold" if held else "all subsets, tuned threshold"
        # with the intervals over problems where the per-item scores were read (the stage); points alone otherwise
        acc = iv.get("processbench") or {n: {"f1": [pb_heldout_f1(models[n], held) or 0.0, None, None],
                                             "error_acc": [e, None, None], "correct_acc": [c, None, None]}
                                         for n, (e, c) in error_correct(models, over).items()}
        f1_rows = [{"name": n, "value": v["f1"][0], "lo": v["f1"][1], "hi": v["f1"][2], "kind": kind_of(n)}
                   for n, v in acc.items()]
        md += ["### Average F1, ranked", "",
               page.figure(plots.ranked_bars(f1_rows, f"average F1 ({where}; %)", "ProcessBench F1, ranked"),
                           "processbench_f1.png", "ProcessBench F1 ranked"), "",
               "### Error-sample and correct-sample accuracy", "",
               page.figure(plots.processbench_error_correct(acc, where),
                           "processbench_error_correct.png", "ProcessBench error/correct accuracy"), ""]
    if pbm.get("empty_subsets"):
        md += [f"**No items** in subset(s) {', '.join(pbm['empty_subsets'])}: skipped.", ""]
    return md


# Where our Best-of-N protocol differs from Qwen2.5-Math's evaluation (Table 6 of the paper).
PROTOCOL_NOTES = [
    "Every benchmark is asked zero-shot with the Qwen2.5-Math-Instruct CoT chat prompt (system: reason step by step, "
    "answer in \\boxed{}); Qwen's harness has benchmark-specific prompt types.",
    "MMLU STEM is asked zero-shot as a multiple-choice question with the options listed as (A)-(D) and graded on the letter.",
    "MATH is the full 5,000-problem test set in its original per-problem files (`real.eval.math`); MATH500 can be named instead.",
    "Answers are compared with math-verify (`verify(gold, pred)`), not Qwen's own grader.",
]


def table6(res: dict, n: int) -> str:
    """Per-benchmark accuracy, rows per method, like the paper's Table 6."""
    benches = [b for b in res["baselines"] if b != "average"]
    rows = [[f"{k}@{n}", *[res["baselines"][b][k] for b in [*benches, "average"]]] for k in ("maj", "pass")]
    rows += [[f"{name} prm@{n} (product)", *[t[b].get("prm_product", "-") for b in [*benches, "average"]]]
             for name, t in res.items() if name != "baselines" and "prm_product" in t.get("average", {})]
    return table(["method", *benches, "avg"], rows)


def prm_learned(bon: float, random: float, maj: float, auc: float | None = None) -> bool:
    """The bar for the PRM trained on exact labels (toy `oracle`) to count as learned: Best-of-N above both a random pick
    and maj@N, and step AUC (where measured) at least LEARNED_AUC_BAR. reports/benchmarks.md's budget tables judge by it;
    the report by the stricter `meets_exact_label_targets`."""
    return bon > max(random, maj) and (auc is None or auc >= LEARNED_AUC_BAR)


def meets_exact_label_targets(auc: float | None, over_maj: dict[str, list[float] | None]) -> bool | None:
    """The targets a PRM trained on exact labels must meet for the label sources' comparison to say something about the
    labels (not about a training budget too small to learn): step AUC on the held-out toy ProcessBench at
    least AUC_TARGET, and Best-of-N by some aggregation (product or min) above maj@N by its paired 95%
    interval's lower end (`over_maj`: {aggregation: [difference, lo, hi]}, prmlab.pipeline.bon.over_maj). None where
    either is not measured. reports/benchmarks.md judges its budgets by the same function."""
    overs = [v for v in over_maj.values() if v]
    if auc is None or not overs:
        return None
    return auc >= AUC_TARGET and max(v[1] for v in overs) > 0


def exact_label_targets(m: dict) -> dict[str, dict]:
    """The targets (`meets_exact_label_targets`) for the PRMs trained on exact labels, `oracle` and `oracle_ceiling`
    where evaluated: {name: {"step_auc", "over_maj": {product, min: [difference, lo, hi]}, "met"}}. Written
    into reports/findings.json, so a seed's file (prmlab.runs.store.write_seed) keeps them beside its findings."""
    bonm, pbm, out = m["eval_bon"], m["eval_processbench"], {}
    for name in ("oracle", CEILING):
        if name in bonm.get("over_maj", {}):
            over = {agg: bonm["over_maj"][name].get(agg) for agg in ("product", "min")}
            auc = (pbm.get("models", {}).get(f"prm/{name}", {}).get("step_auc") or {}).get("heldout_average")
            out[name] = {"step_auc": auc, "over_maj": over, "met": meets_exact_label_targets(auc, over)}
    return out


def oracle_targets(m: dict, targets: dict[str, dict]) -> list[str]:
    """The targets for the PRMs trained on exact labels (`exact_label_targets`): the study's `oracle`, at
    the label sources' shared budget, and `oracle_ceiling` (stage ceiling@toy), the recipe at the budget the
    benchmarks found to meet them; and a weak-PRM flag when the study's oracle misses them: the comparisons
    between label sources then say more about the training budget than about the labels."""
    bonm, ceil = m["eval_bon"], m["ceiling"]
    n = bonm.get("n")
    hit = {name: t["met"] for name, t in targets.items()}
    rows = [[name, f3(t["step_auc"]), signed_ci(t["over_maj"]["product"]), signed_ci(t["over_maj"]["min"]),
             "-" if t["met"] is None else "met" if t["met"] else "**missed**"] for name, t in targets.items()]
    if not rows:
        return []
    md = ["### The PRMs trained on exact labels against issue #26's targets", "",
          f"Targets: step AUC on the held-out toy ProcessBench >= {AUC_TARGET}, and Best-of-{n} (product or min) above "
          f"maj@{n} by the lower end of its 95% paired interval over the problems. `oracle` is trained at the label "
          "sources' shared budget."
          + (f" `{CEILING}` is the same recipe at the budget the benchmarks found to meet them (stage ceiling@toy: "
             f"{ceil['problems']} problems x {ceil['n']} responses, {ceil['distinct_responses']} distinct, "
             f"{ceil['optimizer_steps']} optimizer steps): a ceiling for the recipe, not a label source, so it sits "
             "beside the equal-budget comparisons and never in them." if ceil else ""), "",
          table(["PRM", "step AUC", f"Best-of-{n} (product) - maj@{n}", f"Best-of-{n} (min) - maj@{n}", "targets"], rows), ""]
    if hit.get("oracle") is False:
        md += ["**Weak PRMs.** The oracle PRM, trained on the verifier's exact labels at the label sources' budget, "
               "misses these targets: the PRMs have not fully learned even exact labels at this budget, so differences "
               "between label sources are weaker evidence than their intervals suggest."
               + (f" At the ceiling's budget the recipe {'meets' if hit.get(CEILING) else 'still misses'} them"
                  + (": what the label sources lack is distinct training responses, each of which costs MC rollouts "
                     "and a judge call." if hit.get(CEILING) else ".") if CEILING in hit else "")
               + " reports/benchmarks.md has the measured budgets and minutes, docs/study.md the levers tried.", ""]
    return md


def bon_results(m: dict, page: Page, targets: dict[str, dict]) -> list[str]:
    bonm = m["eval_bon"]
    if not bonm:
        return []
    res, n, within = bonm["results"], bonm["n"], bonm.get("within_problem_auc", {})
    base = res["baselines"]["average"]
    rows = [[f"maj@{n}", base["maj"], "-", "-"], [f"pass@{n}", base["pass"], "-", "-"]]
    if "random" in base:  # a PRM below this ranks responses no better than chance
        rows.insert(0, [f"random pick of {n}", base["random"], "-", 0.5])
    rows += [[f"{name} prm@{n} ({agg})", t["average"][f"prm_{agg}"], t["average"].get(f"prm_{agg}_process_verified", "-"),
              f3(within.get(name, {}).get(agg))]
             for name, t in res.items() if name != "baselines" for agg in ("product", "min", "last") if f"prm_{agg}" in t["average"]]
    paper_bon = [f"{row} {bon}" for src, (row, _, bon) in BY_SOURCE.items() if bon is not None and src in res]
    md = ["## Best-of-N (like Table 6)", "", *page.see("eval_bon"), f"{bonm['problems']} problems, up to {n} responses each.", "",
          table(["method", "accuracy", "process-verified accuracy", "within-problem AUC"], rows), "",
          "Within-problem AUC (where the verifier labels the candidates): the chance that the response score ranks "
          "an error-free response above a flawed one of the same problem, what Best-of-N needs (a random pick: "
          "0.5). ProcessBench's step AUC pools items and also rewards telling hard problems from easy ones.", ""]
    if paper_bon:
        md += ["Paper, Best-of-8 average accuracy with a PRM from the same label source: " + ", ".join(paper_bon) + ".", ""]
    md += oracle_targets(m, targets)
    if len(res["baselines"]) > 2:  # more than one benchmark besides the average
        md += ["## Best-of-N per benchmark (like Table 6)", "", table6(res, n), "",
               "Differences from Qwen's evaluation protocol:", "", *[f"- {x}" for x in PROTOCOL_NOTES], ""]
    if by_n := bonm.get("by_n"):
        names = list(dict.fromkeys(k for r in by_n for k in r if k != "n"))
        curve = [[f"{k}@N" if k in ("maj", "pass") else f"{k} prm@N (product)", *[r.get(k, "-") for r in by_n]]
                 for k in names]
        md += ["## Best-of-N against N", "", "Averaged accuracy (%) from each problem's first N responses.", "",
               table(["method", *[f"N={r['n']}" for r in by_n]], curve), "",
               page.figure(plots.bon_curve(by_n, bonm.get("problems", 0)), "bon_curve.png", "Best-of-N against N"), ""]
    return md


def min_position(m: dict, page: Page, iv: dict | None = None) -> list[str]:
    bias = m["analyze_bias"]
    if not bias:
        return []
    prms = bias.get("prms", {})
    md = ["## Where the lowest step score sits (like Fig. 8)", "", *page.see("analyze_bias"),
          "Fig. 8 counts all Best-of-8 responses; the BoN-selected share is shown beside it. A minimum shared by "
          "several steps counts as the earliest of them; the last column says how often that rule decided.", "",
          table(["PRM", "all: min on final step (%)", "BoN-selected: min on final step (%)", "mean relative position",
                 "min tied between steps (%)"],
                [[k, v["min_on_last_step_all"], v["min_on_last_step_bon_selected"], v["mean_relative_min_position"],
                  v.get("tie_share", "-")] for k, v in prms.items()]), ""]
    if prms:
        ci_ = (iv or {}).get("min_on_final_step", {})
        rows = [{"name": k, "value": v["min_on_last_step_all"], **dict(zip(("lo", "hi"), (ci_.get(k) or [None] * 3)[1:])),
                 "kind": kind_of(k)} for k, v in prms.items()]
        md += [page.figure(plots.min_position_bars(rows),
                           "min_position.png", "min position"), "",
               page.figure(plots.min_position_hist({k: v["relative_position_hist"] for k, v in prms.items()}),
                           "min_position_hist.png", "min position histogram"), ""]
    if p := bias.get("policy"):
        md += [f"Policy on the BoN problems: {p['accuracy']:.1f}% correct, of which {p['flawed_among_correct_pct']:.1f}% reached "
               f"through a flawed step (paper Fig. 6 reports this bias for real policies).", ""]
    return md


def bon_vs_processbench(m: dict, page: Page) -> list[str]:
    """Each PRM's Best-of-N accuracy (product) against its headline ProcessBench F1 (all subsets' without
    a held-out one): the comparison of Tables 6 and 7."""
    bon = {k: t for k, t in m["eval_bon"].get("results", {}).items() if k != "baselines"}
    points = {}
    for name, res in m["eval_processbench"].get("models", {}).items():
        if name.startswith("prm/") and name[4:] in bon:
            head = pb_heldout_f1(res, m["held"])
            points[name[4:]] = (bon[name[4:]]["average"]["prm_product"], head if head is not None else res.get("tuned", res)["average_f1"])
    return [page.figure(plots.bon_vs_processbench(points), "bon_vs_processbench.png", "BoN vs ProcessBench"), ""] if points else []


def untrained(m: dict) -> list[str]:
    names = [s for s, t in m["train_prm"].items() if t.get("trained") is False]
    return [f"**Untrained PRMs** (their label source produced no examples; their rows above are meaningless): "
            f"{', '.join(names)}.", ""] if names else []


def trained_on(m: dict) -> list[str]:
    """The machines this run's PRMs were trained on, a line each (`machine` in metrics/train_prm/*.json): the GPU
    and its torch build where one computed, then the CPU (the host's, where a GPU did the training)."""
    return sorted({(f"{c['gpu']} (torch {c.get('torch', '?')}) on " if c.get("gpu") else "")
                   + f"{c.get('vendor', '')} {c.get('model', '')} ({c.get('isa', '') or 'no AVX2'}; torch kernels "
                   f"{c.get('torch_kernels', '?')}, {c.get('threads', '?')} threads)"
                   for t in m["train_prm"].values() if (c := t.get("machine"))})


def device(m: dict) -> dict[str, str | None]:
    """The machine and torch build this run's models computed on, from every stage's `machine` in its metrics
    (prmlab.core.provenance.machine): {"machine": the GPUs any stage used, then the CPUs, " + "-joined; "torch": the
    versions}, None where no stage recorded it (metrics written before stages recorded it). A seed's file keeps both
    (prmlab.runs.store.write_seed): reports/seeds.md splits the verdicts by machine."""
    seen = [c for c in [*(m.get(s, {}).get("machine") for s in STAGES), *(t.get("machine") for t in m["train_prm"].values()),
                        *(t.get("machine") for t in m.get("human_data", {}).values())] if c]
    gpus, cpus = sorted({c["gpu"] for c in seen if c.get("gpu")}), sorted({c["model"] for c in seen if c.get("model")})
    torch = sorted({c["torch"] for c in seen if c.get("torch")})
    return {"machine": " + ".join([*gpus, *cpus]) or None, "torch": ", ".join(torch) or None}


def machines(seen: list[str]) -> list[str]:
    """What moves with the machine, and the CPUs this run's PRMs were trained on (`trained_on`)."""
    return ["What varies between machines: labels and evaluation sets are identical for the same params (the toy "
            "policy samples the same texts on AVX-512 and AVX2 kernels: benchmarks/bench_determinism.py); PRM "
            "training repeats exactly run to run on one machine, but the CPU's kernels (AVX-512, AVX2) change the order "
            "of floating-point sums, so another machine trains other weights from the same data (issue "
            "#52 measured the judge PRM's train loss at 0.1883 on an Intel Xeon with AVX-512/AMX and 0.1974 on an AMD "
            "EPYC with AVX2, on a byte-identical training set). Every figure of a trained model (train loss, F1, "
            "Best-of-N accuracy, where the lowest score sits, the toy PRM800K's labels) therefore moves between "
            "machines; the verdicts are meant to hold within the across-seed intervals of reports/seeds.md (which says "
            "where each seed ran), not to repeat to the digit. This run's PRMs were trained on: "
            + ("; ".join(seen) if seen else "not recorded (metrics written before issue #52)") + "."]


def findings_detail(recs: list[dict], n_boot: int, page: Page, trained: list[str]) -> list[str]:
    def precision(f: dict) -> str:
        return "; ".join(f"+-{p['half_width']:.1f}" + (f" vs {p['paper_effect']:g}" if p.get("paper_effect") else "")
                         for p in f.get("precision", {}).values()) or "-"

    md = ["## Findings in detail: the paper's claims and ours", "",
          "Each claim is quoted from the paper with its table or figure, beside what this run measured, with a 95% "
          f"bootstrap interval ({n_boot} resamples of problems or ProcessBench items, paired between PRMs). The verdict "
          "follows the interval: *reproduced* if it lies wholly on the claimed side, *not reproduced* if wholly on the "
          "other, *inconclusive* if it straddles it; *not testable in this world* where the toy sets the claim by "
          "design (reports/protocol.md says why, claim by claim). One seed: intervals cover sampling of problems, not "
          "of training. "
          "The last column sets each interval's half-width beside the effect the paper reports: a half-width above "
          "it cannot resolve that effect.", "",
          *machines(trained), "",
          table(["claim", "paper", "ours (95% interval)", "verdict", "half-width vs the paper's effect (points)"],
                [[f["claim"], f["paper"], f["ours"], MARKS.get(f["verdict"], f["verdict"]), precision(f)] for f in recs]) if recs
          else "No findings: the per-item scores files are missing.", ""]
    if recs:
        md += [page.figure(plots.findings_intervals(recs), "findings_intervals.png", "findings intervals"), ""]
    return md


def mc_dose(b: dict) -> list[str]:
    """MC's dose-response (bench_mc_dose.py): a row per completer temperature, the study's own marked."""
    def ci(x: list) -> str:
        return f"{x[0]:.1f} [{x[1]:.1f}, {x[2]:.1f}]"

    pts = sorted(b["points"].values(), key=lambda p: (p["steps"], p["temperature"]))
    j, st = b["judge"], b["study"]
    md = ["## MC's dose-response: the completer's temperature against MC's labels and the judge - MC gap "
          "(`benchmarks/bench_mc_dose.py`)", "",
          f"One study's responses ({st['dir'].rstrip('/').rsplit('/', 1)[-1]}"
          + (f" of commit {st['commit']}" if st.get("commit") else "") + f", label_mc seed {st['seed']}"
          + (f"; {st['cpu']}" if st.get("cpu") else "") + "), MC-labelled at each completer temperature (the study's other label_mc settings), an mc_hard PRM trained on each point's "
          "labels and the judge PRM trained once on the study's judge labels at the same steps (held-out ProcessBench "
          f"F1 {j['f1_heldout']:.1f}, step AUC {j['step_auc_heldout']:.3f}): the fixed comparison. MC's first-error "
          "accuracy is against the verifier, with a 95% interval over problems; F1 judge - mc_hard is the study's "
          "Table 4 statistic (paired over items, problems resampled within subsets). One training seed per point: "
          "training alone moves a PRM's F1 by 2-4 points, which these intervals do not hold. **Bold**: the study's "
          "own temperature and its own labels; each point's MC search is in its row (`sequential` gives exhaustive's "
          "labels on its own draws, at fewer rollouts). Plot: `reports/benchmarks/mc_dose.png`.", "",
          "| completer T | steps | MC first-error acc. (%) | consensus keeps (%) | mc_hard F1 | mc_hard step AUC | "
          "F1 judge - mc_hard | label_mc: search, rollouts, seconds | machine |", "|---|---|---|---|---|---|---|---|---|"]
    for p in pts:
        t = f"**{p['temperature']:g}**" if p["study_default"] else f"{p['temperature']:g}"
        m = p["mc_hard"]
        md.append(f"| {t} | {p['steps']} | {ci(p['mc_first_error_accuracy'])} | {p['consensus_kept']:.1f} | "
                  f"{m['f1_heldout']:.1f} | {m['step_auc_heldout']:.3f} | {ci(p['f1_judge_minus_mc'])} | "
                  f"{p.get('search', 'exhaustive')}, {p.get('rollouts', 0):,}, "
                  f"{'-' if p['label_mc_seconds'] is None else format(p['label_mc_seconds'], '.0f')} | {p['machine']} |")
    return md + [""]


def dose_response(dose: dict | None) -> list[str]:
    """Table 4's first half as a curve: bench_mc_dose's points (MC's label accuracy and F1 judge - mc_hard at each
    completer temperature, the study's own marked), its table as reports/benchmarks.md shows it, and its plot."""
    if not dose or not dose.get("points"):
        return []
    return ["## MC's dose-response (Table 4's first half as a curve)", "",
            "The judge - MC gap above is one point, at a completer temperature chosen on the development seed "
            "(docs/study.md). `benchmarks/bench_mc_dose.py` moves that temperature: the curve, not the point, is the "
            "first half of Table 4 here.", "", *mc_dose(dose)[2:], "![MC's dose-response](benchmarks/mc_dose.png)", ""]


def commits_line(c: dict) -> str:
    """The report's provenance sentence for `prmlab.core.provenance.study_commits`: the commit whose params made the study
    first (HEAD alone named the previous study's when the study ran before its params were committed), then the code's."""
    code = f"code: commit `{c['code']}`" + (f" with uncommitted changes to {', '.join(c['dirty'])}" if c["dirty"] else "")
    if c["params"]:
        return f"Params: commit `{c['params']}` (the workspace's params.yaml values, unchanged since); {code}"
    if c["code"] == "unknown":
        return f"Params and code: no commit (not a git checkout, or git failed); {code}"
    return (f"Params: in no commit when this ran (params.yaml's values differed from commit `{c['code']}`'s: the commit "
            f"that adds this report holds them, `git log -1 -- reports/report.md`); {code}")


def store_name(uri: str) -> str:
    """The tracking store as the report names it: a SQLite file under the project by its relative path (the flow
    makes it absolute), anything else without credentials."""
    if uri.startswith("sqlite:///"):
        path = Path(uri[len("sqlite:///"):])
        if path.is_absolute() and path.is_relative_to(Path.cwd()):
            return f"sqlite:///{path.relative_to(Path.cwd())}"
        return uri
    return redact(uri)


def provenance(page: Page) -> list[str]:
    """Where every number came from: the commits of its params and code, and the MLflow runs (`make ui`,
    experiment page)."""
    if page.run is None:
        return []

    parent = os.environ.get("PRMLAB_PARENT_RUN_ID")
    rows = [[name, f"[`{rid}`]({page.links[name]})"] for name, rid in page.runs.items() if name != "report"]
    # the params file the stages read (prmlab.core.stage's --params default)
    commits = study_commits(os.environ.get("PRMLAB_PARAMS", "params.yaml"))
    return ["## Provenance", "",
            f"{commits_line(commits)}; this report's MLflow run `{page.run.id}`"
            + (f", under the flow run `{parent}`" if parent else "") + ". The latest finished run of each stage "
            "in the same MLflow experiment. They live in the MLflow store of the workspace that made this report "
            f"(`{store_name(tracking_uri())}`, not committed): there, `make ui` serves them and the links open them; "
            "a clone has no store until its own `make repro` fills one (with its own run ids).", "",
            table(["stage", "MLflow run id"], rows), ""]


def build(m: dict, page: Page, recs: list[dict] = (), n_boot: int = N_BOOT, example: list[str] = (),
          targets: dict[str, dict] | None = None, seeds: dict | None = None, g: dict | None = None,
          iv: dict | None = None, board: list[dict] | None = None, dose: dict | None = None) -> str:
    """The report's Markdown, section by section (`recs`: the findings; `example`: `judge_example`'s lines;
    `targets`: `exact_label_targets(m)`, computed here where the caller has not; `seeds`: reports/seeds.json's record,
    None where absent; `g`: their `glance`, likewise; `iv`: `intervals`; `board`: `leaderboard(m, iv)`, made here where
    the caller has not; `dose`: bench_mc_dose's JSON, None where absent)."""
    targets = exact_label_targets(m) if targets is None else targets
    board = leaderboard(m, iv) if board is None else board
    page.figdir.mkdir(parents=True, exist_ok=True)
    md = ["# prmlab report", "",
          "Rebuilt by `dvc repro` from the metrics files; every number below comes from this run. "
          "In the toy profile the models are tiny and the world is synthetic, so compare *directions* with the paper, not levels.", "",
          *summary(recs, seeds, g), *leaderboard_lines(board, m["eval_bon"].get("n")), *the_data(m), *toy_models(m), *example, *synthesis(m, page), *released_labels(m),
          *label_quality(m, page), *processbench(m, page, iv), *bon_results(m, page, targets), *min_position(m, page, iv),
          *bon_vs_processbench(m, page), *untrained(m), *findings_detail(recs, n_boot, page, trained_on(m)),
          *dose_response(dose), *provenance(page)]
    return "\n".join(md)


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


# ------------------------------------------------------------------------------------ beside the report

def headline_key(model: str) -> str:
    """A ProcessBench model's key in the headline and the plots: PRMs by label source, the judge evaluated as a critic
    apart from the PRM trained on its labels (prm/judge -> judge, critic/judge -> critic_judge)."""
    return model[4:] if model.startswith("prm/") else model.replace("critic/", "critic_")


def headline(m: dict, board: list[dict] | None = None) -> dict:
    """The numbers a reader wants first, from the metrics files: reports/headline.json, which `prmlab
    metrics` prints a line each (the detailed files stay as they are; reports/metrics.json is DVC's); `board`: the
    leaderboard, made here (without intervals) where the caller has not."""
    h: dict = {}
    sample, cons, judge = m["sample"], m["consensus"], m["train_judge"]
    if sample.get("accuracy") is not None:
        h["policy_accuracy"] = _r1(100 * sample["accuracy"])
    if judge:
        h["judge_first_error_accuracy"] = _r1(100 * judge["judge_first_error_accuracy"])
        h["judge_baseline_always_no_error"] = _r1(100 * judge["judge_baseline_always_none"])
    if cons.get("consensus_kept_share") is not None:
        h["consensus_kept"] = _r1(100 * cons["consensus_kept_share"])
    if cons.get("audit"):
        h["label_first_error_accuracy"] = {s: _r1(100 * a["first_error_accuracy"]) for s, a in cons["audit"].items()}
    if models := m["eval_processbench"].get("models"):
        h["processbench_f1"] = {headline_key(name): _r1(pb_heldout_f1(res, m["held"])) for name, res in models.items()}
        auc = {headline_key(name): res["step_auc"]["heldout_average"] for name, res in models.items() if "step_auc" in res}
        if auc:  # a PRM's threshold-free step AUC (0-1; the oracle PRM has learned at >= LEARNED_AUC_BAR)
            h["processbench_step_auc"] = {k: None if v is None else round(v, 3) for k, v in auc.items()}
    if res := m["eval_bon"].get("results"):
        # One key whatever eval_bon.n is, so `dvc exp show` keeps its columns across a sweep of N.
        h["best_of_n"] = {"n": m["eval_bon"]["n"]} | {k: _r1(v) for k, v in res["baselines"]["average"].items() if k in ("maj", "pass", "random")}
        h["best_of_n"] |= {name: _r1(t["average"].get("prm_product")) for name, t in res.items() if name != "baselines"}
    if m["analyze_bias"].get("prms"):
        h["min_on_final_step_share"] = {k: _r1(v["min_on_last_step_all"]) for k, v in m["analyze_bias"]["prms"].items()}
    if board := (leaderboard(m) if board is None else board):
        h["leaderboard"] = board
    return h


def leaderboard(m: dict, iv: dict | None = None) -> list[dict]:
    """One row per PRM, reference and baseline of this study: held-out ProcessBench F1 (the paper's main metric) and
    step AUC, Best-of-N accuracy by min / product / last with its binomial 95% interval over the problems, and the
    share of responses whose lowest step score is on the final step; with `iv` (`intervals`), F1 and that share with
    their 95% intervals over problems (`*_ci`: [lo, hi]). Sorted by F1, highest first; rows without one (the
    baselines) last, by Best-of-N (product)."""
    pbm, res = m["eval_processbench"].get("models") or {}, m["eval_bon"].get("results") or {}
    n, bias = m["eval_bon"].get("problems", 0), m["analyze_bias"].get("prms") or {}
    pb_iv, mol_iv = (iv or {}).get("processbench", {}), (iv or {}).get("min_on_final_step", {})

    def ci_(v):
        return None if not v else [_r1(v[1]), _r1(v[2])]

    def acc(v):
        if v is None:
            return None
        half = plots.binomial_half_width(v, n)
        return [round(v, 1), round(max(v - half, 0.0), 1), round(min(v + half, 100.0), 1)]

    names = [k[4:] for k in pbm if k.startswith("prm/")] + [k for k in res if k != "baselines" and f"prm/{k}" not in pbm]
    rows = []
    for name in names:
        r, avg = pbm.get(f"prm/{name}", {}), (res.get(name) or {}).get("average", {})
        rows.append({"name": name, "kind": kind_of(name),
                     "processbench_f1": _r1(pb_heldout_f1(r, m["held"])) if r else None,
                     "processbench_f1_ci": ci_((pb_iv.get(f"prm/{name}") or {}).get("f1")),
                     "step_auc": _r3((r.get("step_auc") or {}).get("heldout_average")),
                     "bon": {a: acc(avg.get(f"prm_{a}")) for a in ("min", "product", "last")},
                     "min_on_final_step": _r1((bias.get(name) or {}).get("min_on_last_step_all")),
                     "min_on_final_step_ci": ci_(mol_iv.get(name))})
    for key, r in pbm.items():
        if key.startswith("critic/"):
            rows.append({"name": key, "kind": kind_of(key), "processbench_f1": _r1(pb_heldout_f1(r, m["held"])),
                         "processbench_f1_ci": ci_((pb_iv.get(key) or {}).get("f1")),
                         "step_auc": None, "bon": {}, "min_on_final_step": None, "min_on_final_step_ci": None})
    base = (res.get("baselines") or {}).get("average", {})
    rows += [{"name": f"{b}@{m['eval_bon'].get('n')}", "kind": "baseline", "processbench_f1": None, "processbench_f1_ci": None,
              "step_auc": None, "bon": {"product": acc(base[b])}, "min_on_final_step": None, "min_on_final_step_ci": None}
             for b in BASELINES if b in base]
    return sorted(rows, key=lambda r: (r["processbench_f1"] is None, -(r["processbench_f1"] or 0),
                                       -((r["bon"].get("product") or [0])[0])))


def _r1(x):
    return None if x is None else round(float(x), 1)


def _r3(x):
    return None if x is None else round(float(x), 3)


def leaderboard_lines(rows: list[dict], n: int | None) -> list[str]:
    """The leaderboard as Markdown: a table a row each, the kind of each row said."""
    if not rows:
        return []
    body = [[r["name"], r["kind"], with_ci(r["processbench_f1"], r.get("processbench_f1_ci")), f3(r["step_auc"]),
             *(ci(r["bon"].get(a)) for a in ("min", "product", "last")),
             with_ci(r["min_on_final_step"], r.get("min_on_final_step_ci"))] for r in rows]
    return ["## PRM leaderboard", "",
            f"Every PRM of this study, sorted by held-out ProcessBench F1 (the paper's main metric); F1 and the min-on-final "
            f"share with their 95% intervals over resampled problems, Best-of-{n} accuracy with its binomial 95% interval "
            "over the problems; `reference`: the ceiling PRM (another training budget) and the judge as a critic; "
            "`baseline`: no PRM at all.", "",
            table(["PRM", "kind", "ProcessBench F1", "step AUC", f"Best-of-{n} min", f"Best-of-{n} product",
                   f"Best-of-{n} last", "min on final step (%)"], body), ""]


def study_metrics(h: dict, recs: list[dict], g: dict | None = None) -> dict:
    """reports/metrics.json, the one file DVC declares as metrics: a handful of numbers that fit a
    120-column `dvc metrics show` / `dvc exp show` (the headline and the detailed files hold the rest):
    the verdict counts ("3+ 1- 3?": reproduced, not reproduced, inconclusive) across seeds where this run's study has
    them (`glance` `g`; `seeds`: how many, 1 where none), this run's own (`one_seed`), held-out F1 of the MC, judge and
    human-label PRMs, and consensus's kept share."""
    def counts(verdicts: list[str]) -> str:
        c = Counter(verdicts)
        return f"{c['reproduced']}+ {c['not reproduced']}- {c['inconclusive']}?"

    f1 = h.get("processbench_f1", {})
    human = next((n for n in ("prm800k", "human") if n in f1), None)
    out: dict[str, Any] = {}
    if g and g["across_seeds"]:
        out["across_seeds"] = counts([r["verdict"] for r in g["across_seeds"]])
    out |= {"one_seed": counts([f["verdict"] for f in recs]), "seeds": g["seeds"] if g else 1,
            "f1": {k: f1[k] for k in ("mc_hard", "judge", human) if k and f1.get(k) is not None}}
    if h.get("consensus_kept") is not None:
        out["kept"] = h["consensus_kept"]
    return out


def plot_tables(m: dict, h: dict, iv: dict | None = None) -> dict[str, list[dict]]:
    """The data behind dvc.yaml's plots (reports/plots/<name>.json), rows DVC renders and `dvc plots
    diff` overlays across experiments: Best-of-N against N, ProcessBench F1, Best-of-N per method,
    label quality per source, min-score position. From the headline, eval_bon's `by_n` and `intervals` (`iv`).
    Every bar row has its 95% interval (`lo`, `hi`; None where `iv` lacks it) and its `kind` (trained, reference,
    baseline), and the rows of a plot are sorted highest first."""
    bon = {k: v for k, v in h.get("best_of_n", {}).items() if k != "n"}
    n_problems = m["eval_bon"].get("problems", 0)
    pb_iv, mol_iv = (iv or {}).get("processbench", {}), (iv or {}).get("min_on_final_step", {})
    pb_key = {headline_key(k): k for k in pb_iv}  # eval_processbench's model by its headline key

    def rows(d: dict | None, key: str, val: str, bounds, kind=kind_of) -> list[dict]:
        """{key: name, val: value, lo, hi, kind} a row per named value, highest first; `bounds(name, value)`: (lo, hi)."""
        got = [{key: k, val: v, **dict(zip(("lo", "hi"), bounds(k, v))), "kind": kind(k)}
               for k, v in (d or {}).items() if v is not None]
        return sorted(got, key=lambda r: -r[val])

    def from_iv(table: dict, key=lambda k: k):
        return lambda k, v: (table[key(k)][1], table[key(k)][2]) if key(k) in table else (None, None)

    def interval(acc: float) -> dict:
        """A binomial 95% interval (normal approximation) over the Best-of-N problems, in points: the error bars."""
        half = plots.binomial_half_width(acc, n_problems)
        return {"lo": max(acc - half, 0.0), "hi": min(acc + half, 100.0)}

    # Long rows, one per (N, method): DVC's plot colours each method (a wide row per N drew every method
    # in one colour, told apart by dash patterns only).
    by_n = [{"n": r["n"], "method": k, "accuracy": v, **interval(v)}
            for r in m["eval_bon"].get("by_n", []) for k, v in r.items() if k != "n" and v is not None]
    audit = m["consensus"].get("audit") or {}
    return {"bon_by_n": by_n,
            "bon_accuracy": rows(bon, "method", "accuracy", lambda k, v: tuple(interval(v).values())),
            "processbench_f1": rows(h.get("processbench_f1"), "model", "f1",
                                    from_iv({k: v["f1"] for k, v in pb_iv.items()}, lambda k: pb_key.get(k))),
            # binomial over the audited responses (a problem's responses share it: if anything too narrow)
            "label_quality": rows(h.get("label_first_error_accuracy"), "source", "first_error_accuracy",
                                  lambda k, v: (max(v - (w := plots.binomial_half_width(v, audit.get(k, {}).get("responses", 0))), 0.0),
                                                min(v + w, 100.0)), kind=lambda k: "label source"),
            "min_on_final_step": rows(h.get("min_on_final_step_share"), "prm", "share", from_iv(mol_iv))}


def prm_results(m: dict) -> dict[str, dict[str, float]]:
    """Each PRM's evaluation results, as the eval stages and analyze_bias wrote them: held-out ProcessBench
    F1 and step AUC, Best-of-N accuracy and within-problem AUC per aggregation, min-on-final-step share; rounded as
    the report shows them (points to 0.1, AUCs to 0.001), so MLflow's columns read as the report's."""
    out: dict[str, dict] = defaultdict(dict)
    for key, r in (m["eval_processbench"].get("models") or {}).items():
        if key.startswith("prm/"):
            out[key[4:]] |= {"eval.processbench_heldout_f1": r["tuned"].get("heldout_average_f1"),
                             "eval.processbench_heldout_step_auc": r.get("step_auc", {}).get("heldout_average")}
    for name, r in (m["eval_bon"].get("results") or {}).items():
        out[name] |= {f"eval.bon_{k[4:]}": v for k, v in (r.get("average") or {}).items()
                      if k.startswith("prm_") and not k.endswith("_process_verified")}
    for name, by_agg in (m["eval_bon"].get("within_problem_auc") or {}).items():
        out[name] |= {f"eval.bon_within_problem_auc_{agg}": v for agg, v in by_agg.items()}
    for name, v in (m["analyze_bias"].get("prms") or {}).items():
        out[name]["eval.min_on_final_step_pct"] = v.get("min_on_last_step_all")
    return {n: {k: round(float(v), 3 if "auc" in k else 1) for k, v in r.items() if isinstance(v, (int, float))}
            for n, r in out.items() if r}


# Where each of a PRM's evaluation metrics was measured: the input file its eval stage logged as an MLflow dataset.
METRIC_DATASET = (("eval.processbench", "eval_processbench", "data/processbench/items.jsonl"),
                  ("eval.", "eval_bon", "data/eval_samples/eval.jsonl"))


def _datasets(client, runs: dict[str, str]) -> dict[str, tuple[str, str]]:
    """{eval stage: (dataset name, digest)} as that stage's run logged its input (prmlab.core.tracking._log_inputs)."""
    out = {}
    for _, stage, path in METRIC_DATASET:
        if rid := runs.get(stage):
            for d in client.get_run(rid).inputs.dataset_inputs or []:
                if d.dataset.name == path:
                    out[stage] = (d.dataset.name, d.dataset.digest)
    return out


def _log_new(client, rid: str, key: str, points: list[tuple[int, float]], **kw) -> None:
    """Log (step, value) points unless the run's history of `key` already holds exactly them: a report rerun (`dvc exp
    run`) must not repeat each point."""
    have = sorted((m.step, m.value) for m in client.get_metric_history(rid, key))
    if have != sorted(points):
        for step, v in points:
            client.log_metric(rid, key, v, step=step, **kw)


def log_prm_results(runs: dict[str, str], results: dict[str, dict[str, float]], by_n: list[dict] = ()) -> list[str]:
    """Each PRM's evaluation results onto its own train_prm@<source> run (`runs`: {stage: run id}, as
    `Page.runs`) and that run's logged model, so MLflow's runs table and compare view rank the PRMs by
    quality, not by training loss (the ceiling's onto its ceiling run): each metric once, with the model and the
    dataset it was measured on (the eval stage's input). With `by_n` (eval_bon's rows), Best-of-N (product) against
    N as a stepped metric (`eval.bon_at_n_product`, step N) on each PRM's run and every method's on eval_bon's run
    (`bon_at_n.<method>`). Returns the PRMs logged (a reference PRM has no training run here)."""
    if not runs:
        return []
    import mlflow

    client, done = mlflow.MlflowClient(), []
    data = _datasets(client, runs)
    if rid := runs.get("eval_bon"):
        for method in dict.fromkeys(k for r in by_n for k in r if k != "n"):
            _log_new(client, rid, f"bon_at_n.{method}", [(r["n"], r[method]) for r in by_n if r.get(method) is not None])
    for name, metrics in results.items():
        rid = runs.get("ceiling" if name == CEILING else f"train_prm@{name}")
        if rid is None or not metrics:
            continue
        exp = client.get_run(rid).info.experiment_id
        models = mlflow.search_logged_models(experiment_ids=[exp], filter_string=f"source_run_id = '{rid}'",
                                             output_format="list")
        model_id = models[-1].model_id if models else None  # the run's model (one per train_prm run)
        for k, v in metrics.items():
            stage = next(st for prefix, st, _ in METRIC_DATASET if k.startswith(prefix))
            ds = dict(zip(("dataset_name", "dataset_digest"), data[stage])) if stage in data else {}
            _log_new(client, rid, k, [(0, v)], model_id=model_id, **ds)
        _log_new(client, rid, "eval.bon_at_n_product", [(r["n"], r[name]) for r in by_n if r.get(name) is not None],
                 model_id=model_id, **(dict(zip(("dataset_name", "dataset_digest"), data["eval_bon"])) if "eval_bon" in data else {}))
        # The model as the run's output, so the run page's "Logged models" field names it (creating it
        # with source_run_id links it one way only: the runs table shows it, the run page did not).
        from mlflow.entities import LoggedModelOutput

        linked = {o.model_id for o in (client.get_run(rid).outputs.model_outputs or [])} if models else set()
        new = [LoggedModelOutput(lm.model_id, 0) for lm in models if lm.model_id not in linked]
        if new:  # once: a report rerun (dvc exp run) must not link the same model again (a unique key)
            client.log_outputs(rid, new)
        done.append(name)
    return done


def run_descriptions(h: dict, board: list[dict]) -> dict[str, str]:
    """Each stage run's description (MLflow's `mlflow.note.content`, the run page's text): the figures
    that stage produced, as this report read them, {run name: Markdown}. A PRM's run gets its leaderboard row."""
    def ranked(d: dict, unit: str = "") -> str:
        return ", ".join(f"{k} {v}{unit}" for k, v in sorted(d.items(), key=lambda kv: -(kv[1] or 0)) if v is not None)

    lab = h.get("label_first_error_accuracy", {})
    out = {}
    if (x := h.get("policy_accuracy")) is not None:
        out["sample"] = f"Policy accuracy on the training problems: **{x}%**."
    for stage, src in (("label_mc", "mc"), ("label_judge", "judge")):
        if src in lab:
            out[stage] = f"First-error accuracy of the {src} labels against the exact verifier: **{lab[src]}%**."
    if "consensus" in lab:
        out["consensus"] = (f"Consensus labels: first-error accuracy **{lab['consensus']}%** against the exact verifier; "
                            f"kept {h.get('consensus_kept', '-')}% of responses.")
    if (x := h.get("judge_first_error_accuracy")) is not None:
        out["train_judge"] = (f"The judge names the first wrong step right on **{x}%** of held-out responses "
                              f"(always 'no error': {h.get('judge_baseline_always_no_error', '-')}%).")
    prms = [r for r in board if r["kind"] != "baseline" and not r["name"].startswith("critic")]
    for i, r in enumerate(r for r in board if r["processbench_f1"] is not None):
        if r in prms:
            n = (h.get("best_of_n") or {}).get("n")
            out["ceiling" if r["name"] == CEILING else f"train_prm@{r['name']}"] = (
                f"Held-out ProcessBench F1 **{with_ci(r['processbench_f1'], r.get('processbench_f1_ci'))}** (rank {i + 1} of "
                f"{sum(x['processbench_f1'] is not None for x in board)}), step AUC {f3(r['step_auc'])}; Best-of-{n} "
                + ", ".join(f"{a} {ci(r['bon'].get(a))}" for a in ("min", "product", "last"))
                + f"; lowest step score on the final step: {with_ci(r['min_on_final_step'], r.get('min_on_final_step_ci'))}%.")
    if f1 := h.get("processbench_f1"):
        out["eval_processbench"] = f"Held-out ProcessBench F1, ranked: {ranked(f1)}."
    if bon := {k: v for k, v in (h.get("best_of_n") or {}).items() if k != "n"}:
        out["eval_bon"] = f"Best-of-{h['best_of_n']['n']} accuracy (product), ranked: {ranked(bon, '%')}."
    if mol := h.get("min_on_final_step_share"):
        out["analyze_bias"] = f"Lowest step score on the final step (paper Fig. 8), ranked: {ranked(mol, '%')}."
    return {k: v + "\n\nThe study's report: reports/report.md (stage `report`)." for k, v in out.items()}


# ------------------------------------------------------------------------------------------ the stage

@dataclass(frozen=True)
class ReportInputs:
    """What stage report works on, read by `prepare_report`, and where it writes what the runner does not."""
    metrics: dict  # every stage's metrics file of this profile (load_metrics)
    findings: list[dict]  # the paper's findings measured on this run (evidence)
    example: list  # the judge's worked example (judge_example)
    intervals: dict  # per-PRM bootstrap intervals over resampled problems
    seeds: dict | None  # reports/seeds.json where it exists: the verdicts across seeds
    dose: dict | None  # reports/benchmarks/mc_dose.json where it exists: MC's dose-response (bench_mc_dose.py)
    out: str  # the report's Markdown (its HTML beside it)
    figures: str  # the figures' folder
    plots: str | None  # DVC plots' data folder (with headline)
    headline: bool  # write the headline, DVC's metrics and plots' data


def prepare_report(a, cfg: dict) -> ReportInputs:
    """The metrics files (this profile's, `train_prm.sources`'), findings and judge's example; where the core writes."""
    ui_url()  # the run links' base, refused now rather than after the report is built
    m = load_metrics(Path(a.metrics_dir), cfg["profile"].name, cfg["train_prm"].sources)
    example = judge_example(Path(a.samples), Path(a.judge_labels)) if a.samples and a.judge_labels else []
    seeds = read_json(a.seeds) if a.seeds and Path(a.seeds).exists() else None
    dose = read_json(a.dose) if getattr(a, "dose", None) and Path(a.dose).exists() else None
    recs, iv = evidence(m, Path(a.pb_scores), Path(a.bon_scores))
    return ReportInputs(m, recs, example, iv, seeds, dose, a.out, a.figures, a.plots, bool(a.headline))


def report(cfg: dict, data: ReportInputs, run) -> Done:
    """Stage report: the findings, the report (Markdown and HTML, figures logged to the run), each PRM's
    results onto its training run, and, with --headline, the headline, DVC's metrics and plots' data."""
    m, recs, out = data.metrics, data.findings, data.out
    page = Page(Path(data.figures), run)
    targets = exact_label_targets(m)
    seeds = data.seeds
    g = glance(recs, seeds)
    iv = data.intervals or {}
    board = leaderboard(m, iv)  # once: the report, the experiment's description and the headline show it
    text = build(m, page, recs, example=data.example, targets=targets, seeds=seeds, g=g, iv=iv, board=board,
                 dose=data.dose)
    html = Path(out).with_suffix(".html")
    atomic_write_text(out, text)
    atomic_write_text(html, to_html(text))
    log_prm_results(page.runs, prm_results(m), m["eval_bon"].get("by_n", []))
    if run is not None and recs:  # the experiment's description in MLflow: the study at a glance, then its PRMs
        # ranked, rounded, key metrics first (MLflow's runs table orders metric columns by name and does not round)
        run.describe_experiment("\n".join(["# prmlab study", "", *glance_lines(g),
                                           *leaderboard_lines(board, m["eval_bon"].get("n")),
                                           "The report: reports/report.md."]))
    outputs: dict[str, Any] = {"findings": {"n_boot": N_BOOT, "findings": recs, TARGETS_KEY: targets,
                                            "machines": trained_on(m), "device": device(m), "glance": g}}
    if data.headline:  # and --summary's numbers, written where --summary is given
        outputs["headline"] = h = headline(m, board)
        outputs["summary"] = study_metrics(h, recs, g)
        if run is not None:  # each stage run's page says what it produced
            import mlflow

            client = mlflow.MlflowClient()
            for name, text_ in run_descriptions(h, board).items():
                if rid := page.runs.get(name):
                    client.set_tag(rid, "mlflow.note.content", text_)
        if data.plots:  # lists, written as JSON (the runner writes a list as JSONL)
            for name, rows in plot_tables(m, h, iv).items():
                write_json(Path(data.plots) / f"{name}.json", rows)
    figures = len(list(Path(data.figures).glob("*.png")))
    return Done(summary=f"wrote {out} ({len(text.splitlines())} lines) and {figures} figures", outputs=outputs,
                artifacts=[out, str(html), data.figures])
