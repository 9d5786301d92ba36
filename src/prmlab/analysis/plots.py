"""One function per figure; each returns a matplotlib Figure (prmlab.report.study saves and logs them)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from prmlab.analysis.findings import EQUAL, WINDOW, declared, estimate, short  # noqa: E402
from prmlab.analysis.paper import FIG8_BON_PRMS_ABOVE  # noqa: E402

# 20 colours, not matplotlib's 10: a study draws up to a dozen methods in one figure (9 PRMs, the ceiling, maj, pass),
# and the 11th took the 1st's colour (random and consensus shared one)
plt.rcParams["axes.prop_cycle"] = matplotlib.cycler(color=plt.get_cmap("tab20").colors)


def _finish(fig, ax, xlabel: str, ylabel: str, title: str, legend: bool = True):
    """Label the axes, title the plot, put the legend right of it; the figure, laid out."""
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    if legend:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


# How a row of a ranked figure is drawn, by its kind (prmlab.report.study.kind_of): a trained PRM, a reference (the
# ceiling PRM, another budget; the judge as a critic) or a baseline (no PRM); the legend says which is which.
KIND_STYLE = {"trained": ("#4878a8", None), "reference": ("#dd8452", "//"), "baseline": ("#a0a0a0", "..")}


def ranked_bars(rows: list[dict], xlabel: str, title: str, ref: tuple[float, str] | None = None, xmax: float = 100.0):
    """Horizontal bars, highest first, each with its 95% interval: rows {"name", "value", "lo", "hi", "kind"} (lo/hi
    may be None: a bar without an error bar), coloured and hatched by kind; `ref`: (x, label), a dashed line at x."""
    rows = sorted(rows, key=lambda r: -r["value"])
    fig, ax = plt.subplots(figsize=(8.5, 0.32 * len(rows) + 1.3))
    ys = list(range(len(rows)))[::-1]
    seen = set()
    for y, r in zip(ys, rows):
        color, hatch = KIND_STYLE[r["kind"]]
        ax.barh(y, r["value"], color=color, hatch=hatch, edgecolor="white", height=0.7,
                label=None if r["kind"] in seen else r["kind"])
        seen.add(r["kind"])
        if r.get("lo") is not None:
            ax.errorbar(r["value"], y, xerr=[[r["value"] - r["lo"]], [r["hi"] - r["value"]]], color="black", capsize=3, lw=1)
    if ref:
        ax.axvline(ref[0], ls="--", color="gray", lw=1, label=ref[1])
    ax.set_yticks(ys, [r["name"] for r in rows], fontsize=8)
    ax.set_xlim(0, xmax)
    return _finish(fig, ax, xlabel + " (95% interval)", "", title)


def min_position_bars(rows: list[dict]):
    """Share of all Best-of-N responses whose lowest step score is on the final step, per PRM (paper Fig. 8), ranked,
    with intervals over problems: `ranked_bars`' rows."""
    return ranked_bars(rows, "min score on final step (% of responses)", "Where PRMs put their lowest step score",
                       ref=(FIG8_BON_PRMS_ABOVE, f"paper Fig. 8: Eurus, Math-Shepherd-PRM-7B, Skywork > {FIG8_BON_PRMS_ABOVE:g}%"))


def min_position_hist(hists: dict[str, list[dict]]):
    """hists: PRM name -> analyze_bias's rows {"lo", "hi", "share"} (share a fraction), one per bin; drawn in %."""
    fig, ax = plt.subplots(figsize=(8.5, 3.2))
    names = list(hists)
    if names:
        bins = [f"{b['lo']:.1f}-{b['hi']:.1f}" for b in hists[names[0]]]
        w = 0.8 / len(names)
        for k, n in enumerate(names):
            ax.bar([b + k * w for b in range(len(bins))], [100 * b["share"] for b in hists[n]], width=w, label=n)
        ax.set_xticks([b + 0.4 - w / 2 for b in range(len(bins))], bins, fontsize=8)
    return _finish(fig, ax, "relative position of the lowest step score (0: first step, 1: final step)",
                   "share of responses (%)", "Where the lowest step score sits, all responses")


