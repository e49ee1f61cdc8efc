"""Leaderboards: per-hardware rankings of solutions and authors, fast_p curves, per-workload results.

Pure functions over the loaded dataset; the site's definition, solution, author, hardware and home
pages all read from here, so no number is computed twice or in a template. The rules:

- **One hardware at a time.** Results from different machines are never mixed: every leaderboard,
  ranking and curve is for one hardware name (a trace naming a hardware spec's alias counts as that
  spec's name).
- **Latest result wins.** Per (solution, workload, hardware) only the latest trace counts (by its
  timestamp, then its place in the dataset).
- **Speedup against the baseline on the same hardware.** The baseline of a definition on a hardware
  is its solution stored in the author folder `baseline` (model/contender_kinds.py; the one that passed most
  workloads there, ties by name): a file elsewhere naming `"author": "baseline"` is not it.
  A solution's speedup on a workload is the baseline's latency over the solution's latency; it is
  known only where both passed.
- **Every workload counts, each for what it is.** The workloads of a definition on a hardware are its
  workloads in the dataset plus any other workload its traces there ran. The pass rate is over the
  workloads the solution *ran* (a workload it never ran is "not run", shown apart, never a failure);
  each failure kind (INCORRECT_NUMERICAL, RUNTIME_ERROR, ...) is counted apart. fast_p is over *all*
  workloads, so coverage still shows there.
- **Unstable measurements are not ranked.** A passed result whose timing is too noisy to trust (the
  trace says `unstable`, or its statistics fail the bench's own rule: see `Trace.unstable`) counts as correct but gives no
  latency, speedup or SOL% to any score; it is marked where it is shown. So is a result measured without
  the bench's sandbox (`environment.sandbox` "none"): its solution could read the references and seeds.
- **Scores.** geomean speedup: geometric mean of the speedups over the workloads the solution
  passed with a stable timing. fast_p(p): share of *all* workloads where the solution is correct,
  stably timed and its speedup is strictly greater than p (KernelBench). fast_1 = fast_p(1).
- **Ranking.** By geomean speedup (highest first; solutions without one come last), then pass
  rate; solutions equal on both share a rank (1, 1, 3), listed by name.
- **Authors.** Per hardware, over all workloads of every definition with results there: on each
  workload an author counts with their best correct solution. Ranked by fast_1, then geomean speedup.

This module builds the boards; beside it: scores.py (the arithmetic), results.py (what a board holds),
latest.py (which traces count), rankings.py (authors), hardware.py (summaries), estimates.py (models).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Mapping, Optional, Sequence

from ..model.contender_kinds import BASELINE, kind_of, library_requirement
from ..model.dataset import Dataset
from ..model.layout import CANONICAL
from ..model.records import Trace
from .latest import by_hardware_name, instant, latest_traces, trace_order
from .results import NOT_RUN, Entry, Leaderboard, Result, WorkloadRow
from .scores import competition_ranks, curve_end, fast_p, fast_p_curve, geomean, median


@dataclass(frozen=True)
class LatestResult:
    """A solution's standing on one hardware, for the list of what was benchmarked last."""

    definition: str
    hardware: str
    entry: Entry
    solutions: int  # in that leaderboard


# -- results ------------------------------------------------------------------------------------

def _author(ds: Dataset, solution: str, trace: Optional[Trace]) -> str:
    s = ds.solutions.get(solution)
    if s is not None:
        return s.author
    return CANONICAL.trace_author(trace.source.path) if trace is not None else ""


def _environment(env: Mapping, seen: dict[int, tuple[tuple[str, str], ...]]) -> tuple[tuple[str, str], ...]:
    """`env` flattened; `seen` holds those already flattened (a board's traces share a handful of environments)."""
    key = id(env)  # environments are shared objects (model/evaluation.environment_of), alive while the board is made
    found = seen.get(key)
    if found is None:
        found = seen[key] = _flatten(env)
    return found


