"""The trusted side's statistics of a pair's samples.

`summarize` turns samples into the trace's statistics; `enough` says when to stop; `unstable` says
when their spread shows the host was busy. The samples come from the worker's clock (sandboxed/clock.py),
bounded from outside by pair.py and outside.py.
"""

from __future__ import annotations

import math
import statistics
import time

from ...model.stability import spread_is_unstable
from .options import TimingConfig

SLOW_BUDGETS = 2  # calls too slow for min_samples in this many budgets stop there with what they have


def summarize(samples_ms: list[float], timer: str) -> dict:
    ordered = sorted(samples_ms)
    n = len(ordered)

    def quantile(q: float) -> float:  # linear interpolation, as numpy's default
        pos = q * (n - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

    mean = statistics.fmean(ordered)
    stderr = statistics.stdev(ordered) / math.sqrt(n) if n > 1 else 0.0
    return {"latency_ms": statistics.median(ordered), "mean_ms": mean, "min_ms": ordered[0],
            "max_ms": ordered[-1], "p20_ms": quantile(0.2), "p80_ms": quantile(0.8),
            "stderr_ms": stderr, "samples": n, "timer": timer}


def unstable(stats: dict) -> bool:
    """The rule in model/stability.py; such a number is re-measured, then recorded with unstable: true."""
    return spread_is_unstable(stats["latency_ms"], stats["p20_ms"], stats["p80_ms"], stats["min_ms"])


def enough(samples: list[float], cfg: TimingConfig, started: float) -> bool:
    """Whether `samples` (timed since `started`, perf_counter seconds) settle the median: max_samples,
    or min_samples with a relative standard error under target_rse, or the budget spent."""
    n = len(samples)
    if n >= cfg.max_samples:
        return True
    if n < cfg.min_samples:
        return time.perf_counter() - started > cfg.budget_s * SLOW_BUDGETS  # a very slow call: take what we have
    mean = statistics.fmean(samples)
    rse = statistics.stdev(samples) / math.sqrt(n) / mean if mean > 0 and n > 1 else 0.0
    return rse < cfg.target_rse or time.perf_counter() - started > cfg.budget_s
