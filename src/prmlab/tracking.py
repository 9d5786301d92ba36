"""MLflow logging shared by every stage, plus progress lines for long loops.

    with stage_run("label_mc", cfg, inputs=[samples_path]) as run:
        ...
        run.metrics({"kept": 0.41}); run.artifact("metrics/label_mc.json")

Tracking URI from `MLFLOW_TRACKING_URI`, default `sqlite:///mlflow.db` (relative to the working
directory, the repo root under DVC). Experiment `PRMLAB_EXPERIMENT` (default "prmlab"). When the
orchestrating flow sets `PRMLAB_PARENT_RUN_ID`, the stage run becomes its child. Every run is
tagged with the git commit and the md5 of each input (files: the md5 dvc.lock records).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")

DEFAULT_URI = "sqlite:///mlflow.db"


def tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI", DEFAULT_URI)


def md5_path(path: str | Path) -> str:
    """md5 of a file's bytes; for a folder, md5 over its sorted (relative path, file md5) pairs."""
    p = Path(path)
    if p.is_file():
        h = hashlib.md5()
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    h = hashlib.md5()
    for f in sorted(q for q in p.rglob("*") if q.is_file()):
        h.update(f"{f.relative_to(p).as_posix()}:{md5_path(f)}\n".encode())
    return h.hexdigest() + ".dir"


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts/dataclasses -> {"a.b": value}."""
    if dataclasses.is_dataclass(d):
        d = dataclasses.asdict(d)
    if not isinstance(d, dict):
        return {prefix[:-1]: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(flatten(v, f"{prefix}{k}."))
    return out


def numeric_metrics(d: dict[str, Any], prefix: str = "") -> dict[str, float]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(numeric_metrics(v, key + "/"))
        elif isinstance(v, bool):
            out[key] = float(v)
        elif isinstance(v, int | float) and v == v:  # skip NaN
            out[key] = float(v)
    return out


class StageRun:
    def __init__(self, run, mlflow):
        self.run = run
        self.id = run.info.run_id
        self._mlflow = mlflow

    def metrics(self, values: dict[str, Any], step: int | None = None) -> None:
        m = numeric_metrics(values)
        if m:
            self._mlflow.log_metrics(m, step=step)

    def artifact(self, path: str | Path, subdir: str | None = None) -> None:
        p = Path(path)
        if p.is_dir():
            self._mlflow.log_artifacts(str(p), artifact_path=subdir or p.name)
        elif p.exists():
            self._mlflow.log_artifact(str(p), artifact_path=subdir)

    def figure(self, fig, name: str) -> None:
        self._mlflow.log_figure(fig, name)

    def tag(self, key: str, value: Any) -> None:
        self._mlflow.set_tag(key, str(value))


def ensure_experiment(mlflow, name: str) -> None:
    if mlflow.get_experiment_by_name(name) is None:
        uri = tracking_uri()
        loc = None
        if uri.startswith("sqlite:///"):
            # Keep artifacts beside the SQLite store rather than in the working directory's ./mlruns.
            db = Path(uri[len("sqlite:///") :])
            loc = (db.resolve().parent / "mlartifacts").as_uri()
        try:
            mlflow.create_experiment(name, artifact_location=loc)
        except Exception:  # created concurrently by another stage
            if mlflow.get_experiment_by_name(name) is None:
                raise
    mlflow.set_experiment(name)


@contextmanager
def stage_run(stage: str, config: Any = None, inputs: list[str | Path] = (), tags: dict | None = None) -> Iterator[StageRun]:
    import mlflow

    mlflow.set_tracking_uri(tracking_uri())
    ensure_experiment(mlflow, os.environ.get("PRMLAB_EXPERIMENT", "prmlab"))
    parent = os.environ.get("PRMLAB_PARENT_RUN_ID") or None
    all_tags = {"prmlab.stage": stage.split("@")[0], "git_commit": git_commit(), **(tags or {}),
                "prmlab.host": socket.gethostname(), "prmlab.pid": str(os.getpid())}
    for p in inputs:
        if Path(p).exists():
            all_tags[f"dep.{Path(p).as_posix()}"] = md5_path(p)
    close_interrupted_runs(mlflow, stage)
    with mlflow.start_run(run_name=stage, parent_run_id=parent, nested=parent is not None, tags=all_tags) as run:
        if config is not None:
            params = {k: _loggable(v) for k, v in flatten(config).items()}
            mlflow.log_params(params)
        yield StageRun(run, mlflow)


def redact(url: str) -> str:
    """The URL without user:password (credentials in a URL are never printed or logged)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<unparseable URL>"
    if parts.username is None and parts.password is None:
        return url
    netloc = f"***@{parts.hostname or ''}" + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _loggable(v: Any) -> Any:
    if isinstance(v, str) and "://" in v:
        v = redact(v)  # credentials in a URL (base_url) never reach the tracking store
    return v if len(str(v)) < 500 else str(v)[:497] + "..."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def close_interrupted_runs(mlflow, stage: str) -> list[str]:
    """Mark FAILED this stage's runs left RUNNING by a killed process (kill -9 skips MLflow's own
    end_run). Only runs started on this host by a process that no longer exists: a run another live
    process holds is left alone. Returns the run ids closed."""
    exp = mlflow.get_experiment_by_name(os.environ.get("PRMLAB_EXPERIMENT", "prmlab"))
    if exp is None:
        return []
    client = mlflow.MlflowClient()
    closed = []
    runs = client.search_runs([exp.experiment_id], filter_string=f"attributes.status = 'RUNNING' and attributes.run_name = '{stage}'")
    for r in runs:
        host, pid = r.data.tags.get("prmlab.host"), r.data.tags.get("prmlab.pid", "")
        if host == socket.gethostname() and pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            client.set_terminated(r.info.run_id, status="FAILED")
            client.set_tag(r.info.run_id, "prmlab.interrupted", "true")
            closed.append(r.info.run_id)
    if closed:
        print(f"[{stage}] marked {len(closed)} interrupted MLflow run(s) FAILED: {', '.join(closed)}", file=sys.stderr)
    return closed


class Progress:
    """Counts, rate and ETA on stderr every `every` seconds; `done()` prints the closing line."""

    def __init__(self, total: int, desc: str, unit: str = "items", every: float = 5.0):
        self.total, self.desc, self.unit, self.every = total, desc, unit, every
        self.n = 0
        self.t0 = self.last = time.monotonic()

    def update(self, k: int = 1) -> None:
        self.n += k
        now = time.monotonic()
        if now - self.last >= self.every or self.n == self.total:
            self.last = now
            el = now - self.t0
            rate = self.n / el if el > 0 else 0.0
            eta = (self.total - self.n) / rate if rate > 0 else float("inf")
            print(
                f"[{self.desc}] {self.n}/{self.total} {self.unit} ({100 * self.n / max(self.total, 1):.0f}%), "
                f"{rate:.1f} {self.unit}/s, elapsed {el:.0f}s, ETA {eta:.0f}s",
                file=sys.stderr,
                flush=True,
            )

    def elapsed(self) -> float:
        return time.monotonic() - self.t0


def summary(stage: str, text: str) -> None:
    """The one-line summary every stage ends with."""
    print(f"[{stage}] done: {text}", flush=True)
