"""The CPU-time floor (the CPU device): what a solution's calls cost in CPU time, counted where it cannot reach.

Each worker lives in a cgroup that counts the CPU time of every thread of every process of its sandbox whenever
it runs (cgroup.py); this process reads it just before sending a batch and as its answer arrives (remote.py).
Every output the worker commits to is computed by then, so whatever work a call's answer needed is in that
count, wherever the solution moved it: after a forged end mark, on another thread, in a patched harness
function. The rest of the count is the harness's own work in the worker (receiving seeds, drawing inputs, the
marks, guards, digests), the same code in both workers: the reference's worker measures it, as its batch's CPU
less its calls' own CPU time (which that trusted worker reports per call). So per batch:

    floor = batch CPU / n - the reference's harness CPU per call,

where "batch CPU" counts several threads once: a call on k threads uses k times its wall time in CPU, and its
latency is at least its busiest thread's CPU, not their sum. So the batch's CPU is bounded by its busiest thread's
(/proc/<tid>/schedstat of each thread in the cgroup, before and after), plus the CPU of threads that ended within
the batch, which is known only in sum and counted as if serial (a thread a call starts must end within its batch:
the guards' "left thread"). Not by the batch's wall time: the harness's wall time per call, measured on the
reference's worker, varied by 0.45 to 0.88 ms a call between pairs on a busy 2-core host (its message round
trips wait on the scheduler), which took a 0.15 ms forger's floor to zero. A batch whose reported calls sit
below the floor (the median over batches of their median call, allowing the reference's spread of calls around
their median) beyond the tolerance (CALL_SHARE of the floor and CALL_SLACK_MS, and for the harness's noise
HARNESS_SHARE of its CPU per call and BATCH_CPU_SLACK_MS a batch) has its calls raised by the difference, and the
log says so. A single-threaded call's CPU
time never exceeds its wall time, so an honest one is not charged however busy the host.

It does not bound work off the CPU: on a GPU the device's time is the CUDA events' and the outside wall clock's
(pair.py). Where no CPU cgroup can be made (a read-only /sys/fs/cgroup in a container), the floor is not
applied and the trace's log says so (`not_applied`).
"""

from __future__ import annotations

import statistics
from typing import NamedTuple, Optional

from .outside import CALL_SHARE, CALL_SLACK_MS

# Allowed for the noise of the harness's CPU between the two workers: a share of it per call, and per batch (its
# fixed part: the batch's messages, guards and digests). For rmsnorm_h128 on a busy 2-core host the harness took
# 1.6 ms of CPU a batch of 4 calls and varied by up to 0.15 ms a call between an honest solution's worker and the
# reference's (their median over batches, less than half that); at 33 calls a batch, by 0.01 ms a call.
HARNESS_SHARE, BATCH_CPU_SLACK_MS = 0.1, 0.4


class Turn(NamedTuple):
    """One batch on one side: reported ms per call, the sandbox's CPU ms over it, its busiest thread's (with that of
    threads that ended meanwhile), and (the reference only) each call's own CPU ms."""
    ms: list[float]
    cpu: float
    serial: float
    calls_cpu: Optional[list[float]] = None


def harness(ref: list[Turn]) -> float:
    """CPU ms per call of the harness's own work: the median over the reference's batches of its batch's CPU beyond
    its calls'."""
    return statistics.median(max(t.cpu - sum(t.calls_cpu or ()), 0.0) / len(t.ms) for t in ref)


def floors(sol: list[Turn], ref: list[Turn]) -> list[float]:
    """Per solution batch: the least ms a call can have taken, by the CPU its sandbox used, counted once (its busiest
    thread's) where several threads shared it."""
    cpu = harness(ref)
    return [max(min(t.cpu, t.serial) / len(t.ms) - cpu, 0.0) for t in sol]


def charged(samples: list[list[float]], sol: list[Turn], ref: list[Turn]) -> list[float]:
    """Every sample (a batch's calls but the first) raised by how far the batches' calls reported less than the
    CPU-time floor allows: the median over batches of (floor - the batch's median call, allowing the reference's
    spread of calls around their median), beyond the tolerance (see the module's docstring)."""
    spread = statistics.median(max(statistics.fmean(t.ms) / max(statistics.median(t.ms), 1e-9) - 1, 0.0) for t in ref)
    per_batch = floors(sol, ref)
    beyond = statistics.median(f - statistics.median(t.ms) * (1 + spread) for t, f in zip(sol, per_batch))
    n = statistics.median(len(t.ms) for t in sol)
    allowed = CALL_SHARE * statistics.median(per_batch) + CALL_SLACK_MS + HARNESS_SHARE * harness(ref) + BATCH_CPU_SLACK_MS / n
    return [x + max(beyond - allowed, 0.0) for calls in samples for x in calls]


def not_applied(why: str) -> str:
    """The log's line where the floor could not be applied (never silent: a check skipped is not a check passed)."""
    return (f"the CPU-time floor was not applied: {why or 'the workers CPU time could not be read'}; these numbers are "
            "bounded from outside by the wall clock alone (a solution that forges its marks is not charged here)")
