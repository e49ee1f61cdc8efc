"""Which format a record is written in, and its canonical form: one entry per record kind.

Each `normalise_<kind>` takes one parsed JSON value and returns a `Normalised`: the canonical
object, the dialect it was written in (None when already canonical), and notes saying what
could not be carried over. Canonical input passes through unchanged (the very same object).

Nothing here raises on malformed input: a value of the wrong shape is returned as it is (or
with only the parts that could be read mapped), and the schema check reports the rest.

Formats are recognised by their fields, never by where the file lives; each has its module:
flashinfer_trace (FlashInfer-Trace), kernel_signature (seed 001), schema_set (seed 002) and
benchmark_result (seed 002's result records).
"""

from __future__ import annotations

from typing import Any, Optional

from ..model.schemas import DEFINITION_TYPE_ALIASES
from .benchmark_result import (
    BENCHMARK_RESULT,
    UNKNOWN_TIMESTAMP,
    UNKNOWN_WORKLOAD,
    WORKLOAD_MISSING_NOTE,
    is_benchmark_result,
    trace_from_benchmark_result,
)
from .common import Normalised, canonical_name
from .flashinfer_trace import (
    FLASHINFER_TRACE,
    definition_from_flashinfer,
    is_flashinfer_trace,
    looks_flashinfer,
    normalise_solution,
    normalise_workload,
    trace_from_flashinfer,
)
from .kernel_signature import KERNEL_SIGNATURE, definition_from_kernel_signature
from .schema_set import SCHEMA_SET, definition_from_schema_set

__all__ = ["BENCHMARK_RESULT", "FLASHINFER_TRACE", "KERNEL_SIGNATURE", "SCHEMA_SET", "UNKNOWN_TIMESTAMP",
           "UNKNOWN_WORKLOAD", "WORKLOAD_MISSING_NOTE", "Normalised", "canonical_name", "normalise_definition",
           "normalise_solution", "normalise_trace", "normalise_workload"]


def normalise_definition(data: Any, stem: str, type_hint: Optional[str] = None) -> Normalised:
    """A Definition in any dialect -> canonical. `stem` names Kernel Signature files (they carry no
    name); `type_hint` (e.g. the folder a file sits in) types schema-set definitions (they carry none)."""
    if not isinstance(data, dict):
        return Normalised(data)
    try:
        if "op_type" in data:
            return definition_from_flashinfer(data)
        if "op" in data or "input" in data or "output" in data:
            return definition_from_kernel_signature(data, stem)
        if "id" in data or "reference_code" in data or "code" in data or "assumptions" in data:
            return definition_from_schema_set(data, stem, type_hint)
        if (isinstance(data.get("type"), str) and data["type"] in DEFINITION_TYPE_ALIASES) or looks_flashinfer(data):
            return definition_from_flashinfer(data)  # older FlashInfer-Trace files: `type`, no op_type
    except (RecursionError, MemoryError):
        pass
    return Normalised(data)


def normalise_trace(data: Any, workload_uuid: Optional[str] = None) -> Normalised:
    """A trace line in any dialect -> canonical. Runs on every trace line: canonical lines are
    recognised with a few dict lookups and returned as they are."""
    if type(data) is not dict:
        return Normalised(data)
    ev = data.get("evaluation")
    if type(ev) is dict:
        if not is_flashinfer_trace(ev):
            return Normalised(data)
        try:
            return trace_from_flashinfer(data)
        except (RecursionError, MemoryError):
            return Normalised(data)
    if is_benchmark_result(data):
        return trace_from_benchmark_result(data, workload_uuid)
    return Normalised(data)
