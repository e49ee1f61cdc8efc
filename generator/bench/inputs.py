"""Inputs of a workload, made the way the KernelTrace bench makes them: bit-identical tensors from
(definition, workload, seed) with only torch installed.

This module is part of the data contract. It imports nothing but torch and the standard library,
so a dataset consumer may import it (`from generator.bench.inputs import make_inputs`) or copy this
one file. `definition` and `workload` are plain dicts: the records' JSON, or rows of the exported
`definitions` and `workloads` configs (both have `axes` and `inputs`; a workload has `seed`).

How each input is made (`input_recipes` lists them, resolved, for one workload):

- `{"type": "scalar", "value": v}` in the workload: the value itself.
- `{"type": "safetensors", "path", "tensor_key"}`: that tensor of the file (path relative to the
  dataset root), cast to the definition's dtype. Blobs are the same in every input set.
- `{"type": "random"}`: drawn from the distribution named by the definition's input spec,
  `"random": {"distribution": ..., parameters}`, or, when it names none, the default below.
  Distributions, each drawn in float32 (int64 for randint) on the CPU and then cast once:
    normal(mean=0, std=1)          mean + std * randn; float8 clamped to the finite range first
    uniform(low, high)             low + (high - low) * rand
    softmax_normal(scale=1)        softmax(scale * randn) over the last axis (probability rows)
    randint(low=0, high)           integers in [low, high)
    bernoulli(p=0.5)               rand < p
  Defaults: float dtypes normal(0, 1); integer dtypes randint(0, 128); bool bernoulli(0.5); and, for
  names with a conventional meaning, `probs` softmax_normal(3), names ending in `scale`
  uniform(1/128, 1/32), `top_p` uniform(0.5, 1), `top_k` randint(1, 65).
  Every random input has its own generator: torch.Generator().manual_seed(input_seed(seed, index,
  position)), `position` its place in the definition's inputs, `index` the input set (0 for the
  first; the bench draws further sets for timing). So one input can be regenerated without
  drawing the others.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, Mapping, Optional, Union

try:
    import torch
except ModuleNotFoundError:  # input_recipes needs no torch: the export lists recipes without the bench extra
    torch = None

# Dataset dtype name -> torch dtype name (the dataset writes `float8_e4m3`, torch `float8_e4m3fn`).
# Spelled out here, not imported from generator/model/dtypes.py, so that this file works alone when a
# consumer copies it; tests/test_inputs.py checks that both tables agree.
TORCH_DTYPE_NAMES = {
    "float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
    "float8_e4m3": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
    "int8": "int8", "bool": "bool", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
}
TORCH_DTYPES = {name: getattr(torch, attr) for name, attr in TORCH_DTYPE_NAMES.items()} if torch else {}
FP8_MAX = {"float8_e4m3": 448.0, "float8_e5m2": 57344.0}
DISTRIBUTIONS = {  # name -> parameters with their defaults (None: required)
    "normal": {"mean": 0.0, "std": 1.0},
    "uniform": {"low": None, "high": None},
    "softmax_normal": {"scale": 1.0},
    "randint": {"low": 0, "high": None},
    "bernoulli": {"p": 0.5},
}
# safetensors header dtype code -> torch dtype name (a blob may hold float64, which no definition uses).
SAFETENSORS_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
                      "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "I64": "int64", "I32": "int32",
                      "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}


def set_seed(seed: int, index: int) -> int:
    """Seed of input set `index` of a workload with seed `seed`."""
    return (seed * 1_000_003 + index) % (2**63)


def input_seed(seed: int, index: int, position: int) -> int:
    """Seed of the generator of the input at `position` (0-based, the definition's order) in input set
    `index` of a workload with seed `seed`."""
    return (set_seed(seed, index) * 1_000_003 + position) % (2**63)


def default_distribution(name: str, dtype: str) -> dict[str, Any]:
    """The distribution of a random input whose definition names none."""
    if name == "probs":
        return {"distribution": "softmax_normal", "scale": 3.0}
    if name.endswith("scale"):
        return {"distribution": "uniform", "low": 0.0078125, "high": 0.03125}
    if name == "top_p":
        return {"distribution": "uniform", "low": 0.5, "high": 1.0}
    if name == "top_k":
        return {"distribution": "randint", "low": 1, "high": 65}
    if dtype == "bool":
        return {"distribution": "bernoulli", "p": 0.5}
    if dtype.startswith(("int", "uint")):
        return {"distribution": "randint", "low": 0, "high": 128}
    return {"distribution": "normal", "mean": 0.0, "std": 1.0}


def distribution_of(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The definition input's distribution with every parameter filled in (raises ValueError on an
    unknown distribution or parameter)."""
    given = spec.get("random")
    if given is None:
        return default_distribution(name, spec["dtype"])
    kind = given.get("distribution")
    if kind not in DISTRIBUTIONS:
        raise ValueError(f"input '{name}': unknown distribution {kind!r}; use one of {', '.join(DISTRIBUTIONS)}")
    params = DISTRIBUTIONS[kind]
    unknown = sorted(set(given) - set(params) - {"distribution"})
    missing = sorted(p for p, v in params.items() if v is None and p not in given)
    if unknown or missing:
        raise ValueError(f"input '{name}': {kind} takes {', '.join(params)}"
                         + (f"; unknown {', '.join(unknown)}" if unknown else "")
                         + (f"; missing {', '.join(missing)}" if missing else ""))
    return {"distribution": kind, **{p: given.get(p, v) for p, v in params.items()}}


def axis_values(definition: Mapping[str, Any], workload: Mapping[str, Any]) -> dict[str, int]:
    axes = {n: a["value"] for n, a in _as_dict(definition["axes"]).items() if a["type"] == "const"}
    axes.update(_as_dict(workload["axes"]))
    return axes


def shape_of(spec: Mapping[str, Any], axes: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(int(axes[a]) for a in (spec.get("shape") or ()))


def input_recipes(definition: Mapping[str, Any], workload: Mapping[str, Any],
                  seed: Optional[int] = None, index: int = 0) -> dict[str, dict[str, Any]]:
    """How each input of the workload is made, resolved: for random inputs the distribution with all
    parameters, the concrete shape, the dtype and the generator seed; blobs and scalars as given."""
    axes = axis_values(definition, workload)
    base = int(workload.get("seed") or 0) if seed is None else int(seed)
    given_inputs = _as_dict(workload["inputs"])
    out = {}
    for position, (name, spec) in enumerate(_as_dict(definition["inputs"]).items()):
        given = dict(given_inputs[name])
        if given["type"] == "random":
            given = {"type": "random", **distribution_of(name, spec), "dtype": spec["dtype"],
                     "shape": list(shape_of(spec, axes)), "seed": input_seed(base, index, position)}
        out[name] = given
    return out


def draw(recipe: Mapping[str, Any]) -> torch.Tensor:
    """The tensor of one resolved random recipe (see input_recipes), on the CPU."""
    g = torch.Generator().manual_seed(int(recipe["seed"]))
    shape, dtype, kind = tuple(recipe["shape"]), recipe["dtype"], recipe["distribution"]
    target = TORCH_DTYPES[dtype]
    if kind == "normal":
        x = recipe["mean"] + recipe["std"] * torch.randn(shape, generator=g)
        if dtype in FP8_MAX:
            x = x.clamp_(-FP8_MAX[dtype], FP8_MAX[dtype])
    elif kind == "uniform":
        x = recipe["low"] + (recipe["high"] - recipe["low"]) * torch.rand(shape, generator=g)
    elif kind == "softmax_normal":
        x = torch.softmax(recipe["scale"] * torch.randn(shape, generator=g), dim=-1)
    elif kind == "randint":
        x = torch.randint(int(recipe["low"]), int(recipe["high"]), shape, generator=g)
    elif kind == "bernoulli":
        x = torch.rand(shape, generator=g) < recipe["p"]
    else:
        raise ValueError(f"unknown distribution {kind!r}")
    return x.to(target)


def load_blob(root: Union[Path, str], path: str, key: str) -> torch.Tensor:
    """One tensor of a safetensors file, read with torch alone (the format: an 8-byte little-endian
    header length, a JSON header of {key: {dtype, shape, data_offsets}}, then the raw bytes)."""
    raw = (Path(root) / path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    if key not in header:
        raise KeyError(f"{path} has no tensor '{key}' (it has {', '.join(k for k in header if k != '__metadata__')})")
    info = header[key]
    begin, end = info["data_offsets"]
    data = bytearray(raw[8 + n + begin: 8 + n + end])  # a writable copy: torch.frombuffer shares memory
    dtype = getattr(torch, SAFETENSORS_DTYPES[info["dtype"]])
    if not data:
        return torch.empty(info["shape"], dtype=dtype)
    return torch.frombuffer(data, dtype=dtype).reshape(info["shape"]).clone()


def make_inputs(definition: Mapping[str, Any], workload: Mapping[str, Any], blob_root: Union[Path, str, None] = None,
                index: int = 0, device: str = "cpu", *, seed: Optional[int] = None,
                max_elements: Optional[int] = None) -> dict[str, Any]:
    """The inputs of input set `index` of `workload`, in the definition's order, as the bench makes them.

    `blob_root` is the folder blob paths are relative to (the dataset root, or the export folder);
    `seed` overrides the workload's own. Random tensors are drawn on the CPU and then moved to
    `device`, so a GPU run sees the same values. With `max_elements`, random tensors larger than
    that are left out (None in the result); the others are unchanged, since each input has its own
    generator."""
    out: dict[str, Any] = {}
    for name, recipe in _recipes(definition, workload, seed, index).items():
        kind = recipe["type"]
        if kind == "scalar":
            out[name] = recipe["value"]
            continue
        spec = _as_dict(definition["inputs"])[name]
        if kind == "safetensors":
            if blob_root is None:
                raise ValueError(f"input '{name}' is read from {recipe['path']}: pass blob_root, the folder that "
                                 "holds blob/")
            tensor = load_blob(blob_root, recipe["path"], recipe["tensor_key"]).to(TORCH_DTYPES[spec["dtype"]])
        elif kind == "random":
            if max_elements is not None and _numel(recipe["shape"]) > max_elements:
                out[name] = None
                continue
            tensor = draw(recipe)
        else:
            raise ValueError(f"input '{name}': unknown input type {kind!r}")
        out[name] = tensor.to(device)
    return out


def _recipes(definition: Mapping[str, Any], workload: Mapping[str, Any], seed: Optional[int],
             index: int) -> dict[str, dict[str, Any]]:
    """input_recipes, or, for a row of the exported `workloads` config, its `input_recipes` column
    (typed, so its floats are exact, where the JSON columns `datasets` reads keep ~15 digits),
    re-seeded for input set `index` and `seed`."""
    rows = workload.get("input_recipes")
    if not isinstance(rows, (list, tuple)) or not rows:
        return input_recipes(definition, workload, seed, index)
    base = int(workload.get("seed") or 0) if seed is None else int(seed)
    out = {}
    for position, row in enumerate(rows):
        recipe = {k: v for k, v in row.items() if v is not None and k != "name"}
        if recipe["type"] == "random":
            recipe["seed"] = input_seed(base, index, position)
        elif recipe["type"] == "scalar" and isinstance(recipe.get("value"), str):
            recipe["value"] = json.loads(recipe["value"])
        out[row["name"]] = recipe
    return out


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _as_dict(value: Any) -> dict:
    """JSON columns read with pandas or pyarrow come as text; `datasets` gives dicts."""
    return json.loads(value) if isinstance(value, (str, bytes)) else dict(value)
