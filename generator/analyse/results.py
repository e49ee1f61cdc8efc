"""What a leaderboard holds: one result per (solution, workload), the entries, the rows, the board."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Mapping, Optional, Sequence

from ..model.frozen import quick_init
from ..model.status import TraceStatus
from .scores import geomean, median

NOT_RUN = "NOT_RUN"  # status shown for a workload a solution has no trace for


@quick_init  # one per solution and workload
@dataclass(frozen=True)
class Result:
    """One solution on one workload on one hardware: what its latest trace says (or that it has none)."""

    solution: str
    workload: str
    status: str  # the trace's status, or NOT_RUN
    latency_ms: Optional[float]  # PASSED only
    speedup: Optional[float]  # over the baseline: PASSED and stable, and the baseline passed this workload stably
    max_absolute_error: Optional[float]
    max_relative_error: Optional[float]
    samples: Optional[int]  # timing samples behind latency_ms, where the trace recorded them
    log: str
    timestamp: str
    trace_path: str  # where the trace lives, "file:line" ("" when not run)
    sol_percent: Optional[float] = None  # T_SOL / latency on this hardware (PASSED, with a cascade and a spec)
    unstable: bool = False  # PASSED, but the timing is too noisy to rank
    unsandboxed: bool = False  # PASSED, measured without the bench's sandbox (environment.sandbox "none"): not ranked
    spread: Optional[tuple[float, float]] = None  # (p20, p80) of the timing samples, ms, where recorded
    environment: tuple[tuple[str, str], ...] = ()  # the trace's environment, flattened ("libs.torch", "2.13")
    timer: str = ""
    speedup_recorded: bool = False  # speedup is the trace's own speedup_factor (no baseline result here)
    provenance: str = ""  # the trace's Trace.provenance: measured, recorded or unknown ("" when not run)

    @property
    def passed(self) -> bool:
        return self.status == TraceStatus.PASSED

    @property
    def ran(self) -> bool:
        return self.status != NOT_RUN

    @property
    def failed(self) -> bool:
        return self.status not in (TraceStatus.PASSED, NOT_RUN)

    @property
    def ranked(self) -> bool:
        """Passed with a timing stable enough to count in scores, measured in the sandbox (or before it was recorded)."""
        return self.passed and not self.unstable and not self.unsandboxed


@dataclass(frozen=True)
class Entry:
    """One solution's row in a leaderboard."""

    rank: int
    solution: str
    author: str
    language: str
    is_baseline: bool
    known: bool  # the dataset has the solution (traces may name one that is gone)
    workloads: int  # all workloads of the definition on this hardware
    passed: int
    failed: int  # ran and did not pass
    not_run: int
    pass_rate: Optional[float]  # passed / ran; None when it ran nothing
    failures: tuple[tuple[str, int], ...]  # (status, count) per failure kind, by status
    unstable: int  # passed workloads whose timing is too noisy to rank
    geomean_speedup: Optional[float]
    fast_1: float
    best_latency_ms: Optional[float]
    median_latency_ms: Optional[float]
    samples: int  # timing samples behind the latencies (a result that did not record it counts once)
    sol_percent: Optional[float]  # geometric mean of T_SOL / latency over the passed workloads that have one
    traces: int  # every trace of the solution on this hardware, older ones included
    updated: str  # timestamp of its newest trace on this hardware
    curve: tuple[tuple[float, float], ...]
    recorded_speedups: int = 0  # speedups taken from the traces' own speedup_factor (no baseline result)
    kind: str = ""  # model.contender_kinds: baseline, compiler, library or hand-written (by the author)
    requirement: str = ""  # a library's requirement from spec.dependencies, "liger-kernel>=0.5" ("" otherwise)
    # Ranked results whose trace does not say how it was produced (Trace.provenance "unknown"): readable and
    # ranked, but the board must say so beside the entry.
    unknown_provenance: int = 0


@quick_init  # one per solution and workload
@dataclass(frozen=True)
class WorkloadRow:
    """One workload of a leaderboard: its axes, the baseline's latency, every ranked solution's result."""

    uuid: str
    axes: tuple[tuple[str, object], ...]  # the definition's variable axes and their values (None: not given)
    baseline_latency_ms: Optional[float]
    baseline_stable: bool  # the baseline passed with a stable timing (speedups are known here)
    results: tuple[Result, ...]  # one per entry, in ranking order


@dataclass(frozen=True)
class Leaderboard:
    definition: str
    hardware: str
    baseline: Optional[str]  # the baseline solution's name; None: no speedups on this hardware
    workloads: tuple[str, ...]
    entries: tuple[Entry, ...]
    rows: tuple[WorkloadRow, ...]
    curve_end: float

    def entry(self, solution: str) -> Optional[Entry]:
        return next((e for e in self.entries if e.solution == solution), None)

    def results_of(self, solution: str) -> tuple[Result, ...]:
        """The solution's result on every workload, in workload order."""
        index = next((i for i, e in enumerate(self.entries) if e.solution == solution), None)
        return () if index is None else tuple(row.results[index] for row in self.rows)

    # What the pages over all definitions take from each board, kept with it: a board that did not
    # change (serve's quick rebuilds keep them) is not gone through again.
    @cached_property
    def author_best(self) -> dict[str, tuple[set, dict[tuple[str, str], Optional[float]]]]:
        """Author -> (their solutions here, (definition, workload) -> best known speedup of theirs, or None
        when correct without one)."""
        out: dict[str, tuple[set, dict]] = {}
        for i, e in enumerate(self.entries):
            solutions, best = out.setdefault(e.author, (set(), {}))
            solutions.add(e.solution)
            for row in self.rows:
                r = row.results[i]
                if not r.passed:
                    continue
                key = (self.definition, row.uuid)
                held = best.get(key, "absent")
                if held == "absent" or (r.speedup is not None and (held is None or r.speedup > held)):
                    best[key] = r.speedup
        return out

    @cached_property
    def kernel_speedup(self) -> Optional[tuple[float, float]]:
        return kernel_speedup(self)  # defined below: the board caches what model estimates read


def kernel_speedup(lb: Leaderboard) -> Optional[tuple[float, float]]:
    """(baseline time in ms, speedup of the best passing solutions) of a definition on one hardware;
    None without a baseline result."""
    times, ratios = [], []
    for row in lb.rows:
        base = row.baseline_latency_ms
        if base is None or not row.baseline_stable:
            continue
        best = min([base, *(r.latency_ms for r in row.results if r.ranked and r.latency_ms)])
        times.append(base)
        ratios.append(base / best)
    if not times:
        return None
    return median(times), geomean(ratios)


def boards_by_hardware(boards: Mapping[str, Sequence[Leaderboard]]) -> dict[str, list[Leaderboard]]:
    """Every board by hardware name, each list in definition order."""
    by_hw: dict[str, list[Leaderboard]] = defaultdict(list)
    for name in sorted(boards):
        for lb in boards[name]:
            by_hw[lb.hardware].append(lb)
    return by_hw
