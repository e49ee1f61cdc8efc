"""The CPU-time floor (the CPU device): what a solution's calls cost in CPU time, counted where it cannot reach.

Each worker lives in a cgroup that counts the CPU time of every thread of every process of its sandbox whenever
it runs (cgroup.py); this process reads it just before sending a batch and as its answer arrives (remote.py).
Every output the worker commits to is computed by then, so whatever work a call's answer needed is in that
count, wherever the solution moved it: after a forged end mark, on another thread, in a patched harness
function. The rest of the count is the harness's own work in the worker (receiving each call's inputs, which the
trusted side draws, since drawing them there was most of it; the marks, guards, digests), the same code in both
workers: the reference's worker measures it, as its batch's CPU less its calls' own CPU time (which that trusted
worker reports per call). So per batch:

    floor = batch CPU / n - the reference's harness CPU per call,

where "batch CPU" counts several threads once: a call on k threads uses k times its wall time in CPU, and its
latency is at least its busiest thread's CPU, not their sum. So the batch's CPU is bounded by its busiest thread's
(/proc/<tid>/schedstat of each thread in the cgroup, before and after), plus the CPU of threads that ended within
the batch, which is known only in sum and counted as if serial (a thread a call starts must end within its batch:
the guards' "left thread"). The harness runs on the main thread, so a second floor is the next busiest thread's CPU
per call, less what the reference's worker spends beside its main thread (digest threads): a helper thread that
works while the main thread runs the harness is not hidden behind it. Not by the batch's wall time: the harness's
wall time per call, measured on the reference's worker, varied by 0.45 to 0.88 ms a call between pairs on a busy
2-core host (its message round trips wait on the scheduler), which took a 0.15 ms forger's floor to zero.

A batch whose reported calls sit below a floor (the median over batches of their median call, allowing the
reference's spread of calls around their median) beyond the tolerance has its calls raised by the difference, and
the log says so. The tolerance: CALL_SHARE of the floor and CALL_SLACK_MS, and for the first floor BATCH_CPU_SLACK_MS
a batch and the harness's noise between the two workers, HARNESS_SHARE of its CPU a call (as measured; the host's
other work, load(), is in the log's note but did not predict that noise). A single-threaded call's CPU time never
exceeds its wall time, so an honest one is not charged however busy the host.

It does not bound work off the CPU: on a GPU the device's time is the CUDA events' and the outside wall clock's
(pair.py). Where no CPU cgroup can be made (a read-only /sys/fs/cgroup in a container), the floor is not
applied and the trace's log says so (`not_applied`).
"""

from __future__ import annotations

import os
import statistics
from typing import NamedTuple, Optional

from .outside import CALL_SHARE, CALL_SLACK_MS

# Allowed for the noise of the harness's CPU between the two workers: HARNESS_SHARE of it a call, and a slack per batch
# (its last slice counted late, its messages). Measured (tests/benchmarks/bench_stopped_clock.py --forge, rmsnorm_h4096
# at batch 1 and 8, 33 calls a batch, 30 honest pairs replayed) on the shared 2-core host: saturated (others 1.3-1.7
# CPUs), an honest solution's batches used up to 0.27 x the harness's CPU a call more than the reference's worker
# measured; quiet (others under 0.25 CPUs) the same work varied by up to 25 % between one worker's batches (a core left
# idle between messages wakes slowly), and an honest pair's median batch reached 0.1 x, once past 0.05 x plus the
# slacks: the host's load does not predict the noise, so the share is fixed. A fixed 0.1 charged one honest pair by
# 70 us, 0.25 by 16 us, 0.3 by 3 us. The floor by the next busiest thread subtracts no harness: its tolerance is
# CALL_SHARE and CALL_SLACK_MS alone.
HARNESS_SHARE, BATCH_CPU_SLACK_MS = 0.3, 0.4


