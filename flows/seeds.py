"""The study over several seeds, as DVC experiments, and the aggregate with intervals.

    python -m flows.seeds --seeds 6          # make study-seeds: seeds 0..5
    python -m flows.seeds --seeds 6 --jobs 3 # three seeds' experiments at once (a machine with the cores)
    python -m flows.seeds --seeds 6 --aggregate-only   # just re-read the seeds' files and rewrite the aggregate
    python -m flows.seeds --seeds 6 --aggregate-only --study 037c879d3b67   # an older study's filed seeds, likewise
    python -m flows.seeds --seeds 6 --only 1           # one seed now (a CPU study is ~2 h), aggregate once all exist
    python -m flows.seeds --seeds 6 --record 1 --findings F --commit REV   # seed 1 run without DVC (scripts/seeds_plain.py)

Seed k shifts every seed in params by k (the world's `toy.seed`, sampling, MC, judge, PRM training,
the toy ProcessBench; prmlab.params.SEED_KEYS), so seed 0 is the committed study itself (its
reports/findings.json, nothing runs) and each other seed draws new problems, new samples and new training. The
toy models (bootstrap@toy, committed; `toy_models.seed`) are the same in every seed, as a real study's policy
and judge are: the interval covers what the study itself draws. Each other seed is one DVC experiment
(`dvc exp run --queue -n seed-<k> -S ...`), and one Prefect task runs the queue (`dvc exp run --run-all
--jobs N`): each experiment in its own temporary copy of the repo, so N seeds run at once (`--jobs`, default
1: one study takes every core of a 2-core machine) and the workspace is left as it was.
Each seed's findings are kept in reports/seeds/seed-<k>.json (committed: a seed run in one session
counts in the next, whatever happened to the experiment's git ref) with the study they belong to
(`study_id`: the code, graph, params and toy models of the commit they ran from), so a seed of an older
study is never mixed into this one's aggregate. Where DVC is not (a lent GPU machine), scripts/seeds_plain.py
runs seeds without it and `--record` files each one's findings. `prmlab.findings.aggregate_seeds` combines the seeds of the committed study:
mean, 95% t-interval across seeds, the mean within-seed bootstrap interval, and a verdict decided
by the across-seed interval; while some are missing, reports/seeds.md says which, and what to run.
Outputs: reports/seeds/seed-<k>.json, reports/seeds.md, reports/seeds.json (the commit whose study
they cover, wall time included).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from prefect import flow, get_run_logger, task

from flows import venv_env, venv_tool
from prmlab import plots
from prmlab.io import atomic_write_text, write_json
from prmlab.params import shift_seeds
from prmlab.report.seeds import FOREST_JSON, FOREST_PNG, aggregate_page, forest_rows, pending_page


def git(project_dir: str | Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=project_dir, capture_output=True, text=True, check=True).stdout


def seed_overrides(params: dict, k: int) -> list[str]:
    """`-S key=value` arguments for seed k: every seed key this profile has, shifted by k."""
    return [arg for key, v in shift_seeds(params, k).items() for arg in ("-S", f"{key}={v}")]


def run_queue(points: dict[str, list[str]], project_dir: str, jobs: int) -> None:
    """The DVC experiments `points` ({name: its `-S` arguments}) queued (an older one of a name is replaced, never
    mixed into this aggregate), then the queue run, `jobs` at a time; a failed one raises with its log. The seeds'
    task and flows.sweep's run through it."""
    log = get_run_logger()

    def dvc(*args: str) -> subprocess.CompletedProcess:  # the venv first on PATH: stage commands run `python`
        return subprocess.run([venv_tool("dvc"), *args], cwd=project_dir, capture_output=True, text=True,
                              env=venv_env(Path(project_dir) / "params.yaml"))

    if old := [name for name in points if name in experiments(project_dir)]:
        dvc("exp", "remove", *old).check_returncode()
    for name, overrides in points.items():
        dvc("exp", "run", "--queue", "-n", name, *overrides).check_returncode()
    proc = dvc("exp", "run", "--run-all", "--jobs", str(jobs))
    for line in (proc.stdout + proc.stderr).splitlines()[-20:]:
        log.info(line)
    if failed := [name for name in points if name not in experiments(project_dir)]:
        logs = "\n".join(dvc("queue", "logs", name).stdout[-3000:] for name in failed)
        dvc("queue", "remove", *failed)
        raise RuntimeError(f"dvc exp run {', '.join(failed)} failed (exit {proc.returncode}):\n{logs or proc.stderr[-3000:]}")