def bon_vs_processbench(points: dict[str, tuple[float, float]]):
    """One point per PRM (label source): BoN prm@8 vs ProcessBench average F1."""
    fig, ax = plt.subplots(figsize=(5, 4))
    for name, (bon, pb) in points.items():
        ax.scatter(pb, bon)
        ax.annotate(name, (pb, bon), fontsize=8, xytext=(3, 3), textcoords="offset points")
    return _finish(fig, ax, "ProcessBench average F1 (%)", "Best-of-N accuracy (prm@N, product, %)",
                   "BoN vs step-level evaluation", legend=False)


def label_quality(audit: dict[str, dict]):
    """Per label source (sorted by first-error accuracy): precision and recall of its 'wrong' step labels and its
    first-error accuracy against the exact verifier, each with a binomial 95% interval over the audited responses
    (responses of one problem share it, so the interval is if anything too narrow; precision and recall over
    responses too, as the audit counts them)."""
    fig, ax = plt.subplots(figsize=(8.5, 3.2))
    names = sorted(audit, key=lambda n: -audit[n]["first_error_accuracy"])
    keys = {"step_precision_wrong": "precision of 'wrong' step labels", "step_recall_wrong": "recall of wrong steps",
            "first_error_accuracy": "first-error accuracy"}
    w = 0.25
    for k, (key, label) in enumerate(keys.items()):
        vals = [100 * audit[n][key] for n in names]
        err = [binomial_half_width(v, audit[n].get("responses", 0)) for v, n in zip(vals, names)]
        ax.bar([i + k * w for i in range(len(names))], vals, width=w, label=label, yerr=err, capsize=2,
               error_kw={"elinewidth": 0.8})
    ax.set_xticks([i + w for i in range(len(names))], names)
    ax.set_ylim(0, 100)
    return _finish(fig, ax, "label source", "% (binomial 95% interval over responses)", "Label quality against the exact verifier")


def binomial_half_width(pct: float, n: int) -> float:
    """Half-width, in points, of a 95% binomial interval (normal approximation) for a `pct`% accuracy over n
    problems; 0 without n. The Best-of-N error bars, in this figure and in DVC's plots."""
    return 1.96 * (pct * (100 - pct) / n) ** 0.5 if n else 0.0


