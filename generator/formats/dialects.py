"""Readers for the other dialects: FlashInfer-Trace, Kernel Signature (seed 001), schema set (seed 002).

Each `normalise_<kind>` takes one parsed JSON value and returns a `Normalised`: the canonical
object, the dialect it was written in (None when already canonical), and notes saying what
could not be carried over. Canonical input passes through unchanged (the very same object).

Nothing here raises on malformed input: a value of the wrong shape is returned as it is (or
with only the parts that could be read mapped), and the schema check reports the rest.

Dialects, and how each is recognised (by its fields, never by where the file lives):

- FlashInfer-Trace (the pydantic models of flashinfer-bench 0.1.x, flashinfer_bench/data/):
  Definition has `op_type` instead of `type`, scalars have `shape: null`, fp8 is spelled
  `float8_e4m3fn`, optional strings are written as `null`. Traces are written with
  `datetime.now().isoformat()` (no time zone) and `correctness.extra`; older traces had
  `evaluation.log_file` and `environment.device`.
- Kernel Signature (seed 001): `op`, `input`, `output`, `dim_order`, `code` with a global
  `forward`, dtypes `fp16`/`bf16`/`fp8_e4m3`/`int4`, no name (the file stem is the name).
- schema set (seed 002): kernel description with `id` and `reference_code` (or `name` and
  `code`), `assumptions`, a destination-passing `run(inputs..., outputs...)`; and benchmark
  result records `{device, kernel_id, source, compiled, time, speedup, max_diff, compile_error}`.
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any, Optional

from ..model.schemas import DEFINITION_TYPES, DTYPES

FLASHINFER_TRACE = "FlashInfer-Trace"
KERNEL_SIGNATURE = "Kernel Signature (seed 001)"
SCHEMA_SET = "schema set (seed 002)"
BENCHMARK_RESULT = "benchmark result (seed 002)"

UNKNOWN_WORKLOAD = "unknown"
UNKNOWN_TIMESTAMP = "1970-01-01T00:00:00Z"
# Prefix of the note a benchmark result gets for its missing workload; the importer drops the
# note when it finds the workload in the dataset.
WORKLOAD_MISSING_NOTE = "workload missing:"


@dataclass
class Normalised:
    data: Any
    dialect: Optional[str] = None
    notes: list[str] = field(default_factory=list)


# -- shared vocabulary ---------------------------------------------------------------------

# Other spellings of the canonical dtypes. None: a lossless rename. A string: the note that
# says what is lost.
_DTYPE_SPELLINGS: dict[str, tuple[str, Optional[str]]] = {
    # Kernel Signature (seed 001)
    "fp32": ("float32", None),
    "fp16": ("float16", None),
    "bf16": ("bfloat16", None),
    "fp8_e4m3": ("float8_e4m3", None),
    "fp8_e5m2": ("float8_e5m2", None),
    "fp4_e2m1": ("float4_e2m1", None),
    # FlashInfer-Trace: DType.FLOAT8_E4M3FN = "float8_e4m3fn" (the torch name); the canonical
    # float8_e4m3 means the same OCP e4m3 "fn" encoding (no infinities).
    "float8_e4m3fn": ("float8_e4m3", None),
    "float4_e2m1fn": ("float4_e2m1", None),
    # torch names flashinfer-bench does not use but exports from torch code do.
    "float8_e4m3fnuz": ("float8_e4m3", "is the fnuz encoding (no negative zero, exponent bias 8); "
                                       "the canonical float8_e4m3 is the OCP fn encoding, so values differ"),
    "float8_e5m2fnuz": ("float8_e5m2", "is the fnuz encoding (no negative zero, exponent bias 16); "
                                       "the canonical float8_e5m2 is the OCP encoding, so values differ"),
    "float4_e2m1fn_x2": ("float4_e2m1", "packs two values per byte (torch float4_e2m1fn_x2); "
                                        "the canonical shape counts values, check the last axis"),
}
_TORCH_DTYPE = {
    "float32": "torch.float32", "float16": "torch.float16", "bfloat16": "torch.bfloat16",
    "float8_e4m3": "torch.float8_e4m3fn", "float8_e5m2": "torch.float8_e5m2",
    "float4_e2m1": "torch.float4_e2m1fn_x2", "int8": "torch.int8", "bool": "torch.bool",
    "int16": "torch.int16", "int32": "torch.int32", "int64": "torch.int64", "uint8": "torch.uint8",
}
_DTYPE_SET = frozenset(DTYPES)
_TYPE_SET = frozenset(DEFINITION_TYPES)
_RECORD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_DEF_FIELDS = ("name", "type", "tags", "description", "axes", "inputs", "outputs", "reference", "constraints")
_TRACE_TOP = frozenset({"definition", "workload", "solution", "evaluation"})
_EVAL_FIELDS = frozenset({"status", "log", "correctness", "performance", "environment", "timestamp", "seed"})
_ENV_FIELDS = frozenset({"hardware", "libs", "cpu", "driver"})
_CORRECTNESS_FIELDS = frozenset({"max_absolute_error", "max_relative_error", "matched_ratio", "atol", "rtol",
                                 "input_sets"})
_PERFORMANCE_FIELDS = frozenset({"latency_ms", "reference_latency_ms", "speedup_factor", "mean_ms", "min_ms",
                                 "max_ms", "p20_ms", "p80_ms", "stderr_ms", "samples", "timer"})
_SOLUTION_FIELDS = ("name", "definition", "author", "description", "spec", "sources")
_SPEC_FIELDS = frozenset({"language", "target_hardware", "entry_point", "destination_passing_style", "binding",
                          "dependencies"})
_ISO_NAIVE = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?$")


def _quote(value: Any) -> str:
    return repr(value) if not isinstance(value, str) else f"'{value}'"


def _dtype(value: Any, where: str, notes: list[str], draft: list[bool], default: Optional[str] = None) -> Any:
    """The canonical spelling of a dtype; notes for what is lost. Unknown values pass through."""
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        return value
    if value in _DTYPE_SET:
        return value
    spelled = value[6:] if value.startswith("torch.") else value
    if spelled in _DTYPE_SET:
        return spelled
    if spelled in _DTYPE_SPELLINGS:
        canonical, loss = _DTYPE_SPELLINGS[spelled]
        if loss:
            notes.append(f"{where}: dtype {value} {loss}; written as {canonical}")
        return canonical
    if spelled in ("int4", "uint4"):
        draft[0] = True
        notes.append(f"{where}: dtype {value} has no canonical dtype; written as int8 (one value per byte, "
                     f"not packed) and the definition is tagged status:draft until someone checks it")
        return "int8"
    return value


def _suggest_type(value: str) -> str:
    low = value.lower()
    for t in sorted(DEFINITION_TYPES, key=len, reverse=True):
        if low.startswith(t) or t in re.split(r"[^a-z0-9]+", low):
            return f" (closest canonical type: '{t}')"
    return ""


def _check_type(value: Any, notes: list[str]) -> None:
    if isinstance(value, str) and value not in _TYPE_SET:
        notes.append(f"type '{value}' is not in the canonical list of types{_suggest_type(value)}; kept as it is, "
                     f"so the schema check reports it: pick one of {', '.join(DEFINITION_TYPES)}")


def _infer_type(name: Any) -> Optional[str]:
    """A canonical type named inside a definition name: 'attention(gqa-4)' -> 'gqa'."""
    if not isinstance(name, str):
        return None
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


def _record_name(value: Any, what: str, notes: list[str]) -> Any:
    if not isinstance(value, str) or _RECORD_NAME.match(value):
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


# -- safe integer arithmetic for Kernel Signature axis values ------------------------------

class _NotInteger(Exception):
    pass


def _int_eval(node: ast.AST) -> int:
    if isinstance(node, ast.Expression):
        return _int_eval(node.body)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _int_eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _int_eval(node.left), _int_eval(node.right)
        op = node.op
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            if abs(a) > 1 << 62 or abs(b) > 1 << 62:
                raise _NotInteger("too large")
            return a * b
        if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod)):
            if b == 0:
                raise _NotInteger("division by zero")
            if isinstance(op, ast.Div):
                if a % b:
                    raise _NotInteger(f"{a} / {b} is not an integer")
                return a // b
            return a // b if isinstance(op, ast.FloorDiv) else a % b
        if isinstance(op, ast.Pow):
            if b < 0 or b > 64 or abs(a) > 1 << 32:
                raise _NotInteger("power out of range")
            return a ** b
    raise _NotInteger("only integers and + - * / // % ** are allowed")


def _axis_value(text: str) -> Optional[int]:
    if len(text) > 200:
        return None
    try:
        return _int_eval(ast.parse(text.strip(), mode="eval"))
    except (SyntaxError, ValueError, _NotInteger, RecursionError, MemoryError):
        return None


# -- renaming identifiers in Python code with tokenize -------------------------------------

def _rename_global(code: str, old: str, new: str) -> Optional[str]:
    """Rename the module-level function `old` and every plain use of the name (not attributes).

    Works on tokens, so strings and comments that mention `old` are left alone. None if the
    code cannot be tokenised.
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    lines = code.splitlines(keepends=True)
    edits: list[tuple[int, int]] = []
    prev = None  # previous significant token
    for tok in tokens:
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            continue
        if tok.type == tokenize.NAME and tok.string == old:
            after_dot = prev is not None and prev.type == tokenize.OP and prev.string == "."
            nested_def = (prev is not None and prev.type == tokenize.NAME and prev.string in ("def", "class")
                          and prev.start[1] > 0)
            if not after_dot and not nested_def:
                edits.append(tok.start)
        prev = tok
    for row, col in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[col + len(old):]
    return "".join(lines)


