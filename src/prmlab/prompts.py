"""Prompts for the policy, the judge and the critic, and the parsers for their answers.

Templates live in `prmlab/prompts/*.txt` (Python `str.format` with `{problem}` and
`{tagged_response}`); a params key may name a file of the user's instead, e.g. the official
ProcessBench template, with the same placeholders. Two answer styles:

- `critic` (ProcessBench): paragraphs `<paragraph_0>`.., the earliest wrong index in `\\boxed{}`,
  -1 if none. 0-based.
- `paper` (PRM paper, Appendix C): paragraphs numbered from 1, one analysis per paragraph, then
  "Conclusion: Correct" or "Conclusion: Incorrect" with the paragraph number in `\\boxed{}`. 1-based.

Parsers return a 0-based step index, -1 for "no error", or None when the answer cannot be parsed
or names a paragraph that does not exist. They never guess: None is never read as "correct".
"""

from __future__ import annotations

import re
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Literal

from prmlab.steps import last_boxed

Style = Literal["critic", "paper"]
BASE = {"critic": 0, "paper": 1}


def builtin(name: str) -> str:
    return resources.files("prmlab").joinpath(f"prompts/{name}.txt").read_text(encoding="utf-8")


POLICY_SYSTEM = builtin("policy_system").strip()


def policy_messages(question: str) -> list[dict]:
    """Qwen2.5-Math-Instruct's prompt: the CoT system message, the problem as the user turn."""
    return [{"role": "system", "content": POLICY_SYSTEM}, {"role": "user", "content": question}]


def load_template(style: Style, template_file: str | None = None) -> str:
    text = Path(template_file).read_text(encoding="utf-8") if template_file else builtin(
        "critic" if style == "critic" else "judge_paper"
    )
    for key in ("{problem}", "{tagged_response}"):
        if key not in text:
            raise ValueError(f"template {template_file or style}: missing placeholder {key}")
    return text


def tag_paragraphs(steps: list[str], base: int) -> str:
    return "\n\n".join(f"<paragraph_{i + base}>\n{s}\n</paragraph_{i + base}>" for i, s in enumerate(steps))


def judge_messages(template: str, style: Style, problem: str, steps: list[str]) -> list[dict]:
    content = template.format(problem=problem, tagged_response=tag_paragraphs(steps, BASE[style]))
    return [{"role": "user", "content": content}]


def _int(s: str | None) -> int | None:
    if s is None:
        return None
    m = re.fullmatch(r"\s*(-?\d+)\s*\.?\s*", s)
    return int(m.group(1)) if m else None


def parse_judgement(style: Style, text: str, n_steps: int) -> int | None:
    """Answer text -> 0-based first wrong step, -1 for none, None if unparseable or out of range."""
    if style == "critic":
        idx = _int(last_boxed(text))
        if idx is None:
            return None
        if idx == -1:
            return -1
        return idx if 0 <= idx < n_steps else None
    # paper style: the conclusion decides; the boxed paragraph number is 1-based.
    concl = re.findall(r"Conclusion:\s*(Correct|Incorrect)", text, flags=re.IGNORECASE)
    if not concl:
        return None
    if concl[-1].lower() == "correct":
        return -1
    num = _int(last_boxed(text))
    if num is None:
        m = re.findall(r"Paragraph\s+(\d+)\s*:[^\n]*\bIncorrect\b", text, flags=re.IGNORECASE)
        num = int(m[0]) if m else None
    if num is None:
        return None
    return num - 1 if 1 <= num <= n_steps else None


def judge_target(style: Style, steps: list[str], first_error: int) -> str:
    """The answer a perfect judge writes; used to train the toy judge."""
    if style == "critic":
        return f"The earliest error is in \\boxed{{{first_error}}}."
    lines = []
    last = first_error if first_error >= 0 else len(steps) - 1
    for i in range(last + 1):
        verdict = "Incorrect" if i == first_error else "Correct"
        lines.append(f"Paragraph {i + 1}: {verdict}")
    if first_error < 0:
        lines.append("Conclusion: Correct")
    else:
        lines.append(f"Conclusion: Incorrect \\boxed{{{first_error + 1}}}")
    return "\n".join(lines)


def majority(votes: list[int | None]) -> int | None:
    """Most common parsed vote; ties go to the earliest error (the stricter verdict); None if none parsed."""
    parsed = [v for v in votes if v is not None]
    if not parsed:
        return None
    counts = Counter(parsed)
    best = max(counts.values())
    tied = [v for v, c in counts.items() if c == best]
    errs = [v for v in tied if v >= 0]
    return min(errs) if errs else -1
