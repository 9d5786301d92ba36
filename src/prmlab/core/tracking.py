"""The recorder: MLflow logging shared by every stage, plus progress lines for long loops.

    with stage_run("label_mc", cfg, inputs=[samples_path]) as run:
        ...
        run.metrics({"kept": 0.41}); run.artifact("metrics/label_mc.json")

Tracking URI from `MLFLOW_TRACKING_URI`, default `sqlite:///mlflow.db` (relative to the working
directory, the repo root under DVC). Experiment `PRMLAB_EXPERIMENT` (default "prmlab"). When the
orchestrating flow sets `PRMLAB_PARENT_RUN_ID`, the stage run becomes its child. Every run is
tagged with the git commit, the DVC experiment's name (under `dvc exp run`) and the md5 of each
input (files: the md5 dvc.lock records), and logs each input as an MLflow dataset. The experiment
is a model-development one (the UI opens on its runs), and its artifacts live in mlartifacts/ beside
the SQLite store, moved there if the project was copied.

A recorder only: it observes what a stage computes (logs it, prints progress) and writes nothing a stage outputs,
so it is no DVC dependency of any stage and an edit here reruns nothing. What lands in outputs lives below it:
the machine, commits and digests in prmlab.core.provenance, URL redaction and child environments in prmlab.core.credentials.
tests/graph_audit.py checks in every audited run that no file under a stage's outputs is written from this module.
"""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prmlab.core.credentials import redact
from prmlab.core.params import ParamsError
from prmlab.core.provenance import NOT_CPU, git_commit, machine, md5_path, tracking_uri

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")

STORE_TIMEOUT_S = 5.0  # PRMLAB_STORE_TIMEOUT_S overrides it (a store over a slow link)


def check_store(uri: str | None = None, timeout_s: float | None = None) -> None:
    """The tracking store answers, within `timeout_s`, before a stage does any work: a server that accepts
    and never answers had held a stage 20+ minutes, a locked, corrupt or refusing store 248 s of retries and a
    traceback. A ParamsError naming MLFLOW_TRACKING_URI otherwise. Later requests are bounded too
    (MLflow's HTTP timeout and retries, unless set)."""
    import sqlite3

    uri = uri or tracking_uri()
    if timeout_s is None:
        try:
            timeout_s = float(os.environ.get("PRMLAB_STORE_TIMEOUT_S", STORE_TIMEOUT_S))
        except ValueError:
            raise ParamsError(f"PRMLAB_STORE_TIMEOUT_S={os.environ['PRMLAB_STORE_TIMEOUT_S']!r}: expected seconds") from None
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "60")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3")
    if uri.startswith(("http://", "https://")):
        _check_server(uri, timeout_s)
    elif uri.startswith("sqlite:///") and Path(uri[len("sqlite:///"):]).exists():
        db = uri[len("sqlite:///"):]
        try:
            con = sqlite3.connect(db, timeout=timeout_s)
            try:
                con.execute("BEGIN IMMEDIATE")  # a writer's lock, as a run will need; released at once
                con.execute("SELECT count(*) FROM sqlite_master").fetchone()
                has = con.execute("SELECT 1 FROM sqlite_master WHERE name = 'alembic_version'").fetchone()
                version = has and con.execute("SELECT version_num FROM alembic_version").fetchone()
                con.rollback()
            finally:
                con.close()
        except sqlite3.Error as e:
            raise ParamsError(f"MLFLOW_TRACKING_URI {uri}: the tracking store cannot be written ({e}; waited "
                              f"{timeout_s:g} s)") from None
        if version:
            _check_schema(uri, version[0])


