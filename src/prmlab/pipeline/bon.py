"""Best-of-N: stage eval_bon's config and core, and the tables it reports.

A problem's N responses (sample_eval's order) are scored step by step by a PRM; each aggregation
(`product`, `min`, `last`: prmlab.analysis.metrics.aggregate) makes a response score, and prmlab.analysis.metrics.best_of_n,
the one Best-of-N pick, takes the top one. `bon_table` reports prm@N per aggregation beside maj@N,
pass@N and a random pick, per benchmark and averaged; `bon_by_n` the same at each N of the curve;
`over_maj` a PRM's pick against maj@N on the same problems, with its paired interval;
`bon_within_auc` whether a response score ranks an error-free response above a flawed one.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass, field

from prmlab.analysis.metrics import (
    aggregate,
    best_of_n,
    maj_at_k,
    mean,
    pass_at_k,
    random_pick,
    refuse_nan,
    within_problem_auc,
)
from prmlab.analysis.stats import N_BOOT, bootstrap_ci
from prmlab.core.io import read_problems_and_responses
from prmlab.core.params import check
from prmlab.core.records import Problem, Response
from prmlab.core.result import Done
from prmlab.prms.layouts import PRMScoring, PRMSpec, checked_prms


@dataclass(frozen=True)
class EvalBoNConfig(PRMScoring):
    n: int = 8
    aggregations: list[str] = field(default_factory=lambda: ["product", "min", "last"])

    def __post_init__(self):
        check(self.n >= 1, "eval_bon.n must be >= 1")
        self.check_scoring("eval_bon")
        bad = set(self.aggregations) - {"product", "min", "last"}
        check(not bad, f"eval_bon.aggregations: unknown {sorted(bad)}; use product, min, last")
        # product is the headline's and the report's aggregation (the paper's Table 6 uses it too)
        check("product" in self.aggregations, f"eval_bon.aggregations must include product, got {self.aggregations}")


def group(responses: list[Response], n: int) -> dict[str, list[Response]]:
    by: dict[str, list[Response]] = defaultdict(list)
    for r in responses:
        by[r.problem_id].append(r)
    return {pid: rs[:n] for pid, rs in by.items()}


def bon_outcomes(problems: dict[str, Problem], groups: dict[str, list[Response]],
                 scores: dict[str, list[float]] | None, aggregations: list[str]) -> list[dict]:
    """Each problem's result under every method, in `problems` order: {"bench": its benchmark, "maj",
    "pass", "random" (a random pick's expected accuracy), "no_responses", and with scores "prm_<agg>"
    (and "prm_<agg>_process_verified" where the verifier labels the pick)}, each 0-1. `bon_table`
    averages them; `over_maj` pairs a PRM's with maj@N's on the same problems."""
    out = []
    # Every problem with a gold answer counts, also one whose responses were all dropped (no steps):
    # it is a miss for every method, never a smaller denominator.
    for pid in [p for p, prob in problems.items() if prob.gold_answer]:
        rs = groups.get(pid, [])
        o = {"bench": problems[pid].source, "no_responses": float(not rs)}
        out.append(o)
        if not rs:
            o |= {k: 0.0 for k in ["maj", "pass", "random"] + ([f"prm_{agg}" for agg in aggregations] if scores is not None else [])}
            continue
        correct = [r.correct for r in rs]
        o |= {"maj": float(maj_at_k([r.answer for r in rs], correct, len(rs))), "pass": float(pass_at_k(correct, len(rs))),
              "random": random_pick(correct, len(rs))}
        for agg in aggregations if scores is not None else []:
            best = best_of_n([scores[r.response_id] for r in rs], agg)
            o[f"prm_{agg}"] = float(rs[best].correct)
            if rs[best].true_first_error is not None:
                o[f"prm_{agg}_process_verified"] = float(rs[best].correct and rs[best].true_first_error == -1)
    return out


def bon_table(problems: dict[str, Problem], groups: dict[str, list[Response]],
              scores: dict[str, list[float]] | None, aggregations: list[str]) -> dict:
    """Per benchmark (problem.source) and averaged: maj@N, pass@N, a random pick's expected accuracy,
    and prm@N per aggregation (percent)."""
    return outcome_table(bon_outcomes(problems, groups, scores, aggregations))


def outcome_table(outcomes: list[dict]) -> dict:
    """bon_table from bon_outcomes: each method's mean per benchmark, and their unweighted mean."""
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        for k, v in o.items():
            if k != "bench":
                per[o["bench"]][k].append(v)
    table = {b: {k: 100.0 * mean(v) for k, v in d.items()} | {"problems": len(d["maj"])} for b, d in per.items()}
    keys = {k for d in table.values() for k in d if k != "problems"}
    table["average"] = {k: mean([table[b][k] for b in per if k in table[b]]) for k in sorted(keys)}
    return table


