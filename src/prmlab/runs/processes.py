"""The project's commands as processes: the venv's own tools, the environment the stages run in, and stopping a
command with everything it started.

What: `prmlab ui`, the flows and the seeds' clones call the tools beside their own interpreter (`venv_tool`) and put
its folder first on the stage commands' PATH (`venv_env`), since dvc.yaml's commands run `python` from PATH; a stage
runs in its own process group, which `stop_group` ends whole, and `interrupt_on_sigterm` turns SIGTERM into Ctrl-C's
KeyboardInterrupt so that a flow killed by a scheduler ends Crashed, not "Running"; `stage_error` reads a stage's
own error line out of `dvc repro`'s output.
Inputs: this interpreter, the environment, a params file (which secrets the stages' own work sends), a command's
output lines. Outputs: none (environments, signals, lines).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from prmlab.core.credentials import stage_env


def venv_tool(name: str) -> str:
    """The `name` executable next to this interpreter (the project's .venv), else whatever is on PATH: `prmlab ui`
    and the flows' `dvc` calls work without the venv on PATH (where the venv is not on PATH, `mlflow` and `dvc` are not found)."""
    here = Path(sys.executable).with_name(name)
    return str(here) if here.exists() else (shutil.which(name) or name)


def venv_env(params_file: str | Path, env: dict | None = None) -> dict:
    """`env` (default: this process's) for the stages run on `params_file`, with this interpreter's folder first on
    PATH: the stage commands DVC runs call `python` from PATH, and must find the venv's, where prmlab is. Secrets
    other than those the stages' own work sends stay in this process (prmlab.core.credentials.stage_env)."""
    env = stage_env(params_file, env)
    return {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}


def group_alive(pgid: int) -> bool:
    """Whether a process of group pgid still runs. Zombies do not count: where PID 1 does not reap orphans (this
    project's containers) a stage's python killed after dvc stays a zombie, dead but visible to killpg(pgid, 0)."""
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: killpg's probe, zombies included
        try:
            os.killpg(pgid, 0)
            return True
        except ProcessLookupError:
            return False
    for stat in proc.glob("[0-9]*/stat"):
        try:
            state, _ppid, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except OSError:  # it ended while we looked
            continue
        if int(pgrp) == pgid and state != "Z":
            return True
    return False


def stop_group(proc: subprocess.Popen, grace_s: float = 20) -> None:
    """SIGTERM a stage's process group (dvc and the stage it runs), SIGKILL what is left after grace_s. Waits for the
    whole group, not dvc alone: a stage that handles SIGTERM (or outlives dvc by a moment) must not be left running."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not group_alive(proc.pid):
            break
    try:
        proc.wait(timeout=5)  # reap dvc
    except subprocess.TimeoutExpired:
        pass


def interrupt_on_sigterm() -> None:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does: Prefect then ends the flow run Crashed ("aborted by an
    interrupt signal") where a plain SIGTERM left it "Running" for good, and the stage is stopped."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, handler)


UNCHANGED = re.compile(r"^Stage '([^']+)' didn't change, skipping$")


def stage_error(lines: list[str]) -> str:
    """The stage's own last line before DVC's "ERROR: failed to reproduce ..." (which wraps over lines): its one-line
    error where it stopped on bad input, else the end of its traceback."""
    end = next((i for i, ln in enumerate(lines) if ln.startswith("ERROR: failed to reproduce")), len(lines))
    return lines[end - 1] if end else (lines[-1] if lines else "")
