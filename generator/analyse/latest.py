"""Which traces count: each filed under its hardware's name, the latest per (solution, workload, hardware)."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Iterable, Iterator

from ..model.dataset import Dataset
from ..model.records import Trace


@lru_cache(maxsize=65536)  # a run's traces share a few timestamps
def instant(timestamp: str) -> float:
    """Seconds since the epoch of an RFC 3339 timestamp (Z or an offset; the schema requires one)."""
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return float("-inf")
    return moment.timestamp() if moment.tzinfo else float("-inf")


def trace_order(trace: Trace) -> tuple:
    return (instant(trace.timestamp), trace.timestamp, trace.source.path, trace.source.line)


def hardware_name(ds: Dataset, name: str) -> str:
    """The name results on `name` are filed under: the hardware spec's name when `name` is one of its aliases."""
    spec = ds.hardware_spec(name)
    return spec.name if spec is not None else name


def by_hardware_name(ds: Dataset, traces: Iterable[Trace]) -> Iterator[tuple[str, Trace]]:
    """Each trace with the hardware name its results are filed under (each name looked up once)."""
    names: dict[str, str] = {}
    for t in traces:
        hw = names.get(t.hardware)
        if hw is None:
            hw = names[t.hardware] = hardware_name(ds, t.hardware)
        yield hw, t


def latest_traces(ds: Dataset, traces: Iterable[Trace]) -> dict[tuple[str, str, str], Trace]:
    """The latest trace per (solution, workload uuid, hardware name)."""
    latest: dict[tuple[str, str, str], Trace] = {}
    for hw, t in by_hardware_name(ds, traces):
        key = (t.solution, t.workload_uuid, hw)
        held = latest.get(key)
        if held is None or trace_order(t) > trace_order(held):
            latest[key] = t
    return latest
