"""Semantic checks of traces: what they name exists, status-dependent fields, consistent numbers.

This runs on up to millions of lines: each check is a few dict lookups.
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Iterator

from ..einsum import workload_counts
from ..einsum.speed_of_light import speed_of_light
from ..formats import flashinfer_trace
from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic
from ..model.evaluation import BENCH_TIMEOUT_S, MIN_CALL_MS, ORDERED_STATISTICS
from ..model.layout import CANONICAL
from ..model.records import BENCH_TOOL, Definition, Trace
from .common import error, orphan_error, path_parts, warning

SPEEDUP_RTOL = 1e-3  # speedups are stored rounded; allow for it
# A latency may equal its workload's speed-of-light time (the bench raises samples below it to it): only what
# lies below it by more than float rounding is an error.
FLOOR_RTOL = 1e-9
MEASURE_CPU_PEAKS = "tests/benchmarks/measure_cpu_peaks.py"


def check_traces(ds: Dataset) -> Iterator[Diagnostic]:
    workloads = {(w.definition, w.uuid): w for w in ds.workloads}
    floors = Floors(ds)
    for t in ds.traces:
        d = ds.definitions.get(t.definition)
        yield from floors.check(t, d)
        if d is None:
            if problem := orphan_error(ds, t, "trace"):
                yield problem
        else:
            w = workloads.get((t.definition, t.workload_uuid))
            if w is None:
                # A workload rejected by its schema is reported where it is, not here again.
                if t.workload_uuid not in ds.rejected["workload"]:
                    yield error(t, "/workload/uuid", f"workload '{t.workload_uuid}' is not a workload of {t.definition}",
                                f"add it to workloads/{d.type}/{t.definition}.jsonl, or fix the uuid")
            elif w.axes != t.workload_axes:  # a read-only view compares as the dict it shows
                yield error(t, "/workload/axes", f"axes differ from those of workload '{t.workload_uuid}' ({dict(w.axes)})",
                            "copy the workload exactly as it is in the workloads file")
        s = ds.solutions.get(t.solution)
        if s is None:
            if not ds.is_known("solution", t.solution):
                yield error(t, "/solution", f"trace of unknown solution '{t.solution}'", "add the solution, or fix the name")
        else:
            if s.definition != t.definition:
                yield error(t, "/solution", f"solution '{t.solution}' implements '{s.definition}', not '{t.definition}'",
                            "a trace's solution must implement its definition")
            yield from check_location(t, s.author, d.type if d else None)
        yield from check_evaluation(t)
        yield from check_statistics(t)
        yield from check_provenance(t)


@functools.lru_cache(maxsize=65536)
def _trace_file(author: str, type_: str, definition: str) -> str:
    return CANONICAL.trace_file(author, type_, definition)  # one per file, asked once per line


def check_location(t: Trace, author: str, type_: str | None) -> Iterator[Diagnostic]:
    if type_ is not None and t.source.path == _trace_file(author, type_, t.definition):
        return
    parts = path_parts(t)  # traces/<author>/<type>/<definition>.jsonl
    expected = _trace_file(author, type_ or parts[2], t.definition)
    if t.source.path == expected:
        return
    in_layout = flashinfer_trace.placed_in_layout(t.source.path, type_ or parts[2])
    if len(parts) == 4 and parts[3] == t.definition + ".jsonl" and (parts[2] == (type_ or parts[2]) or in_layout):
        if parts[1] != author:
            yield warning(t, "/solution", f"trace of {t.solution} by '{author}' is stored in the folder "
                          f"traces/{parts[1]}/", f"append it to {expected} (the solution's author is what counts)")
        return
    if len(parts) != 4 and in_layout:
        return  # a FlashInfer-Trace layout, read in place (the loader says so once)
    if t.source.path != expected:
        yield error(t, "/definition", f"trace of {t.solution} by {author} is stored in {t.source.path}",
                    f"append it to {expected}")


def check_evaluation(t: Trace) -> Iterator[Diagnostic]:
    # Which parts each status carries is model/status.py's (TraceStatus.carries_*), as the bench writes them.
    for part, needed, present in (("correctness", t.status.carries_correctness, t.has_correctness),
                                  ("performance", t.status.carries_performance, t.has_performance)):
        if needed and not present:
            yield error(t, f"/evaluation/{part}", f"status {t.status} requires evaluation.{part}",
                        f"add the {part} measurements, or change the status")
        elif present and not needed:
            yield error(t, f"/evaluation/{part}", f"status {t.status} must not carry evaluation.{part}",
                        f"remove {part} (or set it to null)")
    if t.latency_ms and t.reference_latency_ms and t.speedup_factor:
        expected = t.reference_latency_ms / t.latency_ms
        if abs(t.speedup_factor - expected) > SPEEDUP_RTOL * expected + 1e-9:
            yield error(t, "/evaluation/performance/speedup_factor",
                        f"speedup_factor {t.speedup_factor:g} is not reference_latency_ms / latency_ms = {expected:g}",
                        "store speedup_factor = reference_latency_ms / latency_ms")


_TIMES = ("latency_ms", "reference_latency_ms", "mean_ms", "min_ms", "max_ms", "p20_ms", "p80_ms", "stderr_ms")
_PERF = "/evaluation/performance/"
_STATISTICS = (*_TIMES, "speedup_factor")
_statistics_of = operator.attrgetter(*_STATISTICS)


def check_statistics(t: Trace) -> Iterator[Diagnostic]:
    """Numbers no measurement can give: not finite (JSON's Infinity, NaN), a median call faster than any kernel
    (MIN_CALL_MS: 5e-324 made an infinite speedup), a call longer than the bench's timeout
    for a whole workload, statistics of one set of samples out of order (min <= p20 <= median <= p80 <= max,
    min <= mean <= max). One error per field, at the field."""
    perf = t.evaluation.performance
    if perf is None:
        return
    values = {k: v for k, v in zip(_STATISTICS, _statistics_of(perf))
              if v is not None and (type(v) is float or (isinstance(v, (int, float)) and not isinstance(v, bool)))}
    bad: set = set()
    for k, v in values.items():
        if MIN_CALL_MS <= v <= BENCH_TIMEOUT_S * 1e3:
            continue  # the usual case (finite, in range) in one test; the checks below say what is wrong
        if not math.isfinite(v):
            bad.add(k)
            yield error(t, _PERF + k, f"{k} is {v}: a measurement is a finite number",
                        "measure it again with 'kerneltrace bench'; never edit a trace's numbers")
        elif k in ("latency_ms", "reference_latency_ms") and v < MIN_CALL_MS:
            bad.add(k)
            yield error(t, _PERF + k, f"{k} {v:g} is below {MIN_CALL_MS:g} ms: no kernel call completes that fast "
                        "on any hardware", "measure it again with 'kerneltrace bench'; a result of another tool in "
                        "other units (seconds, microseconds) must be converted to milliseconds")
        elif k != "speedup_factor" and v > BENCH_TIMEOUT_S * 1e3:
            bad.add(k)
            yield error(t, _PERF + k, f"{k} {v:g} is past the bench's timeout of {BENCH_TIMEOUT_S:g} s for a whole "
                        f"workload: no call it passed took that long",
                        "measure it again with 'kerneltrace bench'; a result of another tool in other units "
                        "(seconds, microseconds) must be converted to milliseconds")
    for order in ORDERED_STATISTICS:
        present = [k for k in order if k in values and k not in bad]  # neighbours among those recorded
        for low, high in zip(present, present[1:]):
            if values[low] > values[high] * (1 + 1e-9):  # imported results may be rounded
                yield error(t, _PERF + high, f"{high} {values[high]:g} is below {low} {values[low]:g}: statistics of one "
                            "set of samples keep min <= p20 <= latency (median) <= p80 <= max and min <= mean <= max",
                            "store the statistics as the bench computed them from the samples; never edit a trace's "
                            "numbers")


def check_provenance(t: Trace) -> Iterator[Diagnostic]:
    """Three provenances (Trace.provenance): measured by this project's bench, recorded from elsewhere, or unknown
    (none: the traces written before the bench recorded it, all of them by this bench on a CPU, read as unknown
    because nothing in them shows it). The schema checks the record's form; here, that 'measured' is the bench's."""
    p = t.provenance_record
    if p and p.get("kind") == "measured" and p.get("tool") != BENCH_TOOL:
        yield error(t, "/evaluation/environment/provenance/tool",
                    f"provenance 'measured' names the tool {p.get('tool')!r}: measured means by {BENCH_TOOL}",
                    f"use kind 'recorded' for results measured by another tool, or measure it with {BENCH_TOOL}")


class Floors:
    """The physical checks of traces against the hardware they name: that the dataset has a spec of it (a
    warning once per file and hardware name: without one the site has no speed of light to show and nothing is
    checked), and that no latency lies below the workload's speed-of-light time on it (an error: no kernel beats
    the machine's peak rates; the bench raises samples below it to it). Speed-of-light times come from
    generator/einsum/speed_of_light.py, as the bench's floors do, one per (definition, workload axes, hardware)."""

    def __init__(self, ds: Dataset):
        self.ds = ds
        self.specs: dict = {}  # hardware name -> spec or None
        self.counts: dict = {}  # workload_counts' cache
        self.sol_ms: dict = {}  # (definition, axes, hardware) -> ms, or None where it cannot be computed
        self.unnamed: set = set()  # (file, hardware) already reported

    def spec(self, name: str):
        if name not in self.specs:
            self.specs[name] = self.ds.hardware_spec(name)
        return self.specs[name]

    def check(self, t: Trace, d: Definition | None) -> Iterator[Diagnostic]:
        spec = self.spec(t.hardware)
        if spec is None:
            if (t.source.path, t.hardware) not in self.unnamed:
                self.unnamed.add((t.source.path, t.hardware))
                yield warning(t, "/evaluation/environment/hardware",
                              f"hardware '{t.hardware}' names no hardware spec: the speed of light of its results "
                              f"cannot be computed (the site shows no SOL%) and their latencies are not checked "
                              f"against it (every trace of this file on '{t.hardware}')",
                              f"add {CANONICAL.hardware_file(t.hardware)} with the machine's peak_tflops per dtype and "
                              f"memory_bandwidth_gb_s (see the specs beside it; {MEASURE_CPU_PEAKS} measures a CPU's), "
                              f"or list '{t.hardware}' in the aliases of the spec of that machine")
            return
        if d is None or not t.latency_ms or d.name not in self.ds.einsums:
            return
        floor = self.floor_ms(d, t, spec)
        if floor is not None and t.latency_ms < floor * (1 - FLOOR_RTOL):
            yield error(t, "/evaluation/performance/latency_ms",
                        f"latency_ms {t.latency_ms:.4g} is below this workload's speed-of-light time on {spec.name}, "
                        f"{floor:.4g} ms ({floor / t.latency_ms:.3g}x the latency): no kernel runs faster than the "
                        f"machine's peak rates allow",
                        f"measure it with 'kerneltrace bench' on that machine; if the hardware spec's peaks are too "
                        f"low, correct {CANONICAL.hardware_file(spec.name)}")

    def floor_ms(self, d: Definition, t: Trace, spec) -> float | None:
        axes = t.workload_axes if isinstance(t.workload_axes, dict) else {}
        try:
            key = (d.name, tuple(sorted(axes.items())), spec.name)
            if key not in self.sol_ms:
                self.sol_ms[key] = speed_of_light(workload_counts(self.ds, d, axes, self.counts), spec).t_sol_s * 1e3
            return self.sol_ms[key]
        except Exception:  # noqa: BLE001 - a cascade or axes that do not count are reported where they are
            return None
