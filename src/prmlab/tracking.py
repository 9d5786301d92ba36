"""MLflow logging shared by every stage, plus progress lines for long loops.

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
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prmlab.params import ParamsError, query_names, read_params, url_secrets

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")

DEFAULT_URI = "sqlite:///mlflow.db"


def tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI", DEFAULT_URI)


STORE_TIMEOUT_S = 5.0  # PRMLAB_STORE_TIMEOUT_S overrides it (a store over a slow link)


def check_store(uri: str | None = None, timeout_s: float | None = None) -> None:
    """The tracking store answers, within `timeout_s`, before a stage does any work: a server that accepts
    and never answers had held a stage 20+ minutes, a locked, corrupt or refusing store 248 s of retries and a
    traceback (issue #52). A ParamsError naming MLFLOW_TRACKING_URI otherwise. Later requests are bounded too
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


ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16")  # what picks CPU kernels


def machine() -> dict[str, str]:
    """The machine a run computed on: the CPU's vendor, model, the instruction sets that decide which kernels torch,
    oneDNN and MKL run (`isa`), torch's own choice (`torch_kernels`: AVX512, AVX2, ...) and the threads; where torch
    is loaded, its version (`torch`) and the GPU this process used (`gpu`, absent if none). Recorded
    beside every run (MLflow tags) and in the metrics of every stage that runs a model: the same commit's
    trained weights differ across x86 machines of one kind (issue #52: an Intel Xeon with AVX-512/AMX and an
    AMD EPYC with AVX2 trained the judge PRM to loss 0.1883 and 0.1974 on byte-identical data), its labels
    did not."""
    import platform

    info = {"vendor": "", "model": platform.processor() or platform.machine(), "isa": ""}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    fields = dict(line.split(":", 1) for line in text.splitlines()[:40] if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = set(fields.get("flags", "").split())
    info |= {"vendor": fields.get("vendor_id", ""), "model": fields.get("model name", info["model"]),
             "isa": " ".join(f for f in ISA_FLAGS if f in flags)}
    torch = sys.modules.get("torch")  # never imported for this alone (a light stage stays light)
    if torch is not None:
        # the torch build (a CUDA build's suffix: +cu130) and, where this process computed on a GPU, which one:
        # issue #54, a seed's figures are its machine's (CPU or GPU), so a seed's file names both
        info |= {"torch_kernels": torch.backends.cpu.get_cpu_capability(), "threads": str(torch.get_num_threads()),
                 "torch": torch.__version__}
        if torch.cuda.is_initialized():  # asking otherwise would initialise CUDA in a process that never used it
            info["gpu"] = torch.cuda.get_device_name()
    return info


# machine()'s keys that are not the CPU's: tagged prmlab.<key>, the CPU's prmlab.cpu.<key>
NOT_CPU = ("torch", "gpu")


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# What makes a study besides its params: its code, graph and committed toy models (flows.seeds.STUDY_INPUTS less
# params.yaml, which `study_commits` compares by value).
STUDY_CODE = ("src", "stages", "dvc.yaml", "models", "data/models")


def study_commits(params: str | Path = "params.yaml") -> dict[str, Any]:
    """Which commits made this run (the report's provenance, issue #54): `code`, HEAD (full hash; "unknown" without
    git) and `dirty`, the STUDY_CODE paths with uncommitted changes; `params`, the commit whose params it ran: the
    oldest of the newest commits along `git log -- <params>` whose file holds the workspace's values (parsed, so an
    edit of comments alone is no new params), None where the workspace's values are in no commit (a study run
    before its params were committed, or a `dvc exp run` with a seed's values: the commit that files its outputs
    holds them) or git cannot say. Not HEAD: the study is run before the commit that adds its outputs, so HEAD
    then is the previous study's (issue #54: a report named dc0e4ce, whose params were the previous study's)."""
    import yaml

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, timeout=30, check=True).stdout

    out: dict[str, Any] = {"code": git_commit(), "dirty": [], "params": None}
    try:
        changed = [line[3:].split(" -> ")[-1] for line in git("status", "--porcelain", "--untracked-files=no", "--",
                                                               *STUDY_CODE).splitlines()]
        out["dirty"] = [c for c in STUDY_CODE if any(f == c or f.startswith(c + "/") for f in changed)]
        now = yaml.safe_load(Path(params).read_text())
        for rev in git("log", "--format=%H", "--", str(params)).split():
            if yaml.safe_load(git("show", f"{rev}:./{params}")) != now:
                break
            out["params"] = rev
    except (OSError, subprocess.SubprocessError, yaml.YAMLError):
        pass  # no git, no params file: `params` stays None and the report says it cannot name one
    return out


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


def redact(url: str) -> str:
    """The URL without user:password and without query values (`?key=...`: hosted APIs take keys there),
    so credentials in a URL are never printed or logged."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<unparseable URL>"
    if parts.username is None and parts.password is None and not parts.query and not parts.fragment:
        return url
    netloc = parts.netloc
    if parts.username is not None or parts.password is not None:
        netloc = f"***@{parts.hostname or ''}" + (f":{port}" if port else "")
    query = "&".join(f"{k}=***" if k else "***" for k in query_names(parts.query)) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, "***" if parts.fragment else ""))


def secret_name(name: str) -> bool:
    """An environment variable named like a secret: a part of its name (split at `_`, `-`, `.`) ends in TOKEN(S) or
    KEY(S) (HF_TOKEN, OPENAI_API_KEY, AWS_ACCESS_KEY_ID, APIKEY) or holds SECRET, PASSW, PASSPHRASE, CREDENTIAL or
    COOKIE (AWS_SECRET_ACCESS_KEY, PGPASSWORD, GOOGLE_APPLICATION_CREDENTIALS); TOKENIZERS_PARALLELISM is none."""
    return any(re.search(r"(TOKENS?|KEYS?)$|SECRET|PASSW|PASSPHRASE|CREDENTIAL|COOKIE", part)
               for part in re.split(r"[-_.]", name.upper()))


# The secrets a stage's own work sends, which a stage process started by this one (a flow's `dvc repro`, `prmlab eval`,
# scripts/seeds_plain.py) is handed besides its backends' keys (params' api_key_env, OPENAI_API_KEY where unset): its
# tracking store's (MLflow's own, its artifact store's), its model hub's, its Ray cluster's and its proxy's. A Ray
# replica is handed none (`child_env` with no `keep`).
STAGE_SECRETS = ("OPENAI_API_KEY", "MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD",
                 "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS",
                 "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "RAY_AUTH_TOKEN")


def api_key_envs(params: Any) -> set[str]:
    """The environment variables a params file names as its backends' keys: every `api_key_env` in it, at any depth."""
    if isinstance(params, dict):
        here = {params["api_key_env"]} if isinstance(params.get("api_key_env"), str) else set()
        return here.union(*(api_key_envs(v) for v in params.values()))
    if isinstance(params, list):
        return set().union(*(api_key_envs(v) for v in params))
    return set()


def child_env(env: dict[str, str] | None = None, keep: Any = (), urls: bool = False) -> tuple[dict[str, str], list[str]]:
    """`env` (default: this process's) for another process, and the names of what was held back: every variable named
    like a secret (`secret_name`) but those in `keep`, and with `urls`, every one whose value is a URL that carries
    one (`url_secrets`: `user:password@`, a query string). Ray records a replica's environment (its runtime_env) in
    clear in its session logs and GCS, so a replica gets `urls` too and no `keep`; a local process keeps its URLs
    (MLFLOW_TRACKING_URI: without it a stage would log to another store, silently). Values are never printed."""
    env = dict(os.environ if env is None else env)
    held = sorted(k for k, v in env.items() if k not in keep and (
        secret_name(k) or (urls and "://" in v and url_secrets(v.strip()) is not None)))
    return {k: v for k, v in env.items() if k not in held}, held


def ui_url() -> str:
    """Where `make ui` serves the MLflow UI (PRMLAB_UI_URL, default http://127.0.0.1:5000), as the report's and the
    flow's run links start; one that carries a credential (`url_secrets`) is refused: the links are written."""
    base = os.environ.get("PRMLAB_UI_URL", "http://127.0.0.1:5000").rstrip("/")
    if what := url_secrets(base):
        raise ParamsError(f"PRMLAB_UI_URL carries {what}, which the report's and the flow's run links would hold in "
                          "clear: set it to the UI's address alone")
    return base


def stage_env(params_file: str | Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """`child_env` for a process that runs the project's stages on `params_file`: the secrets their own work sends
    (STAGE_SECRETS and the file's api_key_env variables) and no other."""
    try:
        named = api_key_envs(read_params(params_file))
    except ParamsError:
        named = set()  # the stage refuses the file itself, in its own line
    return child_env(env, keep={*STAGE_SECRETS, *named})[0]


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
    """Print the one-line summary every stage ends with (prmlab.stage.run_stage)."""
    print(f"[{stage}] done: {text}", flush=True)
