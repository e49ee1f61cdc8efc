"""Semantic checks of workloads: axes, constraints, inputs, scalar ranges, blobs, uuids."""

from __future__ import annotations

import json
import math
import struct
from functools import lru_cache
from pathlib import Path
from typing import Any, Collection, Iterator, Optional

from ..formats import flashinfer_trace
from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic
from ..model.diagnostics import make_pointer as ptr
from ..model.dtypes import FLOAT_MAX, INT_RANGE, SAFETENSORS_DTYPES
from ..model.layout import CANONICAL
from ..model.records import Definition, Workload
from .common import bad_relative_path, error, orphan_error, path_parts
from .pycode import evaluate_constraint, parse_constraint

MAX_HEADER_BYTES = 100 * 1024 * 1024


def scalar_problem(value: Any, dtype: str) -> str:
    """Why `value` does not fit `dtype`, or '' if it does."""
    if dtype == "bool":
        return "" if isinstance(value, bool) else f"{value!r} is not true or false"
    if isinstance(value, bool):
        return f"{value!r} is a boolean, but the dtype is {dtype}"
    if dtype in INT_RANGE:
        lo, hi = INT_RANGE[dtype]
        if not isinstance(value, int) and not (isinstance(value, float) and value.is_integer()):
            return f"{value!r} is not an integer"
        return "" if lo <= value <= hi else f"{value!r} is outside the {dtype} range [{lo}, {hi}]"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not finite"
    limit = FLOAT_MAX[dtype]
    return "" if abs(value) <= limit else f"{value!r} is outside the {dtype} range ±{limit:g}"


@lru_cache(maxsize=4096)
def read_safetensors_header(path: Path) -> tuple[Optional[dict], str]:
    """(header, problem): the JSON header of a safetensors file, read once per file."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                return None, "is too short to be a safetensors file"
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER_BYTES:
                return None, "has an implausible header size; it is not a safetensors file"
            raw = f.read(n)
        header = json.loads(raw)
        if not isinstance(header, dict):
            return None, "has a header that is not a JSON object"
        return header, ""
    except FileNotFoundError:
        return None, "does not exist"
    except (OSError, ValueError, RecursionError) as e:  # ValueError: bad UTF-8 or JSON, NUL in the path
        return None, f"cannot be read as safetensors ({e})"


def check_workloads(ds: Dataset, names: Optional[Collection[str]] = None) -> Iterator[Diagnostic]:
    """`names`: only those definitions' workloads are checked beyond their uuids (the bench's run over a few: checking
    all 4,270 workloads' inputs took 1.4 s of its start); None: all."""
    read_safetensors_header.cache_clear()  # files may have changed since the last run in this process
    seen: dict[str, Workload] = {}
    for w in ds.workloads:
        first = seen.setdefault(w.uuid, w)
        if first is not w:
            yield error(w, "/workload/uuid", f"workload uuid '{w.uuid}' is used twice (first at {first.source.path}:{first.source.line})",
                        "give every workload its own uuid (python -c 'import uuid; print(uuid.uuid4())')")
        if names is not None and w.definition not in names:
            continue
        d = ds.definitions.get(w.definition)
        if d is None:
            if problem := orphan_error(ds, w, "workload"):
                yield problem
            continue
        yield from check_location(w, d)
        yield from check_axes(w, d)
        yield from check_inputs(ds, w, d)


def check_location(w: Workload, d: Definition) -> Iterator[Diagnostic]:
    parts = path_parts(w)
    if (parts[-1][: -len(".jsonl")] != w.definition or parts[1] != d.type) and not (
            parts[-1][: -len(".jsonl")] == w.definition and flashinfer_trace.placed_in_layout(w.source.path, d.type)):
        yield error(w, "/definition", f"workload of '{w.definition}' is stored in {w.source.path}",
                    f"move it to workloads/{d.type}/{w.definition}.jsonl")


