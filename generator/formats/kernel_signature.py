"""Kernel Signature (seed 001): `op`, `input`, `output`, `dim_order`, `code` with a global
`forward`, dtypes `fp16`/`bf16`/`fp8_e4m3`/`int4`, no name (the file stem is the name).

Definitions only; the notes say what could not be carried (a non-identity dim_order, int4).
"""

from __future__ import annotations

from typing import Any

from .common import Normalised, canonical_axes, finish_definition, tensor_map
from .rewrite import positional_params, rename_global, returns_dicts, top_function, uses_name

KERNEL_SIGNATURE = "Kernel Signature (seed 001)"


def definition_from_kernel_signature(data: dict, stem: str) -> Normalised:
    notes: list[str] = []
    draft = [False]
    out: dict[str, Any] = {"name": data.get("name", stem), "type": data.get("op", data.get("type"))}
    if isinstance(data.get("description"), str):
        out["description"] = data["description"]
    out["axes"] = canonical_axes(data.get("axes"), notes, True)
    # seed 001: dtype defaults to fp16
    out["inputs"] = tensor_map(data.get("input", data.get("inputs")), "input", notes, draft, "float16", True)
    out["outputs"] = tensor_map(data.get("output", data.get("outputs")), "output", notes, draft, "float16", True)
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
    return Normalised(finish_definition(out, notes, draft[0], data.get("tags")), KERNEL_SIGNATURE, notes)


def _forward_to_run(code: str, outputs: Any, notes: list[str]) -> str:
    """Kernel Signature code has a global `forward`; the canonical reference has `run` returning a dict."""
    fn = top_function(code, "forward")
    if fn is None:
        if top_function(code, "run") is None:
            notes.append("code: defines no top-level forward function; kept as it is (the reference needs a "
                         "top-level run)")
        return code
    if returns_dicts(fn):
        if uses_name(code, "run"):
            notes.append("code: 'forward' not renamed to 'run' because the code already uses the name 'run'")
            return code
        renamed = rename_global(code, "forward", "run")
        return renamed if renamed is not None else code
    # forward returns tensors (or a tuple): keep it as _forward and add a run that names them.
    if uses_name(code, "_forward") or uses_name(code, "run"):
        notes.append("code: forward does not return a dict of outputs and the names 'run'/'_forward' are taken; "
                     "kept as it is")
        return code
    renamed = rename_global(code, "forward", "_forward")
    if renamed is None:
        return code
    names = list(outputs) if isinstance(outputs, dict) else []
    params = positional_params(fn)
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

