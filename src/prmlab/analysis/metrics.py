"""Small pure metric functions, each tested on hand-checked tables.

ProcessBench (arXiv 2412.06559): a prediction is the earliest wrong step (-1: none). Accuracy on
erroneous samples (label != -1; exact index match), accuracy on correct samples (label == -1), and
F1 = their harmonic mean, per subset; the headline is the unweighted mean of the subset F1s.
Reported in percent, as the papers do.

Best-of-N, with these tie rules (the same as Qwen2.5-Math's evaluation scripts):
- maj@k: answers grouped by exact string after `normalize_answer`; the largest group wins, ties go to the
  group seen first; a response with no answer does not vote; no votes -> wrong.
- rm@k / prm@k: the highest score among the first k; ties go to the earliest response.
- pass@k: any of the first k is correct.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from prmlab.core.grading import normalize_answer
from prmlab.core.io import DataError, read_jsonl_lines


def flawed_among_correct(responses) -> float:
    """The share (0-1) of the verifier-labelled correct responses that have a wrong step (Fig. 6-7's policies
    reach right answers through flawed steps); 0 where none is correct."""
    ok = [r for r in responses if r.correct and r.true_first_error is not None]
    return sum(r.true_first_error != -1 for r in ok) / max(len(ok), 1)


def refuse_nan(prm: str, scores: list[list[float]]) -> None:
    """A DataError if any step score is NaN (a diverged checkpoint): NaN compares false with everything, so
    thresholds, picks and AUC ties would give figures that mean nothing, or never finish."""
    bad = sum(math.isnan(x) for s in scores for x in s)
    if bad:
        raise DataError(f"PRM {prm!r}: {bad} of {sum(map(len, scores))} step scores are NaN (a diverged checkpoint?); "
                        "no figure is computed from them")


def check_step_scores(where: str, scores, unit: bool = True, hint: str = "") -> list[float]:
    """A row's `step_scores` where a score file enters (every reader: the report, analyze_bias, `prmlab eval`'s tables,
    `prmlab score`): a list of finite numbers, each a probability in [0, 1] when `unit` (`hint` then says why); else a
    DataError naming `where` (file:line) and the field. NaN compares false with everything: NaN scores read by the
    report had moved the findings' intervals without a word."""
    if not isinstance(scores, list):
        raise DataError(f"{where}: field 'step_scores': expected a list of {'probabilities' if unit else 'numbers'}, "
                        f"got {scores!r:.60}")
    for i, v in enumerate(scores):
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            what = "a probability in [0, 1]" if unit else "a finite number"
        elif unit and not 0 <= v <= 1:
            what = "a probability in [0, 1]" + hint
        else:
            continue
        raise DataError(f"{where}: field 'step_scores[{i}]': {v!r:.40} is not {what}")
    return scores


def read_score_rows(path, ids: tuple[str, ...], scored: bool = True) -> list[dict]:
    """An eval stage's per-item score file (eval_bon's: ids prm, problem_id, response_id; eval_processbench's: model,
    subset, id), each row's `ids` strings and its step scores (`check_step_scores`) checked as they are read; with
    `scored` False a row may have none (a critic's ProcessBench rows)."""
    rows = []
    for ln, r in read_jsonl_lines(path):
        if not isinstance(r, dict):
            raise DataError(f"{path}:{ln}: expected a JSON object, got {type(r).__name__}")
        for k in ids:
            if not isinstance(r.get(k), str):
                raise DataError(f"{path}:{ln}: field '{k}': expected a string, got {r.get(k)!r:.60}")
        if scored or "step_scores" in r:
            check_step_scores(f"{path}:{ln}", r.get("step_scores"))
        rows.append(r)
    return rows


def harmonic(a: float, b: float) -> float:
    return 2 * a * b / (a + b) if a + b > 0 else 0.0