def check_axes(w: Workload, d: Definition) -> Iterator[Diagnostic]:
    for name, value in w.axes.items():
        if name not in d.axes:
            yield error(w, ptr("workload", "axes", name), f"'{name}' is not an axis of {d.name}",
                        f"var axes: {', '.join(d.var_axes) or 'none'}")
        elif d.axes[name].is_const:
            yield error(w, ptr("workload", "axes", name), f"'{name}' is a const axis ({d.axes[name].value}); workloads bind only var axes",
                        f"remove '{name}' from the workload's axes")
        elif value < 1:
            yield error(w, ptr("workload", "axes", name), f"axis '{name}' is {value}; it must be a positive integer",
                        "use a size of at least 1")
    missing = [a for a in d.var_axes if a not in w.axes]
    if missing:
        yield error(w, "/workload/axes", f"var axes not bound: {', '.join(missing)}",
                    f"give a value to every var axis: {', '.join(d.var_axes)}")
        return
    values = {**d.const_axes, **{a: w.axes[a] for a in d.var_axes}}
    for i, text in enumerate(d.constraints):
        parsed = parse_constraint(text)
        if evaluate_constraint(parsed, values) is False:
            shown = ", ".join(f"{n}={values[n]}" for n in sorted(parsed.names))
            yield error(w, "/workload/axes", f"axes break the constraint {text!r} of {d.name} ({shown})",
                        "choose axis values that satisfy every constraint")


def check_inputs(ds: Dataset, w: Workload, d: Definition) -> Iterator[Diagnostic]:
    for name in d.inputs:
        if name not in w.inputs:
            yield error(w, "/workload/inputs", f"input '{name}' has no entry",
                        f'add "{name}": {{"type": "random"}} (or scalar / safetensors)')
    for name, spec in w.inputs.items():
        where = ptr("workload", "inputs", name)
        tensor = d.inputs.get(name)
        if tensor is None:
            yield error(w, where, f"'{name}' is not an input of {d.name}", f"inputs: {', '.join(d.inputs)}")
            continue
        kind = spec["type"]
        if kind == "scalar":
            if not tensor.is_scalar:
                yield error(w, where, f"input '{name}' has shape {list(tensor.shape)}, so it cannot be a scalar",
                            'use {"type": "random"} or a safetensors blob')
            else:
                problem = scalar_problem(spec["value"], tensor.dtype)
                if problem:
                    yield error(w, where + "/value", f"scalar '{name}': {problem}", f"give a value that fits {tensor.dtype}")
        elif kind == "safetensors":
            yield from check_blob(ds, w, d, name, spec)


def expected_shape(d: Definition, w: Workload, tensor_name: str) -> list[Optional[int]]:
    sizes = {**d.const_axes, **w.axes}
    return [sizes.get(a) for a in d.inputs[tensor_name].shape]


def check_blob(ds: Dataset, w: Workload, d: Definition, name: str, spec: dict) -> Iterator[Diagnostic]:
    where = ptr("workload", "inputs", name)
    problem = bad_relative_path(spec["path"])
    if problem:
        yield error(w, where + "/path", f"blob path {spec['path']!r} {problem}",
                    f"use blob/workloads/{d.type}/{d.name}/{w.uuid}.safetensors")
        return
    header, problem = read_safetensors_header(ds.root / spec["path"])
    if header is None:
        yield error(w, where + "/path", f"blob {spec['path']} {problem}",
                    f"run `kerneltrace workloads`: it writes the blobs the model's recipe "
                    f"({CANONICAL.recipe_file('<model>')}) generates; a blob captured elsewhere is copied in by "
                    "`kerneltrace import`. Else fix the path (relative to the dataset root)")
        return
    key = spec["tensor_key"]
    entry = header.get(key)
    if not isinstance(entry, dict):
        keys = [k for k in header if k != "__metadata__"]
        yield error(w, where + "/tensor_key", f"blob {spec['path']} has no tensor '{key}'", f"keys in the file: {', '.join(keys) or 'none'}")
        return
    raw_dtype, raw_shape = entry.get("dtype"), entry.get("shape")
    if not isinstance(raw_dtype, str) or not isinstance(raw_shape, list):
        yield error(w, where + "/path", f"blob {spec['path']} has a malformed header entry for '{key}'",
                    "write the file with the safetensors library")
        return
    want_dtype = d.inputs[name].dtype
    got_dtype = SAFETENSORS_DTYPES.get(raw_dtype, raw_dtype)
    if got_dtype != want_dtype:
        yield error(w, where, f"blob tensor '{key}' has dtype {got_dtype}, but input '{name}' is {want_dtype}",
                    f"save the tensor as {want_dtype}")
    want = expected_shape(d, w, name)
    if raw_shape != want:
        yield error(w, where, f"blob tensor '{key}' has shape {raw_shape}, but input '{name}' needs {want} "
                              f"({', '.join(d.inputs[name].shape) or 'scalar'})",
                    "save a tensor of the shape the workload's axes give")
