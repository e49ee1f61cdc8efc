"""The schema set (seed 002): kernel descriptions with `id` and `reference_code` (or `name` and
`code`), `assumptions`, and a destination-passing `run(inputs..., outputs...)`.

Benchmark-result records of the same seed are in benchmark_result.py.
"""

from __future__ import annotations

import ast
import keyword
from typing import Any, Optional

from .common import (
    IDENTIFIER,
    TORCH_DTYPE,
    TYPE_SET,
    Normalised,
    canonical_axes,
    constraints_list,
    finish_definition,
    infer_type,
    tensor_map,
)
from .rewrite import positional_params, rename_global, top_function, uses_name

SCHEMA_SET = "schema set (seed 002)"


def definition_from_schema_set(data: dict, stem: str, type_hint: Optional[str]) -> Normalised:
    notes: list[str] = []
    draft = [False]
    name = data.get("id", data.get("name", stem))
    if "id" in data and "name" in data and data["name"] != data["id"]:
        notes.append(f"name '{data['name']}' dropped: the id '{data['id']}' is used as the name")
    out: dict[str, Any] = {"name": name}
    kind = data.get("type")
    if kind is None:
        if type_hint in TYPE_SET:
            kind = type_hint
        else:
            kind = infer_type(name)
            if kind:
                notes.append(f"type: the schema set has none; '{kind}' inferred from the name '{name}' (check it)")
            else:
                notes.append("type: the schema set has none and none could be inferred from the name; add 'type'")
    out["type"] = kind
    if isinstance(data.get("description"), str):
        out["description"] = data["description"]
    out["axes"] = canonical_axes(data.get("axes"), notes, True)
    # seed 002: dtype defaults to float16
    out["inputs"] = tensor_map(data.get("inputs"), "input", notes, draft, "float16", True)
    out["outputs"] = tensor_map(data.get("outputs"), "output", notes, draft, "float16", True)
    code = data.get("reference_code", data.get("code", data.get("reference")))
    if isinstance(code, str):
        code = _wrap_dps(code, out, notes)
    out["reference"] = code
    if "assumptions" in data or "constraints" in data:
        out["constraints"] = constraints_list(data.get("assumptions", data.get("constraints")), notes)
    for key in data:
        if key not in ("id", "name", "type", "description", "axes", "inputs", "outputs", "reference_code", "code",
                       "reference", "assumptions", "constraints", "tags", "$schema"):
            notes.append(f"field '{key}' dropped: the canonical definition has no such field")
    return Normalised(finish_definition(out, notes, draft[0], data.get("tags")), SCHEMA_SET, notes)


def _wrap_dps(code: str, definition: dict, notes: list[str]) -> str:
    """Schema-set code has a destination-passing run(inputs..., outputs...) that returns nothing.

    Rename it to _run_dps and append a value-returning run(inputs...) that allocates each output
    (shape from const axes and from the input dims that carry the axis; dtype from the spec;
    device of the first tensor input), calls _run_dps and returns {output name: tensor}.
    """
    inputs, outputs, axes = definition.get("inputs"), definition.get("outputs"), definition.get("axes")
    fn = top_function(code, "run")
    if fn is None:
        notes.append("reference: defines no top-level run function; kept as it is")
        return code
    if not (isinstance(inputs, dict) and isinstance(outputs, dict) and isinstance(axes, dict)):
        return code
    params = positional_params(fn)
    if len(params) == len(inputs) and len(outputs) > 0:
        return code  # already value-returning
    renamed = _renamed_dps(code, params, inputs, outputs, notes)
    if renamed is None:
        return code
    in_args = ", ".join(inputs)
    lines = _allocating_body(inputs, outputs, axes, params, notes)
    if any(isinstance(s, dict) and s.get("dtype") == "float4_e2m1" for s in outputs.values()):
        notes.append("reference: float4_e2m1 outputs are allocated as torch.float4_e2m1fn_x2 with the spec's "
                     "shape (two values per byte); check the packing")
    wrapper = (("\n\n" if _imports_torch(code) else "\n\nimport torch\n\n\n") +
               "# Added by `kerneltrace import`: the schema-set run takes the outputs as arguments\n"
               "# (destination-passing style); this run allocates them, calls it and returns them.\n"
               f"def run({in_args}):\n" + "\n".join(lines) + "\n")
    return renamed.rstrip("\n") + "\n" + wrapper


