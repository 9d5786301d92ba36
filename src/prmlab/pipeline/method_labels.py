"""The record the newer labelling methods write (stage label_method@<source>, prmlab.pipeline.label_methods), light.

Inputs: none (a record type). Outputs: `MethodLabel`, one per response in data/labels/methods/<source>.jsonl.
Its own module, beside prmlab.core.records, so that the training sets (prmlab.pipeline.training_sets) read it without loading
the engines that make it, and so that adding a method touches no record every stage imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from prmlab.core.records import Record, RecordError


@dataclass(frozen=True)
class MethodLabel(Record):
    response_id: str
    source: str  # the label source that wrote it (prmlab.core.sources.METHODS)
    labels: list[int]  # the step labels the method keeps, from step 0 ([]: none kept: filtered out, or unparsed)
    first_error: int | None  # 0-based, -1: no wrong step; None: the method names no first error for it
    evidence: dict[str, Any] = field(default_factory=dict)  # what decided it (both first errors, the verdict, ...)
    content_md5: str = ""  # Response.content_md5 of what it labels
    key: ClassVar[str | None] = "response_id"

    def validate(self) -> None:
        if any(x not in (0, 1) for x in self.labels):
            raise RecordError(f"field 'labels': {self.labels!r:.60} holds a value other than 0 or 1")
        if self.first_error is None:
            return
        # a named first error is the labels' own: 1s up to it, 0 at it (-1: all 1s)
        want = len(self.labels) - 1 if self.first_error != -1 else -1
        if self.first_error < -1 or self.first_error != want or 0 in self.labels[:-1] or (want == -1) == (0 in self.labels):
            raise RecordError(f"field 'first_error': {self.first_error} does not end labels {self.labels!r:.60}")
