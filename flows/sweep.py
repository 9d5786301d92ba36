"""A params sweep over seeds, as DVC experiments, and its page.

    python -m flows.sweep label_mc.temperature 0.7 1.0 1.3 --seeds 3          # make mc-dose: MC's dose-response
    python -m flows.sweep label_mc.temperature 0.7 1.0 1.3 --seeds 3 --jobs 3 # three experiments at once
    python -m flows.sweep label_mc.temperature 0.7 1.0 1.3 --seeds 3 --aggregate-only

Each point (value v, seed k) is one DVC experiment, `sweep-<key>-<v>-s<k>`: the committed params with `key`
set to v and every seed shifted by k as the confirmation seeds shift them (`-S ...`); DVC reruns only the stages
that read what changed, each experiment in its own temporary copy of the repo. The study's own point (its value,
seed 0) is HEAD's committed study: read, not run. Each point's measures go to reports/sweeps/<key>/<v>-seed-<k>.json
with the commit and study it ran from, and the page, reports/sweeps/<key>.md and .json, gives each value's mean
over seeds with its interval (the files: prmlab.runs.store; the page: prmlab.report.sweep). A point of another study
(its code, params or models differ from HEAD's) is left out and named.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import yaml
from prefect import flow, get_run_logger, task

from prmlab.runs import store  # the study store: ids, the pin, seed and sweep files
from prmlab.runs.processes import venv_env, venv_tool


def run_queue(points: dict[str, list[str]], project_dir: str, jobs: int) -> None:
    """The DVC experiments `points` ({name: its `-S` arguments}) queued (an older one of a name is replaced, never
    mixed into this page), then the queue run, `jobs` at a time; a failed one raises with its log."""
    log = get_run_logger()

    def dvc(*args: str) -> subprocess.CompletedProcess:  # the venv first on PATH: stage commands run `python`
        return subprocess.run([venv_tool("dvc"), *args], cwd=project_dir, capture_output=True, text=True,
                              env=venv_env(Path(project_dir) / "params.yaml"))

    if old := [name for name in points if name in store.experiments(project_dir)]:
        dvc("exp", "remove", *old).check_returncode()
    for name, overrides in points.items():
        dvc("exp", "run", "--queue", "-n", name, *overrides).check_returncode()
    proc = dvc("exp", "run", "--run-all", "--jobs", str(jobs))
    for line in (proc.stdout + proc.stderr).splitlines()[-20:]:
        log.info(line)
    if failed := [name for name in points if name not in store.experiments(project_dir)]:
        logs = "\n".join(dvc("queue", "logs", name).stdout[-3000:] for name in failed)
        dvc("queue", "remove", *failed)
        raise RuntimeError(f"dvc exp run {', '.join(failed)} failed (exit {proc.returncode}):\n{logs or proc.stderr[-3000:]}")


@task(task_run_name="dvc exp run --run-all: {key} sweep, {n} experiments")
def run_points(key: str, n: int, points: dict[str, list[str]], project_dir: str, jobs: int) -> None:
    """The sweep's experiments (`points`: {name: -S arguments}), `jobs` at a time (`run_queue`)."""
    run_queue(points, project_dir, jobs)


@flow(name="prmlab-sweep", log_prints=True)
def sweep(key: str, values: list, project_dir: str = ".", seeds: int = 1, jobs: int = 1,
          aggregate_only: bool = False) -> dict:
    # The committed params, not the workspace's (an applied experiment leaves its values there)
    params = yaml.safe_load(store.git(project_dir, "show", "HEAD:params.yaml"))
    default = store.lookup(params, key)
    pts = {(v, k) for v in values for k in range(seeds)}
    runs = {store.point_name(key, v, k): [*store.seed_overrides(params, k), "-S", f"{key}={v}"]
            for v, k in sorted(pts) if (v, k) != (default, 0)}
    if not aggregate_only:
        if (default, 0) in pts and (why := store.stale_lock(project_dir)):
            raise RuntimeError(f"the point ({key}={default}, seed 0) is HEAD's committed study, but {why}: "
                               "run the study (dvc repro) and commit it first")
        if runs:
            run_points(key, len(runs), runs, project_dir, jobs)
        found = store.experiments(project_dir)
        for v, k in sorted(pts):
            store.save_point(project_dir, key, v, k, None if (v, k) == (default, 0) else found[store.point_name(key, v, k)])
    record, other = store.write_sweep_page(project_dir, key, default)
    return record | {"left_out": other}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("key", help="a params key, e.g. label_mc.temperature")
    ap.add_argument("values", nargs="+", help="its values (YAML scalars)")
    ap.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1 at every value (flows/seeds.py's shift)")
    ap.add_argument("--jobs", type=int, default=1, help="experiments at once (each takes every core it sees)")
    ap.add_argument("--aggregate-only", action="store_true", help="rewrite the page from the points' files")
    ap.add_argument("--project-dir", default=".")
    a = ap.parse_args()
    if a.seeds < 1:
        ap.error("--seeds must be >= 1")
    values = [yaml.safe_load(v) for v in a.values]
    try:
        store.lookup(yaml.safe_load(store.git(a.project_dir, "show", "HEAD:params.yaml")), a.key)
        for v in values:
            store.point_file(a.project_dir, a.key, v, 0)
        record = sweep(a.key, values, project_dir=a.project_dir, seeds=a.seeds, jobs=a.jobs, aggregate_only=a.aggregate_only)
    except (RuntimeError, ValueError) as e:
        ap.exit(2, f"error: {e}\n")
    print(f"reports/sweeps/{a.key}.md: {len(record['values'])} values"
          + (f"; left out (another study): {', '.join(record['left_out'])}" if record["left_out"] else ""))


if __name__ == "__main__":
    main()
