"""What a run says about where and from what it computed: the machine (CPU, its instruction sets, the torch build),
the git commit, the commits that made a study, file digests, and where its runs are recorded (the tracking store's
URI, the UI's address).

Inputs: the environment, /proc/cpuinfo, git. Outputs: values that stages write into their metrics (`machine`), the
report's provenance sentence (`study_commits`, `tracking_uri`, `ui_url`) and resume keys (`md5_path`). Because those
values land in stage outputs, this module is a DVC dependency of the stages that import it; the recorder that only
logs them (prmlab.core.tracking: MLflow, progress lines) is not.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from prmlab.core.params import ParamsError, url_secrets

DEFAULT_URI = "sqlite:///mlflow.db"


def tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI", DEFAULT_URI)


def ui_url() -> str:
    """Where `make ui` serves the MLflow UI (PRMLAB_UI_URL, default http://127.0.0.1:5000), as the report's and the
    flow's run links start; one that carries a credential (`url_secrets`) is refused: the links are written."""
    base = os.environ.get("PRMLAB_UI_URL", "http://127.0.0.1:5000").rstrip("/")
    if what := url_secrets(base):
        raise ParamsError(f"PRMLAB_UI_URL carries {what}, which the report's and the flow's run links would hold in "
                          "clear: set it to the UI's address alone")
    return base


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
    trained weights differ across x86 machines of one kind (an Intel Xeon with AVX-512/AMX and an
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
        # a seed's figures are its machine's (CPU or GPU), so a seed's file names both
        info |= {"torch_kernels": torch.backends.cpu.get_cpu_capability(), "threads": str(torch.get_num_threads()),
                 "torch": torch.__version__}
        if torch.cuda.is_initialized():  # asking otherwise would initialise CUDA in a process that never used it
            info["gpu"] = torch.cuda.get_device_name()
    return info


# machine()'s keys that are not the CPU's: tagged prmlab.<key>, the CPU's prmlab.cpu.<key>
NOT_CPU = ("torch", "gpu")


def git(project_dir: str | Path, *args: str, timeout: float = 60) -> str:
    """`git args` in `project_dir`, its stdout; a CalledProcessError (or TimeoutExpired) where git fails."""
    return subprocess.run(["git", *args], cwd=project_dir, capture_output=True, text=True, timeout=timeout, check=True).stdout


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# What makes a study besides its params: its code, graph and committed toy models (prmlab.runs.store.STUDY_INPUTS less
# params.yaml, which `study_commits` compares by value).
STUDY_CODE = ("src", "stages", "dvc.yaml", "models", "data/models")


def study_commits(params: str | Path = "params.yaml") -> dict[str, Any]:
    """Which commits made this run (the report's provenance): `code`, HEAD (full hash; "unknown" without
    git) and `dirty`, the STUDY_CODE paths with uncommitted changes; `params`, the commit whose params it ran: the
    oldest of the newest commits along `git log -- <params>` whose file holds the workspace's values (parsed, so an
    edit of comments alone is no new params), None where the workspace's values are in no commit (a study run
    before its params were committed, or a `dvc exp run` with a seed's values: the commit that files its outputs
    holds them) or git cannot say. Not HEAD: the study is run before the commit that adds its outputs, so HEAD
    then is the previous study's (a report that named HEAD named a commit whose params were the previous study's)."""
    import yaml

    out: dict[str, Any] = {"code": git_commit(), "dirty": [], "params": None}
    try:
        changed = [line[3:].split(" -> ")[-1] for line in git(".", "status", "--porcelain", "--untracked-files=no", "--",
                                                               *STUDY_CODE).splitlines()]
        out["dirty"] = [c for c in STUDY_CODE if any(f == c or f.startswith(c + "/") for f in changed)]
        now = yaml.safe_load(Path(params).read_text())
        for rev in git(".", "log", "--format=%H", "--", str(params)).split():
            if yaml.safe_load(git(".", "show", f"{rev}:./{params}")) != now:
                break
            out["params"] = rev
    except (OSError, subprocess.SubprocessError, yaml.YAMLError):
        pass  # no git, no params file: `params` stays None and the report says it cannot name one
    return out
