"""Confirmation seeds of the pinned toy study on a machine without DVC (a lent GPU machine), stages in parallel: a
plain runner, not the way to run seeds where DVC is (flows.seeds runs each in a clone of the pinned commit).

    git worktree add /tmp/pinned $(python -c "import json; print(json.load(open('reports/study.json'))['commit'])")
    cd /tmp/pinned && python -m scripts.seeds_plain --export-graph graph.json   # with DVC: the pinned study's graph
    python3 -m scripts.seeds_plain --graph graph.json --seeds 1 2 --root /tmp/seeds --jobs 14  # there: no DVC needed
    python -m flows.seeds --seeds 6 --record 1 --findings /tmp/seeds/seed-1/reports/findings.json --commit REV --ran-on "..."

It runs dvc.yaml's stage commands (exported by --export-graph, from a checkout of the pinned commit) in a copy of the
project per seed, with the protocol's seed params (prmlab.analysis.protocol.seed_params: every seed key of the graph's
committed params.yaml shifted by k, no ceiling or human-label arms, only the deciding PRMs, as flows.seeds runs a
seed) and only the stages `dvc repro` would run with them (prmlab.analysis.protocol.runs_in), each stage once the stages that
make its inputs are done, several at a time (seeds 1 and 2 of an earlier, larger study together took 15 min on one
H100, and seeds 3-5 together 20 min at --jobs 16 --threads 1). A stage whose marker (`.done/<stage>`) exists is
skipped, so a killed run resumes; a seed stops at its first failed stage. Each stage logs to its own MLflow store
(`mlruns/<stage>.db`: one SQLite file written by several processes at once locks) and to `logs/<stage>.log`; each
stage process sees `--threads` cores (torch takes every core it sees, and a dozen processes each taking all 16
collapse: see the brief's one-thread-per-job note), through a sitecustomize.py under --root. The committed toy models
(bootstrap@toy, train_judge@toy) are the same in every seed and never rerun. Record a finished seed's
reports/findings.json with `flows.seeds --record` (it checks that the commit holds the pinned study). It lives outside
src/ on purpose: a change to the runner is not a change of the study (prmlab.runs.store.study_id hashes src/).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # this checkout's prmlab: none is installed there
from prmlab.analysis import protocol  # noqa: E402
from prmlab.core.credentials import stage_env  # noqa: E402
from prmlab.core.io import inside  # noqa: E402
from prmlab.core.params import COMMITTED  # noqa: E402
from prmlab.core.provenance import git  # noqa: E402

MARK = ".seeds-plain"  # in every seed's copy, first: the only folders under --root this runner removes
COMMITTED_STAGES = {f"{s}@toy" for s in COMMITTED}  # the toy models, in git: the same in every seed
PROJECT = ("src", "stages", "models", "data", "metrics", "reports", "configs", "params.yaml", "dvc.yaml")


def export_graph(project: Path, path: Path) -> None:
    """HEAD's commit and params.yaml (the committed one: an experiment run or applied in the workspace leaves its
    seed's values there), and dvc.yaml's stages (name, cmd, deps, outs) in an order that runs each after its inputs'."""
    import networkx as nx
    from dvc.repo import Repo

    stages = reversed(list(nx.topological_sort(Repo(str(project)).index.graph)))
    path.write_text(json.dumps({
        "commit": git(project, "rev-parse", "--short", "HEAD").strip(), "params": git(project, "show", "HEAD:params.yaml"),
        "stages": [{"name": s.addressing, "cmd": s.cmd, "deps": [str(d.def_path) for d in s.deps],
                    "outs": [str(o.def_path) for o in s.outs]} for s in stages if s.cmd]}, indent=1))


def makes(out: str, dep: str) -> bool:
    """An out makes a dep: the same path, or one inside the other (`metrics` and `metrics/x.json`)."""
    return out == dep or out.startswith(dep + "/") or dep.startswith(out + "/")