def _check_schema(uri: str, version: str) -> None:
    """A SQLite store's schema is the one this MLflow writes (its newest migration), else one line: an older store's
    or another MLflow's had failed as a traceback when the run opened. Read from MLflow's migration files, without
    importing it (alembic's own reading costs seconds)."""
    import importlib.util

    spec = importlib.util.find_spec("mlflow")
    folder = Path(spec.origin).parent / "store" / "db_migrations" / "versions" if spec and spec.origin else None
    if folder is None or not folder.is_dir():
        return  # MLflow checks it itself
    ids, parents = set(), set()
    for f in folder.glob("*.py"):
        for key, rev in re.findall(r'^(revision|down_revision) = "(\w+)"', f.read_text(encoding="utf-8"), re.M):
            (ids if key == "revision" else parents).add(rev)
    heads = ids - parents
    if version in heads or len(heads) != 1:
        return
    from importlib.metadata import version as installed

    mlflow = f"MLflow {installed('mlflow')}"
    if version in ids:
        raise ParamsError(f"MLFLOW_TRACKING_URI {uri}: the tracking store's schema is an older MLflow's ({version}, this "
                          f"{mlflow} writes {next(iter(heads))}): back it up, then `mlflow db upgrade {uri}`")
    raise ParamsError(f"MLFLOW_TRACKING_URI {uri}: the tracking store's schema ({version}) is unknown to {mlflow} (a "
                      "newer MLflow's, or not MLflow's): use the MLflow that made it, or another store")


def _check_server(uri: str, timeout_s: float) -> None:
    """An MLflow tracking server answers at `uri` within `timeout_s` per request: `/health` says OK, and its REST API
    answers in MLflow's JSON (an experiment, or an `error_code`). A web server that is not MLflow (a 404 on /health,
    an HTML page) or whose API hangs is one line, not a run that fails minutes later. 401/403 count as answers: a
    server behind authentication, whose credentials MLflow's own client sends."""
    import json
    import urllib.error
    import urllib.request

    base, name = uri.rstrip("/"), f"MLFLOW_TRACKING_URI {redact(uri)}"

    def get(path: str) -> tuple[int, str, bytes]:
        try:
            with urllib.request.urlopen(base + path, timeout=timeout_s) as r:
                return r.status, r.headers.get("Content-Type", ""), r.read(4096)
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type", ""), e.read(4096)
        except (OSError, ValueError) as e:
            what = "the tracking server" if path == "/health" else "the tracking server's API"
            raise ParamsError(f"{name}: {what} did not answer in {timeout_s:g} s ({getattr(e, 'reason', e)})") from None

    status, _, body = get("/health")
    if status not in (401, 403) and (status != 200 or body.strip() != b"OK"):
        raise ParamsError(f"{name}: not an MLflow tracking server (/health answered {status} {_shown(body)}, "
                          "where MLflow answers 200 OK)")
    status, kind, body = get("/api/2.0/mlflow/experiments/get-by-name?experiment_name=Default")
    try:
        data = json.loads(body) if "json" in kind else None
    except ValueError:
        data = None
    if status not in (401, 403) and not (isinstance(data, dict) and ("experiment" in data or "error_code" in data)):
        raise ParamsError(f"{name}: not an MLflow tracking server (its REST API answered {status} {kind or 'no content type'} "
                          f"{_shown(body)}, not MLflow's JSON)")


