"""The paper's findings, each one entry of FINDINGS (after the class that measures them): id, claim, the paper's
quote with its table or figure, the Findings method that measures it, and each estimate's label, unit, verdict
rule and the paper's effect; the report, its plots and the seeds' pages read the entries, never a finding's id.
Each estimate has a 95% bootstrap interval, and the interval decides. Inputs are per-item rows, as the eval
stages write them:
- ProcessBench: {"model": "prm/<name>", "subset", "id", "label", "step_scores"} and each PRM's
  tuned threshold; a PRM predicts the first step below it (prmlab.analysis.metrics.first_below).
- Best-of-N: {"prm", "problem_id", "response_id", "correct", "true_first_error", "step_scores"};
  the pick is the response with the highest aggregated score, ties to the earliest.
Held out: where `tune_subset` names the subset the threshold was tuned on, ProcessBench findings
use the other subsets only (with one subset, there is nothing held out: said in the row).
Resampled: problems, never responses (a problem's responses are not independent draws). A toy ProcessBench item is one response of a problem
(`<problem>/r<k>`) and a problem's responses share its difficulty, so its items are resampled together
(`problem_of`); Best-of-N rows are grouped by problem already.
Each statistic was chosen to separate the paper's hypotheses in this world and written down (here, in
docs/study.md, reports/protocol.md and the report) before the confirmation seeds ran, so no rule was chosen after seeing them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from prmlab.analysis import paper, stats
from prmlab.analysis.metrics import argmin_position, best_of_n, mean, min_on_last_share, processbench_scores
from prmlab.core.sources import CEILING

EQUAL_MARGIN = 3.0  # F1 points: "equal" means both ends of the interval within this of 0
KEPT_MARGIN = 15  # Fig. 2's "about 40%" kept: within this many points of it (25-55%)
# How an estimate's interval decides (prmlab.analysis.stats): wholly above 0; within +-margin of 0; within +-margin of
# the paper's value (`center`); above 0, or else within +-margin of it ("matches or beats").
ABOVE, EQUAL, WINDOW, AT_LEAST = "above 0", "equal", "window", "beats or matches"
FIRST = "first"  # Finding.deciding: the first estimate its measure lists (its primary reference) decides
NOT_TESTABLE = "not testable in this world"  # a verdict: the world sets the claim by design (Finding.untestable says how)
# Where a finding compares against "a PRM trained on process labels", the judge's PRM decides (reports/protocol.md):
# it labels the same on-policy responses as MC, as the paper's Fig. 7 and Fig. 9 set them side by side. The others
# are labelled secondaries, measured beside it so a verdict can be read under each (seeds.md): the human annotator on
# the policy's own responses, the exact-label PRM (the verifier's labels: an upper bound), the off-policy human
# PRM (near chance on Best-of-N in this world, and carrying an off-policy penalty), and PRM800K in the paper profile.
PROCESS_REFS = ("judge", "prm800k", "human_onpolicy", "oracle", "human")
# The PRMs the Best-of-N-on-F1 line is fit through (finding `rankings`): the label-source PRMs every confirmation
# seed trains (prmlab.analysis.protocol.SEED_SOURCES), so the line is the same set in every seed and in the development seed.
LINE = ("mc_hard", "mc_soft", "judge", "consensus", "consensus_soft", "outcome")
# Fig. 8's references: the process-label PRMs above, and consensus (MC and judge agreeing: the paper's own recipe).
FIG8_REFS = ("judge", "consensus", "prm800k", "human_onpolicy", "oracle", "human")


@dataclass(frozen=True)
class Estimate:
    """One estimate of a finding, `name` its key in the records ("{}": the PRM a run compares, as in `label`)."""
    name: str
    label: str  # its words in the plots and the summary
    unit: str  # one plot panel per unit
    rule: str = ABOVE
    effect: float | None = None  # the paper's effect the interval must resolve (a tie's: the margin); None: no size
    margin: float | None = None  # EQUAL, WINDOW, AT_LEAST
    center: float = 0.0  # WINDOW: the paper's value
    about: str = ""  # WINDOW: what the window stands for, in the seeds' reasons
    decides: bool = True  # False: reported as calibration, beside the verdict, never deciding it

    def judge(self, lo: float, hi: float) -> str:
        """The verdict of an interval [lo, hi] of this estimate, by its rule."""
        if self.rule in (EQUAL, WINDOW):
            return stats.equivalence_verdict(lo - self.center, hi - self.center, self.margin)
        v = stats.verdict(lo, hi)
        return stats.equivalence_verdict(lo, hi, self.margin) if self.rule == AT_LEAST and v == stats.INCONCLUSIVE else v


@dataclass(frozen=True)
class Finding:
    id: str
    short: str  # the claim in a few words: the summary tables, the Prefect artifact, the MLflow description
    claim: str  # our wording, the findings' tables
    paper: str  # the paper's quote (prmlab.analysis.paper's numbers), led by its table or figure
    estimates: tuple[Estimate, ...]
    deciding: str = ""  # the one estimate that decides, where present (FIRST: the first listed); "": all that decide
    untestable: str = ""  # why this world cannot test the claim, where its deciding estimate is absent (the toy's)
    not_tested: str = ""  # a part of the paper's statement this world cannot test, beside a verdict on the rest


# Each finding's measure, registered on the Findings method that measures it (`@measures(<finding id>)`):
# it gives None (not measured here) or (ours in words, {estimate name: (point, lo, hi)}).
MEASURES: dict[str, Callable[..., tuple[str, dict] | None]] = {}


def measures(fid: str):
    """Register the decorated Findings method as finding `fid`'s measure (one per finding)."""
    def register(fn):
        if fid in MEASURES:
            raise ValueError(f"finding {fid!r} has two measures: {MEASURES[fid].__name__} and {fn.__name__}")
        MEASURES[fid] = fn
        return fn
    return register