def check_graph(path: Path, graph, root: Path) -> None:
    """Before any work: every stage of the graph file has a plain name (its marker, log and store are files named
    by it) and outs inside a seed's copy of the project (each is removed before its stage runs): an absolute out,
    or one through `..`, would delete a path outside --root. One line naming the file and the out otherwise."""
    stages = graph.get("stages") if isinstance(graph, dict) else None
    if not isinstance(stages, list) or not all(isinstance(st, dict) for st in stages):
        raise SystemExit(f"{path}: not a stage graph (--export-graph writes one): no list of stages")
    for st in stages:
        name, outs = st.get("name"), st.get("outs")
        if not isinstance(name, str) or name in ("", ".", "..") or Path(name).name != name or "\0" in name:
            raise SystemExit(f"{path}: stage name {name!r} is not a plain name (it names files under .done/, logs/ and "
                             "mlruns/ of each seed's copy)")
        if not isinstance(outs, list) or not all(isinstance(o, str) for o in outs):
            raise SystemExit(f"{path}: stage {name}: outs must be a list of paths")
        for out in outs:
            if not inside(root / "seed-1", out):
                raise SystemExit(f"{path}: stage {name}: out {out!r} is not inside a seed's copy of the project (an "
                                 "absolute path, the copy itself, or one through ..): nothing was removed")


def remove(d: Path, paths) -> None:
    for x in paths:
        if not inside(d, x):  # check_graph refused it; here again after symlinks, at the point of deletion
            raise SystemExit(f"{d}: refusing to remove {x!r}: not inside this seed's copy of the project")
        p = d / x
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink(missing_ok=True)


def prepare(project: Path, root: Path, k: int, graph: dict) -> Path:
    """Seed k's copy of the project: its files without any stage's outputs but the committed models' (as a
    fresh clone has them), and the graph's params.yaml with the seeds shifted; `.prepared` (written last)
    names the commit, and a copy of another commit is refused rather than resumed."""
    import yaml

    d = root / f"seed-{k}"
    if (d / ".prepared").exists():
        if (made := (d / ".prepared").read_text().strip()) != graph["commit"]:
            raise SystemExit(f"{d} was prepared from commit {made}, the graph is {graph['commit']}'s: remove it to start over")
        return d
    if d.exists() and not (d / MARK).exists() and any(d.iterdir()):
        raise SystemExit(f"{d} exists and is no copy this runner made (no {MARK}): refusing to remove it; pick "
                         "another --root or remove it yourself")
    shutil.rmtree(d, ignore_errors=True)  # a copy killed half-made
    d.mkdir(parents=True)
    (d / MARK).write_text("a seed's copy of the project, made by scripts/seeds_plain.py: it removes it at will\n")
    for item in PROJECT:
        if (project / item).is_dir():
            shutil.copytree(project / item, d / item)
        elif (project / item).exists():
            shutil.copy(project / item, d / item)
    remove(d, {o for st in graph["stages"] if st["name"] not in COMMITTED_STAGES for o in st["outs"]})
    params = yaml.safe_load(graph["params"])
    (d / "params.yaml").write_text(yaml.safe_dump(seed_params(params, k), sort_keys=False))
    for sub in (".done", "logs", "mlruns"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / ".prepared").write_text(graph["commit"] + "\n")
    return d


# prmlab.core.stage.set_threads gives torch os.cpu_count() threads; a stage process here sees PRMLAB_CPUS instead
# (from outside the library: a change to src/ would be a change of the study, prmlab.runs.store.study_id).
SITECUSTOMIZE = """import os
if os.environ.get("PRMLAB_CPUS"):
    os.cpu_count = lambda: int(os.environ["PRMLAB_CPUS"])
"""


def seed_params(params: dict, k: int) -> dict:
    """Seed k's params.yaml: the committed one with the protocol's seed settings (prmlab.analysis.protocol.seed_params: every
    seed key shifted by k, no ceiling or human-label arms, only the deciding PRMs), as flows.seeds runs a seed."""
    return protocol.apply(params, protocol.seed_params(params, k))


