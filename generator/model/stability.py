"""When a timing is too noisy to rank: one rule, used by the bench (re-measure, then mark) and by the
leaderboards (traces without the bench's mark). Plain arithmetic: the site must not need torch.

A measurement is unstable when the middle of its distribution is wide ((p80 - p20) / median) or its
fastest sample is far below its median: on a quiet machine repeated calls of a kernel differ by a
few per cent; a busy host (other jobs, frequency changes) makes medians of 48 ms next to minima of
0.1 ms.

The bench also sees the host between batches: a pair's timed calls come in batches, the solution's and the
reference's interleaved so that both see the same host. A host that stalls a process for tens of milliseconds
slows one batch, whose calls then agree with each other (a tight spread) but not with the other batches: a
jump between batch medians (or between batches' ratios of solution to reference) past MAX_BATCH_JUMP is a
disturbed measurement, re-measured and then marked unstable like a wide spread.
"""

from __future__ import annotations

from typing import Sequence

MAX_SPREAD = 0.5  # (p80 - p20) / median
MIN_OVER_MEDIAN = 0.25  # fastest sample / median
# Slowest over fastest batch median of one side, or of the batches' solution/reference ratios. Honest batches on
# a busy 2-core host differ by tens of per cent; the disturbed CPU traces of issue 37 jumped 17x to 71x.
MAX_BATCH_JUMP = 3.0


def spread_is_unstable(median_ms: float, p20_ms: float, p80_ms: float, min_ms: float) -> bool:
    if median_ms <= 0:
        return True
    return (p80_ms - p20_ms) / median_ms > MAX_SPREAD or min_ms / median_ms < MIN_OVER_MEDIAN


def batches_jump(*series: Sequence[float]) -> bool:
    """Whether any series of per-batch medians (or ratios) jumps: a value not above zero, or the largest over
    the smallest past MAX_BATCH_JUMP. A series of fewer than two batches says nothing."""
    for values in series:
        values = list(values)
        if len(values) < 2:
            continue
        if min(values) <= 0 or max(values) / min(values) > MAX_BATCH_JUMP:
            return True
    return False
