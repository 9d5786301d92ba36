"""The report's findings: each of the paper's claims, quoted exactly, beside its toy (or real)
analogue measured here with a 95% bootstrap interval, and a verdict the interval decides.

Inputs are per-item rows, as the eval stages write them:
- ProcessBench: {"model": "prm/<name>", "subset", "id", "label", "step_scores"} and each PRM's
  tuned threshold; a PRM predicts the first step below it (prmlab.metrics.first_below).
- Best-of-N: {"prm", "problem_id", "response_id", "correct", "true_first_error", "step_scores"};
  the pick is the response with the highest aggregated score, ties to the earliest.

Held out: where `tune_subset` names the subset the threshold was tuned on, ProcessBench findings
use the other subsets only (with one subset, there is nothing held out: said in the row).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from prmlab.metrics import argmin_position, best_of_n, mean, processbench_scores
from prmlab.paper import CLAIMS, CONSENSUS_KEPT, EFFECT
from prmlab.stats import (
    INCONCLUSIVE,
    N_BOOT,
    all_of,
    bootstrap_ci,
    bootstrap_values,
    equivalence_verdict,
    percentile_interval,
    verdict,
)

EQUAL_MARGIN = 3.0  # F1 points: "equal" means both ends of the interval within this of 0
KEPT_MARGIN = 15  # Fig. 2's "about 40%" kept: within this many points of it (25-55%)
# The effect each estimate must resolve: the paper's (prmlab.paper); for its tie (hard = soft), the margin.
PAPER_EFFECT = EFFECT | {"f1_hard_minus_soft": EQUAL_MARGIN}


def decide(fid: str, intervals: dict[str, Sequence[float]]) -> str:
    """Finding `fid`'s verdict from its estimates' 95% intervals ({name: (lo, hi)}): one seed's bootstrap
    intervals or the across-seed ones, by the same rule. Each estimate must lie on the claimed side of 0,
    except the equalities (hard = soft labels; the kept share about 40%; consensus "matches or beats" MC:
    beats, or else matches within the margin); inflation is decided on mc_hard's excess alone (the other
    PRMs' are shown beside it). A claim of several estimates needs all of them (prmlab.stats.all_of)."""
    def one(name: str, lo: float, hi: float) -> str:
        if name == "kept_share":
            return equivalence_verdict(lo - CONSENSUS_KEPT, hi - CONSENSUS_KEPT, KEPT_MARGIN)
        if fid == "hard_soft":
            return equivalence_verdict(lo, hi, EQUAL_MARGIN)
        v = verdict(lo, hi)
        return equivalence_verdict(lo, hi, EQUAL_MARGIN) if fid == "consensus" and v == INCONCLUSIVE else v

    return all_of([one(name, *intervals[name]) for name in deciding(fid, intervals)])


def deciding(fid: str, estimates: Sequence[str]) -> list[str]:
    """The estimates of finding `fid` that decide its verdict: inflation's is mc_hard's excess alone (where
    present), every other finding's are all of them. prmlab.report.seeds reads it to say why a verdict is open."""
    if fid == "inflation":
        return ["inflation_excess_mc_hard" if "inflation_excess_mc_hard" in estimates else next(iter(estimates))]
    return list(estimates)


def _pb_units(rows: list[dict], subsets: Sequence[str]) -> dict[tuple, dict]:
    """(subset, id) -> {"label": y, "pred": {prm: first wrong step predicted}}: each PRM's prediction at its
    tuned threshold as eval_processbench wrote it (truncated items included), never re-derived here."""
    units: dict[tuple, dict] = {}
    for r in rows:
        if not r["model"].startswith("prm/") or r["subset"] not in subsets:
            continue
        u = units.setdefault((r["subset"], r["id"]), {"label": r["label"], "pred": {}})
        u["pred"][r["model"].removeprefix("prm/")] = r["pred"]
    return units