def run_stage(d: Path, st: dict, threads: int) -> tuple[int, float]:
    """One stage's command in seed copy `d`, its outputs removed first (as DVC does: a killed run's half
    outputs never count; a stage's own shard folders stay, so it resumes)."""
    t0 = time.time()
    remove(d, st["outs"])
    pythonpath = ":".join(x for x in (str(d.parent / "_site"), str(d / "src"), str(d), os.environ.get("PYTHONPATH", "")) if x)
    env = {**stage_env(d / "params.yaml"), "PYTHONPATH": pythonpath, "PRMLAB_CPUS": str(threads), "OMP_NUM_THREADS": str(threads),
           "MLFLOW_TRACKING_URI": f"sqlite:///{d}/mlruns/{st['name'].replace('@', '_')}.db", "PYTHONUNBUFFERED": "1",
           # as `dvc repro` sets them: a foreach stage (train_prm@judge) reads its source from DVC_STAGE
           "DVC_STAGE": st["name"], "DVC_ROOT": str(d)}
    # No shell: a params string in the command (a source name, a path) stays one argument and never runs
    # (issue #52: a source named `judge\`touch PWNED\`` ran its backticks under shell=True)
    argv = shlex.split(st["cmd"])
    argv[0] = sys.executable if argv[0] == "python" else argv[0]  # the machine's interpreter (python3 only there)
    with open(d / "logs" / f"{st['name']}.log", "w") as log:
        rc = subprocess.run(argv, cwd=d, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    if rc == 0:
        (d / ".done" / st["name"]).write_text(f"{time.time() - t0:.1f}\n")
    return rc, time.time() - t0


def run_seeds(project: Path, graph: dict, seeds: list[int], root: Path, jobs: int,
              threads: int) -> list[tuple[int, str]]:
    """Every stage of each seed, at most `jobs` at a time; returns the (seed, stage) pairs that failed or
    could not start."""
    import yaml

    (root / "_site").mkdir(parents=True, exist_ok=True)
    (root / "_site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    todo = {}
    for k in seeds:
        d = prepare(project, root, k, graph)
        params = yaml.safe_load((d / "params.yaml").read_text())
        # the stages `dvc repro` would run with the seed's params: no ceiling, no human-label arms, the deciding PRMs
        todo |= {(k, st["name"]): (d, st) for st in graph["stages"]
                 if st["name"] not in COMMITTED_STAGES and protocol.runs_in(st["name"], params)
                 and not (d / ".done" / st["name"]).exists()}
    t0, running, failed = time.time(), {}, []
    with ThreadPoolExecutor(jobs) as ex:
        while todo or running:
            for key, (d, st) in list(todo.items()):
                waiting = [s for (k, n), (_, s) in [*todo.items(), *running.values()] if k == key[0] and n != key[1]]
                if len(running) < jobs and not any(makes(o, dep) for s in waiting for o in s["outs"] for dep in st["deps"]):
                    running[ex.submit(run_stage, d, st, threads)] = (key, todo.pop(key))
                    print(f"{time.time() - t0:7.0f}s start seed-{key[0]} {key[1]}", flush=True)
            if not running:  # nothing can start: a dependency cycle or a stage that makes its own input
                failed += sorted(todo)
                break
            for f in wait(list(running), return_when=FIRST_COMPLETED)[0]:
                key, _ = running.pop(f)
                rc, sec = f.result()
                print(f"{time.time() - t0:7.0f}s {'done' if rc == 0 else f'FAILED (exit {rc})'} seed-{key[0]} {key[1]} "
                      f"({sec:.0f}s)", flush=True)
                if rc:
                    failed.append(key)
                    todo = {kk: v for kk, v in todo.items() if kk[0] != key[0]}
    return failed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project-dir", default=".")
    ap.add_argument("--export-graph", help="write dvc.yaml's stage graph here (needs DVC) and stop")
    ap.add_argument("--graph", help="the stage graph --export-graph wrote")
    ap.add_argument("--seeds", type=int, nargs="+", default=[])
    ap.add_argument("--root", default=str(Path(tempfile.gettempdir()) / "prmlab-seeds"),
                    help="one copy of the project per seed, under this folder (outside the project: DVC would index it)")
    ap.add_argument("--jobs", type=int, default=8, help="stages at once")
    ap.add_argument("--threads", type=int, default=2, help="cores each stage process sees (torch's threads)")
    a = ap.parse_args()
    project = Path(a.project_dir).resolve()
    if a.export_graph:
        return export_graph(project, Path(a.export_graph))
    if not a.graph or not a.seeds or min(a.seeds) < 1:
        ap.error("--graph and --seeds K... (K >= 1: seed 0 is the committed study) are needed")
    try:
        graph = json.loads(Path(a.graph).read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"{a.graph}: cannot read the stage graph ({getattr(e, 'strerror', None) or e})") from None
    check_graph(Path(a.graph), graph, Path(a.root).resolve())
    failed = run_seeds(project, graph, a.seeds, Path(a.root).resolve(), a.jobs, a.threads)
    print(f"failed: {failed or 'none'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
