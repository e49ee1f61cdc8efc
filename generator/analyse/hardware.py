"""Hardware summaries: every spec in the dataset and every name traces ran on, with its boards."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from ..model.dataset import Dataset
from ..model.records import HardwareSpec
from .latest import by_hardware_name
from .results import Leaderboard, boards_by_hardware


@dataclass(frozen=True)
class HardwareSummary:
    name: str
    spec: Optional[HardwareSpec]
    traces: int
    leaderboards: tuple[Leaderboard, ...]  # definitions with results on it, by name


def hardware_summaries(ds: Dataset, boards: Mapping[str, Sequence[Leaderboard]]) -> tuple[HardwareSummary, ...]:
    """Every hardware: each spec in the dataset and each name traces ran on, by name."""
    traces: dict[str, int] = defaultdict(int)
    for hw, _ in by_hardware_name(ds, ds.traces):
        traces[hw] += 1
    by_hw = boards_by_hardware(boards)
    every = sorted(set(ds.hardware) | set(traces))
    return tuple(HardwareSummary(hw, ds.hardware.get(hw), traces.get(hw, 0), tuple(by_hw.get(hw, ())))
                 for hw in every)


@dataclass(frozen=True)
class Machines:
    """The hardware with results and what kind each is (its spec's kind: gpu, cpu; "" without a spec)."""

    with_results: tuple[tuple[str, str], ...]  # (name, kind), by name

    @property
    def gpu(self) -> bool:
        return any(kind == "gpu" for _, kind in self.with_results)


def machines(summaries: Sequence[HardwareSummary], names: Optional[Sequence[str]] = None) -> Machines:
    """Of `summaries`, those with results (only those in `names`, when given)."""
    return Machines(tuple((h.name, h.spec.kind if h.spec is not None else "") for h in summaries
                          if h.leaderboards and (names is None or h.name in names)))
