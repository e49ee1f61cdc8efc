"""Authors ranked per hardware over every workload of every definition with results there.

People and agents (hand-written kernels) are ranked among themselves; the eager baseline, the compiler and the
libraries (model/contender_kinds.py) are the references they are measured against, listed apart and not ranked
(the baseline's speedup over itself is 1 by definition)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from ..model.contender_kinds import HAND_WRITTEN, LIBRARY_AUTHORS, kind_of
from ..model.dataset import Dataset
from .headline import KIND_ORDER
from .results import Leaderboard, boards_by_hardware
from .scores import competition_ranks, curve_end, fast_p, fast_p_curve, geomean


@dataclass(frozen=True)
class AuthorEntry:
    rank: Optional[int]  # None for a reference (baseline, compiler, library): not ranked
    author: str
    kind: str  # model.contender_kinds
    package: str  # the library an author calls ("" for other kinds)
    solutions: int  # solutions with results on this hardware
    definitions: int  # definitions they have results for
    solved: int  # workloads where one of their solutions is correct
    workloads: int  # all workloads on this hardware (the same for every author)
    geomean_speedup: Optional[float]  # over the solved workloads, best solution per workload
    fast_1: float
    curve: tuple[tuple[float, float], ...]
    unknown_provenance: int = 0  # their ranked results whose traces do not say how they were produced


@dataclass(frozen=True)
class AuthorRanking:
    hardware: str
    definitions: int  # definitions with results on this hardware
    workloads: int
    entries: tuple[AuthorEntry, ...]  # people and agents, ranked
    curve_end: float
    references: tuple[AuthorEntry, ...] = ()  # baseline, compiler, libraries: in that order, not ranked


def author_rankings(ds: Dataset, boards: Mapping[str, Sequence[Leaderboard]]) -> tuple[AuthorRanking, ...]:  # noqa: ARG001 - the analyses' one signature
    """Per hardware (by name), authors ranked over every workload of every definition with results there."""
    by_hw = boards_by_hardware(boards)
    rankings = []
    for hw in sorted(by_hw):
        lbs = by_hw[hw]
        total = sum(len(lb.workloads) for lb in lbs)
        # author -> (definition, workload) -> best known speedup, or None when correct without one
        best: dict[str, dict[tuple[str, str], Optional[float]]] = defaultdict(dict)
        solutions: dict[str, set[str]] = defaultdict(set)
        definitions: dict[str, set[str]] = defaultdict(set)
        unknown: dict[str, int] = defaultdict(int)
        for lb in lbs:
            for e in lb.entries:
                unknown[e.author] += e.unknown_provenance
            for author, (theirs, speedups) in lb.author_best.items():
                solutions[author].update(theirs)
                definitions[author].add(lb.definition)
                best[author].update(speedups)  # a board's keys are its own definition's
        all_speedups = [s for per in best.values() for s in per.values()]
        end = curve_end(all_speedups)
        unranked = []
        for author in sorted(solutions):
            speedups = list(best[author].values())
            unranked.append(dict(
                author=author, solutions=len(solutions[author]), definitions=len(definitions[author]),
                solved=len(speedups), workloads=total,
                geomean_speedup=geomean(s for s in speedups if s is not None),
                fast_1=fast_p(speedups, total, 1.0), curve=fast_p_curve(speedups, total, end),
                unknown_provenance=unknown[author]))
        for e in unranked:
            e.update(kind=kind_of(e["author"]), package=LIBRARY_AUTHORS.get(e["author"], ""))
        people = [e for e in unranked if e["kind"] == HAND_WRITTEN]
        people.sort(key=lambda e: (-e["fast_1"], e["geomean_speedup"] is None, -(e["geomean_speedup"] or 0.0),
                                   e["author"]))
        ranks = competition_ranks([(e["fast_1"], e["geomean_speedup"]) for e in people])
        entries = tuple(AuthorEntry(rank=r, **e) for r, e in zip(ranks, people))
        references = tuple(AuthorEntry(rank=None, **e) for e in sorted(
            (e for e in unranked if e["kind"] != HAND_WRITTEN), key=lambda e: (KIND_ORDER.index(e["kind"]), e["author"])))
        rankings.append(AuthorRanking(hw, len(lbs), total, entries, end, references))
    return tuple(rankings)


