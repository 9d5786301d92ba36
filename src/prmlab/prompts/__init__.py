"""Prompts for the policy, the judge and the critic, and the parsers for their answers.

Templates live beside this module, `prmlab/prompts/*.txt` (Python `str.format`); a params key may name a file of
the user's instead, e.g. the official ProcessBench template or the PRM paper's judge prompt. A
template is read as ProcessBench's `run_eval.py` reads its own (`.read().strip()`), must hold
`{tagged_response}` and one of `{problem}` / `{tagged_problem}` (the problem inside
`<math_problem>` tags, as the paper's prompt has it), and is checked by a trial `str.format` when
loaded, so a stray `\\boxed{}` fails at once, naming the file. The solution's steps become
`<paragraph_k>` blocks joined exactly as `run_eval.py` does; the whole prompt is one user message.
Two answer styles:

- `critic` (ProcessBench): paragraphs `<paragraph_0>`.., the earliest wrong index in `\\boxed{}`,
  -1 if none. 0-based; the last `\\boxed{}` of the answer is the verdict.
- `paper` (PRM paper, Appendix C): paragraphs `<paragraph_1>`.., one `<analysis_k>` block per
  paragraph in order, stopping at the first wrong one, then `<conclusion>Correct</conclusion>` or
  `<conclusion>Incorrect</conclusion>` with no index: "Incorrect" means the error is in the last
  paragraph analysed (the last `<analysis_k>` opening tag), 1-based, converted here once.

Parsers return a 0-based step index, -1 for "no error", or None when the answer cannot be parsed
or names a paragraph that does not exist. They never guess: None is never read as "correct".
"""

from __future__ import annotations

import re
from collections import Counter
from importlib import resources
from pathlib import Path
from string import Formatter
from typing import Literal

from prmlab.core.steps import last_boxed

Style = Literal["critic", "paper"]
BASE = {"critic": 0, "paper": 1}


def _builtin_path(name: str) -> Path:
    return Path(str(resources.files("prmlab").joinpath(f"prompts/{name}.txt"))).resolve()


def builtin(name: str) -> str:
    return resources.files("prmlab").joinpath(f"prompts/{name}.txt").read_text(encoding="utf-8")


POLICY_SYSTEM = builtin("policy_system").strip()


def policy_messages(question: str) -> list[dict]:
    """Qwen2.5-Math-Instruct's prompt: the CoT system message, the problem as the user turn."""
    return [{"role": "system", "content": POLICY_SYSTEM}, {"role": "user", "content": question}]


PLACEHOLDERS = ("problem", "tagged_problem", "tagged_response")


def load_template(style: Style, template_file: str | None = None) -> str:
    """The template text, read as ProcessBench's run_eval.py does (`.read().strip()`), checked now.

    A trailing newline in the file therefore changes nothing. The template must use
    `{tagged_response}` and `{problem}` or `{tagged_problem}`, no other placeholder; literal braces
    (e.g. `\\boxed{}`) must be escaped as `{{ }}`. Raises ValueError naming the file.
    """
    where = template_file or f"built-in {style}"
    builtin_file = {"critic": "critic", "paper": "judge_paper"}
    for other, name in builtin_file.items():
        # The built-in prompt of the other style would be parsed with this style's numbering: refused.
        if template_file and other != style and Path(template_file).resolve() == _builtin_path(name):
            raise ValueError(f"template {template_file} is the built-in {other} prompt, but the style is {style}: "
                             f"set the style and its template together (built-in: src/prmlab/prompts/"
                             f"{builtin_file[style]}.txt)")
    if template_file:
        with open(template_file, encoding="utf-8") as f:
            raw = f.read()
        text = raw.strip()
        lead = raw[: len(raw) - len(raw.lstrip())].count("\n")  # blank lines strip() removed, for line numbers
    else:
        text = builtin("critic" if style == "critic" else "judge_paper").strip()
        lead = 0
    hint = "; escape literal braces as {{ }}"
    try:
        fields = {name for _, name, _, _ in Formatter().parse(text) if name is not None}
        unknown = sorted(fields - set(PLACEHOLDERS))
        if unknown:
            shown = ", ".join("{" + n + "}" for n in unknown)
            # the line of the first one, so a user finds the unescaped `\boxed{}` in a long template
            line = next((i for i, ln in enumerate(text.splitlines(), 1)
                         if any(name is not None and name in unknown for _, name, _, _ in _safe_parse(ln))), None)
            at = f" on line {line + lead}" if line else ""
            raise ValueError(f"unknown placeholder(s) {shown}{at} (known: {{problem}}, {{tagged_problem}}, "
                             f"{{tagged_response}})")
        text.format(problem="P", tagged_problem="<math_problem>\nP\n</math_problem>", tagged_response="R")
    except (ValueError, KeyError, IndexError, AttributeError) as e:
        raise ValueError(f"template {where}: {e}{hint}") from None
    if "tagged_response" not in fields:
        raise ValueError(f"template {where}: missing placeholder {{tagged_response}}")
    if not fields & {"problem", "tagged_problem"}:
        raise ValueError(f"template {where}: missing placeholder {{problem}} or {{tagged_problem}}")
    return text


