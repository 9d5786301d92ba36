"""PRM training: the config of stage train_prm (the core follows in #28's move).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prmlab.params import check


@dataclass(frozen=True)
class TrainPRMConfig:
    # One PRM per label source; dvc.yaml generates train_prm@<source> from this list.
    sources: list[str] = field(default_factory=lambda: ["mc_hard", "mc_soft", "judge", "consensus"])
    lr: float = 1e-5
    epochs: float = 1.0
    steps: int = 0  # optimizer steps per PRM; > 0 overrides epochs, so every source gets the same number of updates
    batch_size: int = 8
    grad_accum: int = 1
    max_length: int = 2048
    warmup_ratio: float = 0.05
    weight_decay: float = 0.0
    seed: int = 0
    soft_loss: Literal["bce", "mse"] = "bce"
    bf16: bool = False
    max_examples: int = 0  # 0: all

    def __post_init__(self):
        from prmlab.human_labels import HUMAN_SOURCES, TOY_HUMAN
        from prmlab.labeling import SOURCES

        known = SOURCES + HUMAN_SOURCES + (TOY_HUMAN,)
        unknown = sorted(set(self.sources) - set(known))
        check(bool(self.sources) and not unknown, f"train_prm.sources: unknown {unknown} (known: {list(known)})"
              if unknown else "train_prm.sources must name at least one label source")
        check(len(set(self.sources)) == len(self.sources), "train_prm.sources: a source is named twice")
        check(self.lr > 0 and self.epochs > 0, "train_prm.lr and train_prm.epochs must be > 0")
        check(self.steps >= 0, "train_prm.steps must be >= 0 (0: train_prm.epochs decides)")
        check(self.batch_size >= 1 and self.grad_accum >= 1, "train_prm.batch_size, grad_accum must be >= 1")
        check(self.max_length >= 16, "train_prm.max_length must be >= 16")