def pb_f1(units: list[dict], subset_of: list[str], name: str) -> float:
    """Unweighted mean over subsets of ProcessBench F1, as the benchmark averages."""
    by: dict[str, list[dict]] = defaultdict(list)
    for s, u in zip(subset_of, units):
        by[s].append(u)
    return mean([processbench_scores([u["label"] for u in us], [u["pred"].get(name) for u in us])["f1"]
                 for us in by.values()])


def _bon_groups(rows: list[dict]) -> dict[str, dict[str, list[dict]]]:
    """problem_id -> prm -> its rows (responses) in file order."""
    g: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        g[r["problem_id"]][r["prm"]].append(r)
    return g


def pick(rs: list[dict], how: str = "product") -> dict:
    return rs[best_of_n([r["step_scores"] for r in rs], how)]


def _fmt_ci(x: float, lo: float, hi: float) -> str:
    return f"{x:.1f} [{lo:.1f}, {hi:.1f}]"


class Findings:
    def __init__(self, pb_rows: list[dict], pb_subsets: list[str], tune_subset: str | None,
                 bon_rows: list[dict], consensus: dict, n_boot: int = N_BOOT, seed: int = 0):
        held = [s for s in pb_subsets if s != tune_subset]
        self.pb_held_out = bool(held)
        self.pb_subsets = held or list(pb_subsets)
        units = _pb_units(pb_rows, self.pb_subsets)
        self.pb_keys = sorted(units)
        self.pb_units = [units[k] for k in self.pb_keys]
        self.bon = _bon_groups(bon_rows)
        self.prms = sorted({r["prm"] for r in bon_rows})
        self.consensus = consensus
        self.n_boot, self.seed = n_boot, seed

    # ------------------------------------------------------------------ statistics with intervals
    def _estimate(self, units: list, stat, strata=None) -> tuple[float, float, float]:
        """`stat` over all `units`, and its 95% bootstrap interval over resamples of them."""
        return (stat(units), *bootstrap_ci(units, stat, self.n_boot, self.seed, strata=strata))

    def _pb_gap(self, a: str, b: str):
        """F1(a) - F1(b) over a sample of ((subset, id), unit) pairs."""
        def stat(sample):
            subs, us = [k[0] for k, _ in sample], [u for _, u in sample]
            return pb_f1(us, subs, a) - pb_f1(us, subs, b)

        return stat

    def _bon_gap(self, a: str, b: str):
        """Best-of-N accuracy of a - of b over a sample of problems."""
        return lambda sample: self.bon_acc(sample, a) - self.bon_acc(sample, b)

    def pb_diff(self, a: str, b: str) -> tuple[float, float, float]:
        """F1(a) - F1(b) on the held-out subsets, paired over items (stratified by subset)."""
        return self._estimate(list(zip(self.pb_keys, self.pb_units)), self._pb_gap(a, b), strata=lambda p: p[0][0])

    def bon_acc(self, sample: list[str], prm: str, how: str = "product") -> float:
        return 100.0 * mean([float(pick(self.bon[p][prm], how)["correct"]) for p in sample if self.bon[p].get(prm)])

    def bon_diff(self, a: str, b: str) -> tuple[float, float, float]:
        return self._estimate(sorted(self.bon), self._bon_gap(a, b))

    def _raws_problems(self, prm: str) -> list[str]:
        return [p for p in sorted(self.bon) if self.bon[p].get(prm)
                and all(r["true_first_error"] is not None for r in self.bon[p][prm])]

    @staticmethod
    def _raws(r: dict) -> float:
        """1 for a right answer reached through a wrong step (the verifier's first error), else 0."""
        return float(bool(r["correct"]) and r["true_first_error"] != -1)

    def inflation(self, prm: str) -> tuple[float, float, float]:
        """Share (%) of problems whose Best-of-N pick is a right answer through a wrong step: the accuracy
        Best-of-N counts that process verification would not."""
        return self._estimate(self._raws_problems(prm),
                              lambda sample: 100.0 * mean([self._raws(pick(self.bon[p][prm])) for p in sample]))

    def inflation_excess(self, prm: str) -> tuple[float, float, float]:
        """The PRM's share of such picks minus a random pick's (the share of such responses among each
        problem's candidates), paired by problem, in points: above 0, the PRM prefers them to chance."""
        return self._estimate(self._raws_problems(prm),
                              lambda sample: 100.0 * mean([self._raws(pick(rs)) - mean([self._raws(r) for r in rs])
                                                           for rs in (self.bon[p][prm] for p in sample)]))

    def bon_over_pb(self, a: str, b: str) -> tuple[float, float, float]:
        """How much more `a` leads `b` on Best-of-N than on ProcessBench, in points:
        (BoN acc a - b) - (F1 a - b), the two resampled independently (different units)."""
        probs, pairs = sorted(self.bon), list(zip(self.pb_keys, self.pb_units))
        bon, pb = self._bon_gap(a, b), self._pb_gap(a, b)
        bv = bootstrap_values(probs, bon, self.n_boot, self.seed)
        pv = bootstrap_values(pairs, pb, self.n_boot, self.seed + 1, strata=lambda p: p[0][0])
        lo, hi = percentile_interval([x - y for x, y in zip(bv, pv)])
        return bon(probs) - pb(pairs), lo, hi

    def last_minus_min_gap(self, a: str, b: str) -> tuple[float, float, float]:
        """How much more `a` gains than `b` from scoring a response by its last step instead of its lowest:
        (BoN a by last - by min) - (BoN b by last - by min), in points, paired by problem."""
        def gain(sample, prm):
            return self.bon_acc(sample, prm, "last") - self.bon_acc(sample, prm, "min")

        return self._estimate([p for p in sorted(self.bon) if self.bon[p].get(a) and self.bon[p].get(b)],
                              lambda sample: gain(sample, a) - gain(sample, b))

    def min_on_last(self, prm: str, sample: list[tuple[str, int]] | None = None) -> float:
        """Share (%) of all multi-step responses whose lowest step score is on the final step (ties: earliest)."""
        rows = [self.bon[p][prm][i] for p, i in (sample if sample is not None else self._resp(prm))]
        return 100.0 * mean([float(argmin_position(r["step_scores"])[0] == len(r["step_scores"]) - 1) for r in rows])

    def _resp(self, prm: str) -> list[tuple[str, int]]:
        return [(p, i) for p in sorted(self.bon) for i, r in enumerate(self.bon[p].get(prm, []))
                if len(r["step_scores"]) > 1]

    def min_on_last_diff(self, a: str, b: str) -> tuple[float, float, float]:
        return self._estimate([u for u in self._resp(a) if len(self.bon[u[0]].get(b, [])) > u[1]],
                              lambda sample: self.min_on_last(a, sample) - self.min_on_last(b, sample))

    # ---------------------------------------------------------------------------------- findings
    def records(self) -> list[dict]:
        """Per finding: id, claim, paper (quoted), ours (text), verdict, and the estimates behind it as
        {name: [point, lo, hi]} (what a multi-seed aggregate combines)."""
        have_pb = {n for u in self.pb_units for n in u["pred"]}
        out: list[dict] = []

        def add(fid: str, claim: str, paper: str, ours: str, **est):
            # Each interval's half-width beside the paper's effect it must resolve (PAPER_EFFECT).
            precision = {k: {"half_width": (float(val[2]) - float(val[1])) / 2, "paper_effect": PAPER_EFFECT.get(k)}
                         for k, val in est.items()}
            v = decide(fid, {k: val[1:] for k, val in est.items()})
            out.append({"id": fid, "claim": claim, "paper": paper, "ours": ours, "verdict": v,
                        "estimates": {k: [float(x) for x in val] for k, val in est.items()}, "precision": precision})
        held = "held-out subsets" if self.pb_held_out else "the tuning subset itself (nothing held out)"

        def need(*names) -> bool:
            return all(n in have_pb for n in names)

        # 1. MC < judge < human
        # Human labels: PRM800K where the run trained on it (paper profile), else the toy verifier's stand-in.
        # The toy's `human` is its PRM800K analogue (off-policy, fewer, noisy); `oracle` is only an upper bound.
        human = next((n for n in ("prm800k", "human", "oracle") if n in have_pb), "oracle")
        if need("mc_hard", "judge", human):
            d1, d2 = self.pb_diff("judge", "mc_hard"), self.pb_diff(human, "judge")
            who = {"prm800k": "prm800k (human labels)", "human": "human (the toy's PRM800K: off-policy, fewer, noisy labels)",
                   "oracle": "oracle (the verifier on the policy's own responses: an upper bound, not a human stand-in)"}[human]
            add("mc_judge_human", "PRMs trained on MC labels are worse than on judge labels, and judge worse than human labels",
                CLAIMS["table4"],
                f"ProcessBench F1 on {held}: judge - mc_hard {_fmt_ci(*d1)}; {who} - judge {_fmt_ci(*d2)}",
                f1_judge_minus_mc=d1, **{f"f1_{human}_minus_judge": d2})
        # 2. consensus keeps ~40% and matches or beats MC with less data
        n, k = self.consensus.get("responses", 0), self.consensus.get("agree", 0)
        if n:
            kept = [1.0] * k + [0.0] * (n - k)
            lo, hi = bootstrap_ci(kept, lambda s: 100.0 * mean(s), self.n_boot, self.seed)
            share = 100.0 * k / n
            ours = (f"kept {_fmt_ci(share, lo, hi)}% (counts as about {CONSENSUS_KEPT}% within "
                    f"{CONSENSUS_KEPT - KEPT_MARGIN}-{CONSENSUS_KEPT + KEPT_MARGIN}%)")
            est = {"kept_share": (share, lo, hi)}
            if need("consensus", "mc_hard"):
                d = self.pb_diff("consensus", "mc_hard")
                ours += f"; F1 consensus - mc_hard {_fmt_ci(*d)}"
                est["f1_consensus_minus_mc"] = d
            add("consensus", "Consensus filtering keeps about 40% of the data, and its PRM matches or beats the MC PRM",
                CLAIMS["fig2"], ours, **est)
        # 3. hard vs soft (unfiltered only here): equality only where the interval is narrow enough to show it
        if need("mc_hard", "mc_soft"):
            d = self.pb_diff("mc_hard", "mc_soft")
            why = ""
            half, gap = (d[2] - d[1]) / 2, abs(d[0])
            if decide("hard_soft", {"f1_hard_minus_soft": d[1:]}) == INCONCLUSIVE:
                n = len(self.pb_units)
                # Equality is shown when |d| + half-width <= margin; the half-width shrinks as 1/sqrt(n).
                # (not `need`: that name is the helper above, called again by the findings below)
                items = (f"showing equality would need about {int(n * (half / (EQUAL_MARGIN - gap)) ** 2):,} held-out items "
                         f"(here {n})" if gap < EQUAL_MARGIN else "no number of items can show equality with this estimate")
                why = (f"; inconclusive: the interval (half-width {half:.1f} around {d[0]:.1f}) is not within the "
                       f"+-{EQUAL_MARGIN:g} margin; {items}")
            add("hard_soft", "Before filtering, hard and soft MC labels are equal", CLAIMS["fig3"],
                f"F1 mc_hard - mc_soft {_fmt_ci(*d)}, equal if within +-{EQUAL_MARGIN:g}; soft labels are not "
                "trained on the consensus subset here, so the after-filtering half is not tested" + why,
                f1_hard_minus_soft=d)
        # The process-label reference: human labels (PRM800K, or the toy verifier's stand-in), else the judge's.
        process_ref = next((n for n in (human, "judge") if n in self.prms and n in have_pb), None)
        # 4. Best-of-N flatters MC-trained PRMs relative to ProcessBench (not "the rankings differ":
        # random scores make Kendall tau < 1 too)
        if "mc_hard" in self.prms and need("mc_hard") and process_ref:
            d = self.bon_over_pb("mc_hard", process_ref)
            bon_d, pb_d = self.bon_diff("mc_hard", process_ref), self.pb_diff("mc_hard", process_ref)
            add("rankings", "Best-of-N flatters a PRM trained on MC labels: against one trained on process labels, it "
                "does better on Best-of-N than on ProcessBench", CLAIMS["tables67"],
                f"mc_hard - {process_ref}: Best-of-N accuracy {_fmt_ci(*bon_d)}, ProcessBench F1 {_fmt_ci(*pb_d)}; "
                f"the first minus the second {_fmt_ci(*d)} points (above 0: Best-of-N flatters mc_hard)",
                **{f"bon_minus_pb_gap_mc_hard_vs_{process_ref}": d})
        # 5. flawed processes inflate BoN: each PRM's share of such picks against a random pick's
        excess = {p: v for p in self.prms if (v := self.inflation_excess(p))[1] == v[1]}  # nan: nothing to measure
        if excess:
            ref = "mc_hard" if "mc_hard" in excess else next(iter(excess))  # the PRM `decide` reads
            shares = {p: self.inflation(p)[0] for p in excess}
            add("inflation", "PRMs tolerate right answers reached through flawed steps: a PRM trained on MC labels picks "
                "them more often than a random pick does, which inflates its Best-of-N accuracy", CLAIMS["fig6"],
                "BoN picks that are right answers through a wrong step, % of problems, minus a random pick's expected "
                "share on the same problems: " + ", ".join(f"{p} {shares[p]:.1f}% ({_fmt_ci(*v)})" for p, v in excess.items())
                + f" (verdict on {ref}; below 0 means the PRM screens such responses out)",
                **{f"inflation_excess_{p}": v for p, v in excess.items()})
        # 6. min on the final step: an outcome-supervised PRM (the BoN-optimised extreme) against a process one
        shares = ", ".join(f"{p} {self.min_on_last(p):.1f}%" for p in self.prms)
        if "outcome" in self.prms and process_ref:
            d = self.min_on_last_diff("outcome", process_ref)
            add("min_on_last", "A PRM trained toward outcomes (every step labelled with the final answer's correctness) puts "
                "its lowest score on the final step far more often than one trained on process labels", CLAIMS["fig8"],
                f"all multi-step responses, ties to the earliest step: {shares}; outcome - {process_ref} {_fmt_ci(*d)} points",
                min_on_last_outcome_minus_process=d)
        elif self.prms:
            add("min_on_last", "A PRM trained toward outcomes puts its lowest score on the final step far more often than "
                "one trained on process labels", CLAIMS["fig8"],  # no estimate: inconclusive
                "not measured: no `outcome` PRM (or no process-label PRM) in train_prm.sources; shares: " + shares)
        # 7. the aggregation interacts with the label source (Fig. 9): last step vs lowest step, outcome vs process
        if "outcome" in self.prms and process_ref:
            d = self.last_minus_min_gap("outcome", process_ref)
            probs = sorted(self.bon)
            accs = "; ".join(f"{p} " + " / ".join(f"{self.bon_acc(probs, p, h):.1f}" for h in ("min", "product", "last"))
                             for p in self.prms)
            add("aggregation", "The best aggregation depends on the label source: a PRM trained on outcomes gains more "
                "than one trained on process labels from scoring a response by its last step instead of its lowest",
                CLAIMS["fig9"],
                f"Best-of-N accuracy by min / product / last: {accs}; (last - min) outcome - (last - min) "
                f"{process_ref} {_fmt_ci(*d)} points",
                aggregation_last_minus_min_outcome_vs_process=d)
        return out


