"""Leaderboards: per-hardware rankings of solutions and authors, fast_p curves, per-workload results.

Pure functions over the loaded dataset; the site's definition, solution, author, hardware and home
pages all read from here, so no number is computed twice or in a template. The rules:

- **One hardware at a time.** Results from different machines are never mixed: every leaderboard,
  ranking and curve is for one hardware name (a trace naming a hardware spec's alias counts as that
  spec's name).
- **Latest result wins.** Per (solution, workload, hardware) only the latest trace counts (by its
  timestamp, then its place in the dataset).
- **Speedup against the baseline on the same hardware.** The baseline of a definition on a hardware
  is its solution by the author `baseline` (the one that passed most workloads there, ties by name).
  A solution's speedup on a workload is the baseline's latency over the solution's latency; it is
  known only where both passed.
- **Every workload counts, each for what it is.** The workloads of a definition on a hardware are its
  workloads in the dataset plus any other workload its traces there ran. The pass rate is over the
  workloads the solution *ran* (a workload it never ran is "not run", shown apart, never a failure);
  each failure kind (INCORRECT_NUMERICAL, RUNTIME_ERROR, ...) is counted apart. fast_p is over *all*
  workloads, so coverage still shows there.
- **Unstable measurements are not ranked.** A passed result whose timing is too noisy to trust (the
  trace says `unstable`, or its statistics fail the bench's own rule: see `is_unstable`) counts as correct but gives no
  latency, speedup or SOL% to any score; it is marked where it is shown.
- **Scores.** geomean speedup: geometric mean of the speedups over the workloads the solution
  passed with a stable timing. fast_p(p): share of *all* workloads where the solution is correct,
  stably timed and its speedup is strictly greater than p (KernelBench). fast_1 = fast_p(1).
- **Ranking.** By geomean speedup (highest first; solutions without one come last), then pass
  rate; solutions equal on both share a rank (1, 1, 3), listed by name.
- **Authors.** Per hardware, over all workloads of every definition with results there: on each
  workload an author counts with their best correct solution. Ranked by fast_1, then geomean speedup.
"""

from __future__ import annotations

import bisect
import heapq
import json
import math
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from datetime import datetime
from typing import Iterable, Mapping, Optional, Sequence

from ..model.layout import CANONICAL
from ..model.dataset import Dataset
from ..model.records import HardwareSpec, Trace
from ..model.stability import spread_is_unstable

BASELINE_AUTHOR = "baseline"
PASSED = "PASSED"
NOT_RUN = "NOT_RUN"  # status shown for a workload a solution has no trace for
# Speedups within this relative tolerance are equal (geomeans of equal ratios can differ in the last bits).
TIE_TOLERANCE = 1e-9
# The fast_p curves run from p = 0 to a little past the largest speedup, and at least to this.
CURVE_MIN_END = 2.0
CURVE_MARGIN = 1.1


# -- scores (pure arithmetic) -------------------------------------------------------------------

def geomean(values: Iterable[float]) -> Optional[float]:
    """Geometric mean of positive numbers; None for none."""
    logs = [math.log(v) for v in values]
    return math.exp(math.fsum(logs) / len(logs)) if logs else None


def median(values: Iterable[float]) -> Optional[float]:
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return None
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def fast_p(speedups: Sequence[Optional[float]], total: int, p: float) -> float:
    """Share of `total` workloads where the solution is correct and its speedup is > p.

    `speedups` holds one item per workload the solution got right: its speedup, or None where
    none is known (no baseline result); every other workload of `total` was failed or not run.
    """
    if total <= 0:
        return 0.0
    return sum(1 for s in speedups if s is not None and s > p) / total


def fast_p_curve(speedups: Sequence[Optional[float]], total: int, end: float) -> tuple[tuple[float, float], ...]:
    """fast_p as a step function of p on [0, end]: (p, fast_p(p)) at 0, at every distinct speedup
    (where it drops, since the comparison is strict) and at `end`; plot with horizontal-then-vertical steps."""
    known = sorted(s for s in speedups if s is not None)
    points = sorted({0.0, *(s for s in known if s < end), end})
    if total <= 0:
        return tuple((p, 0.0) for p in points)
    # fast_p at each point, from the sorted speedups (n log n: speedups are mostly distinct)
    return tuple((p, (len(known) - bisect.bisect_right(known, p)) / total) for p in points)