def _shown(body: bytes) -> str:
    """The start of a reply, as a short printable quote."""
    text = body[:40].decode("utf-8", "replace")
    return repr("".join(c if c.isprintable() else " " for c in text).strip() + ("..." if len(body) > 40 else ""))


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
    """The numbers of a nested metrics dict as MLflow metrics {"a/b": float}, NaN left out. A key from the data (a
    subset named "(none)") keeps only what MLflow accepts in a name (letters, digits, `_-. /:`), the rest as `_`:
    MLflow refused the whole batch and the stage's run FAILED after all its work."""
    out = {}
    for k, v in d.items():
        key = re.sub(r"[^\w.\- /:]", "_", f"{prefix}{k}")
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

    def artifact(self, path: str | Path, subdir: str | None = None, name: str | None = None) -> None:
        """A file or folder into the run's artifacts (under `subdir`); a file as `name` where given."""
        p = Path(path)
        if p.is_dir():
            self._mlflow.log_artifacts(str(p), artifact_path=subdir or p.name)
        elif p.exists() and name and name != p.name:
            import shutil
            import tempfile

            with tempfile.TemporaryDirectory() as d:
                shutil.copyfile(p, Path(d) / name)
                self._mlflow.log_artifact(str(Path(d) / name), artifact_path=subdir)
        elif p.exists():
            self._mlflow.log_artifact(str(p), artifact_path=subdir)

    def params(self, values: dict[str, Any]) -> None:
        """More params, known only once the stage has read its inputs (e.g. the PRMs an eval scores)."""
        self._mlflow.log_params({k: _loggable(v) for k, v in flatten(values).items()})

    def figure(self, fig, name: str) -> None:
        self._mlflow.log_figure(fig, name)

    def tag(self, key: str, value: Any) -> None:
        self._mlflow.set_tag(key, str(value))

    def describe_experiment(self, markdown: str) -> None:
        """The experiment's description (MLflow's `mlflow.note.content` tag, the experiment page's text)."""
        self._mlflow.MlflowClient().set_experiment_tag(self.run.info.experiment_id, "mlflow.note.content", markdown)

    def stage_runs(self) -> dict[str, str]:
        """The latest finished run of each stage in this run's experiment, {run name: run id}: the
        runs whose outputs a report reads (DVC reruns a stage only when its inputs change)."""
        client = self._mlflow.MlflowClient()
        out: dict[str, str] = {}
        for r in client.search_runs([self.run.info.experiment_id], "attributes.status = 'FINISHED'",
                                    order_by=["attributes.start_time DESC"], max_results=2000):
            if r.data.tags.get("prmlab.stage") not in (None, "pipeline"):
                out.setdefault(r.info.run_name, r.info.run_id)
        return dict(sorted(out.items()))

    def model(self, path: str | Path, name: str, model_type: str, params: dict | None = None,
              max_bytes: int = 200 * 2**20) -> str:
        """A checkpoint folder as an MLflow logged model of this run (the UI's Models tab), its files
        uploaded when under max_bytes; a larger one is recorded by path (DVC tracks its files).
        Returns the model id."""
        p = Path(path)
        size = sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        lm = self._mlflow.initialize_logged_model(name=name, source_run_id=self.id, model_type=model_type,
                                                  params={k: str(v) for k, v in (params or {}).items()},
                                                  tags={"checkpoint": str(p.resolve())})
        client = self._mlflow.MlflowClient()
        if size < max_bytes:
            client.log_model_artifacts(lm.model_id, str(p))
        elif (p / "config.json").exists():
            client.log_model_artifact(lm.model_id, str(p / "config.json"))
        client.finalize_logged_model(lm.model_id, "READY")
        return lm.model_id


# The experiment opens on its runs in the MLflow UI (a model-development experiment), not on the
# GenAI overview with its traces panel that MLflow 3 shows an experiment of unknown kind.
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")


def ensure_experiment(mlflow, name: str) -> None:
    uri = tracking_uri()
    db = Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else None
    store = db.resolve().parent / "mlartifacts" if db else None
    if mlflow.get_experiment_by_name(name) is None:
        try:
            # Artifacts beside the SQLite store rather than in the working directory's ./mlruns.
            mlflow.create_experiment(name, artifact_location=store.as_uri() if store else None, tags=dict([EXPERIMENT_KIND]))
        except Exception:  # created concurrently by another stage
            if mlflow.get_experiment_by_name(name) is None:
                raise
    exp = mlflow.set_experiment(name)
    if exp.tags.get(EXPERIMENT_KIND[0]) is None:  # a store made before the tag existed
        mlflow.MlflowClient().set_experiment_tag(exp.experiment_id, *EXPERIMENT_KIND)
    if db is not None:
        relocate_artifacts(db, exp, store)


def relocate_artifacts(db: Path, exp, store: Path) -> bool:
    """MLflow records an experiment's artifact location as an absolute path. A project copied or
    moved (with its mlflow.db and mlartifacts/) would go on writing into the original's folder; so
    when the recorded location is a local folder other than this store's mlartifacts/, point the
    experiment and its runs at this one. Returns whether it moved anything."""
    import sqlite3
    from urllib.parse import unquote, urlparse

    loc = exp.artifact_location
    old = Path(unquote(urlparse(loc).path)) if loc.startswith("file:") else Path(loc) if loc.startswith("/") else None
    if old is None or old == store or old.name != "mlartifacts":
        return False
    with sqlite3.connect(db) as con:  # MLflow's own tables: experiments.artifact_location, runs.artifact_uri
        con.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?", (store.as_uri(), int(exp.experiment_id)))
        for prefix in {loc, old.as_uri(), str(old)}:
            con.execute("UPDATE runs SET artifact_uri = ? || substr(artifact_uri, ?) WHERE experiment_id = ? AND artifact_uri LIKE ?",
                        (store.as_uri(), len(prefix) + 1, int(exp.experiment_id), prefix + "/%"))
    print(f"[mlflow] experiment {exp.name!r}: artifacts moved from {old} to {store} (the project was copied or moved)",
          file=sys.stderr)
    return True