def _flatten(env: Mapping) -> tuple[tuple[str, str], ...]:
    out = []
    for key, value in sorted(env.items()):
        if isinstance(value, Mapping):
            out.extend((f"{key}.{k}", str(v)) for k, v in sorted(value.items()))
        else:
            out.append((str(key), str(value)))
    return tuple(out)


def _result(solution: str, workload: str, trace: Optional[Trace], baseline_ms: Optional[float],
            environments: dict, recorded_ok: bool = False) -> Result:
    """`baseline_ms`: the baseline's stable latency on this workload (None: no speedup).
    `environments`: the board's flattened environments so far (see _environment).
    `recorded_ok`: there is no baseline on this hardware at all, so the speedup the trace recorded
    against its own reference run is used (marked)."""
    if trace is None:
        return Result(solution, workload, NOT_RUN, None, None, None, None, None, "", "", "")
    ev = trace.evaluation
    correctness, perf = ev.correctness, ev.performance
    passed = ev.passed
    unstable = ev.unstable
    # A solution that ran outside the sandbox could read the dataset (references, seeds) and reach the network.
    unsandboxed = passed and ev.environment.data.get("sandbox") == "none"
    latency = trace.latency_ms if passed else None
    speedup = (baseline_ms / latency if passed and not unstable and not unsandboxed and latency and baseline_ms
               else None)
    recorded = perf.speedup_factor if perf is not None else None
    speedup_recorded = False
    if (recorded_ok and speedup is None and passed and not unstable and not unsandboxed and isinstance(recorded, (int, float))
            and recorded > 0 and (perf.reference_latency_ms or 0) > 0):
        # no baseline solution on this hardware: the speedup the measuring tool recorded against its
        # own reference run (flashinfer-bench's reference_latency_ms / speedup_factor) is all there is
        speedup, speedup_recorded = float(recorded), True
    p20, p80 = (perf.p20_ms, perf.p80_ms) if perf is not None else (None, None)
    return Result(
        solution=solution, workload=workload, status=trace.status, latency_ms=latency, speedup=speedup,
        max_absolute_error=correctness.max_absolute_error if correctness is not None else None,
        max_relative_error=correctness.max_relative_error if correctness is not None else None,
        samples=perf.samples if passed and perf is not None else None, log=ev.log, timestamp=trace.timestamp,
        trace_path=f"{trace.source.path}:{trace.source.line}", unstable=unstable, unsandboxed=unsandboxed,
        spread=(p20, p80) if passed and isinstance(p20, (int, float)) and isinstance(p80, (int, float)) else None,
        environment=_environment(ev.environment.data, environments),
        timer=str(perf.timer if perf is not None and perf.timer is not None else ""),
        speedup_recorded=speedup_recorded, provenance=trace.provenance,
    )


def _t_sol_by_workload(ds: Dataset, definition: str, hw: str, axes_of: Mapping[str, Mapping]) -> dict:
    """Speed-of-light seconds per workload uuid on `hw`, from the definition's Einsum cascade and the
    hardware spec (roofline.py); workloads without either are left out."""
    from ..einsum import CascadeProblem, workload_counts
    from .roofline import speed_of_light

    d, spec = ds.definitions.get(definition), ds.hardware_spec(hw)
    if d is None or spec is None or definition not in ds.einsums:
        return {}
    out, cache = {}, {}
    for wl, axes in axes_of.items():
        try:
            out[wl] = speed_of_light(workload_counts(ds, d, dict(axes), cache), spec).t_sol_s
        except (CascadeProblem, KeyError, ValueError, TypeError):
            continue  # the validator reports a cascade that does not count
    return out


def _with_sol(r: Result, t_sol_s: Optional[float]) -> Result:
    if t_sol_s is None or not r.ranked or not r.latency_ms:
        return r
    return replace(r, sol_percent=t_sol_s * 1e3 / r.latency_ms)


# -- leaderboards -------------------------------------------------------------------------------

