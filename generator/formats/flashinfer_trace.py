"""FlashInfer-Trace: the pydantic models of flashinfer-bench 0.1.x (flashinfer_bench/data/).

Reader and mapping for each record kind, with notes of what was lost:

- Definition: `op_type` instead of `type`, scalars have `shape: null`, fp8 is spelled
  `float8_e4m3fn`, optional strings are written as `null`.
- Workload lines are ours ({definition, workload, solution: null, evaluation: null}) except for
  null descriptions.
- Solution: the same fields; optional strings written as null, and
  spec.destination_passing_style defaults to true there (false here).
- Trace: written with `datetime.now().isoformat()` (no time zone) and `correctness.extra`;
  older traces had `evaluation.log_file` and `environment.device`.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Optional

from ..model.dtypes import SHORT_NAMES
from ..model.layout import CANONICAL, Folder
from ..model.schemas import DEFINITION_TYPE_ALIASES
from .common import (
    DEF_FIELDS,
    DTYPE_SET,
    DTYPE_SPELLINGS,
    Normalised,
    canonical_axes,
    finish_definition,
    ordered_evaluation,
    quote,
    tensor_map,
)

FLASHINFER_TRACE = "FlashInfer-Trace"

_TRACE_TOP = frozenset({"definition", "workload", "solution", "evaluation"})
_EVAL_FIELDS = frozenset({"status", "log", "correctness", "performance", "environment", "timestamp", "seed"})
_ENV_FIELDS = frozenset({"hardware", "libs", "cpu", "driver", "provenance"})
# A trace read from the dialect was measured elsewhere unless it says it was measured by our bench (an export of
# ours read back): environment.provenance says so (generator/model/schema/trace.json).
RECORDED = {"kind": "recorded", "tool": "FlashInfer-Trace"}
_CORRECTNESS_FIELDS = frozenset({"max_absolute_error", "max_relative_error", "matched_ratio", "atol", "rtol",
                                 "input_sets"})
_PERFORMANCE_FIELDS = frozenset({"latency_ms", "reference_latency_ms", "speedup_factor", "mean_ms", "min_ms",
                                 "max_ms", "p20_ms", "p80_ms", "stderr_ms", "samples", "timer"})
_SOLUTION_FIELDS = ("name", "definition", "author", "description", "spec", "sources")
_SPEC_FIELDS = frozenset({"language", "target_hardware", "entry_point", "destination_passing_style", "binding",
                          "dependencies"})
_ISO_NAIVE = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?$")


# -- layouts ---------------------------------------------------------------------------------

# flashinfer-bench's TraceSet.from_path reads every *.json / *.jsonl below each folder (rglob),
# so its datasets have been laid out in several ways: by author (ours, with op_type folders),
# by op type (what TraceSet.add_traces writes), and flat (its examples). Each is read in place.
LAYOUTS: dict[str, tuple[Folder, ...]] = {
    "definitions": (Folder("definitions", "definitions/<op_type>/<definition>.json"),
                    Folder("definitions", "definitions/<definition>.json")),
    "workloads": (Folder("workloads", "workloads/<op_type>/<definition>.jsonl"),
                  Folder("workloads", "workloads/<definition>.jsonl")),
    "solutions": (Folder("solutions", "solutions/<author>/<op_type>/<definition>/<solution>.json"),
                  Folder("solutions", "solutions/<op_type>/<definition>/<solution>.json"),
                  Folder("solutions", "solutions/<author>/<solution>.json"),
                  Folder("solutions", "solutions/<solution>.json")),
    "traces": (Folder("traces", "traces/<author>/<op_type>/<definition>.jsonl"),
               Folder("traces", "traces/<op_type>/<definition>.jsonl"),
               Folder("traces", "traces/<definition>.jsonl")),
}


def foreign_pattern(rel: str) -> Optional[str]:
    """The FlashInfer-Trace pattern a dataset-relative path fits by its depth, where that depth is
    not KernelTrace's own; None otherwise."""
    parts = rel.split("/")
    folders = LAYOUTS.get(parts[0], ())
    if not folders or len(parts) - 1 == CANONICAL[parts[0]].depth:
        return None
    return next((f.pattern for f in folders if f.depth == len(parts) - 1), None)


