"""The study over several seeds, as pages: reports/seeds.md and reports/seeds.json from each seed's file
(reports/seeds/<study>/seed-<k>.json, which prmlab.runs.store files as flows/seeds.py runs the seeds); and the study at a glance (`glance`:
verdicts across seeds where they are this run's study's, then one seed's), which the report's summary, the Prefect
artifact and the MLflow experiment's description show. The aggregate itself is
`prmlab.analysis.findings.aggregate_seeds`; here are its tables, each seed's provenance and PRM figures, and why each
inconclusive verdict is inconclusive (how many seeds at the present spread would decide it).
"""

from __future__ import annotations

from collections import Counter
from statistics import mean, stdev

from prmlab.analysis.findings import (
    EQUAL,
    T95,
    WINDOW,
    aggregate_seeds,
    deciding,
    declaration,
    estimate,
    group_by_id,
    missing,
    short,
)
from prmlab.analysis.stats import INCONCLUSIVE
from prmlab.report.markdown import f3, fmt1, signed_ci, table

# Seed 0 is the committed study itself, the world the study was developed on: MC's completer temperature and the
# ceiling PRM's weight decay were chosen on it with its PRM results in view (docs/study.md), so its
# verdicts are no independent draw. Every list of seeds marks it, and the sensitivity block decides without it.
DEVELOPMENT_SEED = "seed-0"
NOT_RECORDED = "not recorded"


def seed_label(name: str) -> str:
    """A seed's name as every page lists it: the development seed marked."""
    return f"{name} (development seed)" if name == DEVELOPMENT_SEED else name


def provenance(recs: dict[str, dict]) -> list[str]:
    """Markdown lines: each seed's commit and how it ran (the committed study, a DVC experiment, or elsewhere)."""
    return ["How each seed ran:", "", *[f"- {seed_label(name)}: commit {r['commit']}, {r['ran']}"
                                        + (f"; PRMs trained on {'; '.join(r['machines'])}" if r.get("machines") else "")
                                        for name, r in sorted(recs.items())], "",
            "Trained weights move with the CPU (its core count and its kernels: AVX-512, AVX2), labels do not "
            "(benchmarks/bench_determinism.py): each seed's figures of a trained model are its machine's, "
            "and seeds run on several kinds of machine carry that spread in their across-seed interval.", ""] if recs else []


def runs(recs: dict[str, dict]) -> dict[str, dict[str, str]]:
    """reports/seeds.json's record of the seeds: the commit each ran from, and how."""
    return {"runs": {n: r["commit"] for n, r in recs.items()}, "ran": {n: r["ran"] for n, r in recs.items()}}


TARGETS = "exact_label_targets"  # a seed file's key for its exact-label PRMs against their targets
OLD_TARGETS = "targets_26"  # the same, as findings.json and the seed files filed before the key was named carry it


def exact_label_targets(rec: dict) -> dict:
    """A seed file's or findings.json's exact-label PRMs against their targets, under either key."""
    return rec.get(TARGETS, rec.get(OLD_TARGETS, {}))


def targets_table(recs: dict[str, dict]) -> list[str]:
    """Markdown rows: each seed's PRMs trained on exact labels against the exact-label targets (step AUC >= 0.85 and
    Best-of-N above maj@N by the interval's lower end), as each seed's report judged them."""
    rows = [f"| {seed_label(seed)} | {name} | {f3(t['step_auc'])} | "
            f"{signed_ci(t['over_maj'].get('product'))} | {signed_ci(t['over_maj'].get('min'))} | "
            f"{'-' if t['met'] is None else 'met' if t['met'] else '**missed**'} |"
            for seed, r in sorted(recs.items()) for name, t in exact_label_targets(r).items()]
    if not rows:
        return []
    return ["The PRMs trained on exact labels against their targets (step AUC >= 0.85; Best-of-N (product or "
            "min) above maj@N by its 95% interval's lower end), per seed:", "",
            "| seed | PRM | step AUC | Best-of-N (product) - maj@N | Best-of-N (min) - maj@N | targets |",
            "|---|---|---|---|---|---|", *rows, ""]


# Each PRM's own figures across seeds (reports/seeds.md), from each seed's headline: (key, what, decimals).
HEADLINE_FIGURES = (("processbench_f1", "ProcessBench F1 (held-out subsets)", 1),
                    ("processbench_step_auc", "ProcessBench step AUC", 3),
                    ("best_of_n", "Best-of-8 accuracy (product; maj, pass, random for reference)", 1))