def bon_curve(rows: list[dict], n_problems: int = 0):
    """Best-of-N accuracy against N: prm@N (product) per PRM, with maj@N and pass@N (eval_bon's `by_n`:
    a row per N, {"n": N, "maj": %, "pass": %, prm name: %}); with `n_problems`, binomial 95% error bars."""
    fig, ax = plt.subplots(figsize=(8.5, 3.8))
    styles = {"maj": ("maj@N (majority vote)", "--", "gray"), "pass": ("pass@N (any correct)", ":", "black")}
    names = list(dict.fromkeys(k for r in rows for k in r if k != "n"))
    for key in names:
        pts = [(r["n"], r[key]) for r in rows if key in r]
        label, ls, color = styles.get(key, (f"{key} prm@N (product)", "-", None))
        err = [binomial_half_width(y, n_problems) for _, y in pts]
        ax.errorbar([x for x, _ in pts], [y for _, y in pts], yerr=err, ls=ls, color=color, marker="s" if key in styles else "o",
                    ms=3 if key in styles else 4, capsize=2, elinewidth=0.8, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks([r["n"] for r in rows], [str(r["n"]) for r in rows])
    return _finish(fig, ax, "N (responses per problem)", "accuracy (% of problems)",
                   "Best-of-N accuracy against N" + (" (95% binomial intervals)" if n_problems else ""))


def findings_intervals(records: list[dict]):
    """One panel per finding and unit (a finding whose estimates are in different units, e.g. % kept and
    F1 points, gets a panel each), one row per estimate: the point and its 95% interval as a horizontal
    error bar (grey: a calibration, which decides nothing), a vertical line at 0 (no difference), the margin an
    equality or a window counts within shaded, and the paper's effect as a red diamond where it gives one. Accepts one seed's records ({name: [point, lo, hi]})
    and the multi-seed aggregate ({name: {"mean", "lo", "hi"}})."""
    panels = []
    for rec in (r for r in records if r.get("estimates")):
        by_unit: dict[str, list[str]] = {}
        for n in rec["estimates"]:
            by_unit.setdefault(estimate(n).unit, []).append(n)
        panels += [(rec, unit, names) for unit, names in by_unit.items()]
    heights = [len(names) * 0.45 + 1.05 for _, _, names in panels] or [1.0]
    fig, axes = plt.subplots(len(heights), 1, figsize=(8.5, sum(heights) + 0.8), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (rec, unit, names) in zip(axes[:, 0], panels):
        pts, lo, hi = zip(*[(v["mean"], v["lo"], v["hi"]) if isinstance(v, dict) else v[:3]
                            for v in (rec["estimates"][n] for n in names)])
        ys = list(range(len(names)))[::-1]
        # A NaN bound (one seed: no across-seed interval) draws the point alone.
        err = [[p - a if a == a else 0.0 for p, a in zip(pts, lo)], [b - p if b == b else 0.0 for p, b in zip(pts, hi)]]
        decides = [estimate(n).decides for n in names]
        for flag, color in ((True, "#4878a8"), (False, "#a0a0a0")):  # a calibration's interval in grey: no verdict
            idx = [i for i, d in enumerate(decides) if d == flag]
            if idx:
                ax.errorbar([pts[i] for i in idx], [ys[i] for i in idx], xerr=[[err[0][i] for i in idx], [err[1][i] for i in idx]],
                            fmt="o", color=color, capsize=3)
        ax.axvline(0.0, color="gray", lw=1)
        for y, e in zip(ys, map(estimate, names)):
            if e.rule == WINDOW:  # e.g. Fig. 2's "about 40%" as 25-55%
                ax.fill_betweenx([y - 0.35, y + 0.35], e.center - e.margin, e.center + e.margin, color="gray", alpha=0.15, lw=0)
            elif e.margin is not None:  # an equality (or "matches") counts within +-margin of 0: drawn, so the reader sees why
                ax.fill_betweenx([y - 0.35, y + 0.35], -e.margin, e.margin, color="#55a868", alpha=0.18, lw=0)
            if e.effect is not None and e.rule != EQUAL:  # the paper's own effect, where it gives one
                ax.plot([e.effect], [y], marker="D", color="#c44e52", ms=4, ls="none")
        ax.set_yticks(ys, [estimate(n).label + ("" if estimate(n).decides else " (calibration)" if declared(n)
                                                else " (a retired statistic)") for n in names], fontsize=7)
        ax.set_ylim(-0.7, len(names) - 0.3)
        claim = short(rec.get("id", ""), rec.get("claim", ""))  # the few words, so the verdict is not cut off
        ax.set_title(f"{claim[:70] + ('...' if len(claim) > 70 else '')}: {rec.get('verdict', '')}", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel((unit or "estimate") + " (95% interval; shaded: the margin; red diamond: the paper's effect)",
                      fontsize=7)
    fig.suptitle("Findings: estimates and 95% intervals")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))  # room for the suptitle above the first panel's
    return fig


def processbench_error_correct(acc: dict[str, dict[str, list[float]]], scope: str = ""):
    """Grouped bars per model, highest F1 first: ProcessBench accuracy on erroneous samples (the earliest wrong step
    found exactly) and on error-free samples, averaged over `scope` (e.g. the held-out subsets), each with its 95%
    interval over problems: `acc` model -> {"f1", "error_acc", "correct_acc": [point, lo, hi]} (findings.pb_intervals;
    lo and hi None: points alone)."""
    fig, ax = plt.subplots(figsize=(8.5, 3.4))
    names = sorted(acc, key=lambda n: -acc[n]["f1"][0])
    w = 0.38
    for k, (key, label, color) in enumerate((("error_acc", "erroneous samples", "#c44e52"),
                                             ("correct_acc", "error-free samples", "#55a868"))):
        v = [acc[n][key] for n in names]
        err = None if any(x[1] is None for x in v) else [[x[0] - x[1] for x in v], [x[2] - x[0] for x in v]]
        ax.bar([i + (k - 0.5) * w for i in range(len(names))], [x[0] for x in v], width=w, label=label, color=color,
               yerr=err, capsize=2, error_kw={"elinewidth": 0.8})
    ax.set_xticks(range(len(names)), names, rotation=30, fontsize=8, ha="right")
    ax.set_ylim(0, 100)
    return _finish(fig, ax, "model (highest held-out F1 first; 95% intervals over problems)", "accuracy (%)",
                   "ProcessBench accuracy by sample type" + (f" ({scope})" if scope else ""))
