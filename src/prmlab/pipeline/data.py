"""Loaders for the real data: ProcessBench, the Best-of-N benchmarks, the GSM8K and MATH train sets.

ProcessBench comes from local JSON files (`<dir>/<subset>.json`, as in QwenLM/ProcessBench) or,
for users with hub access, `datasets.load_dataset("Qwen/ProcessBench", split=subset)`. The BoN
benchmarks (Qwen2.5-Math's `evaluation/data/<name>/test.jsonl`) have different field names per
benchmark; `load_benchmark` maps each to one `Problem` with a gold answer. MATH also comes in its
original layout, one JSON file per problem under `<split>/<subject>/<n>.json` (gold = the last
`\\boxed{}` of the solution): give the folder instead of a file. The train sets reuse the formats
(`gsm8k_train` reads like `gsm8k`, `math_train` like `math`).

`dedup` drops training problems whose normalised text equals any evaluation problem's, so no
ProcessBench or Best-of-N problem leaks into PRM training data.

`real_inputs` is stage inputs@real's core (prmlab.core.stage runs it), params `real` (RealConfig); `read_real`
reads and checks everything it writes first.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

from prmlab.core.io import DataError, iter_jsonl, read_json
from prmlab.core.manifest import model_manifest, references_manifest
from prmlab.core.params import check
from prmlab.core.preflight import check_model
from prmlab.core.records import Problem, ProcessBenchItem
from prmlab.core.result import Done
from prmlab.core.steps import duplicate_key, extract_answer, last_boxed
from prmlab.pipeline.human_labels import check_profile_sources

PROCESSBENCH_SUBSETS = ("gsm8k", "math", "olympiadbench", "omnimath")
# The paper's seven (Table 6): GSM8K, MATH, Minerva Math, GaoKao 2023 En, OlympiadBench, College Math,
# MMLU STEM. MATH500 (the first 500 of Lightman et al.'s split) stays available as a cheaper MATH.
BON_BENCHMARKS = ("gsm8k", "math", "minerva_math", "gaokao2023en", "olympiadbench", "college_math", "mmlu_stem")
FORMATS = {"gsm8k_train": "gsm8k", "math_train": "math", "math500": "math"}


def _pb_item(d: dict, subset: str, where: str) -> ProcessBenchItem:
    try:
        steps = d["steps"]
        if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
            raise DataError(f"{where}: 'steps' must be a list of strings")
        label = d["label"]
        if isinstance(label, bool) or not isinstance(label, int):
            raise DataError(f"{where}: field 'label': expected an integer, got {label!r:.60}")
        if not isinstance(d["final_answer_correct"], bool):  # bool("false") would be True
            raise DataError(f"{where}: field 'final_answer_correct': expected true/false, got {d['final_answer_correct']!r:.60}")
        if not steps:
            raise DataError(f"{where}: field 'steps': an item needs at least one step")
        if not -1 <= label < len(steps):
            raise DataError(f"{where}: label {label} outside -1..{len(steps) - 1}")
        return ProcessBenchItem(
            id=str(d["id"]),
            generator=str(d.get("generator", "")),
            problem=d["problem"],
            steps=list(steps),
            final_answer_correct=d["final_answer_correct"],
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
    if name == "math":
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
    raise DataError(f"unknown benchmark '{name}'; known: {sorted(set(BON_BENCHMARKS) | set(FORMATS))}")


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


def _rows(path: Path) -> list[tuple[str, str, dict]]:
    """(where, default id, row) for a JSONL file, or for a folder of one-JSON-per-problem files (MATH layout)."""
    if path.is_dir():
        files = sorted(path.rglob("*.json"), key=lambda f: (f.parent.name, int(f.stem) if f.stem.isdigit() else 0, f.stem))
        if not files:
            raise DataError(f"{path}: folder holds no <subject>/<n>.json problem files")
        return [(str(f), f"{f.parent.name}/{f.stem}", read_json(f)) for f in files]
    return [(f"{path}:{ln}", str(ln - 1), d) for ln, d in iter_jsonl(path)]


def load_benchmark(name: str, path: str | Path) -> list[Problem]:
    """One benchmark file (or MATH folder) -> problems (gold_answer None where the row has none).
    Bad rows raise naming the file and line."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: benchmark '{name}' not found")
    fmt = FORMATS.get(name, name)
    out = []
    for where, default_id, d in _rows(path):
        try:
            gold = _gold(fmt, d)
            q = _question(fmt, d)
        except (KeyError, ValueError, SyntaxError, TypeError, json.JSONDecodeError) as e:
            raise DataError(f"{where}: cannot read a {name} problem ({type(e).__name__}: {e})") from None
        # A row without a gold answer is kept with gold_answer=None: stages skip and count it.
        gold = str(gold).strip() if gold is not None and str(gold).strip() else None
        pid = str(d.get("idx", d.get("id", d.get("unique_id", default_id))))
        out.append(Problem(id=f"{name}-{pid}", source=name, question=q, gold_answer=gold))
    return out


def dedup(train: list[Problem], eval_texts: dict[str, list[str]]) -> tuple[list[Problem], dict[str, int]]:
    """Drop training problems whose normalised text matches an evaluation problem's (and repeats
    within train). Returns the kept problems and counts: removed per evaluation set, and in total."""
    owner: dict[str, str] = {}
    for name, texts in eval_texts.items():
        for t in texts:
            owner.setdefault(duplicate_key(t), name)
    kept, seen = [], set()
    removed = {f"removed_{name}": 0 for name in eval_texts} | {"removed_train_repeats": 0}
    for p in train:
        key = duplicate_key(p.question)
        if key in owner:
            removed[f"removed_{owner[key]}"] += 1
        elif key in seen:
            removed["removed_train_repeats"] += 1
        else:
            seen.add(key)
            kept.append(p)
    removed["removed_total"] = len(train) - len(kept)
    return kept, removed