def _log_inputs(mlflow, digests: dict[str, str]) -> None:
    """Each input file ({path: md5}) as an MLflow dataset (the UI's Dataset column): its path and md5, not its rows."""
    import warnings

    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset

    for path, digest in digests.items():
        with warnings.catch_warnings():  # "can be interpreted in multiple ways": two equal local-file sources
            warnings.simplefilter("ignore", UserWarning)
            src = resolve_dataset_source(str(Path(path).resolve()))
        mlflow.log_input(MetaDataset(src, name=path, digest=digest[:36]), context="input")


def logged_params(flat: dict[str, Any], declared: list[str] | None) -> dict[str, Any]:
    """The params a stage's run logs: of a section DVC narrows to some keys (dvc.yaml `params: [policy.model]`), those
    keys only; a section DVC takes whole, or does not track (`engine`: where shards run, not what they produce), whole.
    `declared` None: all."""
    if declared is None:
        return flat
    narrowed = {p.split(".")[0] for p in declared if "." in p} - {p for p in declared if "." not in p}
    return {k: v for k, v in flat.items()
            if k.split(".")[0] not in narrowed or any(k == p or k.startswith(p + ".") for p in declared)}


@contextmanager
def stage_run(stage: str, config: Any = None, inputs: list[str | Path] = (), tags: dict | None = None,
              declared: list[str] | None = None) -> Iterator[StageRun]:
    """The stage's MLflow run: its tags (commit, machine, DVC experiment), its inputs as datasets, its config as params
    (`declared`: dvc.yaml's params for it, see `logged_params`)."""
    import mlflow

    mlflow.set_tracking_uri(tracking_uri())
    ensure_experiment(mlflow, os.environ.get("PRMLAB_EXPERIMENT", "prmlab"))
    parent = os.environ.get("PRMLAB_PARENT_RUN_ID") or None
    commit = git_commit()
    all_tags = {"prmlab.stage": stage.split("@")[0], "git_commit": commit, "mlflow.source.git.commit": commit,
                **(tags or {}), "prmlab.host": socket.gethostname(), "prmlab.pid": str(os.getpid()),
                **{f"prmlab.{k}" if k in NOT_CPU else f"prmlab.cpu.{k}": v for k, v in machine().items()}}
    # `dvc exp run` names the experiment in the stage's environment: a run is found by it in the UI.
    for env, tag in (("DVC_EXP_NAME", "dvc.exp_name"), ("DVC_EXP_BASELINE_REV", "dvc.exp_baseline_rev")):
        if os.environ.get(env):
            all_tags[tag] = os.environ[env]
    digests = {Path(p).as_posix(): md5_path(p) for p in inputs if Path(p).exists()}
    all_tags |= {f"dep.{p}": d for p, d in digests.items()}
    close_interrupted_runs(mlflow, stage)
    with mlflow.start_run(run_name=stage, parent_run_id=parent, nested=parent is not None, tags=all_tags) as run:
        _log_inputs(mlflow, digests)
        if config is not None:
            params = {k: _loggable(v) for k, v in logged_params(flatten(config), declared).items()}
            mlflow.log_params(params)
        yield StageRun(run, mlflow)


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

    def update(self, k: int = 1, extra: str = "") -> None:
        """Count k more; `extra` (e.g. "loss 0.41") is appended to the line when one is printed."""
        self.n += k
        now = time.monotonic()
        if now - self.last >= self.every or self.n == self.total:
            self.last = now
            el = now - self.t0
            rate = self.n / el if el > 0 else 0.0
            eta = (self.total - self.n) / rate if rate > 0 else float("inf")
            print(
                f"[{self.desc}] {self.n}/{self.total} {self.unit} ({100 * self.n / max(self.total, 1):.0f}%), "
                f"{rate:.1f} {self.unit}/s, elapsed {el:.0f}s, ETA {eta:.0f}s" + (f", {extra}" if extra else ""),
                file=sys.stderr,
                flush=True,
            )


def done_line(stage: str, text: str) -> None:
    """Print the one-line summary every stage ends with (prmlab.core.stage.run_stage)."""
    print(f"[{stage}] done: {text}", flush=True)
