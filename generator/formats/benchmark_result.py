"""Benchmark-result records of the schema set (seed 002):
`{device: {name}, kernel_id, source, compiled, time, speedup, max_diff, compile_error}`.

Each becomes a trace. What such a record does not hold is noted: its workload (the importer
attaches one with --workload UUID), its timestamp, the relative error and the unit of `time`.
"""

from __future__ import annotations

from typing import Any, Optional

from ..model.status import TraceStatus
from .common import RECORD_NAME, Normalised, canonical_name, is_number, ordered_evaluation

BENCHMARK_RESULT = "benchmark result (seed 002)"

UNKNOWN_WORKLOAD = "unknown"
UNKNOWN_TIMESTAMP = "1970-01-01T00:00:00Z"
# Prefix of the note a benchmark result gets for its missing workload; the importer drops the
# note when it finds the workload in the dataset.
WORKLOAD_MISSING_NOTE = "workload missing:"
_FIELDS = ("device", "kernel_id", "source", "compiled", "time", "speedup", "max_diff", "compile_error")


def is_benchmark_result(data: dict) -> bool:
    return "kernel_id" in data


def trace_from_benchmark_result(data: dict, workload_uuid: Optional[str]) -> Normalised:
    """{device: {name}, kernel_id, source, compiled, time, speedup, max_diff, compile_error} -> trace."""
    notes: list[str] = []
    device = data.get("device")
    hardware = device.get("name") if isinstance(device, dict) else device if isinstance(device, str) else None
    if not isinstance(hardware, str) or not hardware:
        hardware = "unknown"
        notes.append("device.name missing: environment.hardware is 'unknown'")
    ev = _evaluation(data, notes)
    ev["environment"] = {"hardware": hardware, "provenance": {"kind": "recorded", "tool": "benchmark-result records"}}
    ev["timestamp"] = UNKNOWN_TIMESTAMP
    notes.append(f"timestamp unknown (benchmark results carry none): set to {UNKNOWN_TIMESTAMP}")
    uuid = workload_uuid or UNKNOWN_WORKLOAD
    notes.append(f"{WORKLOAD_MISSING_NOTE} benchmark results name no workload; recorded as uuid '{uuid}' with no "
                 f"axes and no inputs")
    for key in data:
        if key not in _FIELDS:
            notes.append(f"field '{key}' dropped: a trace has no such field")
    if not isinstance(data.get("source"), str):
        notes.append("source missing: the trace names no solution")
    ev = ordered_evaluation(ev)
    for key in ("kernel_id", "source"):
        value = data.get(key)
        if isinstance(value, str) and value and not RECORD_NAME.match(value):
            data = {**data, key: canonical_name(value) or value}
            notes.append(f"{key} '{value}' is not usable as a name; read as '{data[key]}'")
    trace = {"definition": data.get("kernel_id"), "workload": {"uuid": uuid, "axes": {}, "inputs": {}},
             "solution": data.get("source"), "evaluation": ev}
    return Normalised(trace, BENCHMARK_RESULT, notes)


def _evaluation(data: dict, notes: list[str]) -> dict[str, Any]:
    """Status, performance, correctness and log from compiled/time/speedup/max_diff/compile_error."""
    compiled, time = data.get("compiled"), data.get("time")
    ev: dict[str, Any] = {}
    log_parts: list[str] = []
    if compiled is True and is_number(time):
        ev["status"] = TraceStatus.PASSED
        notes.append(f"time {time} read as milliseconds (the benchmark result does not record its unit)")
        ev["performance"] = _performance(time, data.get("speedup"), log_parts, notes)
        ev["correctness"] = _correctness(data.get("max_diff"), log_parts, notes)
    elif compiled is True:
        ev["status"] = TraceStatus.RUNTIME_ERROR
        notes.append("compiled but no time recorded: status RUNTIME_ERROR")
    else:
        ev["status"] = TraceStatus.COMPILE_ERROR
        error = data.get("compile_error")
        if isinstance(error, str):
            log_parts.append(error)
    if log_parts:
        ev["log"] = "\n".join(log_parts)
    return ev


def _performance(time: Any, speedup: Any, log_parts: list[str], notes: list[str]) -> Optional[dict]:
    if is_number(speedup):
        return {"latency_ms": time, "reference_latency_ms": time * speedup, "speedup_factor": speedup}
    log_parts.append(f"latency {time} ms (speedup not recorded)")
    notes.append("speedup missing: the reference latency is unknown, so no performance is written "
                 "(the latency is kept in evaluation.log)")
    return None


def _correctness(max_diff: Any, log_parts: list[str], notes: list[str]) -> Optional[dict]:
    # The benchmark result recorded only max_diff (the maximum absolute error); the relative
    # error is optional in the trace schema and is left out rather than invented.
    if is_number(max_diff) and max_diff >= 0:
        log_parts.append(f"imported from a benchmark result: max_diff {max_diff}; max_relative_error was not recorded")
        notes.append("max_relative_error unknown (the benchmark result has only max_diff): left out")
        return {"max_absolute_error": max_diff}
    notes.append("max_diff missing: no correctness is written (a PASSED trace needs it)")
    return None


def workload_notes(notes: list[str], found: bool, uuid: Optional[str], definition: str) -> list[str]:
    """The notes of a benchmark result once the workload --workload names has been looked for."""
    if found:
        return [n for n in notes if not n.startswith(WORKLOAD_MISSING_NOTE)] + [
            f"workload: taken from workload '{uuid}' of '{definition}'"]
    return [n if not n.startswith(WORKLOAD_MISSING_NOTE) else
            f"{WORKLOAD_MISSING_NOTE} benchmark results name no workload and '{uuid}' is not a workload of "
            f"'{definition}' in the dataset or the imported files; recorded with that uuid, no axes and no inputs"
            for n in notes]