def placed_in_layout(rel: str, type_: str) -> bool:
    """Whether `rel` is where one of the FlashInfer-Trace layouts puts a record of this type: an
    op_type folder may name the type or one of its aliases (gqa_paged for gqa); file names and
    author folders are not part of it (flashinfer-bench reads any)."""
    folders = LAYOUTS.get(rel.split("/")[0], ())
    for folder in folders:
        where = folder.fields(rel)
        if where is None:
            continue
        op_type = where.get("op_type")
        if op_type is None or op_type == type_ or DEFINITION_TYPE_ALIASES.get(op_type) == type_:
            return True
    return False


# -- definitions ---------------------------------------------------------------------------

def definition_from_flashinfer(data: dict) -> Normalised:
    notes: list[str] = []
    draft = [False]
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "op_type":
            if "type" in data and data["type"] != value:
                notes.append(f"op_type '{value}' dropped: the record also has type '{data['type']}'")
            else:
                out["type"] = value
        elif key in ("inputs", "outputs"):
            out[key] = tensor_map(value, key[:-1], notes, draft, None, False)
        elif key == "axes":
            out[key] = canonical_axes(_typed_axes(value, notes), notes, False)
        elif key in DEF_FIELDS or key == "$schema":
            if value is not None:  # pydantic writes unset optional fields as null
                out[key] = value
        else:
            notes.append(f"field '{key}' dropped: the canonical definition has no such field")
    tags = out.pop("tags", None)
    return Normalised(finish_definition(out, notes, draft[0], tags), FLASHINFER_TRACE, notes)



def _typed_axes(axes: Any, notes: list[str]) -> Any:
    """flashinfer-bench saves with exclude_unset, so an axis built without its `type` (the field's
    default) is written without it: {"value": 8} is a const axis, {} a var axis."""
    if not isinstance(axes, dict):
        return axes
    untyped = [name for name, a in axes.items() if isinstance(a, dict) and "type" not in a]
    if not untyped:
        return axes
    notes.append(f"axes {', '.join(untyped)}: no type (flashinfer-bench leaves out defaults); read as const "
                 f"where a value is given, var otherwise")
    return {name: ({"type": "const" if "value" in a else "var", **a} if name in untyped else a)
            for name, a in axes.items()}


def looks_flashinfer(data: dict) -> bool:
    """A definition with `type` but FlashInfer-Trace tensor spellings (shape null, float8_e4m3fn ...)."""
    for key in ("inputs", "outputs"):
        tensors = data.get(key)
        if not isinstance(tensors, dict):
            continue
        for spec in tensors.values():
            if isinstance(spec, dict):
                if spec.get("shape", []) is None or spec.get("description", "") is None:
                    return True
                d = spec.get("dtype")
                # torch's spellings (float8_e4m3fn ...), not the Kernel Signature's short ones (bf16 ...),
                # which FlashInfer-Trace does not use either: those stay, for the schema check to report.
                if isinstance(d, str) and d not in DTYPE_SET and d in DTYPE_SPELLINGS and d not in SHORT_NAMES:
                    return True
    axes = data.get("axes")
    if isinstance(axes, dict) and any(isinstance(a, dict) and "type" not in a for a in axes.values()):
        return True
    return data.get("description", "") is None



# -- workloads -----------------------------------------------------------------------------

def normalise_workload(data: Any) -> Normalised:
    """Workload lines are the same in FlashInfer-Trace ({definition, workload, solution: null,
    evaluation: null}); the legacy formats have none. Only null descriptions are dropped."""
    if type(data) is not dict:
        return Normalised(data)
    w = data.get("workload")
    if type(w) is dict and "description" in w and w["description"] is None:
        w = {k: v for k, v in w.items() if k != "description"}
        return Normalised({**data, "workload": w}, FLASHINFER_TRACE, [])
    return Normalised(data)


# -- solutions -----------------------------------------------------------------------------

