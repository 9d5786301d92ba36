"""Records passed between stages: frozen dataclasses, one JSON object per JSONL line.

Index convention everywhere: steps are 0-based and -1 means "no wrong step". Prompts that speak
1-based (the paper's judge prompt) are converted once, at the parser (prmlab.pipeline.labeling).
`None` for a first-error index means "unknown" (e.g. an unparsed judgement), never "correct".
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Iterable
from dataclasses import MISSING as _MISSING
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar


class RecordError(ValueError):
    """A JSON object that does not fit a record type (missing or unknown keys, a wrong type, a value
    out of range); the message names the field, the reader adds the file and line."""


def typed(key: str, value: Any, tp: Any, coerce: bool = False, field: bool = True) -> Any:
    """`value` checked against the type hint `tp`, the one type check of records and params (prmlab.core.params):
    strict JSON types (`"false"` is not a bool, `true` is not an int, a string is not a list of steps:
    iterating it would make every character a step; a float is finite). Returns the value, its ints made
    floats where `tp` wants a float if `coerce` (params: `lr: 1` means 1.0). Raises RecordError naming
    `key` (as "field 'key'" if `field`, else bare: params keys read `section.key`)."""
    def bad(what: str) -> RecordError:
        return RecordError(f"{name}: {what}")

    name = f"field '{key}'" if field else key

    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        arms = typing.get_args(tp)
        for arm in arms:
            try:
                return typed(key, value, arm, coerce, field)
            except RecordError:
                pass
        raise bad(f"expected {' or '.join(_tname(a) for a in arms)}, got {_jname(value)} {value!r:.60}")
    if tp is type(None):
        if value is not None:
            raise bad(f"expected null, got {value!r:.60}")
        return None
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            raise bad(f"{value!r} is not one of {list(typing.get_args(tp))}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise bad(f"expected a list, got {_jname(value)} {value!r:.60}")
        (arm,) = typing.get_args(tp)[:1] or (Any,)
        return [typed(f"{key}[{i}]", v, arm, coerce, field) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise bad(f"expected {'an object' if field else 'a mapping'}, got {_jname(value)}")
        kt, vt = typing.get_args(tp) or (Any, Any)
        return {typed(key, k, kt, coerce, field): typed(f"{key}.{k}", v, vt, coerce, field) for k, v in value.items()}
    ok = {bool: lambda v: isinstance(v, bool),
          int: lambda v: isinstance(v, int) and not isinstance(v, bool),
          float: lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v),
          str: lambda v: isinstance(v, str)}
    if tp not in ok:
        raise bad(f"unsupported type {tp}")
    if not ok[tp](value):
        raise bad(f"expected {_tname(tp)}, got {_jname(value)} {value!r:.60}")
    return float(value) if coerce and tp is float else value


def _tname(tp: Any) -> str:
    if typing.get_origin(tp) is list:
        return f"a list of {_tname(typing.get_args(tp)[0])}" if typing.get_args(tp) else "a list"
    return {bool: "true/false", int: "an integer", float: "a finite number", str: "a string",
            type(None): "null"}.get(tp, getattr(tp, "__name__", str(tp)))


def _jname(v: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object",
            type(None): "null"}.get(type(v), type(v).__name__)


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise RecordError(msg)


def _probabilities(name: str, vals: list[float] | None) -> None:
    for i, v in enumerate(vals or []):
        _need(0.0 <= v <= 1.0, f"field '{name}[{i}]': {v} is not a probability in [0, 1]")



def labels_from_first_error(n_steps: int, first_error: int) -> list[int]:
    """1 for steps before the first error, 0 at it, nothing after; all 1 when there is none."""
    return [1] * n_steps if first_error == -1 else [1] * first_error + [0]


@dataclass(frozen=True)
class Record:
    # The field that identifies a record within its file (read_jsonl rejects a repeat), or None.
    key: ClassVar[str | None] = None

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
        hints = typing.get_type_hints(cls)
        for f in fields(cls):
            if f.name in d:
                typed(f.name, d[f.name], hints[f.name])
        rec = cls(**d)
        rec.validate()
        return rec

    def validate(self) -> None:
        """Ranges and cross-field rules, beyond types; raises RecordError naming the field."""

    def ident(self) -> Any:
        """What must be unique within a file (None: nothing)."""
        return getattr(self, self.key) if self.key else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Problem(Record):
    id: str
    source: str
    question: str
    gold_answer: str | None
    meta: dict[str, Any] = field(default_factory=dict)  # toy: the solution graph
    key: ClassVar[str | None] = "id"


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
    key: ClassVar[str | None] = "response_id"

    def validate(self) -> None:
        _need(len(self.steps) >= 1, "field 'steps': a response needs at least one step")
        blank = [k for k, st in enumerate(self.steps) if not st.strip()]
        # a blank step would be rolled out and labelled as a step (a blank line in a model's reply); split_steps never writes one
        _need(not blank, f"field 'steps': step {blank[0] if blank else 0} is empty or whitespace only")
        _need(self.true_first_error is None or -1 <= self.true_first_error < len(self.steps),
              f"field 'true_first_error': {self.true_first_error} outside -1..{len(self.steps) - 1}")
        _need(self.num_tokens >= 0, f"field 'num_tokens': {self.num_tokens} < 0")

    def content_md5(self) -> str:
        """What a label was made from (problem and step text): labels carry it, so a label is never
        joined to other text that happens to have the same response id."""
        import hashlib
        import json

        return hashlib.md5(json.dumps([self.problem_id, self.steps]).encode()).hexdigest()


def distinct_responses(responses: Iterable[Response]) -> int:
    """How many responses differ in problem or step text: what a PRM learns from (a policy repeats itself,
    and 6 samples of an easy problem are often one response)."""
    return len({(r.problem_id, tuple(r.steps)) for r in responses})


# label_mc.search's values (prmlab.pipeline.labeling): each writes labels every reader takes
MC_SEARCHES = ("exhaustive", "sequential", "binary", "scan", "scan_binary")


@dataclass(frozen=True)
class MCLabel(Record):
    response_id: str
    soft: list[float]  # share of rollouts from prefix 0..i reaching the gold answer, labelled steps only
    hard: list[int]  # soft > threshold, labelled steps only (up to and including the first 0)
    first_error: int  # first step with hard label 0, -1 if none
    rollouts: int  # rollouts spent on this response
    search: str = "exhaustive"
    truncated: int = 0  # rollouts behind its estimates (shared prefixes included) cut by a length limit
    content_md5: str = ""  # Response.content_md5 of what it labels ("" from hand-made files: not checked)
    key: ClassVar[str | None] = "response_id"

    def validate(self) -> None:
        _need(len(self.hard) >= 1, "field 'hard': no labelled step")
        _need(len(self.soft) == len(self.hard), f"field 'soft': {len(self.soft)} values for {len(self.hard)} hard labels")
        _probabilities("soft", self.soft)
        _need(set(self.hard) <= {0, 1}, f"field 'hard': labels must be 0 or 1, got {sorted(set(self.hard))}")
        fe = next((i for i, h in enumerate(self.hard) if h == 0), -1)
        _need(self.first_error == fe, f"field 'first_error': {self.first_error} disagrees with the hard labels (first 0 at {fe})")
        _need(self.truncated >= 0, f"field 'truncated': {self.truncated} < 0")
        _need(self.rollouts >= 0, f"field 'rollouts': {self.rollouts} < 0")
        _need(self.search in MC_SEARCHES, f"field 'search': {self.search!r} is not one of {', '.join(MC_SEARCHES)}")


@dataclass(frozen=True)
class JudgeLabel(Record):
    response_id: str
    first_error: int | None  # 0-based, -1 = no error, None = unparsed (never "correct")
    parsed: bool
    raw: list[str]
    votes: list[int | None] = field(default_factory=list)
    truncated: int = 0  # replies cut by a length limit (max_tokens / max_model_len) before their verdict could end
    content_md5: str = ""  # Response.content_md5 of what it labels ("" from hand-made files: not checked)
    key: ClassVar[str | None] = "response_id"

    def validate(self) -> None:
        # The upper bound needs the response (its step count): consensus checks it against the samples.
        _need(self.first_error is None or self.first_error >= -1, f"field 'first_error': {self.first_error} < -1")
        _need(self.parsed == (self.first_error is not None),
              f"field 'parsed': {self.parsed} but first_error is {self.first_error}")
        bad = [v for v in self.votes if v is not None and v < -1]
        _need(not bad, f"field 'votes': {bad[0] if bad else ''} < -1")


@dataclass(frozen=True)
class PRMExample(Record):
    """TRL's stepwise-supervision format."""

    prompt: str
    completions: list[str]
    labels: list[int]
    soft: list[float] | None = None
    response_id: str = ""

    def validate(self) -> None:
        _need(len(self.completions) >= 1, "field 'completions': an example needs at least one step")
        _need(len(self.labels) == len(self.completions),
              f"field 'labels': {len(self.labels)} labels for {len(self.completions)} steps")
        _need(set(self.labels) <= {0, 1}, f"field 'labels': labels must be 0 or 1, got {sorted(set(self.labels))}")
        if self.soft is not None:
            _need(len(self.soft) == len(self.labels), f"field 'soft': {len(self.soft)} values for {len(self.labels)} labels")
            _probabilities("soft", self.soft)


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

    key: ClassVar[str | None] = "id"

    def ident(self) -> Any:
        return (self.subset, self.id)  # ids repeat across subsets in some releases, never within one

    def validate(self) -> None:
        _need(len(self.steps) >= 1, "field 'steps': an item needs at least one step")
        _need(-1 <= self.label < len(self.steps), f"field 'label': {self.label} outside -1..{len(self.steps) - 1}")