@task(task_run_name="dvc exp run --run-all: seeds {ks}")
def run_seeds(ks: list[int], project_dir: str, params: dict, jobs: int) -> None:
    """Seeds `ks` as DVC experiments `seed-<k>`, `jobs` at a time."""
    run_queue({f"seed-{k}": seed_overrides(params, k) for k in ks}, project_dir, jobs)


def experiments(project_dir: str) -> dict[str, str]:
    """DVC experiment name -> its commit (DVC keeps each experiment as a git ref, refs/exps/.../<name>)."""
    refs = subprocess.run(["git", "for-each-ref", "refs/exps", "--format=%(refname) %(objectname)"], cwd=project_dir,
                          capture_output=True, text=True, check=True).stdout.split("\n")
    return {ref.rsplit("/", 1)[-1]: obj for ref, obj in (line.split() for line in refs if line.strip())}


SEED_DIR = Path("reports") / "seeds"


# What decides a study's results, given its seeds: the code, the graph, every knob and the committed toy models.
STUDY_INPUTS = ("src", "stages", "dvc.yaml", "params.yaml", "models", "data/models")


def study_id(project_dir: str, rev: str = "HEAD") -> str:
    """The study a commit holds: a hash of git's object ids for STUDY_INPUTS at that commit. Commits that change
    only docs, reports, seed files or dvc.lock keep it: a regeneration of the same code and params (on another
    machine its PRMs differ in float summation order) is the same study drawn again, and a seed run from the
    commit before it, or outside DVC (scripts/seeds_plain.py), counts for it. A code, params or model change
    makes a new study, whose seeds start over."""
    import hashlib

    return hashlib.md5(git(project_dir, "ls-tree", rev, "--", *STUDY_INPUTS).encode()).hexdigest()[:12]


def save_seed(project_dir: str, k: int) -> Path:
    """Seed k's findings into reports/seeds/seed-<k>.json with the commit it ran from and that commit's study:
    seed 0 is the committed study (HEAD's reports/findings.json), seed k > 0 its experiment's."""
    if k == 0:
        rev = base = git(project_dir, "rev-parse", "--short", "HEAD").strip()
        if why := stale_lock(project_dir):  # HEAD's findings would be filed under a study that did not make them
            raise RuntimeError(f"seed 0 is HEAD's committed study, but {why}: run the study (dvc repro) and commit it first")
    else:
        sha = experiments(project_dir).get(f"seed-{k}")
        if sha is None:
            raise RuntimeError(f"no DVC experiment named seed-{k} (see `dvc exp show`)")
        rev, base = sha, git(project_dir, "rev-parse", "--short", f"{sha}^").strip()  # the commit it ran from
    def show(path: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=project_dir, capture_output=True, text=True)

    if (text := show("reports/findings.json")).returncode != 0:
        raise RuntimeError(f"seed {k} ({rev}) has no reports/findings.json: {text.stderr.strip()}")
    head = show("reports/headline.json")
    return write_seed(project_dir, k, base, json.loads(text.stdout), "the committed study" if k == 0 else f"dvc exp run -n seed-{k}",
                      json.loads(head.stdout) if head.returncode == 0 else None)


def stale_lock(project_dir: str) -> str | None:
    """Why HEAD's committed findings are not HEAD's study, or None: the study's files (STUDY_INPUTS, dvc.lock)
    differ from HEAD's in the workspace, or `dvc status` finds a stage whose code, params or committed data
    changed since dvc.lock recorded it (a dependency DVC has not fetched, "deleted", is no change of the study, nor is
    reports/seeds.json, the seeds' aggregate that this flow writes and the report shows)."""
    if git(project_dir, "status", "--porcelain", "--untracked-files=no", "--", *STUDY_INPUTS, "dvc.lock").strip():
        return "the study's files in the workspace differ from HEAD's"
    status = subprocess.run([venv_tool("dvc"), "status", "--json"], cwd=project_dir, capture_output=True, text=True, check=True)
    for stage, changes in json.loads(status.stdout).items():
        for dep, how in next((c["changed deps"] for c in changes if isinstance(c, dict) and "changed deps" in c), {}).items():
            if how != "deleted" and dep != "reports/seeds.json":  # the seeds' own aggregate: what the report shows
                return f"stage {stage} ran on another {dep} than the one committed ({how})"
    return None