def prm_table(recs: dict[str, dict]) -> list[str]:
    """Markdown rows: each PRM's own figures per seed, as each seed's reports/headline.json has them, with their
    mean and sample sd over the seeds that kept a headline ('-' for one that did not): how far a PRM's figures
    move between seeds of one study (its world, samples and training run all redrawn)."""
    names = [n for n, r in sorted(recs.items()) if r.get("headline")]
    if not names:
        return []
    cols = sorted(recs)
    md = ["Each PRM's own figures per seed (its seed's reports/headline.json), with the mean and sd over the seeds "
          f"that kept one ({len(names)} of {len(cols)}):", "",
          "| figure | model | " + " | ".join(map(seed_label, cols)) + " | mean | sd |", "|---|---|" + "---|" * (len(cols) + 2)]
    for key, what, nd in HEADLINE_FIGURES:
        models = dict.fromkeys(m for n in names for m, v in (recs[n]["headline"].get(key) or {}).items()
                               if m != "n" and isinstance(v, (int, float)))
        for i, model in enumerate(models):
            vals = [((recs[n].get("headline") or {}).get(key) or {}).get(model) for n in cols]
            pts = [v for v in vals if v is not None]
            cells = [*vals, mean(pts), stdev(pts) if len(pts) > 1 else None]
            md.append(f"| {what if i == 0 else ''} | {model} | " + " | ".join("-" if v is None else f"{v:.{nd}f}" for v in cells) + " |")
    return md + [""]


def per_seed_table(per_seed: dict[str, list[dict]]) -> list[str]:
    """Markdown rows: each finding's estimates, point [95% within-seed interval], and its verdict, per seed;
    every finding and estimate any seed has (as aggregate_seeds groups them by id), '-' where a seed lacks it."""
    if not per_seed:
        return []
    names = sorted(per_seed)
    md = ["Each seed that has run, on its own (point [95% within-seed interval]; a verdict per seed):", "",
          "| finding | estimate | " + " | ".join(map(seed_label, names)) + " |", "|---|---|" + "---|" * len(names)]
    for by_run in group_by_id(per_seed).values():
        f, recs = next(iter(by_run.values())), [by_run.get(name) for name in names]
        for i, est in enumerate(dict.fromkeys(k for g in recs if g for k in g["estimates"])):
            cells = [("-" if not g or est not in g["estimates"] else "{:.1f} [{:.1f}, {:.1f}]".format(*g["estimates"][est]))
                     + (f" ({g['verdict']})" if g and i == 0 else "") for g in recs]
            md.append(f"| {f['claim'] if i == 0 else ''} | {est} | " + " | ".join(cells) + " |")
    return md + [""]


def seeds_for(sd: float, target: float, most: int = 100) -> int | None:
    """The fewest seeds whose across-seed 95% half-width (`prmlab.analysis.findings.t_interval`: Student t for k - 1
    degrees of freedom times sd / sqrt(k)) is at most `target`, at a per-seed spread `sd`; None beyond `most`."""
    return next((k for k in range(2, most + 1) if T95.get(k - 1, 1.96) * sd / k ** 0.5 <= target), None)