def normalise_solution(data: Any, flashinfer: bool = False) -> Normalised:
    """A Solution in the FlashInfer-Trace dialect -> canonical.

    The fields are the same; what differs: optional strings written as null, and the default of
    spec.destination_passing_style: true in
    flashinfer-bench (BuildSpec), false here. flashinfer-bench saves with exclude_unset, so a
    solution it wrote may omit the field and mean true; nothing in the record says so, which is
    why `flashinfer=True` (the importer passes it for FlashInfer-Trace folders) is needed to
    make an absent field true.
    """
    if type(data) is not dict:
        return Normalised(data)
    marked = data.get("description", "") is None
    if not flashinfer and not marked:
        return Normalised(data)
    notes: list[str] = []
    out = {}
    for key, value in data.items():
        if key == "spec" and isinstance(value, dict):
            s = {}
            for k, v in value.items():
                if k in _SPEC_FIELDS:
                    if v is not None or k == "binding":
                        s[k] = v
                else:
                    notes.append(f"spec.{k} dropped: the canonical solution spec has no such field")
            if "destination_passing_style" not in s:
                s["destination_passing_style"] = True
                notes.append("spec.destination_passing_style absent: flashinfer-bench reads that as true "
                             "(outputs passed in), so it is written as true")
            out[key] = s
        elif key in _SOLUTION_FIELDS or key == "$schema":
            if value is not None:
                out[key] = value
        else:
            notes.append(f"field '{key}' dropped: the canonical solution has no such field")
    ordered = {k: out[k] for k in ("$schema",) + _SOLUTION_FIELDS if k in out}
    if ordered == data:
        return Normalised(data)
    return Normalised(ordered, FLASHINFER_TRACE, notes)


def destination_passing_from_signature(solution: dict, definition: dict) -> Optional[tuple[dict, str]]:
    """flashinfer-bench omits spec.destination_passing_style when it is its default, so a Python or
    Triton entry point's signature tells: as many parameters as inputs means value-returning;
    inputs + outputs, destination-passing. The fixed solution and its note, or None."""
    spec, sources = solution.get("spec"), solution.get("sources")
    if not isinstance(spec, dict) or not isinstance(sources, list):
        return None
    entry = spec.get("entry_point")
    if spec.get("language") not in ("python", "triton") or not isinstance(entry, str) or "::" not in entry:
        return None
    file_, func = entry.rsplit("::", 1)
    code = next((s.get("content") for s in sources if isinstance(s, dict) and s.get("path") == file_), None)
    try:
        tree = ast.parse(code) if isinstance(code, str) else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    fn = next((n for n in (tree.body if tree else []) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.name == func), None)
    if fn is None:
        return None
    n_params = len(fn.args.posonlyargs) + len(fn.args.args)
    n_in, n_out = len(definition["inputs"]), len(definition["outputs"])
    dps = True if n_params == n_in + n_out else False if n_params == n_in else None
    if dps is None or dps == spec.get("destination_passing_style", False):
        return None
    note = (f"spec.destination_passing_style absent; {func}() takes {n_params} arguments "
            f"({n_in} inputs{' + ' + str(n_out) + ' outputs' if dps else ''}), so it is written as "
            f"{str(dps).lower()}")
    return dict(solution, spec=dict(spec, destination_passing_style=dps)), note


# -- traces --------------------------------------------------------------------------------

def _naive_timestamp(ts: Any) -> bool:
    if type(ts) is not str or not ts or ts[-1] == "Z" or (len(ts) > 6 and ts[-6] in "+-"):
        return False
    return bool(_ISO_NAIVE.match(ts))



def is_flashinfer_trace(ev: dict) -> bool:
    """Whether a trace's evaluation carries a FlashInfer-Trace spelling (a few dict lookups: this
    runs on every trace line)."""
    env = ev.get("environment")
    corr = ev.get("correctness")
    perf = ev.get("performance")
    return ("log_file" in ev or (type(env) is dict and "device" in env)
            or (type(corr) is dict and "extra" in corr) or _naive_timestamp(ev.get("timestamp"))
            or (type(perf) is dict and (perf.get("reference_latency_ms") == 0 or perf.get("speedup_factor") == 0)))


