"""Scores: pure arithmetic over speedups and latencies (geomean, median, fast_p, its curve, competition ranks)."""

from __future__ import annotations

import bisect
import math
from typing import Iterable, Optional, Sequence

# Speedups within this relative tolerance are equal (geomeans of equal ratios can differ in the last bits).
TIE_TOLERANCE = 1e-9
# The fast_p curves run from p = 0 to a little past the largest speedup, and at least to this.
CURVE_MIN_END = 2.0
CURVE_MARGIN = 1.1


def geomean(values: Iterable[float]) -> Optional[float]:
    """Geometric mean of positive numbers; None for none."""
    logs = [math.log(v) for v in values]
    return math.exp(math.fsum(logs) / len(logs)) if logs else None


def median(values: Iterable[float]) -> Optional[float]:
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return None
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def fast_p(speedups: Sequence[Optional[float]], total: int, p: float) -> float:
    """Share of `total` workloads where the solution is correct and its speedup is > p.

    `speedups` holds one item per workload the solution got right: its speedup, or None where
    none is known (no baseline result); every other workload of `total` was failed or not run.
    """
    if total <= 0:
        return 0.0
    return sum(1 for s in speedups if s is not None and s > p) / total


def fast_p_curve(speedups: Sequence[Optional[float]], total: int, end: float) -> tuple[tuple[float, float], ...]:
    """fast_p as a step function of p on [0, end]: (p, fast_p(p)) at 0, at every distinct speedup
    (where it drops, since the comparison is strict) and at `end`; plot with horizontal-then-vertical steps."""
    known = sorted(s for s in speedups if s is not None)
    points = sorted({0.0, *(s for s in known if s < end), end})
    if total <= 0:
        return tuple((p, 0.0) for p in points)
    # fast_p at each point, from the sorted speedups (n log n: speedups are mostly distinct)
    return tuple((p, (len(known) - bisect.bisect_right(known, p)) / total) for p in points)


def curve_end(speedups: Iterable[Optional[float]]) -> float:
    """Where fast_p curves stop: past the largest speedup, at least CURVE_MIN_END, on a round 0.5 step."""
    largest = max((s for s in speedups if s is not None), default=0.0)
    return max(CURVE_MIN_END, math.ceil(largest * CURVE_MARGIN * 2) / 2)


def competition_ranks(keys: Sequence[tuple[Optional[float], ...]]) -> list[int]:
    """Ranks 1, 1, 3, ... for `keys` already in ranking order; equal keys (within TIE_TOLERANCE,
    None equal to None) share a rank."""
    ranks: list[int] = []
    for i, key in enumerate(keys):
        if i and _same(key, keys[i - 1]):
            ranks.append(ranks[-1])
        else:
            ranks.append(i + 1)
    return ranks


def _same(a: tuple, b: tuple) -> bool:
    for x, y in zip(a, b):
        if x is None or y is None:
            if x is not y:
                return False
        elif not math.isclose(x, y, rel_tol=TIE_TOLERANCE, abs_tol=0.0):
            return False
    return True

