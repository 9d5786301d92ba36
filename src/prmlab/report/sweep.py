"""A params sweep over seeds, as a page: reports/sweeps/<key>.md and .json from each point's file
(reports/sweeps/<key>/<value>-seed-<k>.json, which flows/sweep.py writes as it runs the experiments).

MC's dose-response is one such sweep: `label_mc.temperature` against MC's label accuracy (its
first-error accuracy against the verifier, from stage consensus's audit) and the Table 4 first half (F1 judge -
mc_hard, from the findings). The study's own value is marked as one point of the curve: the curve, not that
point, is the Table 4 first-half result (MC's temperature sets how noisy MC's labels are, and the judge - MC
gap follows it).

A point's file: {"key", "value", "seed", "commit", "study", "measures": {name: number or [point, lo, hi]}}.
Per value the page gives each measure's mean over seeds with its 95% interval (`prmlab.analysis.findings.t_interval`:
never narrower than a seed's own bootstrap interval, where the measure has one).
"""

from __future__ import annotations

from collections import defaultdict

from prmlab.analysis.findings import t_interval
from prmlab.report.markdown import fmt1

# What a sweep point records from its study (flows/sweep.py reads them from the experiment): name -> words.
MEASURES = {"mc_first_error_accuracy": "MC first-error accuracy (%, vs the verifier)",
            "judge_first_error_accuracy": "judge first-error accuracy (%)",
            "consensus_kept": "consensus keeps (% of responses)",
            "f1_judge_minus_mc": "F1: judge - mc_hard (Table 4 first half)"}


def point_measures(findings: dict, consensus: dict) -> dict:
    """The measures of one study: from its reports/findings.json and metrics/consensus.json."""
    audit = consensus.get("audit") or {}
    out = {"mc_first_error_accuracy": 100 * audit["mc"]["first_error_accuracy"] if "mc" in audit else None,
           "judge_first_error_accuracy": 100 * audit["judge"]["first_error_accuracy"] if "judge" in audit else None,
           "consensus_kept": 100 * consensus["consensus_kept_share"] if "consensus_kept_share" in consensus else None}
    table4 = next((f for f in findings.get("findings", []) if f["id"] in ("mc_judge", "mc_judge_human")), {})  # older studies: mc_judge_human
    out["f1_judge_minus_mc"] = table4.get("estimates", {}).get("f1_judge_minus_mc")
    return out


def sweep_page(key: str, default, points: list[dict]) -> tuple[dict, str]:
    """reports/sweeps/<key>.json's record and its Markdown page from the sweep's points (any seeds, any values)."""
    by: dict = defaultdict(list)
    for p in points:
        by[p["value"]].append(p)
    rows, record = [], {"key": key, "default": default, "values": {}}
    for value in sorted(by):
        ps = sorted(by[value], key=lambda p: p["seed"])
        cell = {}
        for name in MEASURES:
            vals = [p["measures"].get(name) for p in ps if p["measures"].get(name) is not None]
            pts = [v[0] if isinstance(v, list) else v for v in vals]
            halves = [(v[2] - v[1]) / 2 for v in vals if isinstance(v, list)]
            cell[name] = (dict(zip(("mean", "lo", "hi"), t_interval(pts, halves)), seeds=len(pts), points=pts)
                          if pts else None)
        record["values"][str(value)] = {"seeds": [p["seed"] for p in ps], **cell}
        rows.append(f"| {value}{' (the study)' if value == default else ''} | {', '.join(str(p['seed']) for p in ps)} | "
                    + " | ".join(_cell(cell[n]) for n in MEASURES) + " |")
    md = [f"# Sweep of `{key}` over seeds", "",
          f"Written by `python -m flows.sweep {key} ...` from reports/sweeps/{key}/ (one file per value and seed). Each "
          "cell: the mean over seeds [95% interval across seeds; one seed: its value alone]. The study's own value "
          f"({default}) is one point of the curve.", "",
          "| value | seeds | " + " | ".join(MEASURES.values()) + " |", "|---|---|" + "---|" * len(MEASURES), *rows, ""]
    return record, "\n".join(md)


def _cell(c: dict | None) -> str:
    if c is None:
        return "-"
    if c["seeds"] < 2:
        return fmt1(c["mean"])
    return f"{fmt1(c['mean'])} [{fmt1(c['lo'])}, {fmt1(c['hi'])}]"
