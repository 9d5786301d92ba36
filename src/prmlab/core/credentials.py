"""Credentials never leave the process: URLs shown without their user, password or query values (`redact`), and
the environment handed to another process without what is named like a secret (`child_env`, `stage_env`).

Inputs: URLs and environments; a params file's `api_key_env` names. Outputs: redacted strings and filtered
environments. The engines' subprocesses and Ray replicas start from `child_env`, so this module is a DVC dependency of
the stages that run them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from prmlab.core.params import ParamsError, query_names, read_params, url_secrets


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


def stage_env(params_file: str | Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """`child_env` for a process that runs the project's stages on `params_file`: the secrets their own work sends
    (STAGE_SECRETS and the file's api_key_env variables) and no other."""
    try:
        named = api_key_envs(read_params(params_file))
    except ParamsError:
        named = set()  # the stage refuses the file itself, in its own line
    return child_env(env, keep={*STAGE_SECRETS, *named})[0]