def estimate(name: str) -> Estimate:
    """Estimate `name`'s declaration, its "{}" filled ('f1_oracle_minus_judge' -> label 'F1: oracle - judge'); an
    undeclared name (an older statistic, as the exploratory seeds' files hold) reads as its words and decides
    nothing: a statistic the findings no longer declare cannot carry today's verdict."""
    declared = [e for f in FINDINGS for e in f.estimates]
    for e in declared:  # an exact declaration first: f1_consensus_minus_judge is not f1_{}_minus_judge
        if name == e.name:
            return e
    for e in declared:
        head, brace, tail = e.name.partition("{}")
        if brace and name.startswith(head) and name.endswith(tail) and len(name) > len(head + tail):
            return replace(e, name=name, label=e.label.format(name[len(head):len(name) - len(tail)].replace("_", " ")))
    return Estimate(name, name.replace("_", " "), "", decides=False)


def declaration(name: str) -> str | None:
    """The declared name estimate `name` reads as ('bon_residual_mc_hard_minus_{}' for '..._minus_human'; itself where
    declared exactly), None where undeclared: two estimates of one declaration are one statistic against two PRMs."""
    names = [e.name for f in FINDINGS for e in f.estimates]
    if name in names:  # exactly first, as `estimate`: f1_consensus_minus_judge is not f1_{}_minus_judge
        return name
    for n in names:
        head, brace, tail = n.partition("{}")
        if brace and name.startswith(head) and name.endswith(tail) and len(name) > len(head + tail):
            return n
    return None


def declared(name: str) -> bool:
    """Whether FINDINGS declares estimate `name` (exactly, or by a "{}" pattern): an undeclared one is an older
    statistic, which `estimate` gives no unit (every declaration has one)."""
    return estimate(name).unit != ""


def entry(fid: str) -> Finding | None:
    """Finding `fid`'s entry in FINDINGS, None for an id it does not declare."""
    return next((f for f in FINDINGS if f.id == fid), None)


def missing(fid: str, names: Sequence[str]) -> list[str]:
    """The deciding estimates finding `fid`'s entry names outright (no "{}") that `names` lacks: a claim of all its
    estimates measured without one was not measured as declared (an older seed's record)."""
    f = entry(fid)
    return [e.name for e in f.estimates if e.decides and "{}" not in e.name and e.name not in names] \
        if f and not f.deciding else []


def decide(fid: str, intervals: dict[str, Sequence[float]]) -> str:
    """Finding `fid`'s verdict from its estimates' 95% intervals ({name: (lo, hi)}), one seed's or across seeds,
    each by its estimate's rule; a claim of several estimates needs all of them (stats.all_of), and one that lacks
    an estimate its entry names outright is inconclusive (`missing`): that part of the claim was not measured."""
    f = entry(fid)
    if f is not None and f.untestable and not deciding(fid, intervals):
        return NOT_TESTABLE
    if missing(fid, list(intervals)):
        return stats.INCONCLUSIVE
    return stats.all_of([estimate(n).judge(*intervals[n]) for n in deciding(fid, intervals)])


def short(fid: str, claim: str = "") -> str:
    """Finding `fid`'s claim in a few words (its entry's `short`); `claim` (a record's) for an id FINDINGS lacks,
    or for a record made under another wording of the claim (an older seed's), whose short would misname it."""
    f = entry(fid)
    return claim or fid if f is None or claim and claim != f.claim else f.short


def deciding(fid: str, estimates: Sequence[str]) -> list[str]:
    """The estimates that decide finding `fid`'s verdict: of those that decide at all (a calibration does not), its
    entry's `deciding` one where present (FIRST, or one it lacks: the first listed), else all of them."""
    f = entry(fid)
    if f is None:  # a finding FINDINGS does not declare: every estimate of it, by the side of 0
        return list(estimates)
    names = [n for n in estimates if estimate(n).decides]
    if not f.deciding or not names:
        return names
    return [f.deciding] if f.deciding in names else names[:1]


def problem_of(item_id: str) -> str:
    """The problem an evaluation item answers: a toy item is one of a problem's responses (`<problem>/r<k>`), a
    real benchmark's item its own problem."""
    return item_id.rsplit("/", 1)[0] if "/" in item_id else item_id


