"""Benchmark: the whole toy `dvc repro` from a clean clone, per stage, then a no-op repro.

    python -m benchmarks.bench_repro --out reports/benchmarks/repro.json

Clones HEAD into a temp folder and runs `dvc repro -s <stage>` for each stage in graph order, each
under a small wrapper process that reports the stage's wall time and peak RSS (its children's
max RSS, i.e. the stage's Python process). Then times `dvc repro` with nothing changed (median of
3). Targets: whole study < 15 min and < 8 GiB on 2 cores; no-op < 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WRAP = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
        "rc = subprocess.run(sys.argv[1:]).returncode; "
        "print('BENCH', rc, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="reports/benchmarks/repro.json")
    ap.add_argument("--repo", default=".")
    a = ap.parse_args()
    repo = Path(a.repo).resolve()
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("MLFLOW_TRACKING_URI", None)
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
        stages = [line.split()[0] for line in subprocess.run(
            ["dvc", "stage", "list", "--name-only"], cwd=clone, env=env, capture_output=True, text=True, check=True).stdout.split("\n") if line.strip()]
        per = {}
        t_all = time.perf_counter()
        for s in stages:
            p = subprocess.run([sys.executable, "-c", WRAP, "dvc", "repro", "-s", s], cwd=clone, env=env,
                               capture_output=True, text=True)
            line = next(x for x in p.stdout.splitlines() if x.startswith("BENCH"))
            _, rc, secs, rss_kb = line.split()
            if rc != "0":
                raise SystemExit(f"stage {s} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
            per[s] = {"seconds": float(secs), "peak_rss_gib": int(rss_kb) / 2**20}
            print(f"{s:24s} {float(secs):7.1f} s  {int(rss_kb) / 2**20:5.2f} GiB", flush=True)
        total = time.perf_counter() - t_all
        noop = []
        for _ in range(3):
            t = time.perf_counter()
            out = subprocess.run(["dvc", "repro"], cwd=clone, env=env, capture_output=True, text=True, check=True).stdout
            noop.append(time.perf_counter() - t)
            assert "Running stage" not in out, out
    res = {"stages": per, "total_seconds": total, "peak_rss_gib": max(v["peak_rss_gib"] for v in per.values()),
           "noop_repro_seconds_median": statistics.median(noop), "cpus": os.cpu_count()}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    print(f"total {total:.0f} s (target < 900), peak {res['peak_rss_gib']:.2f} GiB (target < 8), "
          f"no-op repro {res['noop_repro_seconds_median']:.1f} s (target < 10)")


if __name__ == "__main__":
    main()
