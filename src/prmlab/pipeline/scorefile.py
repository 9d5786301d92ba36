"""Scores from anywhere (`prmlab score`): the official ProcessBench and PRMBench numbers from a JSONL of
per-step scores that any other tool wrote, so any PRM can sit in our tables without our scorers.

The file: one row per item, `{"id": ..., "step_scores": [...]}`, ids as the benchmark's (ProcessBench's `id`,
PRMBench's `<classification>_<idx>`). Fewer scores than steps is an item cut at the tool's max length (counted,
and scored as our eval stages score a cut item); anything else that does not fit the benchmark (an unknown or
repeated id, more scores than steps, a score that is not a finite number, another key) is a one-line DataError
naming the file, line and field. Items of the benchmark without a row are counted (`missing_items`), never
scored as anything.

ProcessBench: the threshold tuned on `threshold_subset` (ProcessBench: gsm8k) as stage eval_processbench tunes
it, unless one is given; per subset error / correct accuracy and F1, `f1_avg` their unweighted mean. PRMBench: the
harness's 0.5 (prmlab.pipeline.prmbench), `prmscore` overall, per class and per category. All in points.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from prmlab.analysis.metrics import best_threshold, check_step_scores, mean
from prmlab.core.io import DataError, iter_jsonl, read_jsonl
from prmlab.core.params import read_params
from prmlab.core.records import ProcessBenchItem
from prmlab.pipeline.data import load_processbench
from prmlab.pipeline.prmbench import THRESHOLD, load_prmbench, prmbench_table
from prmlab.pipeline.processbench import prediction, subset_table

BENCHMARKS = ("processbench", "prmbench")
KEYS = {"id", "step_scores"}


def read_scores(path: str | Path, n_steps: dict[str, int], benchmark: str, unit: bool = False) -> dict[str, list[float]]:
    """{id: step scores} from a scores file, each row checked against the benchmark's items ({id: steps}); `unit`:
    every score a probability in [0, 1] (PRMBench's harness cuts at 0.5: logits in [-9, 9] had scored 38.6 where
    their probabilities score 43.3, without a word)."""
    out: dict[str, list[float]] = {}
    first: dict[str, int] = {}
    for ln, row in iter_jsonl(path):
        where = f"{path}:{ln}"
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected an object {{\"id\": ..., \"step_scores\": [...]}}")
        if extra := sorted(set(row) - KEYS):
            raise DataError(f"{where}: field '{extra[0]}': unknown key (a row holds only 'id' and 'step_scores')")
        for k in sorted(KEYS - set(row)):
            raise DataError(f"{where}: field '{k}': missing")
        i, sc = row["id"], row["step_scores"]
        if not isinstance(i, str) or i not in n_steps:
            eg = next(iter(n_steps), "?")
            raise DataError(f"{where}: field 'id': {i!r:.80} is not a {benchmark} item id (e.g. {eg!r})")
        if i in first:
            raise DataError(f"{where}: field 'id': {i!r} repeated (first on line {first[i]})")
        check_step_scores(where, sc, unit, f" ({benchmark} cuts step scores at 0.5: give the PRM's probability of a "
                                           "correct step, e.g. sigmoid of a logit)")
        if len(sc) > n_steps[i]:
            raise DataError(f"{where}: field 'step_scores': {len(sc)} scores for item {i!r} of {n_steps[i]} steps")
        first[i], out[i] = ln, [float(s) for s in sc]
    if not out:
        raise DataError(f"{path}: no rows")
    return out


def _counts(n_steps: dict[str, int], scores: dict[str, list[float]]) -> dict:
    missing = len(n_steps) - len(scores)
    return {"scored_items": len(scores), "missing_items": missing,
            "truncated_items": sum(len(sc) < n_steps[i] for i, sc in scores.items())}


def load_pb_items(data: str | Path) -> list[ProcessBenchItem]:
    """ProcessBench's items: a folder of `<subset>.json` (as released) or an items JSONL (data/processbench/items.jsonl)."""
    data = Path(data)
    if data.is_dir():
        subsets = sorted({p.stem for p in data.glob("*.json*")})
        if not subsets:
            raise DataError(f"{data}: no ProcessBench <subset>.json files")
        return [it for s in subsets for it in load_processbench(s, str(data))]
    return read_jsonl(data, ProcessBenchItem)


