"""Semantic checks of traces: what they name exists, status-dependent fields, consistent numbers.

This runs on up to millions of lines: each check is a few dict lookups.
"""

from __future__ import annotations

import functools
from typing import Iterator

from ..formats import flashinfer_trace
from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic
from ..model.layout import CANONICAL
from ..model.records import Trace
from .common import error, orphan_error, path_parts, warning

# Which evaluation parts each status carries: (correctness, performance).
STATUS_FIELDS = {"PASSED": (True, True), "INCORRECT_NUMERICAL": (True, False)}
NEITHER = (False, False)
SPEEDUP_RTOL = 1e-3  # speedups are stored rounded; allow for it


def check_traces(ds: Dataset) -> Iterator[Diagnostic]:
    workloads = {(w.definition, w.uuid): w for w in ds.workloads}
    for t in ds.traces:
        d = ds.definitions.get(t.definition)
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
            elif dict(w.axes) != t.workload_axes:
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
    needs_correctness, needs_performance = STATUS_FIELDS.get(t.status, NEITHER)
    for part, needed, present in (("correctness", needs_correctness, t.has_correctness),
                                  ("performance", needs_performance, t.has_performance)):
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