def processbench_scores(labels: Sequence[int], preds: Sequence[int | None]) -> dict[str, float]:
    """Percent accuracies on erroneous / correct samples and their F1. A None prediction is wrong."""
    err = [p == y for y, p in zip(labels, preds) if y != -1]
    ok = [p == -1 for y, p in zip(labels, preds) if y == -1]
    acc_err = 100.0 * sum(err) / len(err) if err else 0.0
    acc_ok = 100.0 * sum(ok) / len(ok) if ok else 0.0
    return {"error_acc": acc_err, "correct_acc": acc_ok, "f1": harmonic(acc_err, acc_ok),
            "n_error": len(err), "n_correct": len(ok)}


def first_below(scores: Sequence[float], threshold: float) -> int:
    """A PRM's prediction: the earliest step whose score is below the threshold, else -1."""
    return next((i for i, s in enumerate(scores) if s < threshold), -1)


def best_threshold(step_scores: Sequence[Sequence[float]], labels: Sequence[int]) -> tuple[float, float]:
    """The threshold maximising ProcessBench F1 on these items (ProcessBench tunes it on GSM8K).

    Candidates: midpoints between consecutive distinct scores, plus both ends; returns (threshold, F1).
    """
    vals = sorted({s for ss in step_scores for s in ss})
    cands = [0.0, 1.0 + 1e-9] + [(a + b) / 2 for a, b in zip(vals, vals[1:])] + [v + 1e-9 for v in vals[-1:]]
    best = (0.5, -1.0)
    for t in sorted(set(cands)):
        f1 = processbench_scores(labels, [first_below(ss, t) for ss in step_scores])["f1"]
        if f1 > best[1] + 1e-12:
            best = (t, f1)
    return best


def step_auc(step_scores: Sequence[Sequence[float]], labels: Sequence[int]) -> float | None:
    """Step-level AUC (threshold-free): the chance that a step before an item's first error scores
    above an item's first wrong step, ties counting half (Mann-Whitney U / (pos x neg)). Only the
    steps ProcessBench labels count: those up to and including the first error (all steps of an
    error-free item). None without a positive or a negative step."""
    scored = [(s, 1) for ss, y in zip(step_scores, labels) for s in (ss if y == -1 else ss[:y])]
    scored += [(ss[y], 0) for ss, y in zip(step_scores, labels) if y != -1 and y < len(ss)]
    if any(s != s for s, _ in scored):  # NaN: equal to nothing, so the tie loop below would never advance
        raise ValueError("step_auc: a step score is NaN")
    pos = sum(c for _, c in scored)
    neg = len(scored) - pos
    if not pos or not neg:
        return None
    # Rank-sum with average ranks over tied scores: O(n log n), exact with ties.
    scored.sort(key=lambda t: t[0])
    rank_sum, i = 0.0, 0
    while i < len(scored):
        j = i
        while j < len(scored) and scored[j][0] == scored[i][0]:
            j += 1
        avg_rank = (i + 1 + j) / 2  # ranks i+1..j
        rank_sum += avg_rank * sum(c for _, c in scored[i:j])
        i = j
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)


def within_problem_auc(problems: Sequence[Sequence[tuple[float, int | None]]]) -> float | None:
    """Each problem's responses as (score, first error): the chance that an error-free response (-1)
    scores above a flawed one (>= 0) of the same problem, ties counting half; a response without a
    verifier label (None) takes no part. This is what Best-of-N needs: a step AUC pooled over problems
    also rewards telling hard problems from easy ones, which picks nothing. None without a pair."""
    wins = total = 0.0
    for rs in problems:
        clean = [s for s, e in rs if e == -1]
        flawed = [s for s, e in rs if e is not None and e >= 0]
        wins += sum((c > f) + 0.5 * (c == f) for c in clean for f in flawed)
        total += len(clean) * len(flawed)
    return wins / total if total else None


def aggregate(step_scores: Sequence[float], how: str) -> float:
    """Response score from step scores: `product` (paper default), `min` or `last`."""
    if not step_scores:
        return -math.inf
    if how == "product":
        return math.prod(step_scores)
    if how == "min":
        return min(step_scores)
    if how == "last":
        return step_scores[-1]
    raise ValueError(f"unknown aggregation {how!r}; use product, min or last")