def curve_end(speedups: Iterable[Optional[float]]) -> float:
    """Where fast_p curves stop: past the largest speedup, at least CURVE_MIN_END, on a round 0.5 step."""
    largest = max((s for s in speedups if s is not None), default=0.0)
    return max(CURVE_MIN_END, math.ceil(largest * CURVE_MARGIN * 2) / 2)


def competition_ranks(keys: Sequence[tuple[Optional[float], ...]]) -> list[int]:
    """Ranks 1, 1, 3, ... for `keys` already in ranking order; equal keys (within TIE_TOLERANCE,
    None equal to None) share a rank."""
    ranks: list[int] = []
    for i, key in enumerate(keys):
        if i and _same(key, keys[i - 1]):
            ranks.append(ranks[-1])
        else:
            ranks.append(i + 1)
    return ranks


def _same(a: tuple, b: tuple) -> bool:
    for x, y in zip(a, b):
        if x is None or y is None:
            if x is not y:
                return False
        elif not math.isclose(x, y, rel_tol=TIE_TOLERANCE, abs_tol=0.0):
            return False
    return True


# -- records ------------------------------------------------------------------------------------

def is_unstable(performance: Mapping) -> bool:
    """Whether a trace's timing is too noisy to rank: the bench's own `unstable` mark when present, else
    the bench's rule applied to the statistics the trace recorded; a trace without them cannot be
    judged and counts as stable."""
    if not performance:
        return False
    if "unstable" in performance:
        return bool(performance["unstable"])
    median, p20, p80, fastest = (performance.get(k) for k in ("latency_ms", "p20_ms", "p80_ms", "min_ms"))
    if not all(isinstance(v, (int, float)) for v in (median, p20, p80, fastest)):
        return False
    return spread_is_unstable(median, p20, p80, fastest)


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
    spread: Optional[tuple[float, float]] = None  # (p20, p80) of the timing samples, ms, where recorded
    environment: tuple[tuple[str, str], ...] = ()  # the trace's environment, flattened ("libs.torch", "2.13")
    timer: str = ""
    speedup_recorded: bool = False  # speedup is the trace's own speedup_factor (no baseline result here)

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def ran(self) -> bool:
        return self.status != NOT_RUN

    @property
    def failed(self) -> bool:
        return self.status not in (PASSED, NOT_RUN)

    @property
    def ranked(self) -> bool:
        """Passed with a timing stable enough to count in scores."""
        return self.passed and not self.unstable


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
        return kernel_speedup(self)


@dataclass(frozen=True)
class AuthorEntry:
    rank: int
    author: str
    solutions: int  # solutions with results on this hardware
    definitions: int  # definitions they have results for
    solved: int  # workloads where one of their solutions is correct
    workloads: int  # all workloads on this hardware (the same for every author)
    geomean_speedup: Optional[float]  # over the solved workloads, best solution per workload
    fast_1: float
    curve: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class AuthorRanking:
    hardware: str
    definitions: int  # definitions with results on this hardware
    workloads: int
    entries: tuple[AuthorEntry, ...]
    curve_end: float


@dataclass(frozen=True)
class HardwareSummary:
    name: str
    spec: Optional[HardwareSpec]
    traces: int
    leaderboards: tuple[Leaderboard, ...]  # definitions with results on it, by name


@dataclass(frozen=True)
class LatestResult:
    """A solution's standing on one hardware, for the list of what was benchmarked last."""

    definition: str
    hardware: str
    entry: Entry
    solutions: int  # in that leaderboard


# -- grouping -----------------------------------------------------------------------------------

@lru_cache(maxsize=65536)  # a run's traces share a few timestamps
def _instant(timestamp: str) -> float:
    """Seconds since the epoch of an RFC 3339 timestamp (Z or an offset; the schema requires one)."""
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return float("-inf")
    return moment.timestamp() if moment.tzinfo else float("-inf")