def why_inconclusive(f: dict, runs: int) -> str:
    """Why an aggregate finding (aggregate_seeds' record, over `runs` seeds) is inconclusive, by each deciding estimate's
    rule (prmlab.analysis.findings.FINDINGS): an equality not within its margin, or a window about the paper's value whose end
    the interval straddles (how many seeds would settle either); an interval wider than the paper's effect (how many
    seeds would narrow it to that), one narrower that straddles 0, or one the paper gives no size for."""
    if f["verdict"] != INCONCLUSIVE:
        return ""
    if f["seeds"] < max(runs, 2) or any(e["seeds"] < f["seeds"] for e in f["estimates"].values()):
        return f"{runs - f['seeds']} of {runs} seeds lack it, or some seed lacks one of its estimates"
    if lacks := missing(f["id"], list(f["estimates"])):
        return (f"not measured as the findings now declare it: {', '.join(lacks)} missing (seeds filed before the "
                "statistic was declared; seeds of the current study decide it)")
    if not deciding(f["id"], f["estimates"]):
        return (f"its estimates ({', '.join(f['estimates'])}) are of a statistic the findings no longer declare: "
                "seeds of the current study decide it")
    out = []
    for n in deciding(f["id"], f["estimates"]):
        d, e = estimate(n), f["estimates"][n]
        m, h, lo, hi = e["mean"], e["half_width"], e["lo"], e["hi"]
        if d.judge(lo, hi) != INCONCLUSIVE:
            continue
        sd = h * e["seeds"] ** 0.5 / T95.get(e["seeds"] - 1, 1.96)  # the per-seed spread behind the half-width
        if d.rule == EQUAL:  # |mean| + half-width within the margin
            gap = d.margin - abs(m)
            out.append(f"{n} {m:+.1f} [{lo:.1f}, {hi:.1f}] is not within +-{d.margin:g}; "
                       + (seeds_needed(sd, gap, f"bring it to +-{gap:.1f}") if gap > 0 else
                          "no number of seeds shows equality at this mean"))
        elif d.rule == WINDOW:  # an equivalence to the paper's value: a window, not a side of 0
            a, b = d.center - d.margin, d.center + d.margin
            edge, inside = min((a, b), key=lambda x: abs(m - x)), a <= m <= b
            out.append(f"{n} {m:.1f} [{lo:.1f}, {hi:.1f}] straddles {edge:g}, an end of the {a:g}-{b:g}% window that "
                       f"counts as {d.about}, its mean {abs(m - edge):.1f} points {'inside' if inside else 'outside'} it; "
                       + seeds_needed(sd, abs(m - edge), f"place the interval wholly {'inside' if inside else 'outside'} "
                                      f"({'reproduced' if inside else 'not reproduced'})"))
        elif (eff := e.get("paper_effect")) and h > eff:
            out.append(f"{n}: +-{h:.1f} across seeds is wider than the paper's effect {eff:g}; "
                       + seeds_needed(sd, eff, f"bring it to +-{eff:.1f}"))
        elif eff:
            out.append(f"{n} [{lo:.1f}, {hi:.1f}] is narrow enough for the paper's effect ({eff:g}) and straddles 0: "
                       + (f"an effect of the paper's size is excluded (at most {hi:.1f})" if hi < eff else
                          "the toy's effect, if any, is smaller than the interval resolves"))
        else:
            out.append(f"{n} {m:+.1f} [{lo:.1f}, {hi:.1f}] straddles 0 and the paper gives it no size; "
                       + seeds_needed(sd, abs(m), f"separate a mean of {m:+.1f} from 0"))
    return "; ".join(out)


def seeds_needed(sd: float, target: float, goal: str) -> str:
    """'about k seeds at this spread would <goal>', k the fewest whose half-width is at most `target` (> 0)."""
    k = seeds_for(sd, target) if target > 0 else None
    return (f"about {k} seeds at this spread would {goal}" if k else
            f"more than 100 seeds at this spread would be needed to {goal}")


def pending_page(seeds: int, recs: dict[str, dict], missing: dict[str, str], head: str,
                 pin_line: str = "") -> tuple[dict, str]:
    """reports/seeds.{json,md} while some seeds of the study (the pinned one, else HEAD's; commit `head`) are missing: which, the
    command, and each finished seed's own estimates and verdicts side by side (no interval across seeds yet);
    `pin_line`: the pinned study and whether HEAD still makes it."""
    md = ["# The study over several seeds", "", *([pin_line, ""] if pin_line else []),
          f"**Pending**: {len(recs)} of the {seeds} seeds of the {'pinned' if pin_line else 'committed'} study (commit {head}) have run"
          + (f" ({', '.join(map(seed_label, sorted(recs)))})" if recs else "") + "; no aggregate until all have. Missing:", "",
          *[f"- {seed_label(name)}: {why}; run `python -m flows.seeds --seeds {seeds} --only {name.split('-')[1]}`"
            for name, why in sorted(missing.items())], "", *provenance(recs),
          *per_seed_table({name: r["findings"] for name, r in recs.items()}), *targets_table(recs), *prm_table(recs)]
    return ({"commit": head, **runs(recs), "pending": missing, "findings": [], "pinned": pin_line or None},
            "\n".join(md) + "\n")


def across_table(agg: list[dict]) -> list[str]:
    """Markdown rows: every estimate of every finding across seeds (aggregate_seeds' records): mean, 95% interval
    across seeds, its half-width beside the paper's effect, the mean within-seed interval, each seed's point, the
    verdict and each seed's own. reports/seeds.md's table, and the report's under its summary."""
    md = ["| finding | estimate | mean | 95% across seeds | +- vs paper | within-seed (mean) | per seed | verdict | "
          "every seed | per-seed verdicts |", "|---|---|---|---|---|---|---|---|---|---|"]
    for f in agg:
        for i, (name, e) in enumerate(f["estimates"].items()):
            prec = f"{e['half_width']:.1f}" + (f" vs {e['paper_effect']:g}" if e.get("paper_effect") else "")
            md.append(f"| {f['claim'] if i == 0 else ''} | {name} | {e['mean']:.2f} | [{e['lo']:.2f}, {e['hi']:.2f}] | {prec} | "
                      f"[{e['within_seed_lo']:.2f}, {e['within_seed_hi']:.2f}] | {', '.join(f'{x:.1f}' for x in e['points'])} | "
                      f"{f['verdict'] if i == 0 else ''} | {('yes' if f['holds_on_every_seed'] else 'no') if i == 0 else ''} | "
                      f"{', '.join(f['per_seed_verdicts']) if i == 0 else ''} |")
    return md + [""]