# -------------------------------------------------------------------------------- several seeds

# Two-sided 95% Student t quantiles by degrees of freedom (seeds - 1), for the across-seed interval.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def t_interval(pts: Sequence[float], within_half: Sequence[float] = ()) -> tuple[float, float, float]:
    """Mean and 95% interval (lo, hi) over seeds; nan bounds under 2 values.

    Each seed's value varies by training and by the sampling of its evaluation items; the spread over
    seeds estimates both, but from k - 1 degrees of freedom, and two or three seeds that happen to agree
    give an interval narrower than one seed's own bootstrap interval (issue #26: 3 seeds, +-2.2 where one
    seed's bootstrap said +-14). So a seed's variance is the larger of the across-seed variance and the
    mean within-seed variance (each seed's bootstrap half-width / 1.96, squared), and the mean's standard
    error is that over sqrt(k), with Student t quantiles for k - 1 degrees of freedom."""
    import math

    k = len(pts)
    m = sum(pts) / k
    if k < 2:
        return m, float("nan"), float("nan")
    across = sum((x - m) ** 2 for x in pts) / (k - 1)
    within = [h / 1.96 for h in within_half if h == h]
    var = max(across, sum(w * w for w in within) / len(within)) if within else across
    half = T95.get(k - 1, 1.96) * math.sqrt(var) / math.sqrt(k)
    return m, m - half, m + half