def trace_from_flashinfer(data: dict) -> Normalised:
    notes: list[str] = []
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in _TRACE_TOP:
            out[key] = value
        else:
            notes.append(f"field '{key}' dropped: the canonical trace has no such field")
    ev = dict(data["evaluation"])
    _log_file(ev, notes)
    if isinstance(ev.get("environment"), dict):
        ev["environment"] = _environment(ev["environment"], notes)
    if isinstance(ev.get("correctness"), dict):
        ev["correctness"] = _correctness(ev["correctness"], notes)
    perf = ev.get("performance")
    if isinstance(perf, dict):
        for k in perf:
            if k not in _PERFORMANCE_FIELDS:
                notes.append(f"evaluation.performance.{k} dropped: the canonical performance has no such field")
        ev["performance"] = {k: v for k, v in perf.items() if k in _PERFORMANCE_FIELDS}
        unmeasured = [k for k in ("reference_latency_ms", "speedup_factor") if ev["performance"].get(k) == 0]
        if unmeasured:  # flashinfer-bench's Performance defaults: the reference was not timed
            for k in ("reference_latency_ms", "speedup_factor"):
                ev["performance"].pop(k, None)
            notes.append(f"evaluation.performance.{' and '.join(unmeasured)} 0 (flashinfer-bench's default: the "
                         f"reference was not timed); reference latency and speedup left out")
    ts = ev.get("timestamp")
    if _naive_timestamp(ts):
        ev["timestamp"] = ts.replace(" ", "T") + "Z"
        notes.append(f"evaluation.timestamp {ts!r} has no time zone (flashinfer-bench writes local time); "
                     f"read as UTC")
    for k in list(ev):
        if k not in _EVAL_FIELDS:
            notes.append(f"evaluation.{k} dropped: the canonical evaluation has no such field")
            del ev[k]
    if ev.get("log") is None and "log" in ev:
        del ev["log"]
    out["evaluation"] = ordered_evaluation(ev)
    return Normalised(out, FLASHINFER_TRACE, notes)


def _log_file(ev: dict, notes: list[str]) -> None:
    """Older traces: evaluation.log_file (a path) -> kept as text in evaluation.log."""
    if "log_file" not in ev:
        return
    log_file = ev.pop("log_file")
    if log_file is None:
        return
    if ev.get("log"):
        notes.append(f"evaluation.log_file {quote(log_file)} dropped (the record also has a log); the "
                     f"file's content is not carried over")
    else:
        ev["log"] = f"log file: {log_file}"
        notes.append(f"evaluation.log_file {quote(log_file)} kept as a path in evaluation.log; the "
                     f"file's content is not carried over")


def _environment(env: dict, notes: list[str]) -> dict:
    e: dict[str, Any] = {}
    for k, v in env.items():
        if k == "device":
            if "hardware" in env:
                if v != env["hardware"]:
                    notes.append(f"environment.device {quote(v)} dropped (the record has environment.hardware)")
            else:
                e["hardware"] = v
        elif k in _ENV_FIELDS:
            e[k] = v
        else:
            notes.append(f"environment.{k} dropped: the canonical environment has no such field")
    if isinstance(e.get("libs"), dict):
        e["libs"] = {k: v for k, v in e["libs"].items()}
    if not isinstance(e.get("provenance"), dict):
        e["provenance"] = dict(RECORDED)
    return {k: e[k] for k in ("hardware", "libs", "cpu", "driver", "provenance") if k in e}


def _correctness(corr: dict, notes: list[str]) -> dict:
    """correctness.extra (flashinfer-bench's bag of further fields) -> the canonical fields."""
    c = {k: v for k, v in corr.items() if k in _CORRECTNESS_FIELDS}
    extra = corr.get("extra")
    if isinstance(extra, dict):
        for k, v in extra.items():
            if k in _CORRECTNESS_FIELDS and k not in c:
                c[k] = v
            else:
                notes.append(f"evaluation.correctness.extra.{k} dropped: the canonical correctness has no "
                             f"such field")
    for k in corr:
        if k not in _CORRECTNESS_FIELDS and k != "extra":
            notes.append(f"evaluation.correctness.{k} dropped: the canonical correctness has no such field")
    return c