def this_run_seeds(seeds: dict | None, recs: list[dict]) -> tuple[list[dict], str]:
    """The across-seed findings of reports/seeds.json (`seeds`, None where there is none) when they are this run's
    study's, and why not otherwise: ([], the reason). They are when seeds.json holds an aggregate (not pending)
    whose seed 0 is this run: every estimate of this run's findings (`recs`) equals seed 0's point in the
    aggregate (its first point: seed-0 sorts first). A report stage cannot ask git which study it is; seed 0 is
    the committed study's reports/findings.json, so a rerun of the same study reproduces its estimates to the
    digit, while another study (code, params, models) or this study regenerated on another machine (its PRMs
    differ in float summation order) or a seed-k experiment does not, and shows its own seed alone."""
    if not recs:
        return [], "this run has no findings"
    if not seeds:
        return [], "no seeds have run (reports/seeds.json is absent: `make study-seeds`)"
    if seeds.get("pending") or not seeds.get("findings"):
        done = len(seeds.get("runs", {}))
        return [], (f"the seeds are pending ({done} of {done + len(seeds.get('pending') or {})} have run; "
                    "reports/seeds.md says which)")
    if (dev := seeds.get("development_seed")) is not None:  # confirmation seeds (reports/protocol.md): seed 0 beside
        for r in recs:
            got = dev["findings"].get(r["id"], {}).get("estimates", {})
            for name, est in r["estimates"].items():
                if name not in got or abs(got[name] - est[0]) > 1e-9 * max(1.0, abs(est[0])):
                    return [], (f"reports/seeds.json's seeds (commit {seeds.get('commit')}) are another study's: its "
                                f"development seed's {name} is not this run's")
        return list(seeds["findings"]), ""
    if "seed-0" not in seeds.get("runs", {}):
        return [], "reports/seeds.json has no seed 0"
    agg = {f["id"]: f for f in seeds["findings"]}
    for r in recs:
        got = agg.get(r["id"], {}).get("estimates", {})
        for name, est in r["estimates"].items():
            e = got.get(name)
            if e is None or len(e["points"]) < len(seeds["runs"]) or abs(e["points"][0] - est[0]) > 1e-9 * max(1.0, abs(est[0])):
                return [], (f"reports/seeds.json's seeds (commit {seeds.get('commit')}) are another run's: their seed 0's "
                            f"{name} is not this run's (another study, or this one regenerated on another machine)")
    return list(seeds["findings"]), ""


# ------------------------------------------------------------------- sensitivity

def seed_machine(rec: dict) -> str:
    """The machine a seed's models computed on, as its file names it (prmlab.runs.store.write_seed, from its own report);
    "not recorded" for a file filed before seeds named it, never guessed from its free-text `ran`."""
    return rec.get("machine") or NOT_RECORDED


def subset(recs: dict[str, dict], name: str) -> dict:
    """Every finding's verdict and every estimate's interval over the seeds `recs` (name -> seed file): across them
    (aggregate_seeds: mean, 95% interval across seeds) where there are two or more, one seed's own (point, its
    within-seed interval) where there is one; each estimate's verdict by its own rule (`estimate(name).judge`), so an
    estimate that does not decide its finding (another reference PRM) shows what it alone would say."""
    seeds = sorted(recs)
    if len(seeds) >= 2:
        found = {f["id"]: (f["verdict"], {n: (e["mean"], e["lo"], e["hi"]) for n, e in f["estimates"].items()})
                 for f in aggregate_seeds({n: recs[n]["findings"] for n in seeds})}
    else:
        found = {f["id"]: (f["verdict"], {n: tuple(v[:3]) for n, v in f["estimates"].items()})
                 for n in seeds for f in recs[n]["findings"]}
    return {"name": name, "seeds": seeds, "across": len(seeds) >= 2,
            "findings": {fid: {"verdict": v, "estimates": {n: {"mean": m, "lo": lo, "hi": hi, "verdict": estimate(n).judge(lo, hi)}
                                                           for n, (m, lo, hi) in ests.items()}}
                         for fid, (v, ests) in found.items()}}


