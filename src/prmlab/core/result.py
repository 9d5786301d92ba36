"""What a stage's core hands back to the runner (prmlab.core.stage.run_stage): its own module, below every core,
so that a core never imports the runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LOG_MAX_BYTES = 4 * 2**20  # outputs up to this size are logged to the stage's MLflow run whole


@dataclass
class Done:
    """What a stage core hands back to the runner."""

    metrics: dict[str, Any] = field(default_factory=dict)  # --metrics file (if the stage has one) and MLflow
    summary: str = ""  # the stage's closing line
    # option (`out`, `problems_dir/x.jsonl`) -> rows (a list: JSONL) or an object (JSON): written by the runner, logged
    outputs: dict[str, Any] = field(default_factory=dict)
    logged: dict[str, Any] = field(default_factory=dict)  # this run only (time, rates): MLflow, not the file
    artifacts: list[str] = field(default_factory=list)  # more files or folders to log to the run
    file_only: list[str] = field(default_factory=list)  # metrics keys kept out of MLflow (too many keys)