def bon_residuals(f1: dict[str, float], acc: dict[str, float], fit: Sequence[str] | None = None) -> dict[str, float]:
    """Each PRM's Best-of-N accuracy minus the least-squares line of accuracy on ProcessBench F1 through the points
    of `fit` (every PRM's by default): the Best-of-N accuracy its F1 does not account for, in Best-of-N points.
    Scale-free where a difference of gaps is not: F1 spreads 2-4x wider than Best-of-N across PRMs, so (BoN gap) -
    (F1 gap) favours whichever PRM is weaker on F1."""
    keys = [p for p in (fit or f1) if p in f1]
    xs, ys = [f1[p] for p in keys], [acc[p] for p in keys]
    mx, my = mean(xs), mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return {p: acc[p] - (my + slope * (f1[p] - mx)) for p in f1}


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


def pb_intervals(rows: list[dict], subsets: Sequence[str], n_boot: int = stats.N_BOOT,
                 seed: int = 0) -> dict[str, dict[str, list[float]]]:
    """Every ProcessBench model's (PRMs and critics alike: eval_processbench's per-item `pred`) F1, error-sample and
    correct-sample accuracy over `subsets` (the held-out ones), each [point, lo, hi]: the point as the benchmark
    averages (unweighted over subsets, = eval_processbench's heldout_average_f1), the 95% interval over resamples of
    problems within each subset (a problem's items together, as the findings' F1 gaps). One pass of resamples serves
    every model: the leaderboard's and the plots' intervals."""
    units: dict[tuple, dict] = {}
    for r in rows:
        if r["subset"] in subsets:
            units.setdefault((r["subset"], r["id"]), {"label": r["label"], "pred": {}})["pred"][r["model"]] = r["pred"]
    clusters: dict[tuple, list] = defaultdict(list)
    for k in sorted(units):
        clusters[(k[0], problem_of(k[1]))].append(units[k])
    names = sorted({n for u in units.values() for n in u["pred"]})
    keys = ("f1", "error_acc", "correct_acc")

    def stat(sample: list) -> dict[tuple[str, str], float]:
        by: dict[str, list[dict]] = defaultdict(list)
        for (sub, _), us in sample:
            by[sub] += us
        per = [(n, processbench_scores([u["label"] for u in us], [u["pred"].get(n) for u in us]))
               for us in by.values() for n in names]
        return {(n, k): mean([sc[k] for m, sc in per if m == n]) for n in names for k in keys}

    items = sorted(clusters.items())
    point = stat(items)
    vals = stats.bootstrap_values(items, stat, n_boot, seed, strata=lambda c: c[0][0])
    out: dict[str, dict[str, list[float]]] = {}
    for n in names:
        for k in keys:
            lo, hi = stats.percentile_interval([v[(n, k)] for v in vals])
            out.setdefault(n, {})[k] = [point[(n, k)], lo, hi]
    return out


def pick(rs: list[dict], how: str = "product") -> dict:
    return rs[best_of_n([r["step_scores"] for r in rs], how)]


def _fmt_ci(x: float, lo: float, hi: float) -> str:
    return f"{x:.1f} [{lo:.1f}, {hi:.1f}]"