def sensitivity(recs: dict[str, dict], agg: list[dict]) -> tuple[dict, list[str]]:
    """reports/seeds.json's `sensitivity` and reports/seeds.md's block: the verdicts over every seed, without the
    development seed, and on each machine the seeds' files name (none where they name fewer than two); every
    estimate by its own rule in each; each seed left out in turn, and each verdict fragile (flips anywhere, or for its
    deciding statistic against another reference PRM: `fragile`, what flips) or robust. All from the seed files, as the aggregate (`agg`, aggregate_seeds' records)."""
    machines = {n: seed_machine(r) for n, r in sorted(recs.items())}
    torch = {n: r.get("torch") or NOT_RECORDED for n, r in sorted(recs.items())}
    groups = [subset(recs, f"every seed ({len(recs)})")]
    if DEVELOPMENT_SEED in recs and len(recs) > 1:
        groups.append(subset({n: r for n, r in recs.items() if n != DEVELOPMENT_SEED},
                             f"without {seed_label(DEVELOPMENT_SEED)} ({len(recs) - 1})"))
    kinds = sorted(set(machines.values()))
    if len(kinds) > 1:  # one machine (or none recorded) is no split: its column would repeat "every seed"
        groups += [subset({n: recs[n] for n, k in machines.items() if k == kind},
                          f"{kind}: {', '.join(map(seed_label, (n for n, k in machines.items() if k == kind)))}")
                   for kind in kinds]
    # each seed left out in turn (two or more left: an interval across seeds), for the fragile column below
    loo = [subset({m: r for m, r in recs.items() if m != n}, f"without {seed_label(n)}") for n in sorted(recs)
           if len(recs) >= 3 and sorted(set(recs) - {n}) not in [g["seeds"] for g in groups]]  # not twice (seed 0)
    full = groups[0]["findings"]

    def flips(f: dict) -> list[str]:
        """Where finding f's verdict over every seed does not hold: a group above or a seed left out (either with an
        interval across seeds), or the deciding statistic against another reference PRM, by its own rule."""
        out = [f"{g['name']}: {v}" for g in [*groups[1:], *loo]
               if g["across"] and (v := g["findings"].get(f["id"], {}).get("verdict")) not in (None, f["verdict"])]
        dec = deciding(f["id"], list(f["estimates"]))
        own = full.get(f["id"], {}).get("estimates", {})
        out += [f"against another reference ({estimate(n).label}): {own[n]['verdict']}" for n in f["estimates"]
                if n not in dec and n in own and declaration(n) is not None and declaration(n) in map(declaration, dec)
                and own[n]["verdict"] != f["verdict"]]
        return out

    fragile = {f["id"]: flips(f) for f in agg}
    record = {"development_seed": DEVELOPMENT_SEED, "machines": machines, "torch": torch, "groups": groups,
              "without_each_seed": loo, "fragile": fragile}

    def how(g: dict) -> str:
        return g["name"] + ("" if g["across"] else ", one seed: its own interval")

    def cell(v: str, base: str) -> str:  # a verdict that differs from every seed's in bold
        return f"**{v}**" if v != base else v

    md = ["## Sensitivity: without the development seed, by machine, each estimate alone", "",
          f"{seed_label(DEVELOPMENT_SEED)}: the committed study itself, on whose world MC's completer temperature and the "
          "ceiling PRM's weight decay were chosen with its PRM results in view (docs/study.md): its verdicts are no "
          "independent draw, so each is decided again without it. Each seed's machine and torch build are what its "
          f"file records (its own report's, prmlab.runs.store.write_seed); \"{NOT_RECORDED}\" where the file predates that "
          "(its line under \"How each seed ran\" says in words where it ran, never read as a machine here). A verdict "
          "in bold differs from the one over every seed; a group of one seed is decided by its own interval.", "",
          table(["seed", "machine", "torch"], [[seed_label(n), machines[n], torch[n]] for n in machines]), ""]
    if len(kinds) == 1:
        md += [(f"Every seed's file records one machine ({kinds[0]}): no split by machine." if kinds[0] != NOT_RECORDED else
                "No seed's file records its machine: the verdicts cannot be split by machine from the files."), ""]
    md += [table(["finding", *map(how, groups)],
                 [[short(f["id"], f["claim"]), *(cell(g["findings"].get(f["id"], {}).get("verdict", "-"), f["verdict"])
                                                 for g in groups)] for f in agg]), "",
           "**Fragile or robust**: a verdict is *fragile* where it flips in any group above, with any one seed left out "
           "(two or more left), or for the deciding statistic against another reference PRM; *robust* otherwise"
           + ("" if loo else " (each seed left out in turn needs three or more seeds)") + ".", "",
           table(["finding", "verdict (every seed)", "robust?", "where it flips"],
                 [[short(f["id"], f["claim"]), f["verdict"], "**fragile**" if fragile[f["id"]] else "robust",
                   "; ".join(fragile[f["id"]]) or "-"] for f in agg]), "",
           "Each estimate on its own (an estimate that does not decide its finding, e.g. against another reference "
           "PRM, by the same rule): mean [95% interval] and its verdict in each group; \"decides\" marks the "
           "estimates the finding's verdict rests on (prmlab.analysis.findings.deciding).", "",
           table(["finding", "estimate", "decides", *map(how, groups)],
                 [[short(f["id"], f["claim"]) if i == 0 else "", name, "yes" if name in deciding(f["id"], list(f["estimates"])) else "",
                   *(estimate_cell(g["findings"].get(f["id"], {}).get("estimates", {}).get(name), full[f["id"]]["estimates"][name]["verdict"])
                     for g in groups)]
                  for f in agg for i, name in enumerate(f["estimates"])]), ""]
    return record, md


