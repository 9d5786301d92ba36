"""Benchmark: do the deciding PRMs and estimates hold at fewer optimizer steps? The check a cheaper study needs.

    python -m benchmarks.bench_fewer_steps --study 423b1721f035 --copies /tmp/seeds1000/seed-1 /tmp/seeds1000/seed-2

A confirmation seed costs 80-88 min on 2 cores at the pinned study's 3,000 steps per PRM, most of it training six
PRMs; reports/protocol.md asks for a seed of at most 45 min, and fewer steps are allowed only with a measured check
that the deciding PRMs' step AUC and the deciding estimates' spread hold. This is that check. Each copy is a
confirmation seed run by scripts/seeds_plain.py from the pinned commit's graph with only `train_prm.steps` changed:
its data stages are the filed seed's byte for byte (the same commit, params and seed; generated labels do not move
with the machine), so what differs is the PRMs' training alone. Against the filed seed of the same number
(reports/seeds/<study>/seed-<k>.json) it records, per seed: each deciding PRM's held-out ProcessBench F1 and step AUC
at both budgets, each deciding estimate's point and interval at both, and each verdict at both; over the seeds given,
the mean change of each PRM's step AUC and, where two or more seeds are in, each estimate's sd across seeds at both
budgets (the spread the protocol's seed counts rest on). The copy's stage times (its `.done/` markers) give its
minutes. Results merge into --out by "<steps>/seed-<k>"; benchmarks/write_report.py shows them.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import yaml


def compare(filed: dict, copy: Path) -> dict:
    """One seed: the filed seed's record against the copy's reports/findings.json and reports/headline.json."""
    got = json.loads((copy / "reports" / "findings.json").read_text())
    head = json.loads((copy / "reports" / "headline.json").read_text())
    steps = yaml.safe_load((copy / "params.yaml").read_text())["train_prm"]["steps"]
    mine = {f["id"]: f for f in got["findings"]}
    prms = {n: {"f1": [filed["headline"]["processbench_f1"].get(n), head["processbench_f1"].get(n)],
                "step_auc": [filed["headline"]["processbench_step_auc"].get(n), head["processbench_step_auc"].get(n)]}
            for n in sorted(head["processbench_step_auc"])}
    findings = {}
    for f in filed["findings"]:
        if (g := mine.get(f["id"])) is None:
            continue
        findings[f["id"]] = {"verdict": [f["verdict"], g["verdict"]],
                             "estimates": {k: [v, g["estimates"].get(k)] for k, v in f["estimates"].items()}}
    stages = {m.name: float(m.read_text()) for m in (copy / ".done").iterdir()}
    return {"steps": steps, "seed": filed["seed"], "filed_machine": filed.get("machine"), "machine": got.get("machines"),
            "prms": prms, "findings": findings, "stages_seconds": stages,
            "stage_minutes": round(sum(stages.values()) / 60, 1),
            "train_prm_minutes": round(sum(v for k, v in stages.items() if k.startswith("train_prm@")) / 60, 1)}


def summary(runs: list[dict]) -> dict:
    """Over seeds at one budget: each PRM's mean step AUC and F1 change (fewer - filed), each estimate's mean change
    and, with two or more seeds, its sd across seeds at both budgets; the verdicts that changed."""
    out: dict = {"seeds": sorted(r["seed"] for r in runs), "prms": {}, "estimates": {}, "verdicts_changed": []}
    for n in sorted({n for r in runs for n in r["prms"]}):
        d_auc = [r["prms"][n]["step_auc"][1] - r["prms"][n]["step_auc"][0] for r in runs
                 if n in r["prms"] and None not in r["prms"][n]["step_auc"]]
        d_f1 = [r["prms"][n]["f1"][1] - r["prms"][n]["f1"][0] for r in runs if n in r["prms"] and None not in r["prms"][n]["f1"]]
        out["prms"][n] = {"step_auc_change": statistics.mean(d_auc) if d_auc else None,
                          "f1_change": statistics.mean(d_f1) if d_f1 else None}
    for fid in sorted({f for r in runs for f in r["findings"]}):
        for k in sorted({k for r in runs for k in r["findings"].get(fid, {}).get("estimates", {})}):
            pairs = [r["findings"][fid]["estimates"][k] for r in runs if k in r["findings"].get(fid, {}).get("estimates", {})]
            pairs = [(a[0], b[0]) for a, b in pairs if a and b]
            e = {"change": statistics.mean(b - a for a, b in pairs), "seeds": len(pairs)}
            if len(pairs) >= 2:
                e["sd_filed"], e["sd_fewer"] = statistics.stdev(a for a, _ in pairs), statistics.stdev(b for _, b in pairs)
            out["estimates"][k] = e
    out["verdicts_changed"] = [f"seed {r['seed']}: {fid} {v[0]} -> {v[1]}" for r in runs
                               for fid, f in r["findings"].items() if (v := f["verdict"])[0] != v[1]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", required=True, help="the pinned study whose filed seeds are the reference")
    ap.add_argument("--copies", nargs="+", required=True, help="seeds_plain copies of its seeds at fewer steps")
    ap.add_argument("--out", default="reports/benchmarks/fewer_steps.json")
    a = ap.parse_args()
    from prmlab.core.io import write_json

    results = json.loads(Path(a.out).read_text()) if Path(a.out).exists() else {}
    runs = results.setdefault("runs", {})
    for c in map(Path, a.copies):
        k = int(c.name.removeprefix("seed-"))
        filed = json.loads((Path("reports/seeds") / a.study / f"seed-{k}.json").read_text())
        r = compare(filed, c)
        runs[f"{r['steps']}/seed-{k}"] = r
        print(f"[bench_fewer_steps] seed {k} at {r['steps']} steps: stages {r['stage_minutes']} min (PRMs "
              f"{r['train_prm_minutes']}); step AUC " + ", ".join(f"{n} {p['step_auc'][0]:.3f}->{p['step_auc'][1]:.3f}"
                                                                  for n, p in r["prms"].items()), flush=True)
    results["study"] = a.study
    results["summary"] = {str(s): summary([r for r in runs.values() if r["steps"] == s])
                          for s in sorted({r["steps"] for r in runs.values()})}
    write_json(a.out, results)
    print(json.dumps(results["summary"], indent=1))


if __name__ == "__main__":
    main()