def over_maj(outcomes: list[dict], agg: str, n_boot: int = N_BOOT, seed: int = 0) -> list[float]:
    """Best-of-N by `agg` minus maj@N, in points of bon_table's average (the unweighted mean over
    benchmarks), with its 95% paired bootstrap interval over the problems (resampled within each
    benchmark): [difference, lo, hi]. The exact-label PRMs' target is `lo` above 0 (prmlab.report.study.meets_exact_label_targets)."""
    units = [(o["bench"], o[f"prm_{agg}"] - o["maj"]) for o in outcomes]

    def stat(sample: list[tuple[str, float]]) -> float:
        by: dict[str, list[float]] = defaultdict(list)
        for bench, d in sample:
            by[bench].append(d)
        return 100.0 * mean([mean(v) for v in by.values()])

    return [stat(units), *bootstrap_ci(units, stat, n_boot, seed, strata=lambda u: u[0])]


def bon_within_auc(groups: dict[str, list[Response]], scores: dict[str, list[float]], agg: str) -> float | None:
    """metrics.within_problem_auc of each candidate's `agg` score against its verifier label (toy): does the
    response score rank an error-free response above a flawed one of the same problem? (A pooled step AUC
    can be high without it.)"""
    return within_problem_auc([[(aggregate(scores[r.response_id], agg), r.true_first_error) for r in rs]
                               for rs in groups.values()])


def response_scores(scorer, problems: dict[str, Problem], responses: list[Response], name: str) -> dict[str, list[float]]:
    """A PRM's step scores of each response, by id; a NaN is refused (naming the PRM)."""
    sc = scorer.score([(problems[r.problem_id].question, r.steps) for r in responses])
    refuse_nan(name, sc)
    return {r.response_id: s for r, s in zip(responses, sc)}


def prm_bon(problems: dict[str, Problem], groups: dict[str, list[Response]], scores: dict[str, list[float]],
            aggregations: list[str], n_boot: int = N_BOOT) -> tuple[dict, dict, dict]:
    """One PRM's Best-of-N from its step scores, per aggregation: outcome_table, over_maj, bon_within_auc."""
    outcomes = bon_outcomes(problems, groups, scores, aggregations)
    return (outcome_table(outcomes), {agg: over_maj(outcomes, agg, n_boot) for agg in aggregations},
            {agg: bon_within_auc(groups, scores, agg) for agg in aggregations})


def n_values(n: int) -> list[int]:
    """The N of the Best-of-N curve: powers of two up to n, and n itself (so the curve ends at Table 6's N)."""
    ns = [1 << k for k in range(n.bit_length()) if 1 << k <= n]
    return ns if ns[-1] == n else [*ns, n]


def bon_by_n(problems: dict[str, Problem], groups: dict[str, list[Response]], n: int,
             scores: dict[str, list[float]] | None = None) -> dict[str, dict[str, float]]:
    """Averaged accuracy at each N of `n_values(n)`, each problem keeping its first N responses (the
    order sample_eval wrote them in, so Best-of-2 is a prefix of Best-of-8, as in a growing budget).
    Keys: `maj`, `pass`, and with scores `prm` (the `product` aggregation); values {"N": percent}."""
    keys = ["maj", "pass"] + (["prm_product"] if scores is not None else [])
    out: dict[str, dict[str, float]] = {k.removesuffix("_product"): {} for k in keys}
    for k in n_values(n):
        avg = bon_table(problems, {pid: rs[:k] for pid, rs in groups.items()}, scores,
                        ["product"] if scores is not None else [])["average"]
        for key in keys:
            out[key.removesuffix("_product")][str(k)] = avg.get(key, 0.0)
    return out


def by_n_rows(curves: dict[str, dict[str, float]]) -> list[dict]:
    """{"maj": {"N": %}, "pass": {...}, prm name: {"N": %}} -> one row per N: {"n": N, "maj": %, ...}.
    Rows, not keys: a list keeps N out of column names (DVC and MLflow flatten nested keys), and it
    is what DVC plots read (reports/plots/bon_by_n.json)."""
    ns = sorted({int(k) for c in curves.values() for k in c})
    return [{"n": k, **{name: c[str(k)] for name, c in curves.items() if str(k) in c}} for k in ns]


@dataclass(frozen=True)
class BoNInputs:
    """What stage eval_bon works on, read and checked by `prepare_bon`."""
    prms: dict[str, PRMSpec]  # by name, each checked (its layout, files)
    problems: dict[str, Problem]  # by id
    groups: dict[str, list[Response]]  # each problem's candidates, at most eval_bon.n


