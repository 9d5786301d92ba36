"""The study's confirmation seeds, each run from the pinned study's own commit, and their aggregate.

    python -m flows.seeds --protocol          # write reports/protocol.md (commit it before pinning)
    python -m flows.seeds --pin HEAD          # pin the study: reports/study.json names the commit the seeds run from
    python -m flows.seeds --seeds 6           # make study-seeds: confirmation seeds 1..6, one after another
    python -m flows.seeds --seeds 6 --only 2  # one seed now (a CPU seed takes about an hour), aggregate once all exist
    python -m flows.seeds --seeds 6 --aggregate-only   # just re-read the seeds' files and rewrite the aggregate
    python -m flows.seeds --seeds 6 --aggregate-only --study 037c879d3b67   # an older study's filed seeds
    python -m flows.seeds --seeds 6 --record 1 --findings F --commit REV   # seed 1 run without DVC (scripts/seeds_plain.py)

The rules are reports/protocol.md's (prmlab.analysis.protocol): seed 0, the development seed, is shown and never counted;
seeds 1..N decide. Seed k runs by `dvc repro` in its own clone of the pinned commit, so an edit at HEAD after the pin
neither invalidates a finished seed nor mixes into one, and a killed seed resumes. The store (study ids, the pin,
each seed's file under its study, the aggregate's pages) is prmlab.runs.store.
Outputs: reports/seeds/<study>/seed-<k>.json, reports/seeds.{md,json}, README's results, reports/{protocol.md,study.json}.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prefect import flow, task

from prmlab.analysis import protocol
from prmlab.core.io import atomic_write_text
from prmlab.runs import store  # the study store: ids, the pin, seed and sweep files
from prmlab.runs.processes import venv_env, venv_tool


@task(task_run_name="seed {k}: dvc repro in a clone of the pinned study")
def seed_task(project_dir: str, k: int, pin_rec: dict) -> str:
    return str(run_pinned_seed(project_dir, k, pin_rec))


def run_pinned_seed(project_dir: str, k: int, pin_rec: dict) -> Path:
    """Confirmation seed k of the pinned study: `dvc repro` in its clone (prmlab.runs.store.prepare_seed_clone), then its
    findings filed. Resumes a killed run."""
    d = store.prepare_seed_clone(project_dir, k, pin_rec)
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
    return store.file_seed_run(project_dir, k, pin_rec, d, (time.monotonic() - t0) / 60)


@flow(name="prmlab-seeds", log_prints=True)
def seeds_study(project_dir: str = ".", seeds: int = 6, aggregate_only: bool = False,
                only: list[int] | None = None, jobs: int = 1, study: str | None = None) -> list[dict]:
    """Run confirmation seeds 1..seeds of the pinned study (or `only` some; 0 files HEAD's committed study as the
    development seed), then aggregate them; `study`: aggregate, without running anything, the seeds filed under that
    older study's id (its files stay in reports/seeds/ when the study moves on)."""
    if seeds < 2:
        raise ValueError("--seeds must be >= 2: an interval across seeds needs two")
    if study is not None:
        recs, missing = store.collect(project_dir, seeds, study)
        if missing:  # nothing can run for an older study: say which files are not its, write nothing
            raise RuntimeError(f"study {study} lacks " + "; ".join(f"{k} ({why})" for k, why in sorted(missing.items())))
        return store.write_aggregate(project_dir, recs, None, pinned_study=False)
    t0 = time.monotonic()
    ks = only if only is not None else [] if aggregate_only else list(range(1, seeds + 1))
    pin_rec = store.pinned(project_dir)
    if ks and pin_rec is None:
        raise RuntimeError(f"no pinned study ({protocol.PIN}): write and commit the protocol (--protocol), then --pin REV")
    if 0 in ks and store.study_id(project_dir) != pin_rec["study"]:
        raise RuntimeError(f"HEAD's committed study is not the pinned one ({pin_rec['commit']}): the development seed is "
                           "filed from a commit of the pinned study")
    with ThreadPoolExecutor(max(1, jobs)) as pool:  # each seed in its own clone: `jobs` at once
        list(pool.map(lambda k: store.save_development_seed(project_dir) if k == 0 else seed_task(project_dir, k, pin_rec), ks))
    seconds = None if aggregate_only or only is not None else time.monotonic() - t0
    recs, missing = store.collect(project_dir, seeds)
    if missing:
        store.write_pending(project_dir, seeds, recs, missing)
        print(f"seeds {', '.join(sorted(recs)) or 'none'} of this study have run; the aggregate waits for "
              + "; ".join(f"{k} ({why})" for k, why in sorted(missing.items())) + f" (python -m flows.seeds --seeds {seeds} --only K)")
        return []
    return store.write_aggregate(project_dir, recs, seconds, store.development_seed(project_dir))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project-dir", default=".")
    ap.add_argument("--seeds", type=int, default=len(protocol.CONFIRMATION_SEEDS),
                    help="confirmation seeds 1..N decide (make study-seeds' SEEDS); seed 0, the development seed, never")
    ap.add_argument("--protocol", action="store_true", help="write reports/protocol.md (prmlab.analysis.protocol) and stop")
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
            rec = store.pin(a.project_dir, a.pin)
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
    if a.study is not None and (missing := store.collect(a.project_dir, a.seeds, a.study)[1]):  # before Prefect starts
        ap.exit(2, f"error: study {a.study} lacks " + "; ".join(f"{k} ({why})" for k, why in sorted(missing.items())) + "\n")
    if a.record is not None:
        try:
            out = store.record_seed(a.project_dir, a.record, a.seeds, a.findings, a.commit, a.ran_on, a.headline)
        except ValueError as e:
            ap.error(str(e))
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
