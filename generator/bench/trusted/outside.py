"""The per-call outside bound (the CPU): each call's time as the trusted process saw it, from the marks a worker
sends just before and just after each call, timestamped there as they arrive.

Everything in a solution's process can be patched, its clock included; the arrival times of its marks cannot. A
batch's calls count at least their outside intervals (start mark to end mark) less the marks' own cost, measured on
the reference's worker in the same pair, within CALL_SHARE or CALL_SLACK_MS; medians over the calls on both sides,
so a mark the trusted process reads late (its own scheduling on a busy host) moves nothing. A stopped or slowed
clock shows at the scale of a call, where the batch bound (pair.py's charge) forgives a slack per batch that
covered a small kernel whole; its resolution is the jitter of the marks' cost (on the shared 2-core host: 20 to
40 us between batches). What it does not see: a solution that forges its marks (or withholds them and sends its own)
moves its time out of the calls into the harness's phases between them, which only the batch bound weighs: those
phases (drawing input sets, the guards, the digests) drift between batches by tens of percent on a shared 2-core
host, so comparing them with the reference's batches charged honest solutions (measured: +20 % to +130 % at batch
sizes 64 to 2,048 of rmsnorm_h4096). What bounds them: the CPU time the solution's sandbox used (cpufloor.py).
"""

from __future__ import annotations

import statistics

CALL_SHARE, CALL_SLACK_MS = 0.05, 0.010  # the bar on the CPU: 5 % or 10 us a call


def call_intervals(marks: list[float]) -> list[float]:
    """ms from each call's start mark to its end mark (marks: arrival times, start and end of each call)."""
    return [end - start for start, end in zip(marks[0::2], marks[1::2])]


def mark_cost(ref: list[tuple[list[float], list[float]]]) -> float:
    """The marks' own cost in a call's outside interval: the median over the reference's calls of that interval
    beyond the reference's reported time (its code is trusted). ref: (intervals, reported ms) per batch."""
    return max(statistics.median(c - m for intervals, ms in ref for c, m in zip(intervals, ms)), 0.0)


def charged(ms: list[float], intervals: list[float], cost: float) -> list[float]:
    """A batch's reported times, each raised by how far the batch's calls outlast their reports as seen from outside
    (the median over its calls, so a late-delivered mark moves nothing) beyond the marks' cost and the tolerance (a
    share of the outside view of a call, plus a slack)."""
    beyond = statistics.median(seen - reported for reported, seen in zip(ms, intervals)) - cost
    allowed = CALL_SHARE * max(statistics.median(intervals) - cost, 0.0) + CALL_SLACK_MS
    return [reported + max(beyond - allowed, 0.0) for reported in ms]