def write_seed(project_dir: str, k: int, commit: str, findings: dict, ran: str, headline: dict | None = None) -> Path:
    """reports/seeds/seed-<k>.json: a seed's findings (a report's reports/findings.json), the commit it ran
    from and that commit's study, how it ran, its exact-label PRMs against issue #26's targets, its
    headline (reports/headline.json: each PRM's own figures; None where the run's was not kept), and the
    machine and torch build its models computed on, as its own report recorded them (findings.json's `device`:
    the run's, never this process's, which may only be filing a seed run elsewhere; None where that report
    predates issue #54, and reports/seeds.md reads it as "not recorded")."""
    from prmlab.io import write_json

    out = Path(project_dir) / SEED_DIR / f"seed-{k}.json"
    dev = findings.get("device") or {}
    write_json(out, {"seed": k, "commit": commit, "study": study_id(project_dir, commit), "ran": ran,
                     "findings": findings["findings"], "targets_26": findings.get("targets_26", {}), "headline": headline,
                     "machines": findings.get("machines", []), "machine": dev.get("machine"), "torch": dev.get("torch")})
    return out


def collect(project_dir: str, seeds: int, study: str | None = None) -> tuple[dict[str, dict], dict[str, str]]:
    """The committed study's seeds from reports/seeds/ (or those filed under `study`, an older study's id): {seed-k:
    its file (`write_seed`)}, and {seed-k: why it does not count} for each missing seed or one of another study."""
    wanted = study or study_id(project_dir)
    recs, missing = {}, {}
    for k in range(seeds):
        name, f = f"seed-{k}", Path(project_dir) / SEED_DIR / f"seed-{k}.json"
        if not f.exists():
            missing[name] = "not run"
            continue
        rec = json.loads(f.read_text())
        if rec["study"] != wanted:
            missing[name] = (f"ran from {rec['commit']}, another study (its code, params or models differ from HEAD's)"
                             if study is None else f"ran from {rec['commit']}, study {rec['study']}, not {study}")
            continue
        recs[name] = rec
    return recs, missing


def write_pending(project_dir: str, seeds: int, recs: dict[str, dict], missing: dict[str, str]) -> None:
    root, head = Path(project_dir), git(project_dir, "rev-parse", "--short", "HEAD").strip()
    record, md = pending_page(seeds, recs, missing, head)
    write_json(root / "reports" / "seeds.json", record)
    atomic_write_text(root / "reports" / "seeds.md", md)


def write_aggregate(project_dir: str, recs: dict[str, dict], seconds: float | None) -> list[dict]:
    agg, record, md = aggregate_page(recs, seconds)
    # the across-seed forest plot the page shows, and its rows for `dvc plots show` (dvc.yaml's plots)
    reports = Path(project_dir) / "reports"
    fig = plots.findings_intervals(agg)
    fig.savefig(reports / FOREST_PNG, dpi=110)
    plots.plt.close(fig)
    write_json(reports / FOREST_JSON, forest_rows(agg))
    write_json(Path(project_dir) / "reports" / "seeds.json", record)
    atomic_write_text(Path(project_dir) / "reports" / "seeds.md", md)
    return agg