def definition_leaderboards(ds: Dataset, definition: str,
                            traces: Optional[Sequence[Trace]] = None) -> tuple[Leaderboard, ...]:
    """One leaderboard per hardware the definition has traces on, by hardware name."""
    if traces is None:
        traces = ds.traces_by_definition.get(definition, ())
    if not traces:
        return ()
    latest = latest_traces(ds, traces)
    counts: dict[tuple[str, str], int] = defaultdict(int)  # (solution, hardware) -> traces
    for hw, t in by_hardware_name(ds, traces):
        counts[(t.solution, hw)] += 1
    newest: dict[tuple[str, str], tuple] = {}  # the newest of all is the latest on its workload: sought among those
    for (solution, _, hw), t in latest.items():
        held, order = newest.get((solution, hw)), trace_order(t)
        if held is None or order > held[0]:
            newest[(solution, hw)] = order, t
    updated = {key: t.timestamp for key, (_, t) in newest.items()}
    by_hw: dict[str, dict[tuple[str, str], Trace]] = defaultdict(dict)
    for (solution, workload, hw), t in latest.items():
        by_hw[hw][(solution, workload)] = t

    known_workloads = ds.workloads_by_definition.get(definition, ())
    d = ds.definitions.get(definition)
    var_axes = d.var_axes if d is not None else ()
    return tuple(_leaderboard(ds, definition, hw, by_hw[hw], known_workloads, var_axes, counts, updated)
                 for hw in sorted(by_hw))


def _workload_order(known_workloads, latest: Mapping[tuple[str, str], Trace]) -> dict[str, Mapping]:
    """Axes per workload uuid, in order: the dataset's workloads in file order, then any other the traces ran."""
    axes_of: dict[str, Mapping] = {}
    for w in known_workloads:
        axes_of.setdefault(w.uuid, w.axes)
    extra: dict[str, Mapping] = {}
    for (_, wl), t in sorted(latest.items()):
        if wl not in axes_of and wl not in extra:
            extra[wl] = t.workload_axes
    axes_of.update(sorted(extra.items()))
    return axes_of


def _baseline(ds: Dataset, solutions: Sequence[str], order: Sequence[str],
              latest: Mapping[tuple[str, str], Trace]) -> Optional[str]:
    """The baseline solution (model/contender_kinds.py: by the folder the dataset layout stores it in, never by an
    `author` field a file can claim) that passed most workloads here (ties by name). A layout without author
    folders (FlashInfer-Trace read in place) has only the field to go by."""
    passed = {s: sum(1 for wl in order if (t := latest.get((s, wl))) is not None and t.is_passed) for s in solutions}
    baselines = [s for s in solutions if (found := ds.solutions.get(s)) is not None
                 and kind_of(CANONICAL.solution_author(found.source.path) or found.author) == BASELINE]
    return min(baselines, key=lambda s: (-passed[s], s)) if baselines else None


def _entry_fields(ds: Dataset, solution: str, rs: Sequence[Result], first_trace: Optional[Trace],
                  end: float) -> dict:
    """A solution's scores over its results on every workload (ranks are added later)."""
    total = len(rs)
    passed = [r for r in rs if r.passed]
    ranked = [r for r in passed if r.ranked]
    ran = sum(1 for r in rs if r.ran)
    speedups = [r.speedup for r in ranked]
    latencies = [r.latency_ms for r in ranked if r.latency_ms is not None]
    kinds: dict[str, int] = defaultdict(int)
    for r in rs:
        if r.failed:
            kinds[r.status] += 1
    found = ds.solutions.get(solution)
    author = _author(ds, solution, first_trace)
    return dict(
        solution=solution, author=author, language=found.language if found else "", kind=kind_of(author),
        requirement=library_requirement(author, found.dependencies if found else ()),
        known=found is not None, workloads=total, passed=len(passed), failed=sum(kinds.values()),
        not_run=total - ran, pass_rate=len(passed) / ran if ran else None, failures=tuple(sorted(kinds.items())),
        unstable=len(passed) - len(ranked), geomean_speedup=geomean(x for x in speedups if x is not None),
        fast_1=fast_p(speedups, total, 1.0), best_latency_ms=min(latencies, default=None),
        median_latency_ms=median(latencies), samples=sum(r.samples or 1 for r in ranked),
        sol_percent=geomean(r.sol_percent for r in ranked if r.sol_percent), curve=fast_p_curve(speedups, total, end),
        recorded_speedups=sum(1 for r in ranked if r.speedup_recorded),
        unknown_provenance=sum(1 for r in ranked if r.provenance == "unknown"),
    )