def majority_index(answers: Sequence[str | None]) -> int | None:
    """Index of the first response of the largest answer group (ties: the group seen first)."""
    groups: dict[str, list[int]] = {}
    for i, a in enumerate(answers):
        if a is None or not str(a).strip():
            continue
        groups.setdefault(normalize_answer(str(a)), []).append(i)
    if not groups:
        return None
    best = max(groups.values(), key=len)  # max() keeps the first of equal-length groups
    return best[0]


def maj_at_k(answers: Sequence[str | None], correct: Sequence[bool], k: int) -> bool:
    i = majority_index(answers[:k])
    return i is not None and bool(correct[i])


def best_of_n(step_scores: Sequence[Sequence[float]], how: str = "product") -> int:
    """Index of the response a reward model picks among N: the top `aggregate` score; ties go to the
    earliest (a response with no scored step scores -inf, never picked over one with a score)."""
    vals = [aggregate(s, how) for s in step_scores]
    return max(range(len(vals)), key=lambda j: (vals[j], -j))


def pass_at_k(correct: Sequence[bool], k: int) -> bool:
    return any(correct[:k])


def random_pick(correct: Sequence[bool], k: int) -> float:
    """Expected accuracy of picking one of the first k responses uniformly at random: the share
    right. A reward model that does not beat it ranks responses no better than chance."""
    return sum(map(bool, correct[:k])) / len(correct[:k]) if correct[:k] else 0.0


def argmin_position(step_scores: Sequence[float]) -> tuple[int, float]:
    """(index of the lowest step score, its relative position in [0, 1]); ties -> the earliest."""
    i = min(range(len(step_scores)), key=lambda j: (step_scores[j], j))
    n = len(step_scores)
    return i, (i / (n - 1) if n > 1 else 1.0)


def min_on_last_share(step_scores: Sequence[Sequence[float]]) -> float:
    """Share (%) of the multi-step responses (by their step scores) whose lowest step score is on the final step,
    ties to the earliest: Fig. 8's measure, for analyze_bias and the findings alike."""
    return 100.0 * mean([float(argmin_position(s)[0] == len(s) - 1) for s in step_scores if len(s) > 1])


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def min_position_stats(rows: list[dict], bins: int) -> dict:
    """rows: {problem_id, step_scores} of one PRM.

    A minimum shared by two or more steps counts as the earliest of them (`argmin_position`), so a tie
    never adds to the final-step share; `tie_share` (percent of the multi-step responses) says how often
    that rule decided. Ties are exact float equality: a PRM that saturates (1.0, 0.0) ties often."""
    by_problem: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r["step_scores"]:
            by_problem[r["problem_id"]].append(r)
    rel_all, hist, tied = [], [0] * bins, []
    multi = [r for r in rows if len(r["step_scores"]) > 1]  # one-step responses say nothing about position
    for r in multi:
        i, rel = argmin_position(r["step_scores"])
        tied.append(float(r["step_scores"].count(r["step_scores"][i]) > 1))
        rel_all.append(rel)
        hist[min(int(rel * bins), bins - 1)] += 1
    picks = [rs[best_of_n([r["step_scores"] for r in rs])]["step_scores"] for rs in by_problem.values()]
    total = max(sum(hist), 1)
    return {"min_on_last_step_bon_selected": min_on_last_share(picks),
            "min_on_last_step_all": min_on_last_share([r["step_scores"] for r in multi]),
            "mean_relative_min_position": mean(rel_all), "tie_share": 100.0 * mean(tied),
            # A row per bin, not a key per bin: the bin edges depend on analyze_bias.bins, and
            # nested keys become DVC/MLflow columns.
            "relative_position_hist": [{"lo": b / bins, "hi": (b + 1) / bins, "share": hist[b] / total} for b in range(bins)],
            "responses": len(multi), "selected": sum(len(s) > 1 for s in picks)}
