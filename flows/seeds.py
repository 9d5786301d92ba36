"""The study's confirmation seeds, each run from the pinned study's own commit, and their aggregate.

    python -m flows.seeds --protocol          # write reports/protocol.md (commit it before pinning)
    python -m flows.seeds --pin HEAD          # pin the study: reports/study.json names the commit the seeds run from
    python -m flows.seeds --seeds 6           # make study-seeds: confirmation seeds 1..6, one after another
    python -m flows.seeds --seeds 6 --only 2  # one seed now (a CPU seed takes about an hour), aggregate once all exist
    python -m flows.seeds --seeds 6 --aggregate-only   # just re-read the seeds' files and rewrite the aggregate
    python -m flows.seeds --seeds 6 --aggregate-only --study 037c879d3b67   # an older study's filed seeds
    python -m flows.seeds --seeds 6 --record 1 --findings F --commit REV   # seed 1 run without DVC (scripts/seeds_plain.py)

The rules are reports/protocol.md's (prmlab.protocol, prmlab.findings.FINDINGS): seed 0 is the development seed (the
committed study, on which two knobs were tuned), shown beside the verdicts and never counted; seeds 1..N decide.
Seed k runs in its own clone of the repository at the pinned commit (runs/seeds/<study>/seed-<k>), with every seed
key shifted by k and only what the protocol needs (prmlab.protocol.seed_params: no ceiling, no human-label arms), by
`dvc repro` there: so an edit made at HEAD after the pin neither invalidates a finished seed nor mixes into one, and a
killed seed resumes from its finished stages (DVC's lock in its clone). The toy models are the committed ones.
Each seed's findings are kept in reports/seeds/<study>/seed-<k>.json (committed) with the study they belong to (`study_id`:
the code, graph, params and toy models of the pinned commit), so a seed of an older study is never mixed into this
one's aggregate. Where DVC is not (a lent GPU machine), scripts/seeds_plain.py runs seeds without it and `--record`
files each one's findings. `prmlab.findings.aggregate_seeds` combines them: mean, 95% t-interval across seeds, the
mean within-seed bootstrap interval, and a verdict decided by the across-seed interval; while some are missing,
reports/seeds.md says which, and what to run.
Outputs: reports/seeds/<study>/seed-<k>.json, reports/seeds.md, reports/seeds.json, reports/protocol.md, reports/study.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prefect import flow, get_run_logger, task

from flows import venv_env, venv_tool
from prmlab import plots, protocol
from prmlab.io import DataError, atomic_write_text, inside, read_json, write_json
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


@task(task_run_name="seed {k}: dvc repro in a clone of the pinned study")
def seed_task(project_dir: str, k: int, pin_rec: dict) -> str:
    return str(run_pinned_seed(project_dir, k, pin_rec))


def experiments(project_dir: str) -> dict[str, str]:
    """DVC experiment name -> its commit (DVC keeps each experiment as a git ref, refs/exps/.../<name>)."""
    refs = subprocess.run(["git", "for-each-ref", "refs/exps", "--format=%(refname) %(objectname)"], cwd=project_dir,
                          capture_output=True, text=True, check=True).stdout.split("\n")
    return {ref.rsplit("/", 1)[-1]: obj for ref, obj in (line.split() for line in refs if line.strip())}


SEED_DIR = Path("reports") / "seeds"


def seed_file(project_dir: str | Path, study: str, k: int) -> Path:
    """Seed k's file of `study`: reports/seeds/<study>/seed-<k>.json, so one study's seeds never overwrite
    another's; an older study's filed flat (reports/seeds/seed-<k>.json, the exploratory study's) is read where its
    own folder lacks one."""
    own = Path(project_dir) / SEED_DIR / study / f"seed-{k}.json"
    return own if own.exists() or not (flat := Path(project_dir) / SEED_DIR / f"seed-{k}.json").exists() else flat


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


def pinned(project_dir: str | Path) -> dict | None:
    """reports/study.json: {"commit", "study"} of the pinned study, None before a pin."""
    f = Path(project_dir) / protocol.PIN
    return json.loads(f.read_text()) if f.exists() else None


def this_study(project_dir: str | Path) -> str:
    """The study whose seeds count: the pinned one (reports/study.json), else HEAD's."""
    return p["study"] if (p := pinned(project_dir)) else study_id(project_dir)


def pin(project_dir: str, rev: str) -> dict:
    """Pin the study at commit `rev`: it must hold reports/protocol.md as prmlab.protocol renders it there (the
    protocol precedes every seed that runs from it)."""
    commit = git(project_dir, "rev-parse", "--short", f"{rev}^{{commit}}").strip()
    page = subprocess.run(["git", "show", f"{commit}:{protocol.PAGE}"], cwd=project_dir, capture_output=True, text=True)
    if page.returncode != 0:
        raise RuntimeError(f"commit {commit} has no {protocol.PAGE}: write it (--protocol) and commit it first")
    rec = {"commit": commit, "study": study_id(project_dir, commit)}
    write_json(Path(project_dir) / protocol.PIN, rec)
    return rec


def pin_line(project_dir: str | Path) -> str:
    """The pinned study's commit and whether HEAD still makes the same study (its STUDY_INPUTS unchanged since the
    pin), naming what changed where it does not; "" before a pin."""
    if (p := pinned(project_dir)) is None:
        return ""
    head = git(project_dir, "rev-parse", "--short", "HEAD").strip()
    changed = git(project_dir, "diff", "--name-only", p["commit"], "HEAD", "--", *STUDY_INPUTS).split()
    same = ("HEAD makes the same study" if not changed else
            f"HEAD ({head}) changed {len(changed)} of its files since ({', '.join(changed[:6])}"
            + (", ..." if len(changed) > 6 else "") + "): its seeds still run from the pinned commit")
    return (f"Pinned study {p['study']} at commit {p['commit']} (reports/study.json; its protocol: reports/protocol.md). "
            f"{same}.")


def run_pinned_seed(project_dir: str, k: int, pin_rec: dict) -> Path:
    """Confirmation seed k of the pinned study: `dvc repro` in a clone at the pinned commit with the protocol's seed
    params (prmlab.protocol.seed_params), then its findings filed (`write_seed`). Resumes a killed run."""
    import yaml

    root = Path(project_dir).resolve()
    d = root / "runs" / "seeds" / pin_rec["study"] / f"seed-{k}"
    if not (d / ".git").exists():
        d.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(root), str(d)], check=True)
        subprocess.run(["git", "checkout", "-q", pin_rec["commit"]], cwd=d, check=True)
    params = yaml.safe_load(git(d, "show", f"{pin_rec['commit']}:params.yaml"))
    seed = protocol.apply(params, protocol.seed_params(params, k))
    # The committed files of stages a seed does not run (ceiling@toy's and toy_human@toy's metrics, the other PRMs'):
    # the development seed's, never to be read as this seed's (its report reads the metrics folder).
    lock = yaml.safe_load((d / "dvc.lock").read_text()) if (d / "dvc.lock").exists() else {}
    for name, st in (lock.get("stages") or {}).items():
        if not protocol.runs_in(name, seed):
            for o in st.get("outs", []):
                if inside(d, o["path"]):
                    p = d / o["path"]
                    shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
    (d / "params.yaml").write_text(yaml.safe_dump(seed, sort_keys=False))
    t0 = time.monotonic()
    # The clone's own library first on the path: its stages import the pinned commit's prmlab, not the editable
    # install's (HEAD's), which would mix later edits into the seed.
    env = venv_env(d / "params.yaml")
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(d / "src"), env.get("PYTHONPATH", "")) if x)
    log = d / "repro.log"  # the stages' progress lines as they run (`tail -f` it); a failure's tail is raised
    with open(log, "a") as f:
        rc = subprocess.run([venv_tool("dvc"), "repro"], cwd=d, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
    if rc != 0:
        raise RuntimeError(f"seed {k}: dvc repro in {d} failed (exit {rc}):\n{log.read_text()[-3000:]}")
    minutes = (time.monotonic() - t0) / 60
    head = d / "reports" / "headline.json"
    out = write_seed(project_dir, k, pin_rec["commit"], json.loads((d / "reports" / "findings.json").read_text()),
                     f"dvc repro in a clone of {pin_rec['commit']} ({minutes:.1f} min)",
                     json.loads(head.read_text()) if head.exists() else None)
    record_cost(project_dir, pin_rec["study"], k, minutes, stage_seconds(d / "mlflow.db"), json.loads(out.read_text()))
    return out


def stage_seconds(db: Path) -> dict[str, float]:
    """Each stage's own time in a seed's clone, from its MLflow store's runs (start to end; a stage process's start-up
    and DVC's checks between stages are in the seed's total only)."""
    import sqlite3

    if not db.exists():
        return {}
    with sqlite3.connect(db) as c:
        rows = c.execute("select name, start_time, end_time from runs where end_time is not null").fetchall()
    return {name: (end - start) / 1000 for name, start, end in rows}


COST = Path("reports") / "benchmarks" / "seed_cost.json"


def record_cost(project_dir: str, study: str, k: int, minutes: float, stages: dict[str, float], rec: dict) -> None:
    """reports/benchmarks/seed_cost.json: each confirmation seed's wall minutes on its machine (the protocol's
    per-seed cost), its stages' seconds, and the PRM training share, keyed by study and seed."""
    from prmlab.io import read_json

    path = Path(project_dir) / COST
    got = read_json(path) if path.exists() else {}
    prms = sum(v for n, v in stages.items() if n.startswith("train_prm@"))
    got[f"{study}/seed-{k}"] = {"seed_minutes": round(minutes, 1), "train_prm_minutes": round(prms / 60, 1),
                                "machine": rec.get("machine"), "torch": rec.get("torch"), "cores": os.cpu_count(),
                                "stages_seconds": {n: round(v, 1) for n, v in sorted(stages.items())}}
    write_json(path, got)


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
    """reports/seeds/<study>/seed-<k>.json: a seed's findings (a report's reports/findings.json), the commit it ran
    from and that commit's study, how it ran, its exact-label PRMs against issue #26's targets, its
    headline (reports/headline.json: each PRM's own figures; None where the run's was not kept), and the
    machine and torch build its models computed on, as its own report recorded them (findings.json's `device`:
    the run's, never this process's, which may only be filing a seed run elsewhere; None where that report
    predates issue #54, and reports/seeds.md reads it as "not recorded")."""
    from prmlab.io import write_json

    study = study_id(project_dir, commit)
    out = Path(project_dir) / SEED_DIR / study / f"seed-{k}.json"
    dev = findings.get("device") or {}
    write_json(out, {"seed": k, "commit": commit, "study": study, "ran": ran,
                     "findings": findings["findings"], "targets_26": findings.get("targets_26", {}), "headline": headline,
                     "machines": findings.get("machines", []), "machine": dev.get("machine"), "torch": dev.get("torch")})
    return out


def collect(project_dir: str, seeds: int, study: str | None = None) -> tuple[dict[str, dict], dict[str, str]]:
    """The committed study's seeds from reports/seeds/ (or those filed under `study`, an older study's id): {seed-k:
    its file (`write_seed`)}, and {seed-k: why it does not count} for each missing seed or one of another study."""
    pin_rec = None if study else pinned(project_dir)
    wanted = study or this_study(project_dir)
    recs, missing = {}, {}
    for k in (range(seeds) if study else range(1, seeds + 1)):  # an older study's seeds counted 0; this one's 1..N
        # the pinned study's seeds are in its own folder only; the flat files are an older study's
        name, f = f"seed-{k}", (Path(project_dir) / SEED_DIR / wanted / f"seed-{k}.json" if pin_rec
                                else seed_file(project_dir, wanted, k))
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
    root = Path(project_dir)
    head = p["commit"] if (p := pinned(project_dir)) else git(project_dir, "rev-parse", "--short", "HEAD").strip()
    record, md = pending_page(seeds, recs, missing, head, pin_line(project_dir))
    write_json(root / "reports" / "seeds.json", record)
    atomic_write_text(root / "reports" / "seeds.md", md)


def development_seed(project_dir: str, study: str | None = None) -> dict | None:
    """The development seed's file (seed 0) where it belongs to the study aggregated, else None."""
    wanted = study or this_study(project_dir)
    f = seed_file(project_dir, wanted, protocol.DEVELOPMENT_SEED)
    return rec if f.exists() and (rec := json.loads(f.read_text()))["study"] == wanted else None


def write_aggregate(project_dir: str, recs: dict[str, dict], seconds: float | None, dev: dict | None = None,
                    pinned_study: bool = True) -> list[dict]:
    agg, record, md = aggregate_page(recs, seconds, dev, pin_line(project_dir) if pinned_study else "")
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
    """Run confirmation seeds 1..seeds of the pinned study (or `only` some; 0 files HEAD's committed study as the
    development seed), then aggregate them; `study`: aggregate, without running anything, the seeds filed under that
    older study's id (its files stay in reports/seeds/ when the study moves on)."""
    if seeds < 2:
        raise ValueError("--seeds must be >= 2: an interval across seeds needs two")
    if study is not None:
        recs, missing = collect(project_dir, seeds, study)
        if missing:  # nothing can run for an older study: say which files are not its, write nothing
            raise RuntimeError(f"study {study} lacks " + "; ".join(f"{k} ({why})" for k, why in sorted(missing.items())))
        return write_aggregate(project_dir, recs, None, pinned_study=False)
    t0 = time.monotonic()
    ks = only if only is not None else [] if aggregate_only else list(range(1, seeds + 1))
    pin_rec = pinned(project_dir)
    if ks and pin_rec is None:
        raise RuntimeError(f"no pinned study ({protocol.PIN}): write and commit the protocol (--protocol), then --pin REV")
    if 0 in ks and study_id(project_dir) != pin_rec["study"]:
        raise RuntimeError(f"HEAD's committed study is not the pinned one ({pin_rec['commit']}): the development seed is "
                           "filed from a commit of the pinned study")
    with ThreadPoolExecutor(max(1, jobs)) as pool:  # each seed in its own clone: `jobs` at once
        list(pool.map(lambda k: save_seed(project_dir, 0) if k == 0 else seed_task(project_dir, k, pin_rec), ks))
    seconds = None if aggregate_only or only is not None else time.monotonic() - t0
    recs, missing = collect(project_dir, seeds)
    if missing:
        write_pending(project_dir, seeds, recs, missing)
        print(f"seeds {', '.join(sorted(recs)) or 'none'} of this study have run; the aggregate waits for "
              + "; ".join(f"{k} ({why})" for k, why in sorted(missing.items())) + f" (python -m flows.seeds --seeds {seeds} --only K)")
        return []
    return write_aggregate(project_dir, recs, seconds, development_seed(project_dir))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project-dir", default=".")
    ap.add_argument("--seeds", type=int, default=len(protocol.CONFIRMATION_SEEDS),
                    help="confirmation seeds 1..N decide (make study-seeds' SEEDS); seed 0, the development seed, never")
    ap.add_argument("--protocol", action="store_true", help="write reports/protocol.md (prmlab.protocol) and stop")
    ap.add_argument("--pin", metavar="REV", help="pin the study the seeds run from at commit REV (it must hold "
                    "reports/protocol.md): writes reports/study.json, and stops")
    ap.add_argument("--aggregate-only", action="store_true")
    ap.add_argument("--only", type=int, nargs="+", help="run just these seeds (0: file HEAD's committed study as the "
                    "development seed); aggregate when seeds 1..N all exist")
    ap.add_argument("--jobs", type=int, default=1, help="seeds at once, each in its own clone (each takes every core it sees)")
    ap.add_argument("--record", type=int, metavar="K", help="record seed K run elsewhere (scripts/seeds_plain.py), then aggregate")
    ap.add_argument("--findings", help="with --record: that run's reports/findings.json")
    ap.add_argument("--commit", help="with --record: the commit it ran from (it must hold the pinned study)")
    ap.add_argument("--ran-on", default="another machine", help="with --record: where and how it ran, kept in the seed's file")
    ap.add_argument("--headline", help="with --record: that run's reports/headline.json (default: beside --findings, if there)")
    ap.add_argument("--study", metavar="ID", help="with --aggregate-only: aggregate the seed files of this study id (an "
                    "older study's, e.g. the exploratory six-seed study 037c879d3b67) instead of HEAD's")
    a = ap.parse_args()
    if a.protocol:
        atomic_write_text(Path(a.project_dir) / protocol.PAGE, protocol.render(Path(a.project_dir)))
        print(f"wrote {protocol.PAGE}: commit it before pinning the study (--pin REV)")
        return
    if a.pin is not None:
        try:
            rec = pin(a.project_dir, a.pin)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            ap.exit(2, f"error: --pin {a.pin}: {getattr(e, 'stderr', None) or e}\n")
        print(f"pinned study {rec['study']} at commit {rec['commit']} -> {protocol.PIN} (commit it)")
        return
    if a.seeds < 2:
        ap.error(f"--seeds {a.seeds}: an interval across seeds needs two or more")
    if a.only and (bad := [k for k in a.only if not 0 <= k <= a.seeds]):
        ap.error(f"--only {bad}: seeds are 0 (the development seed) or 1..{a.seeds}")
    if a.study is not None and not (a.aggregate_only and a.record is None and a.only is None):
        ap.error("--study ID only aggregates filed seeds: use it with --aggregate-only (no --only, no --record)")
    if a.study is not None and (missing := collect(a.project_dir, a.seeds, a.study)[1]):  # before Prefect starts
        ap.exit(2, f"error: study {a.study} lacks " + "; ".join(f"{k} ({why})" for k, why in sorted(missing.items())) + "\n")
    if a.record is not None:
        if not (a.findings and a.commit) or not 1 <= a.record <= a.seeds:
            ap.error(f"--record K (1 <= K <= --seeds {a.seeds}) needs --findings and --commit")
        if not Path(a.findings).is_file():
            ap.error(f"--findings {a.findings}: no such file")
        headline = Path(a.headline or Path(a.findings).with_name("headline.json"))
        if a.headline and not headline.exists():
            ap.error(f"--headline {headline}: no such file")
        # both files read and checked before Prefect starts: a truncated one had been a traceback from inside the flow
        try:
            found, head_rec = read_json(a.findings), read_json(headline) if headline.exists() else None
        except DataError as e:
            ap.error(f"--findings/--headline: {e}")
        if not (isinstance(found, dict) and isinstance(found.get("findings"), list)):
            ap.error(f"--findings {a.findings}: not a report's findings.json (no list 'findings')")
        if head_rec is not None and not isinstance(head_rec, dict):
            ap.error(f"--headline {headline}: not a report's headline.json (not a JSON object)")
        try:
            commit = git(a.project_dir, "rev-parse", "--short", f"{a.commit}^{{commit}}").strip()
        except subprocess.CalledProcessError:
            ap.error(f"--commit {a.commit}: no such commit")
        if study_id(a.project_dir, commit) != this_study(a.project_dir):
            ap.error(f"--commit {commit} holds another study than the pinned one (src, stages, dvc.yaml, params.yaml or "
                     "models differ)")
        out = write_seed(a.project_dir, a.record, commit, found, f"scripts.seeds_plain on {a.ran_on}", head_rec)
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