def group_by_id(per_seed: dict[str, list[dict]]) -> dict[str, dict[str, dict]]:
    """Findings records of several seeds (run name -> records) -> {finding id: {run name: its record}}, runs
    in name order, ids in the order the runs first list them; a finding some run lacks is absent from its dict."""
    out: dict[str, dict[str, dict]] = {}
    for run in sorted(per_seed):
        for rec in per_seed[run]:
            out.setdefault(rec["id"], {})[run] = rec
    return out


def aggregate_seeds(per_seed: dict[str, list[dict]]) -> list[dict]:
    """Findings records of several seeds (run name -> records) -> per finding and estimate: the mean over
    seeds, a 95% interval across seeds that never falls below the within-seed sampling noise
    (`t_interval`; each seed draws its own world, samples and training), the mean of the within-seed
    bootstrap bounds (problem sampling only), the paper's effect the estimate must resolve (from the records'
    `precision`), and a verdict decided by the across-seed interval with the same rule as one seed (`decide`). Needs >= 2
    seeds for an interval; a finding missing from some seed is marked so."""
    runs = sorted(per_seed)
    out = []
    for fid, by_run in group_by_id(per_seed).items():
        recs, ests = list(by_run.values()), {}
        for name in dict.fromkeys(k for r in recs for k in r["estimates"]):  # every estimate any seed has
            pts, los, his = zip(*(r["estimates"][name][:3] for r in recs if name in r["estimates"]))
            m, lo, hi = t_interval(pts, [(b - a) / 2 for a, b in zip(los, his)])
            ests[name] = {"mean": m, "lo": lo, "hi": hi, "half_width": (hi - lo) / 2, "seeds": len(pts), "points": list(pts),
                          "within_seed_lo": sum(los) / len(pts), "within_seed_hi": sum(his) / len(pts),
                          # what the interval must resolve, as each seed's record states it (None: no paper number)
                          "paper_effect": next((r["precision"][name].get("paper_effect") for r in recs
                                                if name in r.get("precision", {})), None)}
        v = INCONCLUSIVE if len(recs) < len(runs) else decide(fid, {name: (e["lo"], e["hi"]) for name, e in ests.items()})
        out.append({"id": fid, "claim": recs[0]["claim"], "paper": recs[0]["paper"], "seeds": len(recs),
                    "estimates": ests, "verdict": v, "per_seed_verdicts": [r["verdict"] for r in recs],
                    "holds_on_every_seed": all(r["verdict"] == v for r in recs) and len(recs) == len(runs)})
    return out
