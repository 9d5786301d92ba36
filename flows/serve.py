"""Scheduled runs: serve the pipeline flow as a deployment with a cron (or interval) schedule.

    PREFECT_SERVER_ANALYTICS_ENABLED=false prefect server start --host 127.0.0.1   # terminal 1 (UI at http://127.0.0.1:4200)
    export PREFECT_API_URL=http://127.0.0.1:4200/api
    python -m flows.serve --cron "0 3 * * *"          # terminal 2: nightly study run, 03:00 UTC
    python -m flows.serve --cron "0 3 * * *" --timezone Europe/Paris   # 03:00 Paris time

`flow.serve` registers the deployment and polls for its scheduled runs, executing them in this
process. For remote workers use a Prefect work pool instead (docs/running-at-scale.md, "Prefect").
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from flows.pipeline import pipeline


def schedule_kwargs(ap: argparse.ArgumentParser, cron: str | None, timezone: str, interval: float | None) -> dict:
    """serve()/deploy() keywords: a Cron read in an IANA time zone (checked, one-line error), or an interval."""
    if cron:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        from prefect.schedules import Cron

        try:
            ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            ap.error(f"--timezone {timezone!r}: not an IANA time zone (e.g. UTC, Europe/Paris)")
        return {"schedule": Cron(cron, timezone=timezone)}
    return {"interval": timedelta(seconds=interval)} if interval else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="prmlab-scheduled")
    ap.add_argument("--cron", default=None, help='cron schedule, e.g. "0 3 * * *"')
    ap.add_argument("--timezone", default="UTC", help="IANA time zone the cron is read in (default UTC)")
    ap.add_argument("--interval", type=float, default=None, help="seconds between runs (instead of --cron)")
    ap.add_argument("--project-dir", default=".")
    ap.add_argument("--stages", nargs="*", default=None)
    a = ap.parse_args()
    if (a.cron is None) == (a.interval is None):
        ap.error("give exactly one of --cron or --interval")
    kw = schedule_kwargs(ap, a.cron, a.timezone, a.interval)
    pipeline.serve(name=a.name, parameters={"project_dir": a.project_dir, "stages": a.stages}, **kw)


if __name__ == "__main__":
    main()