def estimate_cell(e: dict | None, base: str) -> str:
    """'+1.5 [+0.7, +2.3] reproduced' (a verdict that differs from `base`, every seed's, in bold); '-' where absent."""
    if e is None:
        return "-"
    v = f"**{e['verdict']}**" if e["verdict"] != base else e["verdict"]
    return f"{fmt1(e['mean'])} [{fmt1(e['lo'])}, {fmt1(e['hi'])}] {v}"  # '-' for NaN: a lone seed has the estimate


# The across-seed forest plot beside reports/seeds.md, and its rows as DVC plot data (beside it too: the
# report stage owns reports/plots/, and DVC empties an output folder before it reruns the stage)
FOREST_PNG, FOREST_JSON = "seeds_findings.png", "seeds_findings.json"


def forest_rows(agg: list[dict]) -> list[dict]:
    """aggregate_seeds' records as DVC plot rows, one per estimate: "<finding id>: <estimate's words>" (distinct where
    the short claims share their first words), its unit (the plot draws a panel per unit, each on its own scale: a
    kept share of 55% had squeezed the F1 differences into a tenth of the width), its mean and 95% interval across
    seeds, and whether it decides the finding's verdict (a seed estimate lacks an interval: left out, never drawn as
    a point without one)."""
    return [{"estimate": f"{f['id']}: {estimate(n).label}", "finding": short(f["id"], f["claim"]), "unit": estimate(n).unit or "other (an estimate today's findings do not declare)",
             "mean": round(e["mean"], 2), "lo": round(e["lo"], 2), "hi": round(e["hi"], 2),
             "decides": n in deciding(f["id"], list(f["estimates"])), "verdict": f["verdict"]}
            for f in agg for n, e in f["estimates"].items() if e["lo"] == e["lo"]]


def aggregate_page(recs: dict[str, dict], seconds: float | None, dev: dict | None = None,
                   pin_line: str = "") -> tuple[list[dict], dict, str]:
    """The aggregate of every seed of one study (`prmlab.analysis.findings.aggregate_seeds`, each inconclusive verdict
    with why), reports/seeds.json's record and reports/seeds.md's text; `dev`, the development seed's file (never in
    the aggregate; reports/protocol.md), is shown beside it."""
    per_seed, seen = {n: r["findings"] for n, r in recs.items()}, runs(recs)
    agg = [{**f, "why_inconclusive": why_inconclusive(f, len(per_seed))} for f in aggregate_seeds(per_seed)]
    base = seen["runs"]
    commits = sorted(set(base.values()))
    sens, sens_md = sensitivity(recs, agg)
    record = {"commit": commits[0] if len(commits) == 1 else commits, **seen, "wall_seconds": seconds, "findings": agg,
              "sensitivity": sens, # the development seed beside the aggregate, never in it: its commit, verdicts and points (the report
              # matches its own estimates against these to know the aggregate is its study's: `this_run_seeds`)
              "development_seed": {"commit": dev["commit"], "findings": {
                  f["id"]: {"verdict": f["verdict"], "estimates": {n: v[0] for n, v in f["estimates"].items()}}
                  for f in dev["findings"]}} if dev else None,
              "pinned": pin_line or None}
    md = ["# The study over several seeds", "", *([pin_line, ""] if pin_line else []),
          (f"The study of commit {commits[0]}" if len(commits) == 1 else
           "Seeds of one study (the same code, params and models) run from several commits: "
           + ", ".join(f"{seed_label(k)} {v}" for k, v in sorted(base.items())))
          + f"; runs: {', '.join(map(seed_label, sorted(per_seed)))}"
          + (f"; wall time {seconds / 60:.1f} min on this machine." if seconds else "."), "", *provenance(recs),
          "Per estimate: the mean over seeds; its 95% interval across seeds (each seed its own world, samples and "
          "training): Student t for k - 1 degrees of freedom on the larger of the across-seed variance and the mean "
          "within-seed bootstrap variance, so a few seeds that happen to agree cannot give an interval narrower than "
          "one seed's own noise (`prmlab.analysis.findings.t_interval`); and the mean within-seed bootstrap interval (problem "
          "sampling only). The verdict follows the across-seed interval, by the rule one seed's follows; "
          "\"every seed\" says whether each seed's own verdict is the same. \"+-\" is the across-seed half-width beside "
          "the paper's effect it is meant to detect, where the paper gives one.", "",
          *across_table(agg), "",
          *([f"Development seed {dev['seed']} (commit {dev['commit']}; its verdicts are not counted, "
             "reports/protocol.md): " + "; ".join(f"{f['id']} {f['verdict']}" for f in dev["findings"]) + ".", ""]
            if dev else []),
          f"![Every estimate across seeds: mean and 95% interval]({FOREST_PNG})", "",
          f"(the same intervals as DVC plot data: reports/{FOREST_JSON}, `dvc plots show`.)", ""]
    why = [f"- {f['claim']}: {f['why_inconclusive']}." for f in agg if f["why_inconclusive"]]
    md += [*(["Why each inconclusive verdict is inconclusive (the across-seed intervals above; \"seeds\" counts "
                  "assume the present per-seed spread):", "", *why, ""] if why else []),
           *sens_md, *targets_table(recs), *prm_table(recs), "The paper's side of each claim, quoted:", ""] + [f"- {f['paper']}" for f in agg]
    return agg, record, "\n".join(md) + "\n"


