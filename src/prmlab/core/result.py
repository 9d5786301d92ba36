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


class Unrecorded:
    """A core's `run` outside a stage: it records nothing. A benchmark or a notebook calls a core with its inputs
    dataclass and this (`train_prm(cfg, TrainInputs(...), Unrecorded())`); inside a stage the runner passes the
    MLflow run (prmlab.core.tracking.StageRun), which has the same methods."""

    id = ""

    def metrics(self, values: dict[str, Any], step: int | None = None) -> None:
        pass

    def params(self, values: dict[str, Any]) -> None:
        pass

    def tag(self, key: str, value: Any) -> None:
        pass

    def artifact(self, path, subdir: str | None = None, name: str | None = None) -> None:
        pass

    def figure(self, fig, name: str) -> None:
        pass

    def describe_experiment(self, markdown: str) -> None:
        pass

    def stage_runs(self) -> dict[str, str]:
        return {}

    def model(self, path, name: str, model_type: str, params: dict | None = None, max_bytes: int = 0) -> str:
        return ""