class Findings:
    def __init__(self, pb_rows: list[dict], pb_subsets: list[str], tune_subset: str | None,
                 bon_rows: list[dict], consensus: dict, n_boot: int = stats.N_BOOT, seed: int = 0):
        held = [s for s in pb_subsets if s != tune_subset]
        self.pb_held_out = bool(held)
        self.pb_subsets = held or list(pb_subsets)
        units = _pb_units(pb_rows, self.pb_subsets)
        self.pb_keys = sorted(units)
        self.pb_units = [units[k] for k in self.pb_keys]
        # the resampling units: ((subset, problem), [((subset, id), unit), ...]), a problem's items together
        clusters: dict[tuple, list] = defaultdict(list)
        for k in self.pb_keys:
            clusters[(k[0], problem_of(k[1]))].append((k, units[k]))
        self.pb_clusters = sorted(clusters.items())
        self.bon: dict = defaultdict(lambda: defaultdict(list))  # problem_id -> prm -> its rows in file order
        for r in bon_rows:
            self.bon[r["problem_id"]][r["prm"]].append(r)
        self.prms = sorted({r["prm"] for r in bon_rows})
        self.consensus = consensus
        self.n_boot, self.seed = n_boot, seed
        self._picked: dict[tuple, float] = {}  # (problem, prm, aggregation) -> 1.0 if its pick is right: resamples reuse it
        self.have_pb = {n for u in self.pb_units for n in u["pred"]}
        self.held = "held-out subsets" if self.pb_held_out else "the tuning subset itself (nothing held out)"

    # ------------------------------------------------------------------ statistics with intervals
    def _estimate(self, units: list, stat, strata=None) -> tuple[float, float, float]:
        """`stat` over all `units`, and its 95% bootstrap interval over resamples of them."""
        return (stat(units), *stats.bootstrap_ci(units, stat, self.n_boot, self.seed, strata=strata))

    @staticmethod
    def _pb_f1s(sample: list, names: Sequence[str]) -> dict[str, float]:
        """Each PRM's ProcessBench F1 over a sample of problem clusters (`pb_clusters`' entries)."""
        subs = [k[0] for _, items in sample for k, _ in items]
        us = [u for _, items in sample for _, u in items]
        return {n: pb_f1(us, subs, n) for n in names}

    def _pb_gap(self, a: str, b: str):
        """F1(a) - F1(b) over a sample of problem clusters."""
        def stat(sample):
            f = self._pb_f1s(sample, (a, b))
            return f[a] - f[b]

        return stat

    def _bon_gap(self, a: str, b: str):
        """Best-of-N accuracy of a - of b over a sample of problems."""
        return lambda sample: self.bon_acc(sample, a) - self.bon_acc(sample, b)

    def pb_diff(self, a: str, b: str) -> tuple[float, float, float]:
        """F1(a) - F1(b) on the held-out subsets, paired over items, problems resampled (stratified by subset)."""
        return self._estimate(self.pb_clusters, self._pb_gap(a, b), strata=lambda c: c[0][0])

    def _right(self, p: str, prm: str, how: str) -> float:
        if (key := (p, prm, how)) not in self._picked:
            self._picked[key] = float(pick(self.bon[p][prm], how)["correct"])
        return self._picked[key]

    def bon_acc(self, sample: list[str], prm: str, how: str = "product") -> float:
        return 100.0 * mean([self._right(p, prm, how) for p in sample if self.bon[p].get(prm)])

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

    def residual_gaps(self, a: str, refs: Sequence[str], prms: Sequence[str],
                      fit: Sequence[str] | None = None) -> tuple[dict, dict]:
        """`a`'s Best-of-N residual (`bon_residuals`, the line through `fit`, else every one of `prms`) minus each ref's, with
        95% intervals: Best-of-N problems and ProcessBench problems resampled independently (different units),
        the line refitted in every resample. Also the point residuals, per PRM."""
        probs = sorted(self.bon)
        acc = lambda sample: {p: self.bon_acc(sample, p) for p in prms}  # noqa: E731
        f1 = lambda sample: self._pb_f1s(sample, prms)  # noqa: E731
        point = bon_residuals(f1(self.pb_clusters), acc(probs), fit)
        reps = [bon_residuals(x, y, fit) for x, y in zip(
            stats.bootstrap_values(self.pb_clusters, f1, self.n_boot, self.seed + 1, strata=lambda c: c[0][0]),
            stats.bootstrap_values(probs, acc, self.n_boot, self.seed))]
        return {r: (point[a] - point[r], *stats.percentile_interval([d[a] - d[r] for d in reps])) for r in refs}, point

    def last_minus_min_gap(self, a: str, b: str) -> tuple[float, float, float]:
        """How much more `a` gains than `b` from scoring a response by its last step instead of its lowest:
        (BoN a by last - by min) - (BoN b by last - by min), in points, paired and resampled by problem."""
        def gain(sample, prm):
            return self.bon_acc(sample, prm, "last") - self.bon_acc(sample, prm, "min")

        return self._estimate([p for p in sorted(self.bon) if self.bon[p].get(a) and self.bon[p].get(b)],
                              lambda sample: gain(sample, a) - gain(sample, b))

    def min_on_last(self, prm: str, pairs: list[tuple[str, int]] | None = None) -> float:
        """Share (%) of responses (all multi-step ones by default) whose lowest step score is on the final step
        (ties: earliest)."""
        pairs = pairs if pairs is not None else self._resp(prm)
        return min_on_last_share([self.bon[p][prm][i]["step_scores"] for p, i in pairs])

    def _resp(self, prm: str, early_error: bool = False) -> list[tuple[str, int]]:
        """(problem, index) of `prm`'s multi-step responses; with `early_error`, only those whose first error (the
        verifier's) is before the last scored step."""
        return [(p, i) for p in sorted(self.bon) for i, r in enumerate(self.bon[p].get(prm, []))
                if len(r["step_scores"]) > 1 and (not early_error or r["true_first_error"] is not None
                                                  and 0 <= r["true_first_error"] < len(r["step_scores"]) - 1)]

    def min_on_last_interval(self, prm: str) -> tuple[float, float, float]:
        """min_on_last(prm) over all its multi-step responses (analyze_bias's min_on_last_step_all), problems resampled
        (a problem's responses together): the plots' and the leaderboard's interval. A problem's hits and count are
        counted once, so a resample sums them."""
        per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for p, i in self._resp(prm):
            s = self.bon[p][prm][i]["step_scores"]
            per[p][0] += float(argmin_position(s)[0] == len(s) - 1)
            per[p][1] += 1
        share = lambda sample: 100.0 * sum(h for _, (h, _) in sample) / max(sum(n for _, (_, n) in sample), 1)  # noqa: E731
        return self._estimate(sorted(per.items()), share)

    def min_on_last_diff(self, a: str, b: str, early_error: bool = True) -> tuple[float, float, float]:
        """min_on_last(a) - min_on_last(b) over the same responses (those with an early error by default), problems
        resampled (a problem's responses together)."""
        by: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for u in self._resp(a, early_error):
            if len(self.bon[u[0]].get(b, [])) > u[1]:
                by[u[0]].append(u)
        flat = lambda sample: [u for _, us in sample for u in us]  # noqa: E731
        return self._estimate(sorted(by.items()), lambda sample: self.min_on_last(a, flat(sample)) - self.min_on_last(b, flat(sample)))

    def refs(self, against: str, have: set[str]) -> list[str]:
        """The process-label reference PRMs for `against` among `have`, in PROCESS_REFS' order: the judge's decides,
        each other's estimate sits beside it (reports/protocol.md)."""
        return [r for r in PROCESS_REFS if r in have and r != against]

    # ---------------------- the findings: each `measure` gives None or (ours in words, {estimate: (point, lo, hi)})
    def records(self) -> list[dict]:
        """Per finding measured, in FINDINGS' order: id, claim, paper (quoted), ours, verdict, the estimates as {name:
        [point, lo, hi]} (what aggregate_seeds combines), and each half-width beside the paper's effect."""
        out: list[dict] = []
        for f in FINDINGS:
            if (got := MEASURES[f.id](self)) is not None:
                ours, est = got
                out.append({"id": f.id, "claim": f.claim, "paper": f.paper, "ours": ours,
                            "verdict": decide(f.id, {k: val[1:] for k, val in est.items()}),
                            "estimates": {k: [float(x) for x in val] for k, val in est.items()},
                            "precision": {k: {"half_width": (float(val[2]) - float(val[1])) / 2,
                                              "paper_effect": estimate(k).effect} for k, val in est.items()}})
        return out

    @measures("mc_judge")
    def mc_judge(self):
        if not self.have_pb >= {"mc_hard", "judge"}:
            return None
        d = self.pb_diff("judge", "mc_hard")
        return f"ProcessBench F1 on {self.held}: judge - mc_hard {_fmt_ci(*d)}", {"f1_judge_minus_mc": d}

    @measures("judge_human")
    def judge_human(self):
        """Table 4's second half. Real PRM800K (the paper profile) decides; the toy's `human` is set by design dials
        (its noise, size, writer), so there its gaps are reported, with the controls that take it apart, and decide
        nothing (Finding.untestable)."""
        if "judge" not in self.have_pb or not (humans := [h for h in ("prm800k", "human") if h in self.have_pb]):
            return None
        h = humans[0]
        d = self.pb_diff(h, "judge")
        ours, est = f"ProcessBench F1 on {self.held}: {h} - judge {_fmt_ci(*d)}", {f"f1_{h}_minus_judge": d}
        # Each control differs in one way only: human_onpolicy - human (off-policy solutions), human_exact - human
        # (the annotator's noise), human_onpolicy - judge_matched (the annotator against the judge on the same
        # responses: no size or epochs left between them).
        for a, b, why in (("human_onpolicy", "human", "off-policy solutions"), ("human_exact", "human", "the annotator's noise"),
                          ("human_onpolicy", "judge_matched", "the annotator against the judge on the same responses")):
            if self.have_pb >= {a, b}:
                est[f"f1_{a}_minus_{b}"] = d = self.pb_diff(a, b)
                ours += f"; {a} - {b} {_fmt_ci(*d)} ({why})"
        return ours, est

    @measures("consensus")
    def consensus_kept(self):
        n, k = self.consensus.get("responses", 0), self.consensus.get("agree", 0)
        if not n:
            return None
        lo, hi = stats.bootstrap_ci([1.0] * k + [0.0] * (n - k), lambda s: 100.0 * mean(s), self.n_boot, self.seed)
        share = 100.0 * k / n
        # calibration, not a test: MC's completer temperature was chosen on the development seed with this in view
        ours = f"kept {_fmt_ci(share, lo, hi)}% (calibration, Fig. 2's about {paper.CONSENSUS_KEPT}%: reported, not tested)"
        est = {"kept_share": (share, lo, hi)}
        for other in ("mc_hard", "judge"):
            if self.have_pb >= {"consensus", other}:
                est[f"f1_consensus_minus_{other.removesuffix('_hard')}"] = d = self.pb_diff("consensus", other)
                ours += f"; F1 consensus - {other} {_fmt_ci(*d)}"
        return ours, est

    @measures("hard_soft")
    def hard_soft(self):  # unfiltered only here; equality only where the interval is narrow enough to show it
        if not self.have_pb >= {"mc_hard", "mc_soft"}:
            return None
        d, why = self.pb_diff("mc_hard", "mc_soft"), ""
        half, gap = (d[2] - d[1]) / 2, abs(d[0])
        if decide("hard_soft", {"f1_hard_minus_soft": d[1:]}) == stats.INCONCLUSIVE:
            n = len(self.pb_units)
            # Equality is shown when |d| + half-width <= margin; the half-width shrinks as 1/sqrt(n).
            items = (f"showing equality would need about {int(n * (half / (EQUAL_MARGIN - gap)) ** 2):,} held-out items "
                     f"(here {n})" if gap < EQUAL_MARGIN else "no number of items can show equality with this estimate")
            why = (f"; inconclusive: the interval (half-width {half:.1f} around {d[0]:.1f}) is not within the "
                   f"+-{EQUAL_MARGIN:g} margin; {items}")
        return (f"F1 mc_hard - mc_soft {_fmt_ci(*d)}, equal if within +-{EQUAL_MARGIN:g} (after filtering: the next "
                "finding)" + why,
                {"f1_hard_minus_soft": d})

    @measures("hard_soft_filtered")
    def hard_soft_filtered(self):
        if not self.have_pb >= {"consensus", "consensus_soft"}:
            return None
        d = self.pb_diff("consensus", "consensus_soft")
        return (f"F1 on the consensus-kept responses, hard labels (consensus) - soft MC labels (consensus_soft) "
                f"{_fmt_ci(*d)}", {"f1_consensus_minus_consensus_soft": d})

    @measures("rankings")
    def rankings(self):  # not "the rankings differ": random scores make Kendall tau < 1 too
        # the label sources' PRMs, at the study's one budget: the ceiling PRM (another budget) stays off the line
        prms = [p for p in self.prms if p in self.have_pb and p != CEILING]
        refs = self.refs("mc_hard", set(prms))
        if "mc_hard" not in prms or not refs or len(prms) < 3:
            return None
        # The line is fit through the same PRMs in every seed (LINE: those a confirmation seed trains), so the
        # development seed's extra arms do not move it; every PRM's residual is read off it.
        fit = [p for p in LINE if p in prms]
        fit = fit if len(fit) >= 3 else prms
        gaps, point = self.residual_gaps("mc_hard", refs, prms, fit)
        res = ", ".join(f"{p} {point[p]:+.1f}" for p in prms)
        vs = "; ".join(f"mc_hard - {r} {_fmt_ci(*g)}" for r, g in gaps.items())
        return (f"Best-of-N accuracy above (+) or below (-) the line of Best-of-N on ProcessBench F1 through "
                f"{', '.join(fit)}, in points: {res}; {vs} (above 0: Best-of-N flatters mc_hard beyond its F1)",
                {f"bon_residual_mc_hard_minus_{r}": g for r, g in gaps.items()})

    @measures("inflation")
    def flawed_picks(self):
        excess = {p: v for p in self.prms if (v := self.inflation_excess(p))[1] == v[1]}  # nan: nothing to measure
        if not excess:
            return None
        ref = "mc_hard" if "mc_hard" in excess else next(iter(excess))  # the PRM `decide` reads
        picks = ", ".join(f"{p} {self.inflation(p)[0]:.1f}% ({_fmt_ci(*v)})" for p, v in excess.items())
        return ("BoN picks that are right answers through a wrong step, % of problems, minus a random pick's expected "
                f"share on the same problems: {picks} (verdict on {ref}; below 0 means the PRM screens such responses out)",
                {f"inflation_excess_{p}": v for p, v in excess.items()})

    @measures("min_on_last")
    def min_on_last_gap(self):  # an outcome-supervised PRM (the BoN-optimised extreme) against process-label ones
        shares = ", ".join(f"{p} {self.min_on_last(p):.1f}%" for p in self.prms)
        refs = [r for r in FIG8_REFS if r in self.prms and r in self.have_pb]
        if "outcome" in self.prms and refs:
            # Conditioned on an error before the last step: there a process PRM's lowest score belongs on the error.
            # Unconditioned, the share cannot tell the two apart here: an error carries to the answer, so even the
            # near-perfect ceiling PRM put its minimum on the final step 43.6% of the time.
            est = {f"min_on_last_early_error_outcome_minus_{r}": self.min_on_last_diff("outcome", r) for r in refs}
            early = ", ".join(f"{p} {self.min_on_last(p, self._resp(p, True)):.1f}%" for p in ("outcome", *refs))
            return (f"lowest step score on the final step, among responses whose first error precedes it: {early}; "
                    + "; ".join(f"outcome - {r} {_fmt_ci(*d)} points" for r, d in
                                ((k.removeprefix("min_on_last_early_error_outcome_minus_"), v) for k, v in est.items()))
                    + f" (all multi-step responses: {shares})", est)
        if self.prms:
            return "not measured: no `outcome` PRM (or no process-label PRM) in train_prm.sources; shares: " + shares, {}
        return None

    @measures("aggregation")
    def aggregation(self):
        refs = [r for r in PROCESS_REFS if r in self.prms and r != "oracle"]
        if "mc_hard" not in self.prms or not refs:
            return None
        probs = sorted(self.bon)
        accs = "; ".join(f"{p} " + " / ".join(f"{self.bon_acc(probs, p, h):.1f}" for h in ("min", "product", "last"))
                         for p in self.prms)
        est = {f"aggregation_last_minus_min_mc_hard_vs_{r}": self.last_minus_min_gap("mc_hard", r) for r in refs}
        return (f"Best-of-N accuracy by min / product / last: {accs}; "
                + "; ".join(f"(last - min) mc_hard - (last - min) {r} {_fmt_ci(*d)} points"
                            for r, d in zip(refs, est.values())), est)


