"""PRMBench (arXiv 2501.03124) exactly as its official harness scores it (ssmisya/PRMBench at a1ae4ea, task
`prmtest_classified`; ../shared/data/README.md, "How the official harness scores PRMBench"), and stage
eval_prmbench (a PRM of any layout on it): config and core.

The harness's rules, each in one function here:
- items (`load_prmbench`): every `*.jsonl` at the top level of the folder; id `<classification>_<idx>`, a
  repeated id skipped (the first kept); each `redundency` row adds a `correct_<idx>` copy of its unedited
  solution, which serves the per-class numbers only;
- predictions: a step is judged correct when its score is above 0.5 (`validity_threshold`); a solution cut at
  the scorer's max length is scored over the steps it returned;
- per item (`item_counts`): positive class = correct step; an error step (1-based `error_steps`) judged correct
  is FP, judged wrong TN; any other step TP or FN; error steps past the last scored step are ignored;
- `matrices`: TP/FP/TN/FN pooled over every item but the `correct` copies, and per classification;
- `f1_pair`: f1 and negative_f1 as the harness computes them, -1 where a denominator is 0;
- `prmscores`: 0.5 f1 + 0.5 negative_f1 (pooled: overall; per class; `multi_solutions`, which has no
  erroneous step: f1 alone), below 0 set to 0, in points with one decimal; the three categories are unweighted
  means of their classes.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from prmlab.analysis.metrics import refuse_nan
from prmlab.core.io import DataError, iter_jsonl
from prmlab.core.params import check
from prmlab.core.result import Done
from prmlab.prms.layouts import PRMScoring, PRMSpec, checked_prms

THRESHOLD = 0.5  # the harness's validity_threshold: score > 0.5 is "this step is correct"
CORRECT = "correct"  # the unedited copies of the redundency rows (per class only)
MULTI = "multi_solutions"  # no erroneous step: its PRMScore is f1 alone
# The paper's abbreviation of each classification (spelled as in the data), by category, in its tables' order.
CATEGORIES = {"Simplicity": {"redundency": "NR", "circular": "NCL"},
              "Soundness": {"counterfactual": "ES", "step_contradiction": "SC", "domain_inconsistency": "DC",
                            "confidence": "CI"},
              "Sensitivity": {"missing_condition": "PS", "deception": "DR", MULTI: "MS"}}
ABBREV = {c: a for classes in CATEGORIES.values() for c, a in classes.items()}
# The harness's Qwen PRM wrapper strips a step's own number before scoring (`remove_step_prefix`).
STEP_PREFIX = re.compile(r"^(Step\s*\d+\.\s*|\d+\.\s*)", re.IGNORECASE)


@dataclass(frozen=True)
class PRMBenchItem:
    id: str  # <classification>_<idx>, as the harness names items
    classification: str
    question: str
    steps: list[str]
    error_steps: list[int]  # 1-based, as in the data; may point past the last step


def strip_step_prefix(step: str) -> str:
    return STEP_PREFIX.sub("", step, count=1)


def _row(d: dict, where: str) -> dict:
    need = {"classification": str, "idx": str, "modified_question": str, "modified_process": list,
            "error_steps": list}
    if d.get("classification") == "redundency":
        need |= {"original_question": str, "original_process": list}
    for k, tp in need.items():
        if k not in d:
            raise DataError(f"{where}: missing field '{k}'")
        if not isinstance(d[k], tp):
            raise DataError(f"{where}: field '{k}': expected {tp.__name__}, got {d[k]!r:.60}")
    for k in ("modified_process", "original_process"):
        if k in need and not all(isinstance(s, str) for s in d[k]):
            raise DataError(f"{where}: field '{k}': expected a list of strings")
    if not all(isinstance(e, int) and not isinstance(e, bool) for e in d["error_steps"]):
        raise DataError(f"{where}: field 'error_steps': expected 1-based step numbers, got {d['error_steps']!r:.60}")
    return d


def load_prmbench(folder: str | Path) -> list[PRMBenchItem]:
    """The harness's items: 6,969 on the released data (6,211 rows after 5 repeated ids, plus 758 `correct`)."""
    folder = Path(folder)
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise DataError(f"{folder}: no PRMBench *.jsonl files (see ../shared/data/README.md, PRMBench)")
    items: dict[str, PRMBenchItem] = {}
    for path in files:
        for lineno, d in iter_jsonl(path):
            if not isinstance(d, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object")
            d = _row(d, f"{path}:{lineno}")
            made = [PRMBenchItem(f"{d['classification']}_{d['idx']}", d["classification"], d["modified_question"],
                                 d["modified_process"], d["error_steps"])]
            if d["classification"] == "redundency":
                made.append(PRMBenchItem(f"{CORRECT}_{d['idx']}", CORRECT, d["original_question"],
                                         d["original_process"], []))
            for it in made:
                items.setdefault(it.id, it)  # a repeated id: the harness keeps the first
    return list(items.values())


def head_per_class(items: list[PRMBenchItem], k: int) -> list[PRMBenchItem]:
    """The first `k` items of each classification (0: all), in file order: a cheaper run that keeps every class."""
    if not k:
        return list(items)
    seen: Counter = Counter()
    out = []
    for it in items:
        seen[it.classification] += 1
        if seen[it.classification] <= k:
            out.append(it)
    return out


# ----------------------------------------------------------------------------------------- the metric


def item_counts(error_steps: list[int], labels: list[bool]) -> Counter:
    """TP/FP/TN/FN of one item: `labels[i]` True = step i judged correct (the positive class); only the
    labels returned count, so error steps past them are ignored."""
    err = set(error_steps)
    c: Counter = Counter(TP=0, FP=0, TN=0, FN=0)
    for i, ok in enumerate(labels):
        c[("FP" if ok else "TN") if i + 1 in err else ("TP" if ok else "FN")] += 1
    return c


def matrices(items: list[PRMBenchItem], labels: dict[str, list[bool]]) -> tuple[Counter, dict[str, Counter]]:
    """(pooled matrix over every item but the `correct` copies, one matrix per classification incl. `correct`);
    an item without labels adds nothing."""
    pooled: Counter = Counter(TP=0, FP=0, TN=0, FN=0)
    per: dict[str, Counter] = {}
    for it in items:
        if it.id not in labels:
            continue
        c = item_counts(it.error_steps, labels[it.id])
        per.setdefault(it.classification, Counter(TP=0, FP=0, TN=0, FN=0)).update(c)
        if it.classification != CORRECT:
            pooled.update(c)
    return pooled, per


def _f1(tp: int, fp: int, fn: int) -> float:
    """The harness's F1, quirks kept: a precision or recall whose denominator is 0 is -1, and so is F1
    where precision + recall is 0."""
    p = tp / (tp + fp) if tp + fp else -1
    r = tp / (tp + fn) if tp + fn else -1
    return 2 * p * r / (p + r) if p + r != 0 else -1


def f1_pair(c: Counter) -> tuple[float, float]:
    """(f1 of the correct steps, negative_f1 of the erroneous ones)."""
    return _f1(c["TP"], c["FP"], c["FN"]), _f1(c["TN"], c["FN"], c["FP"])


def prmscore(c: Counter, f1_only: bool = False) -> float:
    """PRMScore in [0, 1], not rounded: 0.5 f1 + 0.5 negative_f1 (f1 alone for multi_solutions), below 0 -> 0."""
    f1, neg = f1_pair(c)
    return max(0.0, f1 if f1_only else 0.5 * f1 + 0.5 * neg)


def points(x: float) -> float:
    """A share as points, at full precision: files keep every digit; the tables a person reads round (fmt1)."""
    return 100 * x


def prmscores(pooled: Counter, per: dict[str, Counter]) -> dict:
    """PRMScore overall, per class (by the paper's abbreviation) and per category, in points (full precision);
    a class with no scored item is left out, and so is a category with none of its classes."""
    cls = {c: prmscore(per[c], c == MULTI) for c in ABBREV if c in per}
    cats = {name: sum(cls[c] for c in members if c in cls) / sum(c in cls for c in members)
            for name, members in CATEGORIES.items() if any(c in cls for c in members)}
    return {"prmscore": points(prmscore(pooled)), "classes": {ABBREV[c]: points(v) for c, v in cls.items()},
            "categories": {k: points(v) for k, v in cats.items()}}


def prmbench_table(items: list[PRMBenchItem], scores: dict[str, list[float]], threshold: float = THRESHOLD) -> dict:
    """The official numbers from per-step scores ({item id: scores of its first steps}): PRMScores in points,
    the matrices, and the counts of what was scored (`truncated_items`: fewer scores than steps)."""
    labels = {i: [s > threshold for s in sc] for i, sc in scores.items()}
    pooled, per = matrices(items, labels)
    f1, neg = f1_pair(pooled)
    steps = {it.id: len(it.steps) for it in items}
    return {**prmscores(pooled, per), "f1": f1, "negative_f1": neg, "threshold": threshold,
            "matrix": dict(pooled), "class_matrices": {c: dict(m) for c, m in sorted(per.items())},
            "items": len(items), "scored_items": sum(i in labels for i in steps),
            "truncated_items": sum(len(sc) < steps[i] for i, sc in scores.items() if i in steps)}


def ground_truth_steps(items: list[PRMBenchItem]) -> dict[str, int]:
    """Correct and erroneous in-range steps pooled as the harness pools them (every item but `correct`)."""
    out = Counter(correct=0, erroneous=0)
    for it in items:
        if it.classification != CORRECT:
            err = set(it.error_steps)
            out.update("erroneous" if i + 1 in err else "correct" for i in range(len(it.steps)))
    return dict(out)


# ----------------------------------------------------------------------------------------- stage eval_prmbench


@dataclass(frozen=True)
class EvalPRMBenchConfig(PRMScoring):
    data: str = "../shared/data/prmbench"  # the folder of PRMBench's *.jsonl (ssmisya/PRMBench's data)
    threshold: float = THRESHOLD
    max_items: int = 0  # per classification, in file order; 0: all
    strip_step_prefix: bool = True  # the harness's Qwen wrapper strips `Step 1. ` / `1. ` before scoring

    def __post_init__(self):
        check(0 <= self.threshold <= 1, "eval_prmbench.threshold must be in [0, 1]")
        self.check_scoring("eval_prmbench")


def score_items(scorer, items: list[PRMBenchItem], strip: bool, name: str = "PRM") -> dict[str, list[float]]:
    """{item id: step scores} from any prmlab scorer (a cut item has fewer scores than steps)."""
    out = scorer.score([(it.question, [strip_step_prefix(s) for s in it.steps] if strip else it.steps)
                        for it in items])
    refuse_nan(name, out)
    return {it.id: sc for it, sc in zip(items, out)}


@dataclass(frozen=True)
class EvalPRMBenchInputs:
    """What stage eval_prmbench works on, read and checked by `prepare_eval`."""
    prms: dict[str, PRMSpec]  # by name, each checked (its layout, files)
    items: list[PRMBenchItem]  # eval_prmbench.max_items of each classification


def prepare_eval(a, cfg: dict) -> EvalPRMBenchInputs:
    c = cfg["eval_prmbench"]
    prms = checked_prms(a, cfg["train_prm"].sources, c.reference_prms, c.scorer)
    if not Path(c.data).is_dir():
        raise DataError(f"eval_prmbench.data: folder {c.data} not found (PRMBench's *.jsonl; see ../shared/data/README.md)")
    items = head_per_class(load_prmbench(c.data), c.max_items)
    return EvalPRMBenchInputs(prms, items)


def eval_prmbench(cfg: dict, data: EvalPRMBenchInputs, run) -> Done:
    """Stage eval_prmbench: every PRM on PRMBench's items, scored by the harness's rules (`prmbench_table`)."""
    c, prms, items = cfg["eval_prmbench"], data.prms, data.items
    run.params({"prms": prms, "data": c.data})
    results, rows = {}, []
    for name, spec in prms.items():
        with c.open_scorer(spec, per_prefix=True) as scorer:
            scorer.progress = f"eval_prmbench {name}"
            scores = score_items(scorer, items, c.strip_step_prefix, name)
            res = prmbench_table(items, scores, c.threshold)
            res["max_length"] = scorer.max_length
            if hasattr(scorer, "unparsed_votes"):  # a generative verifier: its sampling and its unparsed votes
                res["verifier"] = scorer.summary()
        if res["truncated_items"]:
            print(f"[eval_prmbench] {name}: {res['truncated_items']} items cut at max_length {res['max_length']}, "
                  "scored over the steps returned (as the harness does)", file=sys.stderr)
        results[f"prm/{name}"] = res
        rows += [{"model": f"prm/{name}", "id": it.id, "classification": it.classification, "n_steps": len(it.steps),
                  "step_scores": scores[it.id]} for it in items]
    m = {"items": len(items), "ground_truth_steps": ground_truth_steps(items), "models": results}
    return Done(m, f"{len(items)} items, {len(results)} models; PRMScore: "
                + ", ".join(f"{k}={v['prmscore']:.1f}" for k, v in results.items())
                + "".join(f"; {k}: {v['truncated_items']} items cut at max_length" for k, v in results.items()
                          if v["truncated_items"])
                + "".join(f"; {k}: {v['verifier']['unparsed_votes']} step votes without a verdict (scored not correct)"
                          for k, v in results.items() if v.get("verifier", {}).get("unparsed_votes")),
                outputs={"scores": rows})
