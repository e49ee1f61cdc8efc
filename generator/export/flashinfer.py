"""The FlashInfer-Trace layout and dialect, as flashinfer-bench 0.1.x loads it (`TraceSet.from_path`).

Layout (the same folders as ours; `TraceSet.from_path` globs each folder recursively):

    definitions/<op_type>/<definition>.json
    workloads/<op_type>/<definition>.jsonl                 {definition, workload, solution: null, evaluation: null}
    solutions/<author>/<op_type>/<definition>/<solution>.json
    traces/<author>/<op_type>/<definition>.jsonl
    blob/workloads/...                                     safetensors inputs, same paths as in the dataset

Dialect (flashinfer_bench/data/*.py, pydantic models):

- Definition: `op_type` instead of `type`; a scalar has `shape: null` (ours: `[]`); fp8 e4m3 is
  `float8_e4m3fn`; there is no `uint8`.
- Solution: `spec.destination_passing_style` defaults to true there and false here, so it is
  always written; `binding` must be `torch`, `tvm-ffi` or null; every source file must have
  content.
- Trace: `evaluation.log` is a string (never null); `environment.libs` maps names to strings
  (null versions are dropped); correctness fields beyond the two errors go to
  `correctness.extra`; there is no `REWARD_HACK` status.

Fields flashinfer-bench does not know (an axis `parent`, a workload `seed`, timing details)
are kept: its models ignore them and `kerneltrace import` reads them back. Records the dialect
cannot express are left out and reported, never written half-right.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Mapping, Optional

from ..model.dataset import Dataset
from ..model.dtypes import FLASHINFER_NAMES as DTYPES
from ..model.fileio import dump_document, dump_line
from ..model.layout import CANONICAL
from ..model.records import Definition, Solution, Trace, Workload
from ..model.schemas import DEFINITION_TYPE_ALIASES
from ..model.status import TraceStatus
from .columns import EDITOR_KEYS

LANGUAGES = frozenset({"python", "triton", "cpp", "cuda", "tilelang"})
BINDINGS = frozenset({None, "torch", "tvm-ffi"})
STATUSES = frozenset(TraceStatus) - {TraceStatus.REWARD_HACK}  # the statuses flashinfer-bench knows
CORRECTNESS_FIELDS = ("max_relative_error", "max_absolute_error")


@dataclass
class FlashInferExport:
    files: dict[str, str] = field(default_factory=dict)  # relative path -> text
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("definitions", "workloads", "solutions", "traces"), 0))
    skipped: list[str] = field(default_factory=list)  # "<source path>:<line>: <why>"


def build_flashinfer_trace(ds: Dataset) -> FlashInferExport:
    """Every file of the FlashInfer-Trace folder as text (blobs are copied by the caller)."""
    out = FlashInferExport()
    definitions: dict[str, Definition] = {}
    for d in sorted(ds.definitions.values(), key=lambda d: d.name):
        doc, why = definition_doc(d)
        if doc is None:
            out.skipped.append(f"{d.source.path}:{d.source.line}: definition {d.name}: {why}")
            continue
        definitions[d.name] = d
        out.files[CANONICAL.definition_file(doc["op_type"], d.name)] = dump_document(doc)
        out.counts["definitions"] += 1

    lines: dict[str, list[str]] = {}
    for w in sorted(ds.workloads, key=_where):
        d = definitions.get(w.definition)
        if d is None:
            out.skipped.append(f"{w.source.path}:{w.source.line}: workload {w.uuid}: its definition is not exported")
            continue
        lines.setdefault(CANONICAL.workload_file(op_type(d), d.name), []).append(dump_line(workload_doc(w)) + "\n")
        out.counts["workloads"] += 1

    solutions: dict[str, str] = {}  # exported: name -> author
    for s in sorted(ds.solutions.values(), key=lambda s: s.name):
        d = definitions.get(s.definition)
        doc, why = solution_doc(s) if d is not None else (None, "its definition is not exported")
        if doc is None:
            out.skipped.append(f"{s.source.path}:{s.source.line}: solution {s.name}: {why}")
            continue
        solutions[s.name] = s.author
        out.files[CANONICAL.solution_file(s.author, op_type(d), d.name, s.name)] = dump_document(doc)
        out.counts["solutions"] += 1

    for t in sorted(ds.traces, key=_where):
        d = definitions.get(t.definition)
        doc, why = trace_doc(t)
        if d is None or t.solution not in solutions:
            doc, why = None, f"its {'definition' if d is None else 'solution'} is not exported"
        if doc is None:
            out.skipped.append(f"{t.source.path}:{t.source.line}: trace of {t.solution} on {t.workload_uuid}: {why}")
            continue
        # the trace's own author folder where it has one; read in place from a layout without author
        # folders, its solution's author
        author = CANONICAL.trace_author(t.source.path) or solutions[t.solution]
        lines.setdefault(CANONICAL.trace_file(author, op_type(d), d.name), []).append(dump_line(doc) + "\n")
        out.counts["traces"] += 1

    for path, rows in lines.items():
        out.files[path] = "".join(rows)
    return out


# -- one record each -----------------------------------------------------------------------

def op_type(d: Definition) -> str:
    """The FlashInfer-Trace op_type: the name an imported definition had (its tag op_type:<name>,
    when that name maps to its type), else the canonical type."""
    names = [v for v in d.tag_values("op_type") if DEFINITION_TYPE_ALIASES.get(v) == d.type]
    return names[0] if names else d.type


def definition_doc(d: Definition) -> tuple[Optional[dict], str]:
    out: dict[str, Any] = {}
    for key, value in d.data.items():
        if key in EDITOR_KEYS:
            continue
        if key == "type":
            out["op_type"] = op_type(d)
        elif key == "tags":
            out["tags"] = [t for t in value if t != f"op_type:{op_type(d)}"]
        elif key in ("inputs", "outputs"):
            tensors = {}
            for name, spec in value.items():
                dtype = DTYPES.get(spec["dtype"])
                if dtype is None:
                    return None, (f"{key[:-1]} '{name}' has dtype {spec['dtype']}, which flashinfer-bench "
                                  f"has no name for")
                tensors[name] = {**spec, "shape": list(spec["shape"]) or None, "dtype": dtype}
            out[key] = tensors
        else:
            out[key] = value
    return out, ""


def workload_doc(w: Workload) -> dict:
    return {"definition": w.definition, "workload": w.data["workload"], "solution": None, "evaluation": None}


def solution_doc(s: Solution) -> tuple[Optional[dict], str]:
    if s.language not in LANGUAGES:
        return None, f"language {s.language} is not one flashinfer-bench knows"
    if s.binding not in BINDINGS:
        return None, f"binding {s.binding!r} is not one of torch, tvm-ffi"
    for src in s.data["sources"]:
        path = PurePosixPath(src["path"])
        if not src["content"]:
            return None, f"source file {src['path']} is empty (flashinfer-bench requires content)"
        if path.is_absolute() or ".." in path.parts:
            return None, f"source path {src['path']} leaves the solution folder"
    out = {k: v for k, v in s.data.items() if k not in EDITOR_KEYS}
    # flashinfer-bench defaults to destination-passing style; ours to value-returning.
    out["spec"] = {**s.data["spec"], "destination_passing_style": s.destination_passing_style}
    return out, ""


def trace_doc(t: Trace) -> tuple[Optional[dict], str]:
    ev = dict(t.data["evaluation"])
    if t.status not in STATUSES:
        return None, f"status {ev['status']} has no flashinfer-bench equivalent"
    if ev.get("log", "") is None:
        del ev["log"]
    env = dict(ev["environment"])
    if isinstance(env.get("libs"), Mapping):
        env["libs"] = {k: v for k, v in env["libs"].items() if v is not None}
    ev["environment"] = env
    corr = ev.get("correctness")
    if isinstance(corr, Mapping):
        extra = {k: v for k, v in corr.items() if k not in CORRECTNESS_FIELDS}
        ev["correctness"] = {k: corr[k] for k in CORRECTNESS_FIELDS if k in corr}
        if extra:
            ev["correctness"]["extra"] = extra
    return {"definition": t.definition, "workload": t.data["workload"], "solution": t.solution,
            "evaluation": ev}, ""


# -- text ----------------------------------------------------------------------------------

def _where(record: Any) -> tuple[str, int]:
    return (record.source.path, record.source.line)
