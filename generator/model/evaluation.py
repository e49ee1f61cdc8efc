"""A trace's evaluation, typed (schema/trace.json#/properties/evaluation): parsed once when the trace is
loaded, so no stage walks the trace's JSON again.

A dataset holds up to millions of traces: the parts are named tuples (compact, quick to build), absent parts
are None rather than empty objects, and equal environments (a bench run's traces share one) are one object.
"""

from __future__ import annotations

import sys
from typing import Any, Mapping, NamedTuple, Optional

from .stability import spread_is_unstable
from .status import TraceStatus


def _number(value: Any) -> Optional[float]:
    return value if isinstance(value, (int, float)) else None


class Correctness(NamedTuple):
    """How close the outputs came to the reference's (schema/trace.json#/$defs/correctness)."""

    max_absolute_error: Optional[float]
    max_relative_error: Optional[float]
    matched_ratio: Optional[float] = None
    atol: Optional[float] = None
    rtol: Optional[float] = None
    input_sets: Optional[int] = None

    @classmethod
    def from_data(cls, c: Mapping) -> "Correctness":
        return tuple.__new__(cls, map(c.get, cls._fields))  # the fields are the schema's keys (_make, one call less)


# The bench's default limit for one workload, all of its calls on both sides included (bench --timeout): no call of
# a result it passed took longer. validate refuses timings past it (an LLM-inference kernel's call takes far less).
BENCH_TIMEOUT_S = 300.0
# No kernel call completes faster, on any hardware (a GPU kernel takes microseconds from launch to finish, a CPU
# call through Python longer): the floor of reported times where no hardware spec gives a speed of light.
MIN_CALL_MS = 1e-4
# The orders the bench's statistics of one set of samples always keep (timing.summarize): each at most the next.
ORDERED_STATISTICS = (("min_ms", "p20_ms", "latency_ms", "p80_ms", "max_ms"), ("min_ms", "mean_ms", "max_ms"))


class Performance(NamedTuple):
    """The timing (schema/trace.json#/$defs/performance); every field but latency_ms may be absent."""

    latency_ms: float
    reference_latency_ms: Optional[float] = None
    speedup_factor: Optional[float] = None
    mean_ms: Optional[float] = None
    min_ms: Optional[float] = None
    max_ms: Optional[float] = None
    p20_ms: Optional[float] = None
    p80_ms: Optional[float] = None
    stderr_ms: Optional[float] = None
    samples: Optional[int] = None
    timer: Optional[str] = None
    first_call_ms: Optional[float] = None  # informational (a compile, a JIT): never ranked
    first_call_after_load: Optional[bool] = None
    unstable_mark: Optional[bool] = None  # the bench's own `unstable` mark, where the trace has one

    @classmethod
    def from_data(cls, p: Mapping) -> "Performance":
        perf = tuple.__new__(cls, map(p.get, _PERFORMANCE_KEYS))
        return perf if perf.timer is None else perf._replace(timer=sys.intern(perf.timer))  # a handful of timers

    @property
    def unstable(self) -> bool:
        """Whether the timing is too noisy to rank (model/stability.py): the bench's own `unstable` mark when
        present, else the bench's rule applied to the statistics recorded; without them it cannot be judged and
        counts as stable."""
        if self.unstable_mark is not None:
            return bool(self.unstable_mark)
        lat, p20, p80, low = self.latency_ms, self.p20_ms, self.p80_ms, self.min_ms
        if p20 is None or p80 is None or low is None:  # asked of every result: the usual answer first
            return False
        stats = tuple(_number(v) for v in (lat, p20, p80, low))
        if any(v is None for v in stats):
            return False
        return spread_is_unstable(*stats)


_PERFORMANCE_KEYS = Performance._fields[:-1] + ("unstable",)  # the schema's keys, in the fields' order


def performance_is_unstable(performance: Optional[Mapping]) -> bool:
    """Performance.unstable of a performance object still in JSON form (None or empty: stable)."""
    return bool(performance) and Performance.from_data(performance).unstable


class Environment(NamedTuple):
    """Where it ran (schema/trace.json#/$defs/environment). `data` is the object as written (read-only), for
    showing it whole; `provenance` is its provenance object, or None."""

    hardware: str
    data: Mapping[str, Any]

    @property
    def provenance(self) -> Optional[Mapping[str, Any]]:
        p = self.data.get("provenance")
        return None if p is None or not isinstance(p, Mapping) else p  # None first: an ABC's isinstance is slow

    def __reduce__(self):
        # Traces come back pickled from load's helper process (load/parallel.py): shared again on arrival.
        return environment_of, (dict(self.data),)


_ENVIRONMENTS: dict[str, Environment] = {}  # repr of the environment object -> its one Environment


def environment_of(env: Mapping[str, Any]) -> Environment:
    key = repr(env)
    found = _ENVIRONMENTS.get(key)
    if found is None:
        from types import MappingProxyType

        if len(_ENVIRONMENTS) > 100_000:  # a pathological dataset (one environment per trace) must not grow this forever
            _ENVIRONMENTS.clear()
        found = _ENVIRONMENTS[key] = Environment(env["hardware"], MappingProxyType(dict(env)))
    return found


_STATUSES = {s.value: s for s in TraceStatus}  # TraceStatus(value) without the enum's call: once per trace


class Evaluation(NamedTuple):
    status: TraceStatus
    log: str  # "" where the trace has none (null or absent)
    correctness: Optional[Correctness]
    performance: Optional[Performance]
    environment: Environment
    timestamp: str
    seed: Optional[int] = None

    @classmethod
    def from_data(cls, ev: Mapping[str, Any]) -> "Evaluation":
        c, p = ev.get("correctness"), ev.get("performance")
        status = ev["status"]
        return cls(_STATUSES.get(status) or TraceStatus(status), ev.get("log") or "", None if c is None else Correctness.from_data(c),
                   None if p is None else Performance.from_data(p), environment_of(ev["environment"]),
                   ev["timestamp"], ev.get("seed"))

    @property
    def passed(self) -> bool:
        return self.status is TraceStatus.PASSED

    @property
    def unstable(self) -> bool:
        """Passed, but its timing is too noisy to rank (Performance.unstable)."""
        return self.passed and self.performance is not None and self.performance.unstable
