"""Every table the site shows, computed in one step before rendering: the site renders from this object and
calls no analysis while rendering (DESIGN.md, "The site")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from ..model.dataset import Dataset
from ..model.frozen import many_records
from ..model.records import AgentTrace
from .coverage import EngineRelease, ModelCoverage, engine_releases, model_coverage
from .estimates import StepEstimate, representative_workload, step_estimates
from .hardware import HardwareSummary, Machines, hardware_summaries, machines
from .headline import Headline, headlines
from .leaderboard import LatestResult, all_leaderboards, latest_results
from .rankings import AuthorRanking, author_rankings
from .results import Leaderboard
from .roofline import SolSection, sol_sections

LATEST = 10  # results on the home page


@dataclass(frozen=True)
class SiteResults:
    """Everything the site's pages show, computed once per build."""

    boards: Mapping[str, tuple[Leaderboard, ...]]
    rankings: tuple[AuthorRanking, ...]
    hardware: tuple[HardwareSummary, ...]
    latest: tuple[LatestResult, ...]
    agent_traces: Mapping[str, AgentTrace]  # by solution name
    models: Mapping[str, tuple[StepEstimate, ...]]  # by calling record name: per stage and hardware
    headlines: Mapping[str, tuple[Headline, ...]]  # by definition: its first screen, per hardware with results
    machines: Machines  # the hardware with results, and whether any is a GPU
    representative: Mapping[str, Any]  # by definition: the workload that stands for it on the kernels index (or None)
    coverage: tuple[ModelCoverage, ...]  # per calling record
    releases: tuple[EngineRelease, ...]  # the framework releases the records describe
    speed_of_light: Mapping[str, SolSection]  # by definition with a cascade


def _agent_traces(ds: Dataset) -> dict[str, AgentTrace]:
    """One agent trace per solution: its own author's when several claim it."""
    agent: dict[str, AgentTrace] = {}
    for t in sorted(ds.agent_traces, key=lambda a: (a.solution, a.author, a.source.path)):
        s = ds.solutions.get(t.solution)
        if t.solution not in agent or (s is not None and s.author == t.author):
            agent[t.solution] = t
    return agent


def analyse(ds: Dataset, boards: Optional[Mapping[str, tuple[Leaderboard, ...]]] = None,
            speed_of_light: Optional[Mapping[str, SolSection]] = None) -> SiteResults:
    """`boards` (the leaderboards per definition) and `speed_of_light` (sol_sections) when the caller has
    them already (serve's quick rebuilds)."""
    with many_records():  # half a million results at the field's scale
        return _analyse(ds, boards, speed_of_light)


def _analyse(ds: Dataset, boards, speed_of_light) -> SiteResults:
    boards = all_leaderboards(ds) if boards is None else boards
    summaries = hardware_summaries(ds, boards)
    coverage = tuple(model_coverage(ds))
    return SiteResults(
        boards, author_rankings(ds, boards), summaries, latest_results(boards, LATEST), _agent_traces(ds),
        step_estimates(ds, boards), headlines(ds, boards), machines(summaries),
        representative={name: representative_workload(ds, name) for name in sorted(ds.definitions)},
        coverage=coverage, releases=tuple(engine_releases(list(coverage))),
        speed_of_light=sol_sections(ds) if speed_of_light is None else speed_of_light)