def _top_function(code: str, name: str) -> Optional[ast.FunctionDef]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def _uses_name(code: str, name: str) -> bool:
    try:
        return any(t.type == tokenize.NAME and t.string == name
                   for t in tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return False


def _returns_dicts(fn: ast.FunctionDef) -> bool:
    """True if every `return` directly in fn returns a dict literal."""
    returns = []
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            returns.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return bool(returns) and all(isinstance(r.value, (ast.Dict, ast.DictComp)) for r in returns)


def _positional_params(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]


# -- definitions ---------------------------------------------------------------------------

def _tensor_map(tensors: Any, kind: str, notes: list[str], draft: list[bool], default_dtype: Optional[str],
                drop_dim_order: bool) -> Any:
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
        t["dtype"] = _dtype(spec.get("dtype"), where, notes, draft, default_dtype)
        if t["dtype"] is None:
            del t["dtype"]
        if isinstance(spec.get("description"), str):
            t["description"] = spec["description"]
        if "dim_order" in spec:
            order = spec["dim_order"]
            identity = isinstance(order, list) and isinstance(shape, list) and order == list(range(len(shape)))
            if not identity:
                notes.append(f"{where}: dim_order {order!r} dropped: the canonical format has no dim_order, "
                             f"tensors are row-major in the order of 'shape' (a transposed layout would need "
                             f"the shape permuted and the reference changed)")
        for key, value in spec.items():
            if key not in ("shape", "dtype", "description", "dim_order") and value is not None:
                notes.append(f"{where}: field '{key}' dropped: canonical tensors have shape, dtype, description")
        out[name] = t
    return out


def _axes(axes: Any, notes: list[str], evaluate: bool) -> Any:
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
            number = _axis_value(value)
            if number is None:
                notes.append(f"axis '{name}': value '{value}' is not integer arithmetic; kept as text, so the "
                             f"schema check reports it")
            else:
                a["value"] = number
                notes.append(f"axis '{name}': value '{value}' evaluated to {number}")
        out[name] = a
    return out


def _constraints(value: Any, notes: list[str]) -> Any:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        notes.append("assumptions: an object; its values are kept as constraints, its keys are dropped")
        return [v for v in value.values()]
    return value


def _finish_definition(out: dict, notes: list[str], draft: bool, tags: Any) -> dict:
    if draft:
        tags = list(tags) if isinstance(tags, list) else []
        if not any(isinstance(t, str) and t.startswith("status:") for t in tags):
            tags.append("status:draft")
        elif "status:draft" not in tags:
            notes.append("tags: kept the existing status tag although a dtype was approximated")
    if tags is not None:
        out["tags"] = tags
    _check_type(out.get("type"), notes)
    out["name"] = _record_name(out.get("name"), "name", notes)
    return {k: out[k] for k in _DEF_FIELDS if k in out and out[k] is not None}


def _from_flashinfer(data: dict) -> Normalised:
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
            out[key] = _tensor_map(value, key[:-1], notes, draft, None, False)
        elif key == "axes":
            out[key] = _axes(value, notes, False)
        elif key in _DEF_FIELDS or key == "$schema":
            if value is not None:  # pydantic writes unset optional fields as null
                out[key] = value
        else:
            notes.append(f"field '{key}' dropped: the canonical definition has no such field")
    tags = out.pop("tags", None)
    return Normalised(_finish_definition(out, notes, draft[0], tags), FLASHINFER_TRACE, notes)


def _from_kernel_signature(data: dict, stem: str) -> Normalised:
    notes: list[str] = []
    draft = [False]
    out: dict[str, Any] = {"name": data.get("name", stem), "type": data.get("op", data.get("type"))}
    if isinstance(data.get("description"), str):
        out["description"] = data["description"]
    out["axes"] = _axes(data.get("axes"), notes, True)
    # seed 001: dtype defaults to fp16
    out["inputs"] = _tensor_map(data.get("input", data.get("inputs")), "input", notes, draft, "float16", True)
    out["outputs"] = _tensor_map(data.get("output", data.get("outputs")), "output", notes, draft, "float16", True)
    code = data.get("code", data.get("reference"))
    if isinstance(code, str):
        code = _forward_to_run(code, out["outputs"], notes)
    out["reference"] = code
    if "constraints" in data:
        out["constraints"] = data["constraints"]
    for key in data:
        if key not in ("name", "op", "type", "description", "axes", "input", "inputs", "output", "outputs", "code",
                       "reference", "constraints", "tags", "$schema"):
            notes.append(f"field '{key}' dropped: the canonical definition has no such field")
    return Normalised(_finish_definition(out, notes, draft[0], data.get("tags")), KERNEL_SIGNATURE, notes)


def _forward_to_run(code: str, outputs: Any, notes: list[str]) -> str:
    """Kernel Signature code has a global `forward`; the canonical reference has `run` returning a dict."""
    fn = _top_function(code, "forward")
    if fn is None:
        if _top_function(code, "run") is None:
            notes.append("code: defines no top-level forward function; kept as it is (the reference needs a "
                         "top-level run)")
        return code
    if _returns_dicts(fn):
        if _uses_name(code, "run"):
            notes.append("code: 'forward' not renamed to 'run' because the code already uses the name 'run'")
            return code
        renamed = _rename_global(code, "forward", "run")
        return renamed if renamed is not None else code
    # forward returns tensors (or a tuple): keep it as _forward and add a run that names them.
    if _uses_name(code, "_forward") or _uses_name(code, "run"):
        notes.append("code: forward does not return a dict of outputs and the names 'run'/'_forward' are taken; "
                     "kept as it is")
        return code
    renamed = _rename_global(code, "forward", "_forward")
    if renamed is None:
        return code
    names = list(outputs) if isinstance(outputs, dict) else []
    params = _positional_params(fn)
    args = ", ".join(params)
    body = (
        f"\n\n# Added by `kerneltrace import`: the Kernel Signature entry point `forward` returns the\n"
        f"# outputs themselves; the canonical `run` returns a dict of them.\n"
        f"def run({args}):\n"
        f"    _out = _forward({args})\n"
        f"    if isinstance(_out, dict):\n"
        f"        return _out\n"
        f"    if not isinstance(_out, (tuple, list)):\n"
        f"        _out = (_out,)\n"
        f"    return dict(zip({tuple(names)!r}, _out))\n"
    )
    if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
        notes.append("code: forward takes *args/**kwargs or keyword-only arguments; the generated run passes "
                     "only its positional parameters")
    notes.append("code: forward returns the outputs, not a dict; renamed to _forward and wrapped by a run that "
                 "returns {output name: value}")
    return renamed.rstrip("\n") + "\n" + body


def _from_schema_set(data: dict, stem: str, type_hint: Optional[str]) -> Normalised:
    notes: list[str] = []
    draft = [False]
    name = data.get("id", data.get("name", stem))
    if "id" in data and "name" in data and data["name"] != data["id"]:
        notes.append(f"name '{data['name']}' dropped: the id '{data['id']}' is used as the name")
    out: dict[str, Any] = {"name": name}
    kind = data.get("type")
    if kind is None:
        if type_hint in _TYPE_SET:
            kind = type_hint
        else:
            kind = _infer_type(name)
            if kind:
                notes.append(f"type: the schema set has none; '{kind}' inferred from the name '{name}' (check it)")
            else:
                notes.append("type: the schema set has none and none could be inferred from the name; add 'type'")
    out["type"] = kind
    if isinstance(data.get("description"), str):
        out["description"] = data["description"]
    out["axes"] = _axes(data.get("axes"), notes, True)
    # seed 002: dtype defaults to float16
    out["inputs"] = _tensor_map(data.get("inputs"), "input", notes, draft, "float16", True)
    out["outputs"] = _tensor_map(data.get("outputs"), "output", notes, draft, "float16", True)
    code = data.get("reference_code", data.get("code", data.get("reference")))
    if isinstance(code, str):
        code = _wrap_dps(code, out, notes)
    out["reference"] = code
    if "assumptions" in data or "constraints" in data:
        out["constraints"] = _constraints(data.get("assumptions", data.get("constraints")), notes)
    for key in data:
        if key not in ("id", "name", "type", "description", "axes", "inputs", "outputs", "reference_code", "code",
                       "reference", "assumptions", "constraints", "tags", "$schema"):
            notes.append(f"field '{key}' dropped: the canonical definition has no such field")
    return Normalised(_finish_definition(out, notes, draft[0], data.get("tags")), SCHEMA_SET, notes)


def _wrap_dps(code: str, definition: dict, notes: list[str]) -> str:
    """Schema-set code has a destination-passing run(inputs..., outputs...) that returns nothing.

    Rename it to _run_dps and append a value-returning run(inputs...) that allocates each output
    (shape from const axes and from the input dims that carry the axis; dtype from the spec;
    device of the first tensor input), calls _run_dps and returns {output name: tensor}.
    """
    inputs, outputs, axes = definition.get("inputs"), definition.get("outputs"), definition.get("axes")
    fn = _top_function(code, "run")
    if fn is None:
        notes.append("reference: defines no top-level run function; kept as it is")
        return code
    if not (isinstance(inputs, dict) and isinstance(outputs, dict) and isinstance(axes, dict)):
        return code
    params = _positional_params(fn)
    if len(params) == len(inputs) and len(outputs) > 0:
        return code  # already value-returning
    if len(params) != len(inputs) + len(outputs):
        notes.append(f"reference: run takes {len(params)} arguments but the definition has {len(inputs)} inputs "
                     f"and {len(outputs)} outputs; kept as it is (it must return a dict of the outputs)")
        return code
    names = list(inputs) + list(outputs)
    bad = [n for n in names if not isinstance(n, str) or not _IDENTIFIER.match(n) or keyword.iskeyword(n)
           or n.startswith("_") or n == "torch"]
    if bad or len(set(names)) != len(names):
        notes.append("reference: destination-passing run not wrapped: tensor names must be distinct Python "
                     "identifiers not starting with '_' (found " + ", ".join(map(repr, bad or names)) + ")")
        return code
    if _uses_name(code, "_run_dps"):
        notes.append("reference: destination-passing run not wrapped: the code already uses the name _run_dps")
        return code
    renamed = _rename_global(code, "run", "_run_dps")
    if renamed is None:
        return code

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
        dtype = _TORCH_DTYPE.get(spec.get("dtype")) if isinstance(spec, dict) else None
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
        lines = [f"    raise NotImplementedError({'cannot allocate the outputs: ' + '; '.join(missing)!r})"]
        notes.append("reference: destination-passing run renamed to _run_dps; the value-returning run cannot "
                     "allocate the outputs (" + "; ".join(missing) + ") and raises NotImplementedError: write "
                     "the allocation by hand")
    else:
        lines.append(f"    _run_dps({', '.join(names)})")
        items = ", ".join(f"{n!r}: {n}.item()" if not outputs[n].get("shape") else f"{n!r}: {n}" for n in outputs)
        lines.append(f"    return {{{items}}}")
        notes.append(f"reference: destination-passing run({', '.join(params)}) renamed to _run_dps and wrapped by "
                     f"a value-returning run({in_args}) that allocates the outputs")
    if any(isinstance(s, dict) and s.get("dtype") == "float4_e2m1" for s in outputs.values()):
        notes.append("reference: float4_e2m1 outputs are allocated as torch.float4_e2m1fn_x2 with the spec's "
                     "shape (two values per byte); check the packing")
    imports_torch = False
    try:
        imports_torch = any(isinstance(n, ast.Import) and any(a.name == "torch" and a.asname is None for a in n.names)
                            for n in ast.parse(code).body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    wrapper = (("\n\n" if imports_torch else "\n\nimport torch\n\n\n") +
               "# Added by `kerneltrace import`: the schema-set run takes the outputs as arguments\n"
               "# (destination-passing style); this run allocates them, calls it and returns them.\n"
               f"def run({in_args}):\n" + "\n".join(lines) + "\n")
    return renamed.rstrip("\n") + "\n" + wrapper


def _looks_flashinfer(data: dict) -> bool:
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
                if isinstance(d, str) and d not in _DTYPE_SET and d in _DTYPE_SPELLINGS:
                    return True
    return data.get("description", "") is None


def normalise_definition(data: Any, stem: str, type_hint: Optional[str] = None) -> Normalised:
    """A Definition in any dialect -> canonical. `stem` names Kernel Signature files (they carry no
    name); `type_hint` (e.g. the folder a file sits in) types schema-set definitions (they carry none)."""
    if not isinstance(data, dict):
        return Normalised(data)
    try:
        if "op_type" in data:
            return _from_flashinfer(data)
        if "op" in data or "input" in data or "output" in data:
            return _from_kernel_signature(data, stem)
        if "id" in data or "reference_code" in data or "code" in data or "assumptions" in data:
            return _from_schema_set(data, stem, type_hint)
        if _looks_flashinfer(data):
            return _from_flashinfer(data)
    except (RecursionError, MemoryError):
        pass
    return Normalised(data)


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

    The fields are the same; what differs: optional strings written as null, languages the
    canonical list lacks (tilelang), and the default of spec.destination_passing_style: true in
    flashinfer-bench (BuildSpec), false here. flashinfer-bench saves with exclude_unset, so a
    solution it wrote may omit the field and mean true; nothing in the record says so, which is
    why `flashinfer=True` (the importer passes it for FlashInfer-Trace folders) is needed to
    make an absent field true.
    """
    if type(data) is not dict:
        return Normalised(data)
    spec = data.get("spec")
    marked = data.get("description", "") is None or (type(spec) is dict and spec.get("language") == "tilelang")
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
            if s.get("language") == "tilelang":
                notes.append("spec.language 'tilelang' is not a canonical language; kept, so the schema check "
                             "reports it")
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


# -- traces --------------------------------------------------------------------------------

def _naive_timestamp(ts: Any) -> bool:
    if type(ts) is not str or not ts or ts[-1] == "Z" or (len(ts) > 6 and ts[-6] in "+-"):
        return False
    return bool(_ISO_NAIVE.match(ts))


def normalise_trace(data: Any, workload_uuid: Optional[str] = None) -> Normalised:
    """A trace line in any dialect -> canonical. Runs on every trace line: canonical lines are
    recognised with a few dict lookups and returned as they are."""
    if type(data) is not dict:
        return Normalised(data)
    ev = data.get("evaluation")
    if type(ev) is dict:
        env = ev.get("environment")
        corr = ev.get("correctness")
        if ("log_file" not in ev and (type(env) is not dict or "device" not in env)
                and (type(corr) is not dict or "extra" not in corr) and not _naive_timestamp(ev.get("timestamp"))):
            return Normalised(data)
        try:
            return _trace_from_flashinfer(data)
        except (RecursionError, MemoryError):
            return Normalised(data)
    if "kernel_id" in data:
        return _from_benchmark_result(data, workload_uuid)
    return Normalised(data)


def _trace_from_flashinfer(data: dict) -> Normalised:
    notes: list[str] = []
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in _TRACE_TOP:
            out[key] = value
        else:
            notes.append(f"field '{key}' dropped: the canonical trace has no such field")
    ev = dict(data["evaluation"])
    if "log_file" in ev:
        log_file = ev.pop("log_file")
        if log_file is not None:
            if ev.get("log"):
                notes.append(f"evaluation.log_file {_quote(log_file)} dropped (the record also has a log); the "
                             f"file's content is not carried over")
            else:
                ev["log"] = f"log file: {log_file}"
                notes.append(f"evaluation.log_file {_quote(log_file)} kept as a path in evaluation.log; the "
                             f"file's content is not carried over")
    env = ev.get("environment")
    if isinstance(env, dict):
        e: dict[str, Any] = {}
        for k, v in env.items():
            if k == "device":
                if "hardware" in env:
                    if v != env["hardware"]:
                        notes.append(f"environment.device {_quote(v)} dropped (the record has environment.hardware)")
                else:
                    e["hardware"] = v
            elif k in _ENV_FIELDS:
                e[k] = v
            else:
                notes.append(f"environment.{k} dropped: the canonical environment has no such field")
        if isinstance(e.get("libs"), dict):
            e["libs"] = {k: v for k, v in e["libs"].items()}
        ev["environment"] = {k: e[k] for k in ("hardware", "libs", "cpu", "driver") if k in e}
    corr = ev.get("correctness")
    if isinstance(corr, dict):
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
        ev["correctness"] = c
    perf = ev.get("performance")
    if isinstance(perf, dict):
        for k in perf:
            if k not in _PERFORMANCE_FIELDS:
                notes.append(f"evaluation.performance.{k} dropped: the canonical performance has no such field")
        ev["performance"] = {k: v for k, v in perf.items() if k in _PERFORMANCE_FIELDS}
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
    out["evaluation"] = _ordered_evaluation(ev)
    return Normalised(out, FLASHINFER_TRACE, notes)


_EVAL_ORDER = ("status", "log", "correctness", "performance", "environment", "timestamp", "seed")


def _ordered_evaluation(ev: dict) -> dict:
    return {k: ev[k] for k in _EVAL_ORDER if k in ev}


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _from_benchmark_result(data: dict, workload_uuid: Optional[str]) -> Normalised:
    """{device: {name}, kernel_id, source, compiled, time, speedup, max_diff, compile_error} -> trace."""
    notes: list[str] = []
    device = data.get("device")
    hardware = device.get("name") if isinstance(device, dict) else device if isinstance(device, str) else None
    if not isinstance(hardware, str) or not hardware:
        hardware = "unknown"
        notes.append("device.name missing: environment.hardware is 'unknown'")
    compiled, time, speedup, max_diff = (data.get("compiled"), data.get("time"), data.get("speedup"),
                                         data.get("max_diff"))
    ev: dict[str, Any] = {}
    log_parts = []
    if compiled is True and _number(time):
        ev["status"] = "PASSED"
        notes.append(f"time {time} read as milliseconds (the benchmark result does not record its unit)")
        if _number(speedup):
            ev["performance"] = {"latency_ms": time, "reference_latency_ms": time * speedup,
                                 "speedup_factor": speedup}
        else:
            ev["performance"] = None
            log_parts.append(f"latency {time} ms (speedup not recorded)")
            notes.append("speedup missing: the reference latency is unknown, so no performance is written "
                         "(the latency is kept in evaluation.log)")
        # The benchmark result recorded only max_diff (the maximum absolute error); the relative
        # error is optional in the trace schema and is left out rather than invented.
        if _number(max_diff) and max_diff >= 0:
            ev["correctness"] = {"max_absolute_error": max_diff}
            log_parts.append(f"imported from a benchmark result: max_diff {max_diff}; max_relative_error was not recorded")
            notes.append("max_relative_error unknown (the benchmark result has only max_diff): left out")
        else:
            ev["correctness"] = None
            notes.append("max_diff missing: no correctness is written (a PASSED trace needs it)")
    elif compiled is True:
        ev["status"] = "RUNTIME_ERROR"
        notes.append("compiled but no time recorded: status RUNTIME_ERROR")
    else:
        ev["status"] = "COMPILE_ERROR"
        error = data.get("compile_error")
        if isinstance(error, str):
            log_parts.append(error)
    if log_parts:
        ev["log"] = "\n".join(log_parts)
    ev["environment"] = {"hardware": hardware}
    ev["timestamp"] = UNKNOWN_TIMESTAMP
    notes.append(f"timestamp unknown (benchmark results carry none): set to {UNKNOWN_TIMESTAMP}")
    uuid = workload_uuid or UNKNOWN_WORKLOAD
    notes.append(f"{WORKLOAD_MISSING_NOTE} benchmark results name no workload; recorded as uuid '{uuid}' with no "
                 f"axes and no inputs")
    for key in data:
        if key not in ("device", "kernel_id", "source", "compiled", "time", "speedup", "max_diff", "compile_error"):
            notes.append(f"field '{key}' dropped: a trace has no such field")
    if not isinstance(data.get("source"), str):
        notes.append("source missing: the trace names no solution")
    ev = _ordered_evaluation(ev)
    for key in ("kernel_id", "source"):
        value = data.get(key)
        if isinstance(value, str) and value and not _RECORD_NAME.match(value):
            data = {**data, key: canonical_name(value) or value}
            notes.append(f"{key} '{value}' is not usable as a name; read as '{data[key]}'")
    trace = {"definition": data.get("kernel_id"), "workload": {"uuid": uuid, "axes": {}, "inputs": {}},
             "solution": data.get("source"), "evaluation": ev}
    return Normalised(trace, BENCHMARK_RESULT, notes)
