"""Records passed between stages: frozen dataclasses, one JSON object per JSONL line.

Index convention everywhere: steps are 0-based and -1 means "no wrong step". Prompts that speak
1-based (the paper's judge prompt) are converted once, at the parser (prmlab.labeling).
`None` for a first-error index means "unknown" (e.g. an unparsed judgement), never "correct".
"""

from __future__ import annotations

from dataclasses import MISSING as _MISSING
from dataclasses import asdict, dataclass, field, fields
from typing import Any


class RecordError(ValueError):
    """A JSON object that does not fit a record type (missing or unknown keys)."""


@dataclass(frozen=True)
class Record:
    @classmethod
    def from_dict(cls, d: dict[str, Any]):
        if not isinstance(d, dict):
            raise RecordError(f"expected a JSON object for {cls.__name__}, got {type(d).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise RecordError(f"unknown key(s) {unknown} for {cls.__name__}")
        required = {f.name for f in fields(cls) if f.default is _MISSING and f.default_factory is _MISSING}
        missing = sorted(required - set(d))
        if missing:
            raise RecordError(f"missing key(s) {missing} for {cls.__name__}")
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Problem(Record):
    id: str
    source: str
    question: str
    gold_answer: str | None
    meta: dict[str, Any] = field(default_factory=dict)  # toy: the solution graph


@dataclass(frozen=True)
class Response(Record):
    problem_id: str
    response_id: str
    steps: list[str]
    answer: str | None
    correct: bool
    true_first_error: int | None = None  # toy world: exact verifier's earliest wrong step
    error_kind: str | None = None  # toy world: slip / operand / unparseable / answer / ...
    num_tokens: int = 0


@dataclass(frozen=True)
class MCLabel(Record):
    response_id: str
    soft: list[float]  # share of rollouts from prefix 0..i reaching the gold answer, labelled steps only
    hard: list[int]  # soft > threshold, labelled steps only (up to and including the first 0)
    first_error: int  # first step with hard label 0, -1 if none
    rollouts: int  # rollouts spent on this response
    search: str = "exhaustive"


@dataclass(frozen=True)
class JudgeLabel(Record):
    response_id: str
    first_error: int | None  # 0-based, -1 = no error, None = unparsed (never "correct")
    parsed: bool
    raw: list[str]
    votes: list[int | None] = field(default_factory=list)


@dataclass(frozen=True)
class PRMExample(Record):
    """TRL's stepwise-supervision format."""

    prompt: str
    completions: list[str]
    labels: list[int]
    soft: list[float] | None = None
    response_id: str = ""


@dataclass(frozen=True)
class ProcessBenchItem(Record):
    id: str
    generator: str
    problem: str
    steps: list[str]
    final_answer_correct: bool
    label: int  # earliest wrong step, -1 if all correct
    subset: str = ""
    gold_answer: str | None = None
