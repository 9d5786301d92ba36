"""Prefect orchestration of the DVC stages. Stages stay plain Python; flows only chain them."""

import os
import shutil
import sys
from pathlib import Path

# Here, before any flow module imports prefect (it reads its settings then): Prefect's state and the
# temporary server's database stay inside the project, its server listens on 127.0.0.1 only, and it sends
# no telemetry (nothing leaves the machine at run time; offline, the server logged a failed send every
# 10 minutes). Each is a default the user's environment overrides.
os.environ.setdefault("PREFECT_HOME", str(Path(__file__).resolve().parents[1] / ".prefect"))
os.environ.setdefault("PREFECT_SERVER_API_HOST", "127.0.0.1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def venv_tool(name: str) -> str:
    """The `name` executable next to this interpreter (the project's .venv), else whatever is on PATH: `prmlab ui`
    and the flows' `dvc` calls work without the venv on PATH (issue #56: `prmlab ui` died with FileNotFoundError)."""
    here = Path(sys.executable).with_name(name)
    return str(here) if here.exists() else (shutil.which(name) or name)


def venv_env(params_file: str | Path, env: dict | None = None) -> dict:
    """`env` (default: this process's) for the stages run on `params_file`, with this interpreter's folder first on
    PATH: the stage commands DVC runs call `python` from PATH, and must find the venv's, where prmlab is. Secrets
    other than those the stages' own work sends stay in this process (prmlab.credentials.stage_env)."""
    from prmlab.credentials import stage_env

    env = stage_env(params_file, env)
    return {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
