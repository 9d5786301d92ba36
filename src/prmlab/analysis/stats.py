"""Uncertainty for the report's findings: percentile bootstrap over evaluation units, and the verdict
rule that turns an interval into reproduced / not reproduced / inconclusive.

    lo, hi = bootstrap_ci(units, stat, n_boot=1000, seed=0)   # stat(list of units) -> float
    verdict(lo, hi, direction=+1)                              # the claim: the quantity is > 0

Units are resampled with replacement (problems for Best-of-N, items for ProcessBench, stratified by
subset there); a paired statistic (a difference of two PRMs on the same units) is computed on the
same resample, so their shared noise cancels. A verdict is never decided by a bare sign: only an
interval that excludes the null says anything.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TypeVar

U = TypeVar("U")

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
N_BOOT = 1000  # bootstrap resamples behind every interval of the study (findings, eval_bon's over_maj)


def bootstrap_values(units: Sequence[U], stat: Callable[[list[U]], float], n_boot: int = N_BOOT, seed: int = 0,
                     strata: Callable[[U], object] | None = None) -> list[float]:
    """`stat` on each of `n_boot` resamples of `units` (within each stratum if given), in draw order."""
    rng = random.Random(seed)
    groups: dict[object, list[U]] = {}
    for u in units:
        groups.setdefault(strata(u) if strata else 0, []).append(u)
    vals = []
    for _ in range(n_boot):
        sample: list[U] = []
        for g in groups.values():
            sample += [g[rng.randrange(len(g))] for _ in g]
        vals.append(stat(sample))
    return vals


def percentile_interval(vals: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    if not vals:
        return float("nan"), float("nan")
    v, n = sorted(vals), len(vals)
    a = (1 - level) / 2
    return v[min(int(a * n), n - 1)], v[min(int((1 - a) * n), n - 1)]


def bootstrap_ci(units: Sequence[U], stat: Callable[[list[U]], float], n_boot: int = N_BOOT, seed: int = 0,
                 level: float = 0.95, strata: Callable[[U], object] | None = None) -> tuple[float, float]:
    """Percentile interval of `stat` over `n_boot` resamples of `units` (within each stratum if given)."""
    if not units:
        return float("nan"), float("nan")
    return percentile_interval(bootstrap_values(units, stat, n_boot, seed, strata), level)


def verdict(lo: float, hi: float, direction: int = 1, null: float = 0.0) -> str:
    """The claim is `direction * (x - null) > 0`: reproduced when the whole interval agrees, not
    reproduced when the whole interval says the opposite, inconclusive when it straddles the null."""
    if lo != lo or hi != hi:  # NaN: no data
        return INCONCLUSIVE
    a, b = sorted((direction * (lo - null), direction * (hi - null)))
    if a > 0:
        return REPRODUCED
    if b < 0:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def equivalence_verdict(lo: float, hi: float, margin: float) -> str:
    """The claim is |x| <= margin (e.g. "hard and soft labels are equal before filtering")."""
    if lo != lo or hi != hi:
        return INCONCLUSIVE
    if -margin <= lo and hi <= margin:
        return REPRODUCED
    if lo > margin or hi < -margin:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def all_of(verdicts: Sequence[str]) -> str:
    """A claim made of parts: reproduced if every part is, not reproduced if any part is not."""
    if any(v == NOT_REPRODUCED for v in verdicts):
        return NOT_REPRODUCED
    if verdicts and all(v == REPRODUCED for v in verdicts):
        return REPRODUCED
    return INCONCLUSIVE


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-a: (concordant - discordant) / all pairs; a tie in either ranking counts 0."""
    n, s = len(a), 0
    for i in range(n):
        for j in range(i + 1, n):
            s += ((a[i] > a[j]) - (a[i] < a[j])) * ((b[i] > b[j]) - (b[i] < b[j]))
    return 2 * s / (n * (n - 1)) if n > 1 else 1.0