@dataclass(frozen=True)
class RealConfig:
    """`name: path` of benchmark files or MATH folders (names as above), and ProcessBench's source."""

    train: dict[str, str] = field(default_factory=dict)
    eval: dict[str, str] = field(default_factory=dict)
    processbench: str = "hub:Qwen/ProcessBench"
    max_train: int = 0  # 0: all
    max_per_benchmark: int = 0  # 0: all
    dedup: bool = True

    def __post_init__(self):
        check(bool(self.train), "real.train must name at least one training set")
        check(bool(self.eval), "real.eval must name at least one Best-of-N benchmark")
        check(self.max_train >= 0 and self.max_per_benchmark >= 0, "real.max_train, real.max_per_benchmark must be >= 0")

    def check_paths(self) -> None:
        """Every file named exists (checked by the stage, so the params load anywhere)."""
        for sec in ("train", "eval"):
            for name, path in getattr(self, sec).items():
                check(Path(path).exists(), f"real.{sec}.{name}: {path} not found")
        if not self.processbench.startswith("hub:"):
            check(Path(self.processbench).is_dir(), f"real.processbench: folder {self.processbench} not found")


def real_problems(cfg: RealConfig, subsets: list[str]) -> tuple[dict[str, list], dict]:
    """Problems per split (train deduplicated against every evaluation set), ProcessBench items, and
    every evaluation set's problem texts ({set name: texts}, uncapped)."""
    evals: list[Problem] = []
    counts: dict = {}
    for name, path in cfg.eval.items():
        rows = load_benchmark(name, path)
        counts[f"eval_{name}"] = len(rows)
        evals += rows[: cfg.max_per_benchmark] if cfg.max_per_benchmark else rows
    pb: list[ProcessBenchItem] = []
    for s in subsets:
        pb += load_processbench(s, cfg.processbench)
    train: list[Problem] = []
    for name, path in cfg.train.items():
        rows = load_benchmark(name, path)
        counts[f"train_{name}"] = len(rows)
        train += rows
    # Against the full benchmarks, not the capped ones: a capped run must not train on what a full one tests.
    # Written out too (eval_texts.json): human_data@<source> drops released labels on these problems.
    eval_texts = {name: [p.question for p in load_benchmark(name, path)] for name, path in cfg.eval.items()}
    eval_texts |= {f"processbench_{s}": [i.problem for i in pb if i.subset == s] for s in subsets}
    if cfg.dedup:
        train, removed = dedup(train, eval_texts)
        counts |= removed
    if cfg.max_train:
        train = train[: cfg.max_train]
    counts |= {"train_problems": len(train), "eval_problems": len(evals), "processbench_items": len(pb),
               "train_without_gold": sum(p.gold_answer is None for p in train),
               "eval_without_gold": sum(p.gold_answer is None for p in evals)}
    return {"train": train, "eval": evals, "processbench": pb, "eval_texts": eval_texts}, counts


@dataclass(frozen=True)
class RealInputs:
    """What stage inputs@real writes out, read and checked by `read_real`."""
    sets: dict[str, list]  # train, eval, processbench, eval_texts (real_problems)
    counts: dict  # what reading them counted (metrics)
    references: dict  # the reference PRMs' manifest (references_manifest)


def read_real(a, cfg: dict) -> RealInputs:
    """Stage inputs@real's checks (the files `real` names, human label sources, model folders), then real_problems."""
    cfg["real"].check_paths()
    raw = check_profile_sources(a)
    for role in ("policy", "judge"):  # a missing folder is named as such, never tried as a hub name
        if cfg[role].backend != "openai":
            check_model(f"{role}.model", cfg[role].model)
    subsets = (raw.get("eval_processbench") or {}).get("subsets")
    check(isinstance(subsets, list), "eval_processbench.subsets: expected the list of ProcessBench subsets to load")
    refs = references_manifest(raw, toy=False)  # before the data: a missing reference folder is one line first
    sets, m = real_problems(cfg["real"], subsets)
    return RealInputs(sets, m | {"references": len(refs)}, refs)


def real_inputs(cfg: dict, data: RealInputs, run) -> Done:
    """Stage inputs@real: what read_real read, and the manifests of the models params name (the reference PRMs'
    included: prmlab.core.manifest.references_manifest)."""
    sets, m, refs = data.sets, dict(data.counts), data.references
    manifests = {role: model_manifest(role, cfg[role].model) for role in ("policy", "judge")}
    m["models"] = {r: v["model"] + (" (local)" if v["local"] else "") for r, v in manifests.items()}
    return Done(m, f"{m['train_problems']} training problems ({m.get('removed_total', 0)} removed as evaluation "
                   f"problems), {m['eval_problems']} Best-of-N problems over {len(cfg['real'].eval)} benchmarks, "
                   f"{m['processbench_items']} ProcessBench items; models: " + ", ".join(f"{r}={v}" for r, v in m["models"].items()),
                outputs={"problems_dir/train.jsonl": sets["train"], "problems_dir/eval.jsonl": sets["eval"],
                         "processbench": sets["processbench"], "problems_dir/eval_texts.json": sets["eval_texts"],
                         **{f"manifests/{r}.json": v for r, v in manifests.items()}, "references": refs},
                file_only=["models"])
