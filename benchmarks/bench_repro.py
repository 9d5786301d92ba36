"""Benchmark: the whole toy `dvc repro` from a clean clone, per stage, then a no-op repro.

    python -m benchmarks.bench_repro --out reports/benchmarks/repro.json

Clones HEAD into a temp folder and runs `dvc repro -s <stage>` for each stage in graph order. For
each it records the wall time and the peak memory of the whole process tree (dvc, the stage's
Python process and anything it spawns, such as vLLM's engine core), summed over processes and
sampled every 0.2 s, because one process's max RSS would miss a multi-process stage. Then it
times `dvc repro` with nothing changed (median of --noop-repeats). Targets: the whole study
< 15 min and < 8 GiB on 2 cores; no-op < 10 s. One full repro takes about 15 minutes here, so it
is run once (--repeats to take a median over several).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from benchmarks import positive_int


def run_tree(cmd: list[str], cwd: Path, env: dict) -> tuple[int, float, float, str]:
    """Run cmd; return (exit code, wall seconds, peak summed RSS of its process tree in GiB, output tail)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Read output on a thread so a chatty stage never blocks on a full pipe while we sample.
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(p.stdout), daemon=True)
    reader.start()
    root, peak = psutil.Process(p.pid), 0
    while p.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        rss = 0
        for q in procs:
            try:
                rss += q.memory_info().rss
            except psutil.Error:
                pass  # exited between listing and reading
        peak = max(peak, rss)
        time.sleep(0.2)
    rc = p.wait()
    reader.join()
    return rc, time.perf_counter() - t, peak / 2**30, "".join(lines[-40:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="reports/benchmarks/repro.json")
    ap.add_argument("--repo", default=".")
    ap.add_argument("--repeats", type=positive_int, default=1, help="full clean-clone repros to take the median of")
    ap.add_argument("--noop-repeats", type=positive_int, default=3)
    ap.add_argument("--keep", help="copy the last clone here afterwards (its outputs, dvc.lock and MLflow store)")
    ap.add_argument("--in-place", action="store_true",
                    help="run in --repo itself, not a clone: regenerate the study and time it in one go (a stage "
                         "already up to date, e.g. the committed bootstrap@toy, then counts its skip time)")
    a = ap.parse_args()
    repo = Path(a.repo).resolve()
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    for k in ("MLFLOW_TRACKING_URI", "PRMLAB_PARENT_RUN_ID"):
        env.pop(k, None)
    runs, noop = [], []
    for rep in range(a.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            clone = repo if a.in_place else Path(tmp) / "clone"
            if not a.in_place:
                subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
            # The venv's editable install points at the checkout it was made from; the clone's own code
            # must be what runs (a clone of another commit, or --repo elsewhere), so it goes first.
            env["PYTHONPATH"] = os.pathsep.join([str(clone / "src"), str(clone)])
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True).stdout.strip()
            stages = [s for s in subprocess.run(["dvc", "stage", "list", "--name-only"], cwd=clone, env=env,
                                                capture_output=True, text=True, check=True).stdout.split() if s]
            per = {}
            for s in stages:
                rc, secs, gib, tail = run_tree(["dvc", "repro", "-s", s], clone, env)
                if rc != 0:
                    raise SystemExit(f"stage {s} failed (exit {rc}):\n{tail}")
                per[s] = {"seconds": secs, "peak_gib": gib}
                print(f"[{rep + 1}/{a.repeats}] {s:24s} {secs:7.1f} s  {gib:5.2f} GiB", flush=True)
            runs.append(per)
            if rep == a.repeats - 1:
                for _ in range(a.noop_repeats):
                    rc, secs, _, tail = run_tree(["dvc", "repro"], clone, env)
                    if rc != 0 or "Running stage" in tail:
                        raise SystemExit(f"no-op repro ran something or failed:\n{tail}")
                    noop.append(secs)
                hl = clone / "reports" / "headline.json"  # what this run produced, beside what it cost
                headline = json.loads(hl.read_text()) if hl.exists() else None
                if a.keep and not a.in_place:
                    shutil.copytree(clone, a.keep, symlinks=True, dirs_exist_ok=True)
    stages = {s: {"seconds": statistics.median(r[s]["seconds"] for r in runs),
                  "peak_gib": max(r[s]["peak_gib"] for r in runs)} for s in runs[0]}
    totals = [sum(v["seconds"] for v in r.values()) for r in runs]
    res = {"commit": commit, "in_place": a.in_place, "repeats": a.repeats, "stages": stages, "total_seconds": statistics.median(totals),
           "total_seconds_all": totals, "peak_gib": max(v["peak_gib"] for v in stages.values()),
           "noop_repro_seconds_median": statistics.median(noop), "noop_repro_seconds_all": noop, "cpus": os.cpu_count(),
           "headline": headline}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    print(f"total {res['total_seconds']:.0f} s (target < 1200 without bootstrap@toy), peak {res['peak_gib']:.2f} GiB (target < 8), "
          f"no-op repro {res['noop_repro_seconds_median']:.1f} s (target < 10)")


if __name__ == "__main__":
    main()
