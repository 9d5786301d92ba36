"""Deploy the pipeline flow to a Prefect work pool, for workers on other machines (e.g. a GPU node).

    prefect work-pool create prmlab --type process           # once, against your Prefect server
    python -m flows.deploy --pool prmlab --name nightly --cron "0 3 * * *" --timezone UTC
    prefect worker start --pool prmlab                        # on the machine that runs the study

The deployment points at this checkout (its flows/pipeline.py); a `process` worker runs each flow
run as a subprocess there, with the worker's Python (start it from the project's .venv). Without
--cron or --interval the deployment runs only when asked: `prefect deployment run prmlab-pipeline/<name>`.
flows.serve is the one-process alternative (serve and run in the same process, no pool).
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", required=True, help="an existing work pool (prefect work-pool create NAME --type process)")
    ap.add_argument("--name", default="prmlab")
    ap.add_argument("--cron", default=None, help='cron schedule, e.g. "0 3 * * *"')
    ap.add_argument("--timezone", default="UTC", help="IANA time zone the cron is read in (default UTC)")
    ap.add_argument("--interval", type=float, default=None, help="seconds between runs (instead of --cron)")
    ap.add_argument("--project-dir", default=".", help="the project the flow runs `dvc repro` in")
    ap.add_argument("--stages", nargs="*", default=None)
    a = ap.parse_args()
    if a.cron and a.interval:
        ap.error("give at most one of --cron or --interval")
    from flows import serve  # deferred: prefect (through flows.pipeline), once the arguments are checked

    kw = serve.schedule_kwargs(ap, a.cron, a.timezone, a.interval)
    from prefect import flow

    # From this checkout's source (no image, nothing pushed): the worker imports flows/pipeline.py here.
    remote = flow.from_source(source=str(ROOT), entrypoint="flows/pipeline.py:pipeline")
    dep_id = remote.deploy(name=a.name, work_pool_name=a.pool, build=False, push=False, print_next_steps=False,
                           parameters={"project_dir": str(Path(a.project_dir).resolve()), "stages": a.stages}, **kw)
    print(f"deployment prmlab-pipeline/{a.name} ({dep_id}) on work pool {a.pool!r}; "
          f"start a worker with: prefect worker start --pool {a.pool}")


if __name__ == "__main__":
    main()