def _renamed_dps(code: str, params: list[str], inputs: dict, outputs: dict, notes: list[str]) -> Optional[str]:
    """The code with its destination-passing run renamed to _run_dps; None (with a note) if it cannot be."""
    if len(params) != len(inputs) + len(outputs):
        notes.append(f"reference: run takes {len(params)} arguments but the definition has {len(inputs)} inputs "
                     f"and {len(outputs)} outputs; kept as it is (it must return a dict of the outputs)")
        return None
    names = list(inputs) + list(outputs)
    bad = [n for n in names if not isinstance(n, str) or not IDENTIFIER.match(n) or keyword.iskeyword(n)
           or n.startswith("_") or n == "torch"]
    if bad or len(set(names)) != len(names):
        notes.append("reference: destination-passing run not wrapped: tensor names must be distinct Python "
                     "identifiers not starting with '_' (found " + ", ".join(map(repr, bad or names)) + ")")
        return None
    if uses_name(code, "_run_dps"):
        notes.append("reference: destination-passing run not wrapped: the code already uses the name _run_dps")
        return None
    return rename_global(code, "run", "_run_dps")


def _allocating_body(inputs: dict, outputs: dict, axes: dict, params: list[str], notes: list[str]) -> list[str]:
    """The lines of the value-returning run: allocate each output, call _run_dps, return them."""

    def dim(axis: str) -> Optional[str]:
        spec = axes.get(axis)
        if isinstance(spec, dict) and spec.get("type") == "const" and type(spec.get("value")) is int:
            return str(spec["value"])
        for inp, ispec in inputs.items():
            shape = ispec.get("shape") if isinstance(ispec, dict) else None
            if isinstance(shape, list) and axis in shape:
                return f"{inp}.shape[{shape.index(axis)}]"
        return None

    in_args = ", ".join(inputs)
    in_tuple = f"({in_args},)" if len(inputs) == 1 else f"({in_args})"
    lines = [f"    _device = next((_v.device for _v in {in_tuple} if isinstance(_v, torch.Tensor)), "
             f"torch.device(\"cpu\"))"]
    missing = []
    for out_name, spec in outputs.items():
        shape = spec.get("shape") if isinstance(spec, dict) else None
        dtype = TORCH_DTYPE.get(spec.get("dtype")) if isinstance(spec, dict) else None
        if not isinstance(shape, list) or dtype is None:
            missing.append(f"output '{out_name}' has no readable shape or dtype")
            continue
        dims = []
        for axis in shape:
            d = dim(axis)
            if d is None:
                missing.append(f"axis '{axis}' of output '{out_name}' is neither const nor an axis of an input")
            dims.append(d or "?")
        shape_src = "()" if not dims else "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
        lines.append(f"    {out_name} = torch.empty({shape_src}, dtype={dtype}, device=_device)")
    if missing:
        notes.append("reference: destination-passing run renamed to _run_dps; the value-returning run cannot "
                     "allocate the outputs (" + "; ".join(missing) + ") and raises NotImplementedError: write "
                     "the allocation by hand")
        return [f"    raise NotImplementedError({'cannot allocate the outputs: ' + '; '.join(missing)!r})"]
    lines.append(f"    _run_dps({', '.join(list(inputs) + list(outputs))})")
    items = ", ".join(f"{n!r}: {n}.item()" if not outputs[n].get("shape") else f"{n!r}: {n}" for n in outputs)
    lines.append(f"    return {{{items}}}")
    notes.append(f"reference: destination-passing run({', '.join(params)}) renamed to _run_dps and wrapped by "
                 f"a value-returning run({in_args}) that allocates the outputs")
    return lines


def _imports_torch(code: str) -> bool:
    try:
        return any(isinstance(n, ast.Import) and any(a.name == "torch" and a.asname is None for a in n.names)
                   for n in ast.parse(code).body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
