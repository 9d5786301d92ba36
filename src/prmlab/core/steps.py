"""Split responses into steps and extract final answers; the key two problem texts are duplicates by.

Qwen2.5-Math responses separate steps by a blank line ("\n\n"), which is also how the PRM paper and
ProcessBench split them. The final answer is the content of the last `\boxed{...}` (braces
balanced), else GSM8K's `#### n`, else None.
"""

from __future__ import annotations

import re

STEP_SEP = "\n\n"


def split_steps(text: str) -> list[str]:
    return [s.strip() for s in text.split(STEP_SEP) if s.strip()]


def join_steps(steps: list[str]) -> str:
    return STEP_SEP.join(steps)


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} or \\fbox{...}, with nested braces; None if absent/unclosed.
    The brace-less `\\boxed 2` (a few MATH solutions write it) counts too, up to `$` or a space."""
    bare = list(re.finditer(r"\\boxed ([^\s{$][^\s$]*)", text))
    starts = [m.end() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    if bare and (not starts or bare[-1].start() > starts[-1]):
        return bare[-1].group(1).rstrip(".")
    for start in reversed(starts):
        depth, i = 1, start
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            return text[start : i - 1].strip()
    return None


_GSM8K = re.compile(r"####\s*([^\n]+)")


def extract_answer(text: str) -> str | None:
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed
    m = _GSM8K.findall(text)
    if m:
        return m[-1].strip().replace(",", "")
    return None


def duplicate_key(text: str) -> str:
    """The key two problems are duplicates by: lower-case letters and digits only (drops spacing,
    punctuation and LaTeX markup differences such as `$`, `\\(` or `\\,`); multiple-choice options cut."""
    text = text.split("\nAnswer Choices:")[0]
    return re.sub(r"[^a-z0-9]", "", text.lower())