# The findings, in the report's order. Paper numbers come from prmlab.analysis.paper; the effects are its differences.
FINDINGS = (
    Finding("mc_judge", "label quality: judge > MC",
            "PRMs trained on the judge's labels are better than on MC labels of the same responses",
            f"Table 4 (same 860k responses, ProcessBench avg. F1): MC estimation {paper.MC_F1} < LLM-as-a-judge "
            f"{paper.JUDGE_F1}",
            (Estimate("f1_judge_minus_mc", "F1: judge - mc", "F1 points", effect=round(paper.JUDGE_F1 - paper.MC_F1, 1)),)),
    Finding("judge_human", "label quality: human > judge",
            "PRMs trained on human labels are better than on the judge's",
            f"Table 4 (ProcessBench avg. F1): LLM-as-a-judge {paper.JUDGE_F1} < human annotation (PRM800K, 264k) "
            f"{paper.HUMAN_F1}",
            (Estimate("f1_prm800k_minus_judge", "F1: prm800k - judge", "F1 points",
                      effect=round(paper.HUMAN_F1 - paper.JUDGE_F1, 1)),
             Estimate("f1_human_minus_judge", "F1: human - judge", "F1 points", decides=False),
             Estimate("f1_human_onpolicy_minus_judge_matched", "F1: human on-policy - judge, same responses", "F1 points",
                      decides=False),
             Estimate("f1_human_onpolicy_minus_human", "F1: human on-policy - human (off-policy's cost)", "F1 points",
                      decides=False),
             Estimate("f1_human_exact_minus_human", "F1: human exact - human (noise's cost)", "F1 points",
                      decides=False)),
            untestable="the toy's human labels are a design: their noise (toy_human.noise), their number "
                       "(toy_human.n), the writer's flaws and the steps are dials set by hand, so human - judge measures "
                       "the dials, not human annotation; its controls (on-policy, exact, the judge on the same "
                       "responses) are reported to show what each dial costs. PRM800K in the paper profile decides it"),
    Finding("consensus", "consensus beats MC, matches judge",
            "Consensus filtering (MC and judge agree on the first error) trains a PRM better than MC labels alone "
            "and as good as the judge's labels, on a fraction of the data",
            f"Fig. 2: consensus filtering keeps \"only approximately {paper.CONSENSUS_KEPT}%\" of the data; its PRM "
            f"\"significantly outperforms MC estimation\" ({paper.CONSENSUS_F1} vs {paper.MC_F1} avg. F1) and \"achieves "
            f"comparable performance to LLM-as-a-judge while using only {paper.CONSENSUS_KEPT}% of the data\" "
            f"({paper.CONSENSUS_F1} vs {paper.JUDGE_F1})",
            (Estimate("kept_share", "consensus keeps (%)", "% of responses", WINDOW, margin=KEPT_MARGIN,
                      center=paper.CONSENSUS_KEPT, about=f"Fig. 2's about {paper.CONSENSUS_KEPT:g}%", decides=False),
             Estimate("f1_consensus_minus_mc", "F1: consensus - mc", "F1 points",
                      effect=round(paper.CONSENSUS_F1 - paper.MC_F1, 1)),
             Estimate("f1_consensus_minus_judge", "F1: consensus - judge", "F1 points", EQUAL, EQUAL_MARGIN,
                      EQUAL_MARGIN)),
            not_tested="the kept share (about 40% in Fig. 2): here it follows MC's completer temperature, which was "
                       "tuned on the development seed, so it is reported as calibration"),
    Finding("hard_soft", "hard = soft MC labels (unfiltered)",
            "Before filtering, hard and soft MC labels are equal",
            f"Fig. 3-4: hard and soft MC labels tie before filtering ({paper.HARD_F1} vs {paper.SOFT_F1} avg. F1)",
            (Estimate("f1_hard_minus_soft", "F1: hard - soft", "F1 points", EQUAL, EQUAL_MARGIN, EQUAL_MARGIN),)),
    Finding("hard_soft_filtered", "hard > soft MC labels (filtered)",
            "After consensus filtering, hard MC labels train a better PRM than soft MC labels of the same responses",
            f"Fig. 3-4: after consensus filtering (1.5M) hard labels {paper.HARD_F1_FILTERED} vs soft "
            f"{paper.SOFT_F1_FILTERED} avg. F1: \"this difference becomes much more pronounced after data filtering, "
            "with hard labels substantially outperforming soft labels\"",
            (Estimate("f1_consensus_minus_consensus_soft", "F1: hard - soft, filtered", "F1 points",
                      effect=round(paper.HARD_F1_FILTERED - paper.SOFT_F1_FILTERED, 1)),)),
    Finding("rankings", "Best-of-N flatters MC-trained PRMs",
            "Best-of-N flatters a PRM trained on MC labels: its Best-of-N accuracy sits further above what its "
            "ProcessBench F1 predicts (the line through the label-source PRMs every seed trains) than the judge-label "
            "PRM's does",
            f"Tables 3-4: the PRMs trained on MC and on human labels \"exhibit inverse performance relationships in "
            f"Best-of-8 and PROCESSBENCH\": MC {paper.MC_BON} Best-of-8 and {paper.MC_F1} avg. F1, human (PRM800K) "
            f"{paper.HUMAN_BON} and {paper.HUMAN_F1}, LLM-as-a-judge {paper.JUDGE_BON} and {paper.JUDGE_F1}; Tables 6-7 "
            f"make the same point across released PRMs (Math-Shepherd-PRM-7B {paper.SHEPHERD_PRM_F1} avg. F1)",
            (Estimate("bon_residual_mc_hard_minus_{}", "BoN residual: mc hard - {}", "Best-of-N points"),),
            deciding="bon_residual_mc_hard_minus_judge"),
    Finding("inflation", "flawed right answers inflate Best-of-N",
            "PRMs tolerate right answers reached through flawed steps: a PRM trained on MC labels picks "
            "them more often than a random pick does, which inflates its Best-of-N accuracy",
            "Fig. 6-7, Table 5: policies reach correct answers through flawed steps, and PRMs that accept such "
            "responses gain Best-of-N accuracy they do not deserve",
            (Estimate("inflation_excess_{}", "excess over random: {}", "points over a random pick"),),
            deciding="inflation_excess_mc_hard"),
    Finding("min_on_last", "outcome PRMs score the last step lowest",
            "A PRM trained toward outcomes (every step labelled with the final answer's correctness) puts its "
            "lowest score on the final step more often than one trained on the judge's process labels, among "
            "responses whose first error comes before the final step",
            f"Fig. 8 (all Best-of-8 responses of Qwen2.5-Math-7B-Instruct): EurusPRM-Stage1, -Stage2, "
            f"Math-Shepherd-PRM-7B and Skywork-PRM-7B put their lowest step score on the final step in shares that "
            f"\"exceed {paper.FIG8_BON_PRMS_ABOVE:g}%\", Qwen2.5-Math-PRM-72B and -7B in \"a significantly lower "
            "proportion\" (the figure's eleven bars: "
            + ", ".join(f"{name} {x:g}" for name, x in paper.FIG8.items()) + "%): \"a model degradation from "
            "process-based to outcome-oriented assessment\". No outcome-minus-process size is given",
            (Estimate("min_on_last_early_error_outcome_minus_{}", "min on last, early error: outcome - {}",
                      "percentage points"),), deciding="min_on_last_early_error_outcome_minus_judge",
            not_tested="the figure's own comparison, across released PRMs that Best-of-N optimised: its bars show no "
                       "label-source pattern (Math-Shepherd's data gives 44.5 and 9.8), and this world has no released "
                       "PRMs; the toy tests the mechanism the text names, outcome supervision against process labels"),
    Finding("aggregation", "MC PRMs gain from last-step scoring",
            "Scoring a response by its last step instead of its lowest helps a PRM trained on MC labels more than "
            "one trained on the judge's labels",
            "Section 3.2.4, Fig. 9: \"in MC estimation, using the last score shows significantly better performance "
            "than product and minimum approaches across multiple PRMs. And the trend is the opposite for human "
            "annotation and LLM-as-a-judge\"; Best-of-8 by min / product / last: MC hard 860k "
            f"{' / '.join(map(str, paper.FIG9['MC hard 860k']))}, LLM-as-a-judge 860k "
            f"{' / '.join(map(str, paper.FIG9['LLM-as-a-judge 860k']))}, human PRM800K "
            f"{' / '.join(map(str, paper.FIG9['human PRM800K 264k']))}",
            (Estimate("aggregation_last_minus_min_mc_hard_vs_judge", "last - min: mc hard vs judge", "Best-of-N points",
                      effect=round(paper.fig9_last_minus_min("MC hard 860k")
                                   - paper.fig9_last_minus_min("LLM-as-a-judge 860k"), 1)),
             Estimate("aggregation_last_minus_min_mc_hard_vs_{}", "last - min: mc hard vs {}", "Best-of-N points",
                      effect=round(paper.fig9_last_minus_min("MC hard 860k")
                                   - paper.fig9_last_minus_min("human PRM800K 264k"), 1))),
            deciding="aggregation_last_minus_min_mc_hard_vs_judge"),
)


