"""Small helpers shared by stage `main()`s: argument parsing and the stage run context."""

from __future__ import annotations

import argparse
import os
import sys


def parse_args(description: str, **paths: str) -> argparse.Namespace:
    """Each keyword becomes a required `--name PATH` option (paths live in dvc.yaml only)."""
    ap = argparse.ArgumentParser(description=description)
    for name, help_ in paths.items():
        ap.add_argument(f"--{name.replace('_', '-')}", dest=name, required=not help_.startswith("?"), help=help_.lstrip("?"))
    ap.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"), help="params file")
    return ap.parse_args()


def fail(stage: str, err: Exception) -> None:
    print(f"[{stage}] error: {err}", file=sys.stderr)
    sys.exit(2)


def run_main(stage: str, main) -> None:
    """Run a stage's `main()`: bad params or data (ParamsError, DataError: messages that name the key,
    or the file, line and field) end as one line `[stage] error: ...` and exit 2, never a traceback.
    Other exceptions are bugs or environment failures and keep their traceback."""
    from prmlab.io import DataError
    from prmlab.params import ParamsError

    try:
        main()
    except (ParamsError, DataError) as e:
        fail(stage, e)


def set_threads() -> None:
    """Torch on every core; and no per-load "Loading weights" bar from transformers (a stage loads
    models many times; its own progress lines say what it is doing)."""
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    torch.set_num_threads(max(1, os.cpu_count() or 1))