def _safe_parse(line: str) -> list:
    try:
        return list(Formatter().parse(line))
    except ValueError:
        return []


def tag_paragraphs(steps: list[str], base: int) -> str:
    """Steps as `<paragraph_k>` blocks, built literally as ProcessBench's run_eval.py builds them."""
    tagged_response = ""
    for i, step in enumerate(steps):
        tagged_response += f"<paragraph_{i + base}>\n{step}\n</paragraph_{i + base}>\n\n"
    return tagged_response.strip()


def tag_problem(problem: str) -> str:
    """The problem as the PRM paper's judge prompt shows it (its `{tagged_problem}`)."""
    return f"<math_problem>\n{problem}\n</math_problem>"


def judge_messages(template: str, style: Style, problem: str, steps: list[str]) -> list[dict]:
    """The whole prompt as one user message (as run_eval.py sends it); paragraphs numbered per style."""
    content = template.format(problem=problem, tagged_problem=tag_problem(problem),
                              tagged_response=tag_paragraphs(steps, BASE[style]))
    return [{"role": "user", "content": content}]


def _int(s: str | None) -> int | None:
    if s is None:
        return None
    m = re.fullmatch(r"\s*(-?\d+)\s*\.?\s*", s)
    return int(m.group(1)) if m else None


_CONCLUSION = re.compile(r"<conclusion>(.*?)</conclusion>", re.DOTALL | re.IGNORECASE)
# Only the whole verdict word, alone but for whitespace, punctuation or markdown around it.
_VERDICT = re.compile(r"[\W_]*\b(correct|incorrect)\b[\W_]*", re.IGNORECASE)
_ANALYSIS_OPEN = re.compile(r"<analysis_(\d+)>", re.IGNORECASE)


def parse_judgement(style: Style, text: str, n_steps: int) -> int | None:
    """Answer text -> 0-based first wrong step, -1 for none, None if unparseable or out of range.

    critic: the last `\\boxed{}` holds the 0-based index (-1: none).
    paper: the last `<conclusion>` block decides; "Correct" -> -1; "Incorrect" -> the last
    `<analysis_k>` opening tag written before it (1-based k; closing tags are not read, as the
    paper's own example closes analysis 2 with `</analysis_3>`). Any other verdict -> None.
    """
    if style == "critic":
        idx = _int(last_boxed(text))
        if idx is None:
            return None
        if idx == -1:
            return -1
        return idx if 0 <= idx < n_steps else None
    blocks = list(_CONCLUSION.finditer(text))
    if not blocks:
        return None
    verdict = _VERDICT.fullmatch(blocks[-1].group(1))
    if verdict is None:
        return None
    if verdict.group(1).lower() == "correct":
        return -1
    opened = _ANALYSIS_OPEN.findall(text, 0, blocks[-1].start())
    if not opened:
        return None
    k = int(opened[-1]) - BASE["paper"]
    return k if 0 <= k < n_steps else None


def judge_target(style: Style, steps: list[str], first_error: int, checks: list[str] | None = None) -> str:
    """The answer a perfect judge writes, in the style's format; used to train the toy judge.

    checks: one line per paragraph up to the first wrong one (prmlab.toy.world.check_steps), the
    recalculation written before the verdict: critic style lists them as `k: check` lines before
    the boxed index, paper style puts each in its `<analysis_k>` block.
    """
    last = first_error if first_error >= 0 else len(steps) - 1
    if checks is not None and len(checks) != last + 1:
        raise ValueError(f"judge_target: {len(checks)} checks for {last + 1} paragraphs up to the verdict")
    if style == "critic":
        lines = [f"{i}: {c}" for i, c in enumerate(checks or [])]
        return "\n".join([*lines, f"The earliest error is in \\boxed{{{first_error}}}."])
    parts = []
    for i in range(last + 1):
        k = i + BASE["paper"]
        verdict = "incorrect" if i == first_error else "correct"
        body = checks[i] if checks is not None else f"Step {k} is {verdict}."
        parts.append(f"<analysis_{k}>\n{body}\n</analysis_{k}>")
    parts.append(f"<conclusion>{'Incorrect' if first_error >= 0 else 'Correct'}</conclusion>")
    return "\n".join(parts)


def critic_sampling_defaults(model_name: str, n: int, temperature: float | None = None,
                             top_p: float | None = None, top_k: int | None = None) -> tuple[float, float, int]:
    """(temperature, top_p, top_k) of a critic, as ProcessBench's run_eval.py picks them.

    A None argument takes the official default for the model's family: Qwen2.5-Math models
    (name contains "Qwen2.5-Math", any case) vote with T=0.7, top_p=0.8, top_k=20; other models
    with T=1.0, top_p=0.9 and no top_k (-1). With n == 1 and no temperature given: greedy
    (T=0, top_p=1, top_k=-1). Explicit values always win.
    """
    if "qwen2.5-math" in model_name.lower():
        fam = (0.7, 0.8, 20)
    else:
        fam = (1.0, 0.9, -1)
    if n == 1 and temperature is None:
        fam = (0.0, 1.0, -1)
    return (fam[0] if temperature is None else float(temperature),
            fam[1] if top_p is None else float(top_p),
            fam[2] if top_k is None else int(top_k))


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
