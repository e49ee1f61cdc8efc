"""The first screen of a kernel page: per hardware with results, the fastest contender and what it beats.

Per board: the top-ranked entry (the eager baseline itself when nothing beats it), its geomean speedup over the
baseline (the board's own score), its geomean speedup over torch.compile on the workloads both ran with a stable
timing (the number a kernel author cares about: what a user gets without writing a kernel), and its SOL%.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from ..model.contender_kinds import BASELINE, COMPILER, HAND_WRITTEN, LIBRARY
from ..model.dataset import Dataset
from .results import Entry, Leaderboard
from .scores import geomean

KIND_ORDER = (BASELINE, COMPILER, LIBRARY, HAND_WRITTEN)


@dataclass(frozen=True)
class Headline:
    hardware: str
    machine: str  # the hardware spec's kind ("gpu", "cpu"), "" without a spec
    fastest: Optional[Entry]  # None when no entry has a stable timing
    compiler: Optional[Entry]  # the fastest torch.compile entry on the board
    over_compiler: Optional[float]  # fastest vs compiler, geomean over the workloads both timed stably
    compared: int  # those workloads
    contenders: int  # entries on the board
    kinds: tuple[str, ...]  # the kinds of contender on the board, in KIND_ORDER


def _ratio(lb: Leaderboard, slower: Entry, faster: Entry) -> tuple[Optional[float], int]:
    ratios = [a.latency_ms / b.latency_ms
              for a, b in zip(lb.results_of(slower.solution), lb.results_of(faster.solution))
              if a.ranked and b.ranked and a.latency_ms and b.latency_ms]
    return geomean(ratios), len(ratios)


def headline(ds: Dataset, lb: Leaderboard) -> Headline:
    timed = [e for e in lb.entries if e.median_latency_ms is not None]
    fastest = timed[0] if timed and timed[0].geomean_speedup is not None else (
        min(timed, key=lambda e: (e.median_latency_ms, e.solution)) if timed else None)
    compiler = next((e for e in lb.entries if e.kind == COMPILER and e.median_latency_ms is not None), None)
    over, compared = _ratio(lb, compiler, fastest) if compiler is not None and fastest is not None else (None, 0)
    spec = ds.hardware_spec(lb.hardware)
    kinds = {e.kind for e in lb.entries}
    return Headline(lb.hardware, spec.kind if spec is not None else "", fastest, compiler, over, compared,
                    len(lb.entries), tuple(k for k in KIND_ORDER if k in kinds))


def headlines(ds: Dataset, boards: Mapping[str, Sequence[Leaderboard]]) -> dict[str, tuple[Headline, ...]]:
    """Per definition with results: one headline per board, in the boards' (hardware) order."""
    return {name: tuple(headline(ds, lb) for lb in lbs) for name, lbs in boards.items() if lbs}
