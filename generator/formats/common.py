"""What the foreign formats share: the Normalised result, dtype spellings, the type check,
record names and the canonical shape of definitions, tensors and axes.

Each format module (flashinfer_trace, kernel_signature, schema_set, benchmark_result) maps its
records onto canonical ones with these pieces and says in `notes` what could not be carried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ..model.dtypes import OTHER_SPELLINGS, TORCH_NAMES
from ..model.schemas import DEFINITION_TYPE_ALIASES, DEFINITION_TYPES, DTYPES, closest_definition_types, type_named_in
from ..model.status import DefinitionStatus
from .rewrite import axis_value


@dataclass
class Normalised:
    data: Any
    dialect: Optional[str] = None
    notes: list[str] = field(default_factory=list)


# -- shared vocabulary ---------------------------------------------------------------------

DTYPE_SPELLINGS = OTHER_SPELLINGS  # the foreign spellings of the canonical dtypes (model/dtypes.py owns them)
TORCH_DTYPE = TORCH_NAMES  # dtype -> its torch spelling in code
DTYPE_SET = frozenset(DTYPES)
TYPE_SET = frozenset(DEFINITION_TYPES)
RECORD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

DEF_FIELDS = ("name", "type", "tags", "description", "axes", "inputs", "outputs", "reference", "constraints")

def quote(value: Any) -> str:
    return repr(value) if not isinstance(value, str) else f"'{value}'"


def canonical_dtype(value: Any, where: str, notes: list[str], draft: list[bool], default: Optional[str] = None) -> Any:
    """The canonical spelling of a dtype; notes for what is lost. Unknown values pass through."""
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        return value
    if value in DTYPE_SET:
        return value
    spelled = value[6:] if value.startswith("torch.") else value
    if spelled in DTYPE_SET:
        return spelled
    if spelled in DTYPE_SPELLINGS:
        canonical, loss = DTYPE_SPELLINGS[spelled]
        if loss:
            notes.append(f"{where}: dtype {value} {loss}; written as {canonical}")
        return canonical
    if spelled in ("int4", "uint4"):
        draft[0] = True
        notes.append(f"{where}: dtype {value} has no canonical dtype; written as int8 (one value per byte, "
                     f"not packed) and the definition is tagged status:draft until someone checks it")
        return "int8"
    return value


def canonical_type(value: Any, tags: Any, notes: list[str]) -> tuple[Any, Any]:
    """(type, tags): another tool's name of a type (common.json definition_type_alias) -> the
    canonical type, the name kept as the tag op_type:<name>; an unknown type is kept with a note
    naming the closest canonical type(s)."""
    if not isinstance(value, str) or value in TYPE_SET:
        return value, tags
    canonical = DEFINITION_TYPE_ALIASES.get(value)
    if canonical is None:
        near = closest_definition_types(value)
        closest = f" (closest canonical type: {' or '.join(repr(t) for t in near)})" if near else ""
        notes.append(f"type '{value}' is not in the canonical list of types{closest}; kept as it is, "
                     f"so the schema check reports it: pick one of {', '.join(DEFINITION_TYPES)}")
        return value, tags
    tags = list(tags) if isinstance(tags, list) else []
    if f"op_type:{value}" not in tags:
        tags.append(f"op_type:{value}")
    notes.append(f"type '{value}' is written as the canonical type '{canonical}' (the name is kept as the tag "
                 f"op_type:{value})")
    return canonical, tags


def infer_type(name: Any) -> Optional[str]:
    """A canonical type named inside a definition name: 'attention(gqa-4)' -> 'gqa'."""
    return type_named_in(name) if isinstance(name, str) else None
    low = name.lower()
    by_length = sorted(DEFINITION_TYPES, key=len, reverse=True)
    for t in by_length:
        if low == t or low.startswith(t + "_") or low.startswith(t + "-"):
            return t
    tokens = re.split(r"[^a-z0-9]+", low)
    for t in by_length:
        if t in tokens:
            return t
    for t in by_length:
        if len(t) >= 4 and t in low:  # 'rmsnorm' -> 'norm'; short types ('mha') only as whole words
            return t
    return None


def record_name(value: Any, what: str, notes: list[str]) -> Any:
    if not isinstance(value, str) or RECORD_NAME.match(value):
        return value
    fixed = canonical_name(value)
    if not fixed:
        return value
    notes.append(f"{what} '{value}' is not usable as a file name; renamed to '{fixed}'")
    return fixed


def canonical_name(value: str) -> str:
    """A name usable as a file name, in the naming convention (lowercase words joined by '_'):
    'attention(gqa-4)' -> 'attention_gqa_4'. Benchmark results get the same mapping for the
    kernel_id that names such a definition."""
    return re.sub(r"[^a-z0-9]+", "_", value.lower()).strip("_")


# -- definitions ---------------------------------------------------------------------------

def tensor_map(tensors: Any, kind: str, notes: list[str], draft: list[bool], default_dtype: Optional[str],
                drop_dim_order: bool) -> Any:  # noqa: ARG001 - kept for callers; dim_order is always dropped
    """Canonical tensor specs: shape null -> [], dtype spellings, dim_order dropped, null descriptions dropped."""
    if not isinstance(tensors, dict):
        return tensors
    out = {}
    for name, spec in tensors.items():
        if not isinstance(spec, dict):
            out[name] = spec
            continue
        where = f"{kind} '{name}'"
        t: dict[str, Any] = {}
        shape = spec.get("shape")
        if "shape" in spec:
            t["shape"] = [] if shape is None else shape
        t["dtype"] = canonical_dtype(spec.get("dtype"), where, notes, draft, default_dtype)
        if t["dtype"] is None:
            del t["dtype"]
        if isinstance(spec.get("description"), str):
            t["description"] = spec["description"]
        if isinstance(spec.get("random"), dict):  # how the bench draws it (our exports write it back)
            t["random"] = spec["random"]
        if "dim_order" in spec:
            order = spec["dim_order"]
            identity = isinstance(order, list) and isinstance(shape, list) and order == list(range(len(shape)))
            if not identity:
                notes.append(f"{where}: dim_order {order!r} dropped: the canonical format has no dim_order, "
                             f"tensors are row-major in the order of 'shape' (a transposed layout would need "
                             f"the shape permuted and the reference changed)")
        for key, value in spec.items():
            if key not in ("shape", "dtype", "description", "dim_order", "random") and value is not None:
                notes.append(f"{where}: field '{key}' dropped: canonical tensors have shape, dtype, description")
        out[name] = t
    return out


def canonical_axes(axes: Any, notes: list[str], evaluate: bool) -> Any:
    if not isinstance(axes, dict):
        return axes
    out = {}
    for name, axis in axes.items():
        if not isinstance(axis, dict):
            out[name] = axis
            continue
        a = {k: v for k, v in axis.items() if not (v is None and k in ("description", "parent"))}
        value = a.get("value")
        if evaluate and a.get("type") == "const" and isinstance(value, str):
            number = axis_value(value)
            if number is None:
                notes.append(f"axis '{name}': value '{value}' is not integer arithmetic; kept as text, so the "
                             f"schema check reports it")
            else:
                a["value"] = number
                notes.append(f"axis '{name}': value '{value}' evaluated to {number}")
        out[name] = a
    return out


def constraints_list(value: Any, notes: list[str]) -> Any:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        notes.append("assumptions: an object; its values are kept as constraints, its keys are dropped")
        return [v for v in value.values()]
    return value


def finish_definition(out: dict, notes: list[str], draft: bool, tags: Any) -> dict:
    if draft:
        tags = list(tags) if isinstance(tags, list) else []
        if not any(isinstance(t, str) and t.startswith("status:") for t in tags):
            tags.append(DefinitionStatus.DRAFT.tag)
        elif DefinitionStatus.DRAFT.tag not in tags:
            notes.append("tags: kept the existing status tag although a dtype was approximated")
    out["type"], tags = canonical_type(out.get("type"), tags, notes)
    if tags is not None:
        out["tags"] = tags
    out["name"] = record_name(out.get("name"), "name", notes)
    return {k: out[k] for k in DEF_FIELDS if k in out and out[k] is not None}


EVAL_ORDER = ("status", "log", "correctness", "performance", "environment", "timestamp", "seed")


def ordered_evaluation(ev: dict) -> dict:
    return {k: ev[k] for k in EVAL_ORDER if k in ev}


def is_number(value: Any) -> bool:
    return type(value) in (int, float)

