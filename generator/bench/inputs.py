"""Seeded inputs for one workload: the same seed gives the same tensors on every machine.

Random tensors are drawn on the CPU from torch.Generator(seed) and then moved to the device, so a GPU
run and a CPU run of the same workload see the same values. The distributions per dtype:

- floats: standard normal, drawn in float32 and rounded once to the dtype;
- float8: standard normal clamped to the dtype's finite range before the cast (no inf/NaN);
- ints: uniform in [0, 128) (small non-negative values valid as ids); index inputs are never drawn
  here: workloads give them as blobs (see generator/workloadgen);
- bool: fair coin.
Input names with a conventional meaning get a distribution that honours it, because a normal draw
would break the definition's contract: `probs` rows are softmax(3 * normal) (peaked, like a language
model's next-token distribution); names ending in `scale` are uniform in [0.5, 2) / 64 (positive
dequantisation scales); `top_p` uniform in [0.5, 1); `top_k` uniform in [1, 64].
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import torch

TORCH_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float8_e4m3": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2,
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "bool": torch.bool,
}
FP8_MAX = {"float8_e4m3": 448.0, "float8_e5m2": 57344.0}


def set_seed(seed: int, index: int) -> int:
    """Seed of input set `index` of a workload with seed `seed` (set 0 is the workload's own seed)."""
    return (seed * 1_000_003 + index) % (2**63)


def shape_of(spec: Mapping[str, Any], axes: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(int(axes[a]) for a in spec["shape"])


def _random(name: str, dtype: str, shape: tuple, g: torch.Generator) -> torch.Tensor:
    target = TORCH_DTYPES[dtype]
    if name == "probs":
        x = torch.softmax(3.0 * torch.randn(shape, generator=g), dim=-1)
    elif name.endswith("scale"):
        x = (0.5 + 1.5 * torch.rand(shape, generator=g)) / 64
    elif name == "top_p":
        x = 0.5 + 0.5 * torch.rand(shape, generator=g)
    elif name == "top_k":
        return torch.randint(1, 65, shape, generator=g).to(target)
    elif dtype == "bool":
        return torch.rand(shape, generator=g) < 0.5
    elif dtype.startswith(("int", "uint")):
        return torch.randint(0, 128, shape, generator=g).to(target)
    else:
        x = torch.randn(shape, generator=g)
        if dtype in FP8_MAX:
            x = x.clamp_(-FP8_MAX[dtype], FP8_MAX[dtype])
    return x.to(target)


def load_blob(root: Path, path: str, key: str) -> torch.Tensor:
    from safetensors.torch import load_file

    return load_file(str(root / path))[key]


def make_inputs(definition: Mapping[str, Any], workload: Mapping[str, Any], dataset_root: Path,
                index: int, device: str) -> dict[str, Any]:
    """Inputs of input set `index`, in the definition's order. Blobs and scalars are the same in every
    set; random tensors differ (their seed is set_seed(workload seed, index))."""
    axes = {n: a["value"] for n, a in definition["axes"].items() if a["type"] == "const"}
    axes.update(workload["axes"])
    g = torch.Generator().manual_seed(set_seed(int(workload.get("seed") or 0), index))
    out: dict[str, Any] = {}
    for name, spec in definition["inputs"].items():
        given = workload["inputs"][name]
        if given["type"] == "scalar":
            out[name] = given["value"]
            continue
        if given["type"] == "safetensors":
            tensor = load_blob(dataset_root, given["path"], given["tensor_key"]).to(TORCH_DTYPES[spec["dtype"]])
        elif not spec["shape"]:  # 0-d tensor given as random
            tensor = _random(name, spec["dtype"], (), g)
        else:
            tensor = _random(name, spec["dtype"], shape_of(spec, axes), g)
        out[name] = tensor.to(device)
    return out