# -------------------------------------------------------------------------------- several seeds

# Two-sided 95% Student t quantiles by degrees of freedom (seeds - 1), for the across-seed interval.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def t_interval(pts: Sequence[float], within_half: Sequence[float] = ()) -> tuple[float, float, float]:
    """Mean and 95% interval (lo, hi) over seeds; nan bounds under 2 values.

    Each seed's value varies by training and by the sampling of its evaluation items; the spread over
    seeds estimates both, but from k - 1 degrees of freedom, and two or three seeds that happen to agree
    give an interval narrower than one seed's own bootstrap interval (3 seeds gave +-2.2 where one
    seed's bootstrap said +-14). So a seed's variance is the larger of the across-seed variance and the
    mean within-seed variance (each seed's bootstrap half-width / 1.96, squared), and the mean's standard
    error is that over sqrt(k), with Student t quantiles for k - 1 degrees of freedom."""
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
                          # what the interval must resolve, from today's declaration (None: no paper number, or an
                          # older statistic): a record's copy of a paper number is not evidence, and may be stale
                          "paper_effect": estimate(name).effect}
        v = stats.INCONCLUSIVE if len(recs) < len(runs) else decide(fid, {name: (e["lo"], e["hi"]) for name, e in ests.items()})
        out.append({"id": fid, "claim": recs[0]["claim"], "paper": recs[0]["paper"], "seeds": len(recs),
                    "estimates": ests, "verdict": v, "per_seed_verdicts": [r["verdict"] for r in recs],
                    "holds_on_every_seed": all(r["verdict"] == v for r in recs) and len(recs) == len(runs)})
    return out