def _order(trace: Trace) -> tuple:
    return (_instant(trace.timestamp), trace.timestamp, trace.source.path, trace.source.line)


def hardware_name(ds: Dataset, name: str) -> str:
    """The name results on `name` are filed under: the hardware spec's name when `name` is one of its aliases."""
    spec = ds.hardware_spec(name)
    return spec.name if spec is not None else name


def latest_traces(ds: Dataset, traces: Iterable[Trace]) -> dict[tuple[str, str, str], Trace]:
    """The latest trace per (solution, workload uuid, hardware name)."""
    latest: dict[tuple[str, str, str], Trace] = {}
    names: dict[str, str] = {}
    for t in traces:
        hw = names.get(t.hardware)
        if hw is None:
            hw = names[t.hardware] = hardware_name(ds, t.hardware)
        key = (t.solution, t.workload_uuid, hw)
        held = latest.get(key)
        if held is None or _order(t) > _order(held):
            latest[key] = t
    return latest


def _author(ds: Dataset, solution: str, trace: Optional[Trace]) -> str:
    s = ds.solutions.get(solution)
    if s is not None:
        return s.author
    return CANONICAL.trace_author(trace.source.path) if trace is not None else ""


_ENVIRONMENTS: dict[str, tuple[tuple[str, str], ...]] = {}  # most traces share a handful of environments