def prepare_bon(a, cfg: dict) -> BoNInputs:
    """The PRMs (checked), the problems and the responses grouped by problem, before any model loads."""
    c = cfg["eval_bon"]
    prms = checked_prms(a, cfg["train_prm"].sources, c.reference_prms, c.scorer)
    problems, responses = read_problems_and_responses(a.problems, a.samples)
    groups = group(responses, c.n)
    most = max((len(rs) for rs in groups.values()), default=0)
    if groups and most < c.n:  # else "maj@16" would be maj@8 under another name, and the curve copy its last point
        raise ValueError(f"eval_bon.n is {c.n} but {a.samples} has at most {most} responses per problem "
                         f"(sample_eval.n); lower eval_bon.n or sample more")
    # A problem with fewer than n candidates is a Best-of-fewer: counted beside @n, never reported as whole
    if short := sum(len(rs) < c.n for rs in groups.values()):
        print(f"[eval_bon] WARNING: {a.samples}: {short} of {len(groups)} problems have fewer than eval_bon.n = {c.n} "
              "responses; their Best-of-N is over fewer (counted in the metrics)", file=sys.stderr)
    return BoNInputs(prms, problems, groups)


def eval_bon(cfg: dict, data: BoNInputs, run) -> Done:
    """Stage eval_bon: every PRM's Best-of-N against maj@N and pass@N, and the step scores it used."""
    c, prms, problems, groups = cfg["eval_bon"], data.prms, data.problems, data.groups
    run.params({"prms": prms})
    responses = [r for rs in groups.values() for r in rs]
    short = sum(len(rs) < c.n for rs in groups.values())  # Best-of-fewer (prepare_bon warns)
    results, rows, scorer_max_length, truncated, within, vs_maj = {}, [], {}, {}, {}, {}
    base = bon_table(problems, groups, None, [])
    results["baselines"] = {b: {k: v for k, v in d.items() if k in ("maj", "pass", "random", "problems", "no_responses")}
                            for b, d in base.items()}
    # The Best-of-N curve (report figure): maj@N and pass@N, and prm@N per PRM below.
    by_n = bon_by_n(problems, groups, c.n)
    verifiers: dict[str, dict] = {}
    for name, spec in prms.items():
        # An outcome RM (layout orm) scores each response once, whole: its one score is its BoN score.
        with c.open_scorer(spec, per_prefix=False) as scorer:
            scorer.progress = f"eval_bon {name}"
            scores = response_scores(scorer, problems, responses, name)
            scorer_max_length[name] = scorer.max_length
            cut = scorer.last_truncated
            if hasattr(scorer, "unparsed_votes"):  # a generative verifier: its sampling and its unparsed votes
                verifiers[name] = scorer.summary()
        results[name], vs_maj[name], within[name] = prm_bon(problems, groups, scores, c.aggregations)
        by_n[name] = bon_by_n(problems, groups, c.n, scores)["prm"]
        # A response cut to fit max_length is scored on its first steps only; one with no step
        # left scores -inf (never picked). Counted, in the metrics and the summary, never silent.
        truncated[name] = {"truncated_responses": sum(cut),
                           "unscored_responses": sum(not s for s in scores.values())}
        rows += [{"prm": name, "response_id": r.response_id, "problem_id": r.problem_id, "correct": r.correct,
                  "true_first_error": r.true_first_error, "step_scores": scores[r.response_id]} for r in responses]
    m = {"problems": len(groups), "responses": len(responses), "n": c.n, "problems_with_fewer_than_n": short,
         "results": results, "by_n": by_n_rows(by_n), "scorer_max_length": scorer_max_length, "truncation": truncated,
         "within_problem_auc": within, "over_maj": vs_maj, **({"verifiers": verifiers} if verifiers else {})}
    avg = results["baselines"]["average"]
    return Done(m, f"{len(groups)} problems x <= {c.n}: maj@{c.n} {avg['maj']:.1f}, pass@{c.n} {avg['pass']:.1f}; "
                + ", ".join(f"{k} prm@{c.n} {v['average'].get('prm_product', 0):.1f}" for k, v in results.items() if k != "baselines")
                + "".join(f"; {k}: {t['truncated_responses']} responses truncated to max_length, {t['unscored_responses']} unscored"
                          for k, t in truncated.items() if t["truncated_responses"])
                + "".join(f"; {k}: {v['unparsed_votes']} step votes without a verdict (scored not correct)"
                          for k, v in verifiers.items() if v["unparsed_votes"])
                + (f"; {short} problems have fewer than {c.n} responses (their @{c.n} is over fewer)" if short else ""),
                outputs={"scores": rows})