def score_processbench(path: str | Path, items: list[ProcessBenchItem], threshold: float | None,
                       threshold_subset: str = "gsm8k") -> dict:
    by_id: dict[str, ProcessBenchItem] = {}
    for it in items:
        if it.id in by_id:
            raise DataError(f"ProcessBench items: id {it.id!r} is in subsets {by_id[it.id].subset!r} and {it.subset!r}; "
                            "a scores file cannot tell them apart")
        by_id[it.id] = it
    n_steps = {i: len(it.steps) for i, it in by_id.items()}
    scores = read_scores(path, n_steps, "ProcessBench")
    subsets: dict[str, list[ProcessBenchItem]] = {}
    for it in items:
        if it.id in scores:
            subsets.setdefault(it.subset, []).append(it)
    if threshold is None:
        if threshold_subset not in subsets:
            raise DataError(f"{path}: no item of subset {threshold_subset!r} to tune the threshold on (subsets: "
                            f"{sorted(subsets)}); give --threshold or --threshold-subset")
        tune = subsets[threshold_subset]
        threshold = best_threshold([scores[it.id] for it in tune], [it.label for it in tune])[0]
        tuned_on = threshold_subset
    else:
        tuned_on = None
    table = subset_table(subsets, {s: [prediction(it, scores[it.id], threshold) for it in its]
                                   for s, its in subsets.items()})
    out = {s: {k: table[s][k] for k in ("error_acc", "correct_acc", "f1", "n_error", "n_correct")} for s in subsets}
    return {"benchmark": "processbench", **out, "f1_avg": mean([table[s]["f1"] for s in subsets]),
            "threshold": threshold, "threshold_subset": tuned_on, **_counts(n_steps, scores)}


def score_prmbench(path: str | Path, data: str | Path, threshold: float | None) -> dict:
    items = load_prmbench(data)
    n_steps = {it.id: len(it.steps) for it in items}
    scores = read_scores(path, n_steps, "PRMBench", unit=True)
    t = prmbench_table(items, scores, THRESHOLD if threshold is None else threshold)
    return {"benchmark": "prmbench", **t, **_counts(n_steps, scores)}


def score_command(benchmark: str, path: str | Path, data: str | None, threshold: float | None, subset: str | None,
                  params: Path, real_processbench: Path) -> dict:
    """`prmlab score`: `score_file` with the command's defaults. ProcessBench's items: the real benchmark
    (`real_processbench`) where it is, else the toy study's data/processbench/items.jsonl; PRMBench's: params
    `eval_prmbench.data`. The threshold subset: gsm8k on the real benchmark (the paper's), the toy's params'
    `eval_processbench.threshold_subset` on an items JSONL."""
    cfg = read_params(params) if params.exists() else {}
    if data is None and benchmark == "processbench":  # the real benchmark first, else the toy study's build
        found = [p for p in (real_processbench, Path("data/processbench/items.jsonl")) if p.exists()]
        if not found:
            raise DataError(f"no ProcessBench items at {real_processbench} or data/processbench/items.jsonl: "
                            "pass --data (a folder of <subset>.json or an items JSONL)")
        data = str(found[0])
    elif data is None:
        data = (cfg.get("eval_prmbench") or {}).get("data", "../shared/data/prmbench")
    real = Path(data).is_dir()
    subset = subset or ("gsm8k" if real else (cfg.get("eval_processbench") or {}).get("threshold_subset", "gsm8k"))
    return score_file(benchmark, path, data, threshold, subset)


def score_file(benchmark: str, path: str | Path, data: str | Path, threshold: float | None = None,
               threshold_subset: str = "gsm8k") -> dict:
    """The benchmark's official numbers (points) for the scores in `path`; the items from `data`."""
    if benchmark not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {benchmark!r}; use {' or '.join(BENCHMARKS)}")
    if threshold is not None and not math.isfinite(threshold):
        raise DataError(f"--threshold {threshold}: not a finite number")
    if benchmark == "prmbench" and threshold is not None and not 0 <= threshold <= 1:
        raise DataError(f"--threshold {threshold}: PRMBench's threshold is a probability in [0, 1] (the harness's is 0.5)")
    res = (score_processbench(path, load_pb_items(data), threshold, threshold_subset) if benchmark == "processbench"
           else score_prmbench(path, data, threshold))
    if res["missing_items"]:
        print(f"prmlab score: {path}: {res['missing_items']} of {res['missing_items'] + res['scored_items']} "
              f"{benchmark} items have no row; scored without them (missing_items)", file=sys.stderr)
    return res