# ------------------------------------------------------------------- the study at a glance

# Plain text, so a page without an emoji font shows them.
MARKS = {"reproduced": "[+] reproduced", "not reproduced": "[-] not reproduced", "inconclusive": "[?] inconclusive",
         "not testable in this world": "[n/a] not testable in this world"}


def glance_rows(findings: list[dict], across: bool) -> list[dict]:
    """One row per finding, verdict first: its verdict, its claim in a few words (`prmlab.analysis.findings.short`), and the
    estimate that decides it (of its deciding ones, the first whose own interval gives the finding's verdict) with its
    value and 95% interval: across seeds (aggregate_seeds' records: mean) or one seed's (records: point)."""
    rows = []
    for f in findings:
        ivs = {n: (e["mean"], e["lo"], e["hi"]) if across else tuple(e[:3]) for n, e in f["estimates"].items()}
        names = deciding(f["id"], list(ivs)) if ivs else []
        name = next((n for n in names if estimate(n).judge(*ivs[n][1:]) == f["verdict"]), names[0] if names else None)
        value, lo, hi = ivs[name] if name else (None, None, None)
        rows.append({"id": f["id"], "verdict": f["verdict"], "claim": short(f["id"], f["claim"]),
                     "estimate": estimate(name).label if name else "-", "value": value, "lo": lo, "hi": hi})
    return rows


def glance(recs: list[dict], seeds: dict | None) -> dict:
    """The study at a glance (reports/findings.json's `glance`; the report's summary, the Prefect artifact, the MLflow
    experiment's description): the verdicts across seeds where reports/seeds.json's seeds are this run's study
    (`prmlab.report.seeds.this_run_seeds`), and this run's own, one seed; `why_one_seed` says why there are none across
    seeds."""
    agg, why = this_run_seeds(seeds, recs)
    return {"seeds": len(seeds["runs"]) if agg else 1, "commit": seeds.get("commit") if agg else None,
            "confirmation": bool(agg) and seeds.get("development_seed") is not None,
            "why_one_seed": why, "across_seeds": glance_rows(agg, across=True), "one_seed": glance_rows(recs, across=False)}


def verdict_counts(rows: list[dict]) -> str:
    c = Counter(r["verdict"] for r in rows)
    return (f"{c['reproduced']} reproduced, {c['not reproduced']} not reproduced, {c['inconclusive']} inconclusive"
            + (f", {n} not testable in this world" if (n := c["not testable in this world"]) else ""))


def glance_cells(r: dict) -> list[str]:
    """A glance row's cells: its verdict (marked), claim, deciding estimate, value and 95% interval ('-' where none)."""
    return [MARKS.get(r["verdict"], r["verdict"]), r["claim"], r["estimate"], fmt1(r["value"]),
            "-" if r["lo"] is None else f"[{fmt1(r['lo'])}, {fmt1(r['hi'])}]"]