@flow(name="prmlab-seeds", log_prints=True)
def seeds_study(project_dir: str = ".", seeds: int = 6, aggregate_only: bool = False,
                only: list[int] | None = None, jobs: int = 1, study: str | None = None) -> list[dict]:
    """Run seeds 0..seeds-1 of HEAD's study (or `only` some), then aggregate them; `study`: aggregate, without running
    anything, the seeds filed under that older study's id (its files stay in reports/seeds/ when HEAD's study moves
    on, and a change to the pages, e.g. issue #54's sensitivity block, is regenerated from them)."""
    import yaml

    if seeds < 2:
        raise ValueError("--seeds must be >= 2: an interval across seeds needs two")
    if study is not None:
        recs, missing = collect(project_dir, seeds, study)
        if missing:  # nothing can run for an older study: say which files are not its, write nothing
            raise RuntimeError(f"study {study} lacks " + "; ".join(f"{k} ({why})" for k, why in sorted(missing.items())))
        return write_aggregate(project_dir, recs, None)
    # The committed params, not the workspace's: an experiment run or applied there (`dvc exp run`, `dvc exp apply`)
    # leaves its seed's values, and seeds shifted from those would repeat that seed under another name.
    params = yaml.safe_load(git(project_dir, "show", "HEAD:params.yaml"))
    t0 = time.monotonic()
    ks = only if only is not None else [] if aggregate_only else list(range(seeds))
    if [k for k in ks if k > 0]:  # seed 0 is the committed study: its findings are read, nothing runs
        run_seeds([k for k in ks if k > 0], project_dir, params, jobs)
    for k in ks:
        save_seed(project_dir, k)
    seconds = None if aggregate_only or only is not None else time.monotonic() - t0
    recs, missing = collect(project_dir, seeds)
    if missing:
        write_pending(project_dir, seeds, recs, missing)
        print(f"seeds {', '.join(sorted(recs)) or 'none'} of this study have run; the aggregate waits for "
              + "; ".join(f"{k} ({why})" for k, why in sorted(missing.items())) + f" (python -m flows.seeds --seeds {seeds} --only K)")
        return []
    return write_aggregate(project_dir, recs, seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project-dir", default=".")
    ap.add_argument("--seeds", type=int, default=6, help="seeds 0..N-1 (make study-seeds' SEEDS)")
    ap.add_argument("--aggregate-only", action="store_true")
    ap.add_argument("--only", type=int, nargs="+", help="run just these seeds; aggregate when seeds 0..N-1 all exist")
    ap.add_argument("--jobs", type=int, default=1, help="seeds' experiments at once (each takes every core it sees)")
    ap.add_argument("--record", type=int, metavar="K", help="record seed K run elsewhere (scripts/seeds_plain.py), then aggregate")
    ap.add_argument("--findings", help="with --record: that run's reports/findings.json")
    ap.add_argument("--commit", help="with --record: the commit it ran from (it must hold HEAD's study)")
    ap.add_argument("--ran-on", default="another machine", help="with --record: where and how it ran, kept in the seed's file")
    ap.add_argument("--headline", help="with --record: that run's reports/headline.json (default: beside --findings, if there)")
    ap.add_argument("--study", metavar="ID", help="with --aggregate-only: aggregate the seed files of this study id (an "
                    "older study's, e.g. the exploratory six-seed study 037c879d3b67) instead of HEAD's")
    a = ap.parse_args()
    if a.study is not None and not (a.aggregate_only and a.record is None and a.only is None):
        ap.error("--study ID only aggregates filed seeds: use it with --aggregate-only (no --only, no --record)")
    if a.study is not None and (missing := collect(a.project_dir, a.seeds, a.study)[1]):  # before Prefect starts
        ap.exit(2, f"error: study {a.study} lacks " + "; ".join(f"{k} ({why})" for k, why in sorted(missing.items())) + "\n")
    if a.record is not None:
        if not (a.findings and a.commit) or not 1 <= a.record < a.seeds:
            ap.error(f"--record K (1 <= K < --seeds {a.seeds}) needs --findings and --commit")
        try:
            commit = git(a.project_dir, "rev-parse", "--short", f"{a.commit}^{{commit}}").strip()
        except subprocess.CalledProcessError:
            ap.error(f"--commit {a.commit}: no such commit")
        if study_id(a.project_dir, commit) != study_id(a.project_dir):
            ap.error(f"--commit {commit} holds another study than HEAD (src, stages, dvc.yaml, params.yaml or models differ)")
        headline = Path(a.headline or Path(a.findings).with_name("headline.json"))
        if a.headline and not headline.exists():
            ap.error(f"--headline {headline}: no such file")
        out = write_seed(a.project_dir, a.record, commit, json.loads(Path(a.findings).read_text()),
                         f"scripts.seeds_plain on {a.ran_on}", json.loads(headline.read_text()) if headline.exists() else None)
        print(f"recorded seed {a.record} from {a.findings} -> {out}")
    try:
        agg = seeds_study(project_dir=a.project_dir, seeds=a.seeds, aggregate_only=a.aggregate_only or a.record is not None,
                          only=a.only, jobs=a.jobs, study=a.study)
    except RuntimeError as e:
        ap.exit(2, f"error: {e}\n")
    for f in agg:
        print(f"{f['verdict']:>15}  {f['claim']}")


if __name__ == "__main__":
    main()
