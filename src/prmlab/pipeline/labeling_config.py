"""Params `label_mc` and `label_judge` (stages label_mc and label_judge, prmlab.pipeline.labeling), light: a stage that
only reads them (train_judge@toy reads the judge's prompt style) loads no labelling code, so an edit to MC's rules
reruns the labelling stages and not the committed toy judge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from prmlab.core.params import check
from prmlab.core.records import MC_SEARCHES
from prmlab.engines.config import SamplingParams, check_sampling

SEARCHES = MC_SEARCHES  # label_mc.search (the records' own list: a label of each reads back)


@dataclass(frozen=True)
class LabelMCConfig(SamplingParams):
    MINIMUM = {"top_k": -1}  # -1: off (prmlab.core.params: every other number is >= 0)
    N_FIELD = "k"  # rollouts per step prefix: its Sampling's n

    k: int = 8
    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = -1
    max_tokens: int = 1024
    threshold: float = 0.0
    search: Literal["exhaustive", "sequential", "binary", "scan", "scan_binary"] = "exhaustive"
    compare_sample: int = 64  # search other than exhaustive: responses also labelled exhaustively, on the same draws
    shard_size: int = 64  # responses per shard
    seed: int = 0

    def __post_init__(self):
        check(self.k >= 1, "label_mc.k must be >= 1")
        check(0 <= self.threshold < 1, "label_mc.threshold must be in [0, 1)")
        check(self.shard_size >= 1, "label_mc.shard_size must be >= 1")
        check(self.compare_sample >= 0, "label_mc.compare_sample must be >= 0")
        check_sampling("label_mc", self.sampling, n="k")


class JudgeSampling(SamplingParams):
    """What a judge pass's params share (label_judge, label_methods.reference): `n` replies a response at the given
    sampling, majority-voted, in shards. The fields are each class's own (in its params order); `SECTION` names
    them in errors."""

    SECTION = ""
    MINIMUM = {"top_k": -1}  # -1: off (prmlab.core.params: every other number is >= 0)

    def __post_init__(self):
        s = self.SECTION
        check(self.n >= 1, f"{s}.n must be >= 1")
        check(self.n == 1 or self.temperature > 0, f"{s}: majority vote (n > 1) needs temperature > 0")
        check(self.shard_size >= 1, f"{s}.shard_size must be >= 1")
        check_sampling(s, self.sampling)


@dataclass(frozen=True)
class LabelJudgeConfig(JudgeSampling):
    SECTION = "label_judge"

    style: Literal["critic", "paper"] = "critic"
    template_file: str | None = None
    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int = 2048
    shard_size: int = 128
    seed: int = 0