def glance_commits(g: dict) -> str:
    """'commit X' or 'commits X, Y': the commits the glance's seeds ran from."""
    commits = g["commit"] if isinstance(g["commit"], list) else [g["commit"]]
    return f"commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}"


def glance_lines(g: dict, seeds_md: str = "reports/seeds.md", first_only: bool = False) -> list[str]:
    """Markdown: the verdicts across seeds first where there are, then this run's (one seed), each a table of one row
    per claim (verdict, claim, the deciding estimate, its value, its interval: one interval a cell). `seeds_md`: how
    the page names reports/seeds.md (the report: a link); `first_only`: the first table alone (README's)."""
    def rows(rs: list[dict]) -> list[list]:
        return [glance_cells(r) for r in rs]

    md = []
    if g["across_seeds"]:
        md += [f"**The study, across {g['seeds']} seeds** ({glance_commits(g)}; "
               f"every estimate in {seeds_md}): "
               f"{verdict_counts(g['across_seeds'])}.", "",
               table(["verdict", "claim", "deciding estimate", "mean over seeds", "95% interval across seeds"],
                     rows(g["across_seeds"])), ""]
        if first_only:
            return md
        md += [("This run alone (the development seed 0, never counted in the verdicts above: reports/protocol.md; one "
                f"seed): {verdict_counts(g['one_seed'])}." if g.get("confirmation") else
                f"This run alone (seed 0 of those, the development seed; one seed): {verdict_counts(g['one_seed'])}."), ""]
    elif g["one_seed"]:
        md += [f"**This run, one seed** (no verdicts across seeds: {g['why_one_seed']}; the committed study is the "
               "development seed, whose verdicts are never counted: reports/protocol.md): "
               f"{verdict_counts(g['one_seed'])}.", ""]
    if g["one_seed"]:
        md += [table(["verdict (one seed)", "claim", "deciding estimate", "this run", "95% bootstrap interval"],
                     rows(g["one_seed"])), ""]
    return md


def glance_text(g: dict) -> list[str]:
    """`prmlab metrics`' first lines: the glance as plain text, the verdicts across seeds where there are (a line per
    claim: verdict, claim, deciding estimate, value [95% interval]) and the development seed's counts below them,
    else this run's own verdicts, one seed."""
    def rows(rs: list[dict]) -> list[str]:
        body = [glance_cells(r) for r in rs]
        widths = [max(len(row[i]) for row in body) for i in range(3)]
        return ["  ".join([*(x.ljust(w) for x, w in zip(row[:3], widths)),
                           row[3] + ("" if row[4] == "-" else f" {row[4]}")]).rstrip() for row in body]

    if g["across_seeds"]:
        lines = [f"The study, across {g['seeds']} seeds ({glance_commits(g)}; reports/seeds.md): "
                 f"{verdict_counts(g['across_seeds'])}.", *rows(g["across_seeds"])]
        if g["one_seed"]:
            lines.append(("The development seed 0 alone, never counted" if g.get("confirmation") else
                          "This run alone (seed 0 of those, the development seed)")
                         + f" (reports/report.md): {verdict_counts(g['one_seed'])}.")
        return lines
    if g["one_seed"]:
        return [f"This run, one seed (no verdicts across seeds: {g['why_one_seed']}): {verdict_counts(g['one_seed'])}.",
                *rows(g["one_seed"])]
    return []


# ------------------------------------------------------------------------------------------ README's results

# README.md's results: the lines between these markers are generated (`readme_results`), never written by hand.
README_START = "<!-- results: generated from reports/findings.json and reports/seeds.json (python -m flows.seeds); do not edit -->"
README_END = "<!-- /results -->"


def readme_results(findings: dict, seeds: dict | None) -> str:
    """README.md's results block: the report's first table (the verdicts across seeds where they are this study's,
    then the committed run's own) from the committed reports/findings.json (`findings`) and reports/seeds.json."""
    g = glance(findings.get("findings") or [], seeds)
    lines = glance_lines(g, seeds_md="[reports/seeds.md](reports/seeds.md)", first_only=True)
    if g["across_seeds"]:  # the development seed's own verdicts are the report's
        lines += ["The committed run alone (the development seed 0, never counted): [reports/report.md](reports/report.md).", ""]
    return "\n".join([README_START, "", *lines, README_END])


def with_readme_results(readme: str, block: str) -> str:
    """`readme` with its results block replaced by `block`; a README without both markers is refused (ValueError)."""
    start, end = readme.find(README_START), readme.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"README.md lacks the results markers {README_START!r} ... {README_END!r}")
    return readme[:start] + block + readme[end + len(README_END):]
