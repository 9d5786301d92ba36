"""The confirmation protocol: which seeds decide the study's verdicts, what each seed runs, and how many seeds each
claim needs. Rendered into reports/protocol.md (`render`), which is committed before any confirmation seed of its
study runs: the seeds run from the pinned study's own commit (flows.seeds), which holds that page.

The rules themselves are prmlab.analysis.findings.FINDINGS (each claim's paper quote, statistic, deciding estimate, null and
margin, and what this world cannot test); this module adds the seeds: the development seed (0, on which the MC
completer's temperature and the ceiling's weight decay were tuned) is shown beside the verdicts and never counted;
the confirmation seeds (1-6) decide, by the across-seed interval (findings.t_interval). A confirmation seed trains
the PRMs a verdict reads and nothing else (`SEED_SOURCES`, `seed_params`): the ceiling PRM and the human-label arms
(secondary references, set by design dials) are the development seed's.

Inputs: the exploratory six-seed study's files (reports/seeds/seed-<k>.json of EXPLORATORY_STUDY) and the development
seed's reports/findings.json, for the number of seeds each estimate needs. Output: the page's text.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from prmlab.analysis import findings as F
from prmlab.analysis import stats
from prmlab.core.params import PROFILE_ONLY, shift_seeds

DEVELOPMENT_SEED = 0
CONFIRMATION_SEEDS = (1, 2, 3, 4, 5, 6)
# The PRMs a confirmation seed trains: every deciding estimate's two sides (FINDINGS: judge decides as the process
# reference), nothing else. The secondaries (human, human_onpolicy, human_exact, judge_matched, oracle) and the
# ceiling are measured on the development seed.
SEED_SOURCES = F.LINE  # the same PRMs the Best-of-N line is fit through in every seed
EXPLORATORY_STUDY = "037c879d3b67"  # the six exploratory seeds (older statistics; their spreads size this protocol)
MAX_SEEDS = 30  # "needs more than this": a claim this world cannot settle by seeds at this size
PAGE = Path("reports") / "protocol.md"
PIN = Path("reports") / "study.json"  # {"commit", "study"}: the pinned study the confirmation seeds run from


def seed_params(params: dict, k: int) -> dict[str, object]:
    """{dotted params key: value} for confirmation seed k of the study whose params.yaml is `params`: every seed key
    shifted by k, the toy's reference arms off (profile.toy_arms: no ceiling@toy, no toy_human@toy), only
    SEED_SOURCES trained, no reference PRMs scored."""
    out: dict[str, object] = dict(shift_seeds(params, k))
    if (params.get("profile") or {}).get("toy"):
        out["profile.toy_arms"] = []
    out["train_prm.sources"] = [s for s in params["train_prm"]["sources"] if s in SEED_SOURCES]
    for sec in ("eval_processbench", "eval_bon"):
        out[f"{sec}.reference_prms"] = {}
    return out


def runs_in(stage: str, params: dict) -> bool:
    """Whether DVC stage `stage` (e.g. `train_prm@judge`, `ceiling@toy`) exists under `params` (a seed's, from
    `seed_params`): a one-profile stage needs its `profile` list, a per-source stage its source in train_prm.sources
    (label_method@<source>: in label_methods.sources).
    The plain runner (scripts/seeds_plain.py) runs exactly the stages `dvc repro` would."""
    group, _, item = stage.partition("@")
    if group in PROFILE_ONLY and not (params.get("profile") or {}).get(PROFILE_ONLY[group]):
        return False
    if group == "label_method":  # one per source params label_methods.sources names (none in the committed study)
        return item in ((params.get("label_methods") or {}).get("sources") or [])
    return group not in ("prm_data", "train_prm") or item in params["train_prm"]["sources"]


def apply(params: dict, overrides: dict[str, object]) -> dict:
    """params with each dotted key of `overrides` set (a copy)."""
    out = json.loads(json.dumps(params))
    for key, v in overrides.items():
        sec, name = key.split(".", 1)
        out.setdefault(sec, {})[name] = v
    return out


def seeds_to_decide(mean: float, sd: float, within_half: float, e: F.Estimate) -> tuple[int | None, str]:
    """The fewest seeds whose across-seed interval (findings.t_interval: the larger of the across-seed and the
    within-seed variance) is expected to decide `e` when its seeds' mean is `mean`, and the verdict expected then;
    (None, inconclusive) if no number up to MAX_SEEDS would (a mean at the rule's boundary)."""
    s = max(sd, within_half / 1.96)
    for k in range(2, MAX_SEEDS + 1):
        half = F.T95.get(k - 1, 1.96) * s / math.sqrt(k)
        if e.rule == F.EQUAL:
            if abs(mean) + half <= e.margin:
                return k, stats.REPRODUCED
            if abs(mean) - half > e.margin:
                return k, stats.NOT_REPRODUCED
        elif half < abs(mean):
            return k, stats.REPRODUCED if mean > 0 else stats.NOT_REPRODUCED
    return None, stats.INCONCLUSIVE


def spreads(root: Path) -> dict[str, dict]:
    """{estimate: {"mean", "sd", "within_half", "from"}}: each estimate's seeds from the exploratory study where it
    has two or more, else the development seed's own interval standing in for both spreads (said in "from")."""
    out: dict[str, dict] = {}
    pts: dict[str, list[tuple[float, float]]] = {}
    for f in sorted((root / "reports" / "seeds").glob("seed-*.json")):
        rec = json.loads(f.read_text())
        if rec.get("study") != EXPLORATORY_STUDY:
            continue
        for r in rec["findings"]:
            for name, (p, lo, hi) in ((n, v[:3]) for n, v in r["estimates"].items()):
                pts.setdefault(name, []).append((p, (hi - lo) / 2))
    for name, v in pts.items():
        if len(v) >= 2:
            xs = [p for p, _ in v]
            m = sum(xs) / len(xs)
            sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
            out[name] = {"mean": m, "sd": sd, "within_half": sum(h for _, h in v) / len(v),
                         "from": f"the exploratory study's {len(v)} seeds"}
    dev = root / "reports" / "findings.json"
    if dev.exists():
        for r in json.loads(dev.read_text())["findings"]:
            for name, (p, lo, hi) in ((n, v[:3]) for n, v in r["estimates"].items()):
                if name not in out:
                    h = (hi - lo) / 2
                    out[name] = {"mean": p, "sd": h / 1.96, "within_half": h,
                                 "from": "the development seed alone (its interval for both spreads)"}
    return out


def needs(root: Path) -> dict[str, dict]:
    """{finding id: {"seeds" (int or None), "expected" (verdict), "parts": [(estimate, mean, seeds, from)]}}: each
    testable finding's deciding estimates, and the seeds the finding needs: all of its parts decided, or the first
    part expected "not reproduced" (stats.all_of)."""
    sp, out = spreads(root), {}
    for f in F.FINDINGS:
        if f.untestable:
            continue
        names = [f.deciding] if f.deciding else [e.name for e in f.estimates if e.decides]
        parts, ks = [], []
        for name in names:
            if name not in sp:
                parts.append((name, None, None, "no seed has measured it yet"))
                ks.append((None, stats.INCONCLUSIVE))
                continue
            s = sp[name]
            k, v = seeds_to_decide(s["mean"], s["sd"], s["within_half"], F.estimate(name))
            parts.append((name, s["mean"], k, s["from"]))
            ks.append((k, v))
        fails = [k for k, v in ks if v == stats.NOT_REPRODUCED]
        k = min(fails) if fails else (None if any(k is None for k, _ in ks) else max(k for k, _ in ks))
        out[f.id] = {"seeds": k, "expected": stats.NOT_REPRODUCED if fails else stats.all_of([v for _, v in ks]),
                     "parts": parts}
    return out


def _rule(e: F.Estimate) -> str:
    if e.rule == F.EQUAL:
        return (f"equivalence: reproduced if the 95% interval lies within +-{e.margin:g} of 0, not reproduced if it "
                f"lies wholly outside, else inconclusive")
    if e.rule == F.WINDOW:
        return f"window: within +-{e.margin:g} of {e.center:g} ({e.about})"
    return "reproduced if the 95% interval lies wholly above 0, not reproduced if wholly below, else inconclusive"


def _null(e: F.Estimate) -> str:
    return (f"|difference| > {e.margin:g} (the two differ by more than the margin)" if e.rule == F.EQUAL
            else "difference <= 0 (no advantage)")


def render(root: Path) -> str:
    """reports/protocol.md: the claims, each with its paper quote, statistic, deciding reference, null, margin and
    rule, or why this world cannot test it; the seeds; the seeds each claim needs from the spreads measured so far."""
    need = needs(root)
    lines = [
        "# Confirmation protocol",
        "",
        "Registered before any confirmation seed of the study it governs ran: the seeds run from the pinned study's",
        f"commit ({PIN}), which holds this page. Rendered from `prmlab.analysis.findings.FINDINGS` and `prmlab.analysis.protocol`",
        "(`python -m flows.seeds --protocol`); a test checks that this page is what they render.",
        "",
        "## Seeds",
        "",
        f"- **Development seed: {DEVELOPMENT_SEED}.** The committed study. MC's completer temperature (label_mc.temperature)",
        "  and the ceiling's weight decay were tuned on it, so it is shown beside the verdicts and never counted in one.",
        f"- **Confirmation seeds: {', '.join(map(str, CONFIRMATION_SEEDS))}.** Seed k adds k to every seed key "
        "(`prmlab.core.params.SEED_KEYS`): new problems, samples, MC rollouts,",
        "  judge samples, PRM initialisation order and toy ProcessBench. The toy base, policy and judge are the committed ones.",
        f"- **What a confirmation seed runs:** the PRMs {', '.join(f'`{s}`' for s in SEED_SOURCES)} (every deciding",
        "  estimate's two sides) and the data and evaluations they need; no ceiling PRM, no human-label arms",
        "  (`profile.toy_arms: []`), no reference PRMs. The secondary references are the development seed's.",
        "- **Verdict across seeds:** the mean of the confirmation seeds' points and a 95% Student-t interval over",
        "  k seeds whose per-seed variance is the larger of the across-seed variance and the mean within-seed bootstrap",
        "  variance (`findings.t_interval`), judged by the same rule as one seed. A finding some seed lacks is",
        "  inconclusive. Every seed resamples problems (a problem's responses together), 1,000 resamples.",
        "- **More seeds than six are not run:** where a claim needs more (below), the report says so.",
        "",
        "## Claims",
        "",
    ]
    for f in F.FINDINGS:
        lines += [f"### {f.short} (`{f.id}`)", "", f"- **Claim:** {f.claim}.", f"- **Paper:** {f.paper}."]
        if f.untestable:
            decides = [e for e in f.estimates if e.decides]
            lines += [f"- **Verdict in the toy world: {F.NOT_TESTABLE}.** {f.untestable[0].upper()}{f.untestable[1:]}."]
            lines += [f"- **Where it is tested (the paper profile):** `{e.name}`, {_rule(e)}." for e in decides]
            lines += ["- **Reported, deciding nothing:** " + ", ".join(f"`{e.name}` ({e.label})" for e in f.estimates
                                                                       if not e.decides) + ".", ""]
            continue
        name = f.deciding or next(e.name for e in f.estimates if e.decides)
        deciding = [F.estimate(name)] if f.deciding else [e for e in f.estimates if e.decides]
        for e in deciding:
            size = f"; the paper's effect {e.effect:g} {e.unit}" if e.effect is not None and e.rule != F.EQUAL else ""
            lines += [f"- **Statistic:** `{e.name}` ({e.label}, {e.unit}){size}.",
                      f"  Null: {_null(e)}. Rule: {_rule(e)}."]
        if any("minus_{}" in e.name or "vs_{}" in e.name for e in f.estimates):  # compared against reference PRMs
            order = F.FIG8_REFS if f.id == "min_on_last" else F.PROCESS_REFS
            lines += ["- **Deciding reference:** `judge`. Secondaries, labelled and deciding nothing: "
                      + ", ".join(f"`{r}`" for r in order if r != "judge") + " (where the profile has them)."]
        for e in f.estimates:
            if not e.decides:
                lines += [f"- **Calibration, not tested:** `{e.name}` ({e.label}), reported beside the verdict."]
        if f.not_tested:
            lines += [f"- **{F.NOT_TESTABLE[0].upper()}{F.NOT_TESTABLE[1:]}:** {f.not_tested}."]
        if (n := need.get(f.id)) is not None:
            k = n["seeds"]
            when = (f"about **{k}** seeds, expected {n['expected']}"
                    + (" (more than the six run: the report says so)" if k > len(CONFIRMATION_SEEDS) else "")
                    if k is not None else "unknown until a seed measures it" if any(m is None for _, m, _, _ in n["parts"])
                    else f"**more than {MAX_SEEDS}** seeds, or no number: the expected mean sits at the rule's boundary")
            parts = "; ".join(f"`{name}` " + (f"mean {m:.2f} -> {'>' + str(MAX_SEEDS) if kk is None else kk} seeds, from {src}"
                                               if m is not None else src) for name, m, kk, src in n["parts"])
            lines += [f"- **Seeds to decide:** {when} ({parts})."]
        lines.append("")
    lines += ["## Verdict words", "",
              f"`{stats.REPRODUCED}`, `{stats.NOT_REPRODUCED}`, `{stats.INCONCLUSIVE}` (with what would decide it), and "
              f"`{F.NOT_TESTABLE}` (with the reason above). Nothing else is reported as a verdict.", ""]
    return "\n".join(lines)