def _environment(env: Mapping) -> tuple[tuple[str, str], ...]:
    key = repr(env)
    found = _ENVIRONMENTS.get(key)
    if found is None:
        if len(_ENVIRONMENTS) > 10_000:
            _ENVIRONMENTS.clear()
        found = _ENVIRONMENTS[key] = _flatten(env)
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
            recorded_ok: bool = False) -> Result:
    """`baseline_ms`: the baseline's stable latency on this workload (None: no speedup).
    `recorded_ok`: there is no baseline on this hardware at all, so the speedup the trace recorded
    against its own reference run is used (marked)."""
    if trace is None:
        return Result(solution, workload, NOT_RUN, None, None, None, None, None, "", "", "")
    # Parsed here and let go: caching every trace's parsed JSON (trace.data) costs GBs at a million traces.
    ev = json.loads(trace.raw)["evaluation"]
    correctness = ev.get("correctness") or {}
    perf = ev.get("performance") or {}
    passed = trace.status == PASSED
    unstable = passed and is_unstable(perf)
    latency = trace.latency_ms if passed else None
    speedup = baseline_ms / latency if passed and not unstable and latency and baseline_ms else None
    recorded = perf.get("speedup_factor")
    speedup_recorded = False
    if (recorded_ok and speedup is None and passed and not unstable and isinstance(recorded, (int, float))
            and recorded > 0 and (perf.get("reference_latency_ms") or 0) > 0):
        # no baseline solution on this hardware: the speedup the measuring tool recorded against its
        # own reference run (flashinfer-bench's reference_latency_ms / speedup_factor) is all there is
        speedup, speedup_recorded = float(recorded), True
    p20, p80 = perf.get("p20_ms"), perf.get("p80_ms")
    return Result(
        solution=solution, workload=workload, status=trace.status, latency_ms=latency, speedup=speedup,
        max_absolute_error=correctness.get("max_absolute_error"),
        max_relative_error=correctness.get("max_relative_error"),
        samples=perf.get("samples") if passed else None, log=ev.get("log") or "", timestamp=trace.timestamp,
        trace_path=f"{trace.source.path}:{trace.source.line}", unstable=unstable,
        spread=(p20, p80) if passed and isinstance(p20, (int, float)) and isinstance(p80, (int, float)) else None,
        environment=_environment(ev.get("environment") or {}), timer=str(perf.get("timer", "")),
        speedup_recorded=speedup_recorded,
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
    newest: dict[tuple[str, str], Trace] = {}
    names: dict[str, str] = {}
    for t in traces:
        hw = names.get(t.hardware)
        if hw is None:
            hw = names[t.hardware] = hardware_name(ds, t.hardware)
        counts[(t.solution, hw)] += 1
        held = newest.get((t.solution, hw))
        if held is None or _order(t) > _order(held):
            newest[(t.solution, hw)] = t
    updated = {key: t.timestamp for key, t in newest.items()}
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
    """The solution by the author `baseline` that passed most workloads here (ties by name)."""
    passed = {s: sum(1 for wl in order if (t := latest.get((s, wl))) is not None and t.is_passed) for s in solutions}
    baselines = [s for s in solutions if (found := ds.solutions.get(s)) is not None and found.author == BASELINE_AUTHOR]
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
    return dict(
        solution=solution, author=_author(ds, solution, first_trace), language=found.language if found else "",
        known=found is not None, workloads=total, passed=len(passed), failed=sum(kinds.values()),
        not_run=total - ran, pass_rate=len(passed) / ran if ran else None, failures=tuple(sorted(kinds.items())),
        unstable=len(passed) - len(ranked), geomean_speedup=geomean(x for x in speedups if x is not None),
        fast_1=fast_p(speedups, total, 1.0), best_latency_ms=min(latencies, default=None),
        median_latency_ms=median(latencies), samples=sum(r.samples or 1 for r in ranked),
        sol_percent=geomean(r.sol_percent for r in ranked if r.sol_percent), curve=fast_p_curve(speedups, total, end),
        recorded_speedups=sum(1 for r in ranked if r.speedup_recorded),
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
    shown_ms: dict[str, Optional[float]] = {}  # the baseline's latency where it passed
    baseline_ms: dict[str, Optional[float]] = {}  # ... and was stable: the speedups' denominator
    for wl in order:
        r = _result(baseline, wl, latest.get((baseline, wl)), None) if baseline else None
        shown_ms[wl] = r.latency_ms if r is not None and r.passed else None
        baseline_ms[wl] = shown_ms[wl] if r is not None and r.ranked else None

    t_sol = _t_sol_by_workload(ds, definition, hw, axes_of)
    results = {s: [_with_sol(_result(s, wl, latest.get((s, wl)), baseline_ms[wl], baseline is None), t_sol.get(wl))
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


# -- authors ------------------------------------------------------------------------------------

def author_rankings(ds: Dataset, boards: Mapping[str, Sequence[Leaderboard]]) -> tuple[AuthorRanking, ...]:
    """Per hardware (by name), authors ranked over every workload of every definition with results there."""
    by_hw: dict[str, list[Leaderboard]] = defaultdict(list)
    for name in sorted(boards):
        for lb in boards[name]:
            by_hw[lb.hardware].append(lb)
    rankings = []
    for hw in sorted(by_hw):
        lbs = by_hw[hw]
        total = sum(len(lb.workloads) for lb in lbs)
        # author -> (definition, workload) -> best known speedup, or None when correct without one
        best: dict[str, dict[tuple[str, str], Optional[float]]] = defaultdict(dict)
        solutions: dict[str, set[str]] = defaultdict(set)
        definitions: dict[str, set[str]] = defaultdict(set)
        for lb in lbs:
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
                fast_1=fast_p(speedups, total, 1.0), curve=fast_p_curve(speedups, total, end)))
        unranked.sort(key=lambda e: (-e["fast_1"], e["geomean_speedup"] is None, -(e["geomean_speedup"] or 0.0),
                                     e["author"]))
        ranks = competition_ranks([(e["fast_1"], e["geomean_speedup"]) for e in unranked])
        entries = tuple(AuthorEntry(rank=r, **e) for r, e in zip(ranks, unranked))
        rankings.append(AuthorRanking(hw, len(lbs), total, entries, end))
    return tuple(rankings)


# -- hardware, solutions, latest ----------------------------------------------------------------

def hardware_summaries(ds: Dataset, boards: Mapping[str, Sequence[Leaderboard]]) -> tuple[HardwareSummary, ...]:
    """Every hardware: each spec in the dataset and each name traces ran on, by name."""
    traces: dict[str, int] = defaultdict(int)
    names: dict[str, str] = {}
    for t in ds.traces:
        hw = names.get(t.hardware)
        if hw is None:
            hw = names[t.hardware] = hardware_name(ds, t.hardware)
        traces[hw] += 1
    by_hw: dict[str, list[Leaderboard]] = defaultdict(list)
    for name in sorted(boards):
        for lb in boards[name]:
            by_hw[lb.hardware].append(lb)
    every = sorted(set(ds.hardware) | set(traces))
    return tuple(HardwareSummary(hw, ds.hardware.get(hw), traces.get(hw, 0), tuple(by_hw.get(hw, ())))
                 for hw in every)


def solution_boards(boards: Sequence[Leaderboard], solution: str) -> tuple[Leaderboard, ...]:
    """The leaderboards (of its definition) the solution appears in, by hardware."""
    return tuple(lb for lb in boards if lb.entry(solution) is not None)


def latest_results(boards: Mapping[str, Sequence[Leaderboard]], limit: int = 10) -> tuple[LatestResult, ...]:
    """The `limit` (solution, hardware) standings with the newest traces, newest first."""
    every = [(lb, e) for name in sorted(boards) for lb in boards[name] for e in lb.entries]
    newest = heapq.nlargest(limit, every, key=lambda item: (_instant(item[1].updated), item[1].updated))
    return tuple(LatestResult(lb.definition, lb.hardware, e, len(lb.entries)) for lb, e in newest)


# -- models -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ModelEstimate:
    """What one step of a model would gain on one hardware if every kernel used its best passing solution.

    Per kernel with a baseline result on the hardware: its time is the median of the baseline's
    latencies over the workloads, and its speedup the geometric mean over those workloads of the
    baseline's latency over the best passing latency (the baseline's own when nothing beats it).
    The step's estimate weighs each kernel's time by how often the step calls it:
    sum(count x time) / sum(count x time / speedup). Kernels without a baseline result there are
    left out and counted in `calls` vs `step_calls`.
    """

    stage: str
    hardware: str
    kernels: int  # kernels of the step with a baseline result on this hardware
    step_kernels: int  # distinct kernels the step calls
    calls: int  # calls per step those kernels account for
    step_calls: int
    baseline_ms: float  # sum of count x baseline time, per step
    best_ms: float  # the same with every kernel at its best solution
    speedup: float
    parts: tuple[tuple[str, int, float, float], ...] = ()  # per kernel: (id, calls, baseline ms, best ms) per step


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


def model_estimates(ds: Dataset, boards: Mapping[str, Sequence[Leaderboard]]) -> dict[str, tuple[ModelEstimate, ...]]:
    """Per calling record (by file stem): an estimate per step (decode, prefill) and hardware with results."""
    kernel_on: dict[tuple[str, str], tuple[float, float]] = {}
    for name, lbs in boards.items():
        for lb in lbs:
            found = lb.kernel_speedup
            if found is not None:
                kernel_on[(name, lb.hardware)] = found
    hardware = sorted({hw for (_, hw) in kernel_on})
    out: dict[str, tuple[ModelEstimate, ...]] = {}
    for record_name, record in sorted(ds.models.items()):
        estimates = []
        for stage in ("decode", "prefill"):
            calls = [(k.id, k.count) for k in record.kernels if k.stage in (None, stage)]
            step_kernels = len({kid for kid, _ in calls})
            step_calls = sum(c for _, c in calls)
            for hw in hardware:
                known = [(kid, c, kernel_on[(kid, hw)]) for kid, c in calls if (kid, hw) in kernel_on]
                if not known:
                    continue
                base = math.fsum(c * t for _, c, (t, _) in known)
                best = math.fsum(c * t / s for _, c, (t, s) in known)
                per_kernel: dict[str, list] = {}
                for kid, c, (t, s) in known:
                    part = per_kernel.setdefault(kid, [kid, 0, 0.0, 0.0])
                    part[1] += c
                    part[2] += c * t
                    part[3] += c * t / s
                parts = tuple(sorted((tuple(p) for p in per_kernel.values()), key=lambda p: (-p[3], p[0])))
                estimates.append(ModelEstimate(stage, hw, len(per_kernel), step_kernels,
                                               sum(c for _, c, _ in known), step_calls, base, best,
                                               base / best if best > 0 else 1.0, parts))
        out[record_name] = tuple(estimates)
    return out
