"""When a timing is too noisy to rank: one rule, used by the bench (re-measure, then mark) and by the
leaderboards (traces without the bench's mark). Plain arithmetic: the site must not need torch.

A measurement is unstable when the middle of its distribution is wide ((p80 - p20) / median) or its
fastest sample is far below its median: on a quiet machine repeated calls of a kernel differ by a
few per cent; a busy host (other jobs, frequency changes) makes medians of 48 ms next to minima of
0.1 ms.
"""

from __future__ import annotations

MAX_SPREAD = 0.5  # (p80 - p20) / median
MIN_OVER_MEDIAN = 0.25  # fastest sample / median


def spread_is_unstable(median_ms: float, p20_ms: float, p80_ms: float, min_ms: float) -> bool:
    if median_ms <= 0:
        return True
    return (p80_ms - p20_ms) / median_ms > MAX_SPREAD or min_ms / median_ms < MIN_OVER_MEDIAN
