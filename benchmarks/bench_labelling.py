"""Benchmark: every labelling method against the toy verifier's exact truth, cost and accuracy side by side.

    python -m benchmarks.bench_labelling            # the committed study's responses (all of them)
    python -m benchmarks.bench_labelling --limit 16 # a smoke test on the first 16 responses

One row per method, on the same responses (data/samples/train.jsonl): exhaustive MC with hard and with soft labels,
binary search (OmegaPRM's rule), SCAN, the judge, consensus, the toy annotator (`human_onpolicy`: the toy's
PRM800K annotator on the policy's own responses), and the three newer methods (prmlab.pipeline.label_methods): the
two-model agreement filter (`mc_agree`), the reference-guided judge (`judge_ref`) and uncertainty-selected judging
(`judge_active`). Labels that exist on disk are read back, not recomputed (label_mc's, label_judge's, the toy
annotator's, and a method's data/labels/methods/<source>.jsonl where its stage ran); their model calls are counted
from the labels, and their generated tokens and wall time are left empty (they were not measured here). Binary
search, SCAN and any method without labels on disk run now, with the study's own params (label_mc's sampling for
the searches, which draw afresh; label_methods for the newer ones), and their tokens and wall time are measured.

`--save` writes the newer methods' labels that ran now into --methods (a folder other than the stage's own: the DVC
graph depends on that one), so a rerun reads them back and `stages.consensus --source <method> --methods DIR` builds
their training sets; `--prms` takes bench_prm_seeds.py's JSON of PRMs trained on those sets (and on the judge's and
MC's, at the same steps) and puts each source's held-out ProcessBench F1 and step AUC beside its labels' accuracy.

Per row: cost (model calls and generated tokens per model, the share of exhaustive MC's rollouts where it spends
rollouts, wall time on this machine), the share of responses it keeps whole (a filter names a first error for
fewer than all), and against the verifier: first-error accuracy on what it keeps (with a 95% interval,
bootstrapped over problems), on right and on wrong final answers, and step-label agreement (each labelled step's 0/1
against the verifier's, over the steps the method labels; MC soft: 1 - |soft - truth|). Rows are sorted by model
calls (generations; PRM forward passes are listed apart), and a row is on the cost-accuracy frontier when its
first-error accuracy beats every cheaper row's. Writes JSON (--out) and a plot (--plot) that
benchmarks/write_report.py turns into the "labelling methods" section of reports/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict
from pathlib import Path


def truth_labels(r) -> list[int]:
    """The verifier's 0/1 for every step: wrong from its first error on (the process has gone wrong), as the
    label audit counts them (prmlab.pipeline.training_sets.audit)."""
    t = r.true_first_error
    return [int(t == -1 or i < t) for i in range(len(r.steps))]


def prm_figures(results: dict, steps: int) -> dict:
    """bench_prm_seeds.py's JSON -> {source: its PRMs' held-out ProcessBench F1, step AUC and Best-of-8 (product),
    means over the training seeds measured at `steps` (the study's train_prm.steps), with the seeds}: the summary
    that benchmark writes (its seed_spread), read back."""
    return {s: {"steps": steps, "seeds": v["seeds"], **{m: v[m]["mean"] for m in ("f1_heldout", "step_auc_heldout",
                                                                                  "bon_product")}}
            for s, v in results.get("summary", {}).get(str(steps), {}).items()}


def prms_of(a) -> dict | None:
    """--prms' figures at params train_prm.steps; None without --prms."""
    from prmlab.core.io import read_json
    from prmlab.core.params import load_params
    from prmlab.prms.training_config import TrainPRMConfig

    return prm_figures(read_json(a.prms), load_params("train_prm", TrainPRMConfig, a.params).steps) if a.prms else None


def update(a) -> None:
    """--update: --out's frontier and plot redone, and its rows given --prms' PRM figures (at params train_prm.steps)
    where named; no method runs."""
    from prmlab.core.io import read_json, write_json

    out, prms = read_json(a.out), prms_of(a)
    if prms is not None:
        for r in out["rows"]:
            r["prm"] = prms.get(r.get("source"))
    frontier(out["rows"])
    write_json(a.out, out)
    plot(out["rows"], Path(a.plot))
    print(f"{a.out}: PRM figures for {sorted(s for s in prms or {} if any(r.get('source') == s for r in out['rows']))}")


def score(responses, first_errors: dict, step_labels: dict, boot: int, seed: int = 0, soft: dict | None = None) -> dict:
    """A method's accuracy against the verifier. `first_errors`: response id -> first error (absent or None: not kept);
    `step_labels`: response id -> its labelled steps' 0/1 (or MC's soft values in `soft`)."""
    kept = [r for r in responses if first_errors.get(r.response_id) is not None]
    hit = {r.response_id: first_errors[r.response_id] == r.true_first_error for r in kept}

    def acc(rs):
        rs = [r for r in rs if r.response_id in hit]
        return sum(hit[r.response_id] for r in rs) / len(rs) if rs else None

    same = total = 0.0
    for r in responses:
        labs = (soft or step_labels).get(r.response_id)
        if not labs:
            continue
        t = truth_labels(r)
        for i, x in enumerate(labs[: len(t)]):
            same += 1 - abs(x - t[i]) if soft else float(x == t[i])
            total += 1
    # the interval: problems resampled with replacement, each bringing all its responses
    by_problem = defaultdict(list)
    for r in kept:
        by_problem[r.problem_id].append(hit[r.response_id])
    groups, rng, draws = list(by_problem.values()), random.Random(seed), []
    for _ in range(boot if groups else 0):
        pick = [g for _ in groups for g in [groups[rng.randrange(len(groups))]]]
        n = sum(len(g) for g in pick)
        draws.append(sum(sum(g) for g in pick) / n)
    draws.sort()
    lohi = [draws[int(0.025 * len(draws))], draws[min(len(draws) - 1, int(0.975 * len(draws)))]] if draws else None
    return {"responses": len(responses), "kept": len(kept), "kept_share": len(kept) / max(len(responses), 1),
            "first_error_accuracy": acc(kept), "first_error_accuracy_ci": lohi,
            "first_error_accuracy_right_answers": acc([r for r in kept if r.correct]),
            "first_error_accuracy_wrong_answers": acc([r for r in kept if not r.correct]),
            "step_label_agreement": same / total if total else None, "labelled_steps": int(total)}


def distinct_calls(responses, n: int = 1) -> int:
    """What a judge pays: one call (of n samples) per distinct response to a problem (label_judge's rule)."""
    return len({(r.problem_id, tuple(r.steps)) for r in responses}) * n


def frontier(rows: list[dict]) -> None:
    """Sort by cost (generations, then PRM passes) and mark the rows no cheaper row beats on first-error accuracy. An
    annotator's row is outside the frontier: its labels cost human labour, not the model calls the frontier counts."""
    rows.sort(key=lambda r: (r["cost"]["generations"], r["cost"].get("prm_forward_passes", 0)))
    best = -1.0
    for r in rows:
        a, by_models = r["accuracy"]["first_error_accuracy"], "annotator_labels" not in r["cost"]
        r["frontier"] = by_models and a is not None and a > best
        best = max(best, a if a is not None and by_models else -1.0)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    names: dict[tuple, list[str]] = {}  # rows on one point (MC's hard and soft labels) share one label
    for r in rows:
        a, ci = r["accuracy"]["first_error_accuracy"], r["accuracy"]["first_error_accuracy_ci"]
        if a is None:
            continue
        x = r["cost"]["generations"] + 1  # +1: the annotator's zero calls sit on a log axis
        err = [[a - ci[0]], [ci[1] - a]] if ci else None
        ax.errorbar([x], [a], yerr=err, fmt="o" if r["frontier"] else "s", color="C0" if r["frontier"] else "C7", capsize=3)
        names.setdefault((x, a), []).append(r.get("source") or r["method"])  # the source's short name where it has one
    for (x, a), ns in names.items():
        ax.annotate(" / ".join(ns), (x, a), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xscale("log")
    if names:  # room for the rightmost labels
        ax.set_xlim(min(x for x, _ in names) / 2, max(x for x, _ in names) * 40)
    ax.set_xlabel("model calls (generations) + 1, log scale")
    ax.set_ylabel("first-error accuracy vs the verifier (kept responses)")
    ax.set_title("Labelling methods: accuracy against cost\n(95% bootstrap intervals over problems; blue: the frontier)",
                 fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default="data/problems/train.jsonl")
    ap.add_argument("--samples", default="data/samples/train.jsonl")
    ap.add_argument("--mc", default="data/labels/mc.jsonl")
    ap.add_argument("--judge", default="data/labels/judge.jsonl")
    ap.add_argument("--human", default="data/human/human_onpolicy.jsonl", help="the toy annotator on the policy's responses")
    ap.add_argument("--methods", default="data/labels/methods", help="label_method@<source>'s labels, read back where present")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--limit", type=int, default=0, help="the first N responses only (0: all)")
    ap.add_argument("--boot", type=int, default=1000, help="bootstrap resamples of the problems")
    ap.add_argument("--save", action="store_true", help="write the newer methods' labels that run now into --methods")
    ap.add_argument("--prms", help="bench_prm_seeds.py's JSON: each source's PRM figures beside its row")
    ap.add_argument("--update", action="store_true", help="redo --out's frontier and plot (and put --prms' figures into "
                    "its rows), running no method")
    ap.add_argument("--out", default="reports/benchmarks/labelling_methods.json")
    ap.add_argument("--plot", default="reports/benchmarks/labelling_methods.png")
    a = ap.parse_args()
    if a.save and Path(a.methods).resolve() == Path("data/labels/methods").resolve():
        ap.error("--save: --methods is stage label_method's own folder (prm_data depends on it): name another")

    if a.update:
        return update(a)

    import dataclasses

    from prmlab.core.io import read_jsonl, read_problems_and_responses, write_json, write_jsonl
    from prmlab.core.params import load_params
    from prmlab.core.records import JudgeLabel, MCLabel, PRMExample, labels_from_first_error
    from prmlab.core.stage import set_threads
    from prmlab.engines.config import BackendConfig
    from prmlab.engines.generation import make_generator
    from prmlab.pipeline.label_methods import (
        LabelMethodsConfig,
        agreed_label,
        ensemble_scores,
        load_reference_template,
        reference_labels,
        reference_solutions,
        trusted,
    )
    from prmlab.pipeline.labeling import MCStats, judge_labels, mc_search
    from prmlab.pipeline.labeling_config import LabelJudgeConfig, LabelMCConfig
    from prmlab.pipeline.method_labels import MethodLabel
    from prmlab.prompts import load_template

    set_threads()
    problems, responses = read_problems_and_responses(a.problems, a.samples)
    if a.limit:
        responses = responses[: a.limit]
    if not any(r.true_first_error is not None for r in responses):
        raise SystemExit(f"{a.samples}: no response carries the verifier's first error (only the toy world has it)")
    ids = {r.response_id for r in responses}
    mc = {lab.response_id: lab for lab in read_jsonl(a.mc, MCLabel) if lab.response_id in ids}
    judge = {lab.response_id: lab for lab in read_jsonl(a.judge, JudgeLabel) if lab.response_id in ids}
    mcc = load_params("label_mc", LabelMCConfig, a.params)
    ljc = load_params("label_judge", LabelJudgeConfig, a.params)
    lm = load_params("label_methods", LabelMethodsConfig, a.params)
    policy, judge_b = (load_params(s, BackendConfig, a.params) for s in ("policy", "judge"))
    completer = load_params("completer", BackendConfig, a.params)
    ex_rollouts = sum(lab.rollouts for lab in mc.values())
    rows = []

    prms = prms_of(a) or {}

    def row(method, how, fe, labels, cost, soft=None, notes="", source=None):
        """`source`: the label source a PRM trains on (train_prm.sources' name), None for the searches."""
        cost = {"generations": sum(cost.get("model_calls", {}).values()), **cost}
        if "rollouts" in cost:
            cost["rollouts_share_of_exhaustive"] = cost["rollouts"] / ex_rollouts if ex_rollouts else None
        rows.append({"method": method, "labels": how, "cost": cost, "notes": notes, "source": source,
                     "prm": prms.get(source), "accuracy": score(responses, fe, labels, a.boot, soft=soft)})
        acc = rows[-1]["accuracy"]["first_error_accuracy"]
        print(f"{method:34s} {how:9s} calls {cost['generations']:>8}  kept {rows[-1]['accuracy']['kept_share']:.3f}  "
              f"first-error acc {'-' if acc is None else f'{acc:.3f}'}", flush=True)

    # --- read back: what the study's stages wrote
    mc_fe = {k: v.first_error for k, v in mc.items()}
    row("MC exhaustive, hard (mc_hard)", "read back", mc_fe, {k: v.hard for k, v in mc.items()},
        {"model_calls": {"policy": ex_rollouts}, "rollouts": ex_rollouts}, source="mc_hard")
    row("MC exhaustive, soft (mc_soft)", "read back", mc_fe, {}, {"model_calls": {"policy": ex_rollouts},
        "rollouts": ex_rollouts}, soft={k: v.soft for k, v in mc.items()}, source="mc_soft")
    j_fe = {k: v.first_error for k, v in judge.items()}
    by_id = {r.response_id: r for r in responses}
    j_labels = {k: labels_from_first_error(len(by_id[k].steps), fe) for k, fe in j_fe.items() if fe is not None}
    j_calls = distinct_calls([r for r in responses if r.response_id in judge], ljc.n)
    row("judge", "read back", j_fe, j_labels, {"model_calls": {"judge": j_calls}}, source="judge")
    cons = {k: fe for k, fe in mc_fe.items() if fe is not None and j_fe.get(k) == fe}
    row("consensus (MC = judge)", "read back", cons, {k: mc[k].hard for k in cons},
        {"model_calls": {"policy": ex_rollouts, "judge": j_calls}, "rollouts": ex_rollouts}, source="consensus")
    if Path(a.human).exists():
        hu = {ex.response_id: ex.labels for ex in read_jsonl(a.human, PRMExample) if ex.response_id in ids}
        hu_fe = {k: (labs.index(0) if 0 in labs else -1) for k, labs in hu.items()}
        row("toy annotator (human_onpolicy)", "read back", hu_fe, hu, {"model_calls": {}, "annotator_labels": len(hu)},
            notes="the toy's noisy annotator, on the policy responses it labels", source="human_onpolicy")

    # --- run now: the cheaper MC searches, on fresh draws of label_mc's sampling
    gen = make_generator(policy)
    for search in ("binary", "scan"):
        st, t0 = MCStats(), time.monotonic()
        labs = mc_search(search, gen, problems, responses, mcc.sampling(0), mcc.threshold, st)
        row({"binary": "binary search (OmegaPRM's rule)", "scan": "SCAN"}[search], "run now",
            {x.response_id: x.first_error for x in labs}, {x.response_id: x.hard for x in labs},
            {"model_calls": {"policy": st.rollouts}, "generated_tokens": {"policy": st.generated_tokens},
             "rollouts": st.rollouts, "wall_s": time.monotonic() - t0})
    gen.close()

    # --- the newer methods: read back where their stage ran, else run now
    def on_disk(source):
        f = Path(a.methods) / f"{source}.jsonl"
        return {lab.response_id: lab for lab in read_jsonl(f, MethodLabel) if lab.response_id in ids} if f.exists() else None

    def saved(source, got):  # --save: the labels a training set is built from (stages.consensus --methods)
        if a.save:
            write_jsonl(Path(a.methods) / f"{source}.jsonl", [got[r.response_id] for r in responses])

    got = on_disk("mc_agree")
    cost, how = {}, "read back"
    if got is None:
        how, t0, st = "run now", time.monotonic(), MCStats()
        g = make_generator(completer)
        strong = mc_search(lm.agree.search, g, problems, responses, lm.agree.sampling(0), lm.agree.threshold, st)
        g.close()
        got = {r.response_id: agreed_label(r, mc.get(r.response_id), s) for r, s in zip(responses, strong)}
        cost = {"generated_tokens": {"completer": st.generated_tokens}, "wall_s": time.monotonic() - t0}
        saved("mc_agree", got)
    strong_rollouts = sum(lab.evidence.get("strong_rollouts", 0) for lab in got.values())
    row("two-model agreement (mc_agree)", how, {k: v.first_error for k, v in got.items()},
        {k: v.labels for k, v in got.items()},
        {"model_calls": {"policy": ex_rollouts, "completer": strong_rollouts}, "rollouts": ex_rollouts + strong_rollouts,
         **cost}, notes=f"weak: the policy (label_mc's labels); strong: {completer.model}", source="mc_agree")

    got, cost, how = on_disk("judge_ref"), {}, "read back"
    if got is None:
        how, t0 = "run now", time.monotonic()
        refs = reference_solutions(a.problems, problems, responses, lm.reference.solutions)
        g = make_generator(judge_b)
        labs, c = reference_labels(g, problems, refs, responses, load_reference_template(lm.reference.template_file),
                                   lm.reference.sampling(0))
        g.close()
        got = {x.response_id: x for x in labs}
        cost = {"generated_tokens": {"judge": c["judge_tokens"]}, "wall_s": time.monotonic() - t0}
        saved("judge_ref", got)
    row("reference-guided judge (judge_ref)", how, {k: v.first_error for k, v in got.items()},
        {k: v.labels for k, v in got.items()}, {"model_calls": {"judge": distinct_calls(
            [r for r in responses if r.response_id in got], lm.reference.n)}, **cost},
        notes="the study's judge with the reference solution in its prompt", source="judge_ref")

    got, cost, how = on_disk("judge_active"), {}, "read back"
    # The stage trains a member on each source with train_prm's settings; at active.steps 0 those are the study's
    # own PRMs of these sources, read here instead of trained again.
    members = [f"models/prm/{s}" for s in lm.active.ensemble]
    missing = [m for m in members if not Path(m).exists()]
    if got is None and missing:
        print(f"judge_active skipped: ensemble PRM(s) {missing} not found (train them first)", flush=True)
    else:
        if got is None:
            how, t0 = "run now", time.monotonic()
            scores, _ = ensemble_scores(members, problems, responses, lm.active)
            sel = [r for j, r in enumerate(responses)
                   if not trusted([m[j] for m in scores], lm.active.pred_threshold, lm.active.std_threshold)[0]]
            g = make_generator(judge_b)
            judged = {x.response_id: x for x in judge_labels(g, problems, sel, load_template(ljc.style, ljc.template_file),
                                                            ljc.style, ljc.sampling(0))}
            g.close()
            got = {r.response_id: MethodLabel(r.response_id, "judge_active", [] if (x := judged.get(r.response_id)) is None
                                              or x.first_error is None else labels_from_first_error(len(r.steps), x.first_error),
                                              None if x is None else x.first_error, {"selected": x is not None},
                                              r.content_md5())
                   for r in responses}
            cost = {"wall_s": time.monotonic() - t0}
            saved("judge_active", got)
        selected = [r for r in responses if got[r.response_id].evidence.get("selected")]
        row("uncertainty-selected judge (judge_active)", how, {k: v.first_error for k, v in got.items()},
            {k: v.labels for k, v in got.items()},
            {"model_calls": {"judge": distinct_calls(selected, ljc.n)},
             "prm_forward_passes": len(lm.active.ensemble) * len(responses), **cost},
            notes=f"ensemble {', '.join(lm.active.ensemble)} (their own training labels not counted); "
                  f"{len(selected)} of {len(responses)} sent to the judge", source="judge_active")

    frontier(rows)
    out = {"responses": len(responses), "problems": len({r.problem_id for r in responses}), "limit": a.limit,
           "exhaustive_rollouts": ex_rollouts, "boot": a.boot, "rows": rows,
           "params": {"label_mc": dataclasses.asdict(mcc), "label_methods": dataclasses.asdict(lm)}}
    write_json(a.out, out)
    plot(rows, Path(a.plot))
    print(f"wrote {a.out} and {a.plot}")


if __name__ == "__main__":
    main()