class Turn(NamedTuple):
    """One batch on one side: reported ms per call, the sandbox's CPU ms over it, its busiest thread's (with that of
    threads that ended meanwhile), (the reference only) each call's own CPU ms, the next busiest thread's (of those
    still running at its end), and the CPUs' worth of other work on the host meanwhile (None: unknown)."""
    ms: list[float]
    cpu: float
    serial: float
    calls_cpu: Optional[list[float]] = None
    second: float = 0.0
    others: Optional[float] = None


def harness(ref: list[Turn]) -> float:
    """CPU ms per call of the harness's own work: the median over the reference's batches of its batch's CPU beyond
    its calls'."""
    return statistics.median(max(t.cpu - sum(t.calls_cpu or ()), 0.0) / len(t.ms) for t in ref)


def floors(sol: list[Turn], ref: list[Turn]) -> list[float]:
    """Per solution batch: the least ms a call can have taken, by the CPU its sandbox used less the harness's, counted
    once (its busiest thread's) where several threads shared it."""
    cpu = harness(ref)
    return [max(min(t.cpu, t.serial) / len(t.ms) - cpu, 0.0) for t in sol]


def helper_floors(sol: list[Turn], ref: list[Turn]) -> list[float]:
    """Per solution batch: the least ms a call can have taken by its next busiest thread's CPU (the harness runs on
    the main thread: a helper thread that works while the main thread runs the harness is bounded here, less only
    the CPU the reference's worker spent beside its main thread a call: digest threads, torch's intra-op threads)."""
    beside = statistics.median(t.second / len(t.ms) for t in ref)
    return [max(t.second / len(t.ms) - beside, 0.0) for t in sol]


def load(sol: list[Turn]) -> float:
    """The host's other work during the solution's batches (the median), as a share of the CPUs beside the worker's,
    at most 1; 1 where unknown (the log's note says it: the tolerance does not follow it, HARNESS_SHARE)."""
    seen = [t.others for t in sol if t.others is not None]
    if not seen:
        return 1.0
    return min(statistics.median(seen) / max(len(os.sched_getaffinity(0)) - 1, 1), 1.0)


def tolerance(sol: list[Turn], ref: list[Turn], per_batch: list[float], noisy: bool = True) -> float:
    """ms a call below a floor (`per_batch`) that is not charged: CALL_SHARE of it and CALL_SLACK_MS, and where the
    floor subtracts the harness's CPU (`noisy`) the slack per batch and a share of that CPU (the module's docstring)."""
    allowed = CALL_SHARE * statistics.median(per_batch) + CALL_SLACK_MS
    if not noisy:
        return allowed
    n = statistics.median(len(t.ms) for t in sol)
    return allowed + HARNESS_SHARE * harness(ref) + BATCH_CPU_SLACK_MS / n


def charged(samples: list[list[float]], sol: list[Turn], ref: list[Turn]) -> list[float]:
    """Every sample (a batch's calls but the first) raised by how far the batches' calls reported less than the
    CPU-time floors allow (floor - the batch's median call, allowing the reference's spread of calls around their
    median), beyond its tolerance (see the module's docstring): for the first floor, whose harness noise varies between
    batches, the median over batches, on every batch; for the next busiest thread's, which has none, each batch's own
    (a helper that slowed some of its batches' calls is charged in the others)."""
    spread = statistics.median(max(statistics.fmean(t.ms) / max(statistics.median(t.ms), 1e-9) - 1, 0.0) for t in ref)
    first, helper = floors(sol, ref), helper_floors(sol, ref)
    owed = statistics.median(f - statistics.median(t.ms) * (1 + spread) for t, f in zip(sol, first))
    owed -= tolerance(sol, ref, first)
    helper_allowed = tolerance(sol, ref, helper, noisy=False)
    out = []
    for calls, t, f in zip(samples, sol, helper):
        raised = max(owed, f - statistics.median(t.ms) * (1 + spread) - helper_allowed, 0.0)
        out += [x + raised for x in calls]
    return out


def not_applied(why: str) -> str:
    """The log's line where the floor could not be applied (never silent: a check skipped is not a check passed)."""
    return (f"the CPU-time floor was not applied: {why or 'the workers CPU time could not be read'}; these numbers are "
            "bounded from outside by the wall clock alone (a solution that forges its marks is not charged here)")