def _ranked(unranked: list[dict]) -> tuple[Entry, ...]:
    unranked.sort(key=lambda e: (e["geomean_speedup"] is None, -(e["geomean_speedup"] or 0.0),
                                 -(e["pass_rate"] or 0.0), e["solution"]))
    ranks = competition_ranks([(e["geomean_speedup"], e["pass_rate"] or 0.0) for e in unranked])
    return tuple(Entry(rank=r, **e) for r, e in zip(ranks, unranked))


def _leaderboard(ds: Dataset, definition: str, hw: str, latest: Mapping[tuple[str, str], Trace],
                 known_workloads, var_axes: Sequence[str], counts: Mapping[tuple[str, str], int],
                 newest: Mapping[tuple[str, str], str]) -> Leaderboard:
    axes_of = _workload_order(known_workloads, latest)
    order = list(axes_of)
    solutions = sorted({s for (s, _) in latest})
    baseline = _baseline(ds, solutions, order, latest)
    environments: dict = {}
    shown_ms: dict[str, Optional[float]] = {}  # the baseline's latency where it passed
    baseline_ms: dict[str, Optional[float]] = {}  # ... and was stable: the speedups' denominator
    for wl in order:
        r = _result(baseline, wl, latest.get((baseline, wl)), None, environments) if baseline else None
        shown_ms[wl] = r.latency_ms if r is not None and r.passed else None
        baseline_ms[wl] = shown_ms[wl] if r is not None and r.ranked else None

    t_sol = _t_sol_by_workload(ds, definition, hw, axes_of)
    results = {s: [_with_sol(_result(s, wl, latest.get((s, wl)), baseline_ms[wl], environments, baseline is None),
                              t_sol.get(wl))
                   for wl in order]
               for s in solutions}
    end = curve_end(r.speedup for rs in results.values() for r in rs)
    unranked = []
    for s in solutions:
        first = next((latest[(s, wl)] for wl in order if (s, wl) in latest), None)
        fields = _entry_fields(ds, s, results[s], first, end)
        unranked.append(dict(fields, is_baseline=s == baseline, traces=counts.get((s, hw), 0), updated=newest[(s, hw)]))
    entries = _ranked(unranked)
    rows = tuple(
        WorkloadRow(uuid=wl, axes=tuple((a, axes_of[wl].get(a)) for a in var_axes),
                    baseline_latency_ms=shown_ms[wl], baseline_stable=baseline_ms[wl] is not None,
                    results=tuple(results[e.solution][i] for e in entries))
        for i, wl in enumerate(order)
    )
    return Leaderboard(definition, hw, baseline, tuple(order), entries, rows, end)


def all_leaderboards(ds: Dataset) -> dict[str, tuple[Leaderboard, ...]]:
    """Every definition's leaderboards (an empty tuple for one without traces), by definition name.

    Definitions the dataset lacks but traces name are left out (the validator reports those traces)."""
    by_def = ds.traces_by_definition
    return {name: definition_leaderboards(ds, name, by_def.get(name, ())) for name in sorted(ds.definitions)}


def solution_boards(boards: Sequence[Leaderboard], solution: str) -> tuple[Leaderboard, ...]:
    """The leaderboards (of its definition) the solution appears in, by hardware."""
    return tuple(lb for lb in boards if lb.entry(solution) is not None)


def latest_results(boards: Mapping[str, Sequence[Leaderboard]], limit: int = 10) -> tuple[LatestResult, ...]:
    """The `limit` (solution, hardware) standings with the newest traces, newest first."""
    every = [(lb, e) for name in sorted(boards) for lb in boards[name] for e in lb.entries]
    newest = heapq.nlargest(limit, every, key=lambda item: (instant(item[1].updated), item[1].updated))
    return tuple(LatestResult(lb.definition, lb.hardware, e, len(lb.entries)) for lb, e in newest)


