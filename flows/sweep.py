"""A params sweep over seeds, as DVC experiments, and its page.

    python -m flows.sweep label_mc.temperature 0.7 1.0 1.3 --seeds 3          # make mc-dose: issue #54's dose-response
    python -m flows.sweep label_mc.temperature 0.7 1.0 1.3 --seeds 3 --jobs 3 # three experiments at once
    python -m flows.sweep label_mc.temperature 0.7 1.0 1.3 --seeds 3 --aggregate-only

Each point (value v, seed k) is one DVC experiment, `sweep-<key>-<v>-s<k>`: the committed params with `key`
set to v and every seed shifted by k as flows/seeds.py shifts them (`-S ...`); DVC reruns only the stages
that read what changed (for `label_mc.temperature`: label_mc and what follows it), each experiment in its own
temporary copy of the repo. The study's own point (its value, seed 0) is HEAD's committed study: read, not
run. Each point's measures (prmlab.report.sweep.point_measures: MC's and the judge's label accuracy, the kept
share, F1 judge - mc_hard) go to reports/sweeps/<key>/<v>-seed-<k>.json with the commit and study it ran from,
and the page, reports/sweeps/<key>.md and .json, gives each value's mean over seeds with its interval
(prmlab.report.sweep.sweep_page). A point of another study (its code, params or models differ from HEAD's)
is left out and named.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import yaml
from prefect import flow, task

from flows.seeds import experiments, git, run_queue, seed_overrides, stale_lock, study_id
from prmlab.io import atomic_write_text, inside, write_json
from prmlab.report.sweep import point_measures, sweep_page

SWEEP_DIR = Path("reports") / "sweeps"


def point_name(key: str, value, k: int) -> str:
    """The experiment's name: a git ref component (DVC keeps it as refs/exps/.../<name>)."""
    return f"sweep-{key.replace('.', '_')}-{value}-s{k}"


def point_file(project_dir: str, key: str, value, k: int) -> Path:
    """reports/sweeps/<key>/<value>-seed-<k>.json, or a ValueError naming the value where that is no file of that
    folder (a value with `/` or `..` would write elsewhere, or where the page never reads it)."""
    folder = Path(project_dir) / SWEEP_DIR / key
    name = f"{value}-seed-{k}.json"
    if Path(name).name != name or not inside(folder, name):
        raise ValueError(f"value {value!r} of {key}: not a plain name (it names the point's file in {SWEEP_DIR / key})")
    return folder / name


def lookup(params: dict, key: str):
    node = params
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"{key}: no such params key (params.yaml)")
        node = node[part]
    return node


@task(task_run_name="dvc exp run --run-all: {key} sweep, {n} experiments")
def run_points(key: str, n: int, points: dict[str, list[str]], project_dir: str, jobs: int) -> None:
    """The sweep's experiments (`points`: {name: -S arguments}), `jobs` at a time (flows.seeds.run_queue)."""
    run_queue(points, project_dir, jobs)


def save_point(project_dir: str, key: str, value, k: int, rev: str | None) -> Path:
    """Point (value, k)'s measures into reports/sweeps/<key>/<value>-seed-<k>.json from `rev` (an experiment's
    commit; None: HEAD's committed study), with the commit it ran from and that commit's study."""
    base = git(project_dir, "rev-parse", "--short", f"{rev}^" if rev else "HEAD").strip()

    def show(path: str) -> dict:
        p = subprocess.run(["git", "show", f"{rev or 'HEAD'}:{path}"], cwd=project_dir, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"sweep point {key}={value}, seed {k} ({rev or 'HEAD'}) has no {path}: {p.stderr.strip()}")
        return json.loads(p.stdout)

    out = point_file(project_dir, key, value, k)
    write_json(out, {"key": key, "value": value, "seed": k, "commit": base, "study": study_id(project_dir, base),
                     "ran": "the committed study" if rev is None else f"dvc exp run -n {point_name(key, value, k)}",
                     "measures": point_measures(show("reports/findings.json"), show("metrics/consensus.json"))})
    return out


def write_page(project_dir: str, key: str, default) -> tuple[dict, list[str]]:
    """The sweep's page from the points of HEAD's study; the files left out (another study's)."""
    study, points, other = study_id(project_dir), [], []
    for f in sorted((Path(project_dir) / SWEEP_DIR / key).glob("*-seed-*.json")):
        rec = json.loads(f.read_text())
        (points if rec["study"] == study else other).append(rec if rec["study"] == study else f.name)
    record, md = sweep_page(key, default, points)
    if other:
        md += f"\nLeft out, of another study (its code, params or models differ from HEAD's): {', '.join(other)}\n"
    write_json(Path(project_dir) / SWEEP_DIR / f"{key}.json", record | {"left_out": other})
    atomic_write_text(Path(project_dir) / SWEEP_DIR / f"{key}.md", md)
    return record, other


@flow(name="prmlab-sweep", log_prints=True)
def sweep(key: str, values: list, project_dir: str = ".", seeds: int = 1, jobs: int = 1,
          aggregate_only: bool = False) -> dict:
    # The committed params, not the workspace's (an applied experiment leaves its values there)
    params = yaml.safe_load(git(project_dir, "show", "HEAD:params.yaml"))
    default = lookup(params, key)
    pts = {(v, k) for v in values for k in range(seeds)}
    runs = {point_name(key, v, k): [*seed_overrides(params, k), "-S", f"{key}={v}"]
            for v, k in sorted(pts) if (v, k) != (default, 0)}
    if not aggregate_only:
        if (default, 0) in pts and (why := stale_lock(project_dir)):
            raise RuntimeError(f"the point ({key}={default}, seed 0) is HEAD's committed study, but {why}: "
                               "run the study (dvc repro) and commit it first")
        if runs:
            run_points(key, len(runs), runs, project_dir, jobs)
        found = experiments(project_dir)
        for v, k in sorted(pts):
            save_point(project_dir, key, v, k, None if (v, k) == (default, 0) else found[point_name(key, v, k)])
    record, other = write_page(project_dir, key, default)
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
        lookup(yaml.safe_load(git(a.project_dir, "show", "HEAD:params.yaml")), a.key)
        for v in values:
            point_file(a.project_dir, a.key, v, 0)
        record = sweep(a.key, values, project_dir=a.project_dir, seeds=a.seeds, jobs=a.jobs, aggregate_only=a.aggregate_only)
    except (RuntimeError, ValueError) as e:
        ap.exit(2, f"error: {e}\n")
    print(f"reports/sweeps/{a.key}.md: {len(record['values'])} values"
          + (f"; left out (another study): {', '.join(record['left_out'])}" if record["left_out"] else ""))


if __name__ == "__main__":
    main()
