"""Loaders for the real evaluation data: ProcessBench and the Best-of-N benchmarks.

ProcessBench comes from local JSON files (`<dir>/<subset>.json`, as in QwenLM/ProcessBench) or,
for users with hub access, `datasets.load_dataset("Qwen/ProcessBench", split=subset)`. The BoN
benchmarks (Qwen2.5-Math's `evaluation/data/<name>/test.jsonl`) have different field names per
benchmark; `load_benchmark` maps each to one `Problem` with a gold answer.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from prmlab.io import DataError, iter_jsonl, read_json
from prmlab.records import Problem, ProcessBenchItem
from prmlab.steps import extract_answer, last_boxed

PROCESSBENCH_SUBSETS = ("gsm8k", "math", "olympiadbench", "omnimath")
BON_BENCHMARKS = ("gsm8k", "math500", "minerva_math", "gaokao2023en", "olympiadbench", "college_math", "mmlu_stem")


def _pb_item(d: dict, subset: str, where: str) -> ProcessBenchItem:
    try:
        steps = d["steps"]
        if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
            raise DataError(f"{where}: 'steps' must be a list of strings")
        label = int(d["label"])
        if not -1 <= label < len(steps):
            raise DataError(f"{where}: label {label} outside -1..{len(steps) - 1}")
        return ProcessBenchItem(
            id=str(d["id"]),
            generator=str(d.get("generator", "")),
            problem=d["problem"],
            steps=list(steps),
            final_answer_correct=bool(d["final_answer_correct"]),
            label=label,
            subset=subset,
        )
    except KeyError as e:
        raise DataError(f"{where}: missing field {e}") from None


def load_processbench(subset: str, source: str) -> list[ProcessBenchItem]:
    """`source`: a folder with `<subset>.json` (or `.jsonl`), or `hub:<dataset name>`."""
    if source.startswith("hub:"):
        import datasets  # only for users with hub access

        ds = datasets.load_dataset(source[4:], split=subset)
        return [_pb_item(d, subset, f"{source}[{subset}][{i}]") for i, d in enumerate(ds)]
    folder = Path(source)
    path = folder / f"{subset}.json"
    if path.exists():
        rows = read_json(path)
        if not isinstance(rows, list):
            raise DataError(f"{path}: expected a JSON array of ProcessBench cases")
        return [_pb_item(d, subset, f"{path}[{i}]") for i, d in enumerate(rows)]
    path = folder / f"{subset}.jsonl"
    if path.exists():
        return [_pb_item(d, subset, f"{path}:{ln}") for ln, d in iter_jsonl(path)]
    raise DataError(f"{folder}: no {subset}.json or {subset}.jsonl (ProcessBench subset '{subset}')")


def _strip_dollars(s: str) -> str:
    s = s.strip()
    while len(s) >= 2 and s[0] == "$" and s[-1] == "$":
        s = s[1:-1].strip()
    return s


def _gold(name: str, d: dict) -> str | None:
    if name == "gsm8k":
        return extract_answer(d["answer"])  # "#### 18"
    if name in ("math500", "math"):
        return d.get("answer") or last_boxed(d["solution"])
    if name == "minerva_math":
        return last_boxed(d["solution"])
    if name in ("gaokao2023en", "college_math"):
        return _strip_dollars(d["answer"])
    if name == "olympiadbench":
        fa = d["final_answer"]
        if isinstance(fa, str):
            fa = ast.literal_eval(fa) if fa.startswith("[") else [fa]
        return ", ".join(_strip_dollars(a) for a in fa)
    if name == "mmlu_stem":
        return "ABCD"[int(d["answer"])]
    raise DataError(f"unknown benchmark '{name}'; known: {list(BON_BENCHMARKS)}")


def _question(name: str, d: dict) -> str:
    if name == "mmlu_stem":
        choices = d["choices"]
        if isinstance(choices, str):
            choices = ast.literal_eval(choices)
        opts = "\n".join(f"({'ABCD'[i]}) {c}" for i, c in enumerate(choices))
        return f"{d['question'].strip()}\nAnswer Choices: {opts}"
    for key in ("question", "problem"):
        if key in d:
            return d[key]
    raise KeyError("question")


def load_benchmark(name: str, path: str | Path) -> list[Problem]:
    """One benchmark file -> problems (gold_answer None where the file has none). Bad rows raise naming file and line."""
    path = Path(path)
    out = []
    for ln, d in iter_jsonl(path):
        try:
            gold = _gold(name, d)
            q = _question(name, d)
        except (KeyError, ValueError, SyntaxError, json.JSONDecodeError) as e:
            raise DataError(f"{path}:{ln}: cannot read a {name} problem ({type(e).__name__}: {e})") from None
        # A row without a gold answer is kept with gold_answer=None: stages skip and count it.
        gold = str(gold).strip() if gold is not None and str(gold).strip() else None
        pid = str(d.get("idx", d.get("id", d.get("unique_id", ln - 1))))
        out.append(Problem(id=f"{name}-{pid}", source=name, question=q, gold_answer=gold))
    return out
