"""Inputs of a workload, made the way the KernelTrace bench makes them: bit-identical tensors from
(definition, workload, seed) with only torch installed.

This module is part of the data contract. It imports nothing but torch and the standard library,
so a dataset consumer may import it (`from generator.bench.shared.inputs import make_inputs`) or copy this
one file. `definition` and `workload` are plain dicts: the records' JSON, or rows of the exported
`definitions` and `workloads` configs (both have `axes` and `inputs`; a workload has `seed`).

How each input is made (`input_recipes` lists them, resolved, for one workload):

- `{"type": "scalar", "value": v}` in the workload: the value itself.
- `{"type": "safetensors", "path", "tensor_key"}`: that tensor of the file (path relative to the
  dataset root), cast to the definition's dtype. Blobs are the same in every input set.
- `{"type": "random"}`: drawn from the distribution named by the definition's input spec,
  `"random": {"distribution": ..., parameters}`, or, when it names none, the default below.
  Distributions, each drawn in float32 (float64 where stated; int64 for randint) on the CPU and then
  cast once:
    normal(mean=0, std=1)          mean + std * randn; float8 clamped to the finite range first
    uniform(low, high)             low + (high - low) * rand
    softmax_normal(scale=1)        softmax(scale * randn) over the last axis (probability rows)
    power_law_probs(low, high)     peaked next-token distributions: each row (all axes but the last)
                                   draws an exponent s = low + (high - low) * rand, a permutation of the
                                   last axis (randperm) and puts probability (rank + 1)^-s / sum on the
                                   token at each rank (Zipf; float64, then float32). With low=1.4,
                                   high=2.5 over 128256 tokens, top-p 0.9 keeps 3 to 156 tokens of a
                                   row, median 7 (1024 rows, measured by tests/benchmarks/
                                   measure_input_distributions.py; softmax_normal(3): 1633 to 7198).
                                   On an accelerator (the bench) each row's permutation is the argsort
                                   of uniform float64 draws, all rows at once.
    skewed_logits(alpha=1)         router logits of a trained router: a permutation of the last axis
                                   (the experts) shared by every row gives expert e at rank r(e) the
                                   bias -alpha * ln(r(e) + 1) (a few hot experts, a long cold tail),
                                   plus standard Gumbel noise per element (-ln(-ln(u)), u = rand
                                   clamped to [1e-20, 1)). Top-k of these logits picks experts as the
                                   workload generator's routed_counts(alpha) does (Gumbel top-k).
    fp8_blockwise(block, std=1)    float8 values as a block quantiser writes them: x = std * randn,
                                   for each block (block[i] elements along axis i; edge blocks may be
                                   partial) scale = max(amax|x|, 1e-10) / fp8_max, q = clamp(x / scale,
                                   -fp8_max, fp8_max) cast to the float8 type: every block spans the
                                   format's range (its largest value is +-fp8_max, 448 for e4m3).
    fp8_block_scale(of, order)     the scales of input `of` (an fp8_blockwise input): redraws that
                                   input's x with its generator seed and returns max(amax|x|, 1e-10) /
                                   fp8_max per block, so q * scale is x up to float8 rounding, as the
                                   engine's quantiser would store them. Axis i of this input is block
                                   axis order[i] of `of` (default: the same order; [1, 0] for a
                                   transposed [K blocks, M] layout).
    rope_cos_sin(theta, rope_type="default", factor=1, low_freq_factor=1, high_freq_factor=4,
                 original_max_position=8192, beta_fast=32, beta_slow=1, mscale=1, mscale_all_dim=0,
                 truncate=True)
                                   the cos/sin cache the engine builds from the rope configuration
                                   (not random; the seed is unused): row p is concat(cos(p * inv_freq),
                                   sin(p * inv_freq)) * attention_factor with rotary_dim = the last
                                   axis and inv_freq[i] = theta^(-2i / rotary_dim), rescaled by
                                   rope_type: "default" (none), "linear" (/ factor), "llama3"
                                   (factor, low_freq_factor, high_freq_factor, original_max_position as
                                   rope_scaling in config.json) or "yarn" (factor, original_max_position,
                                   beta_fast, beta_slow, mscale, mscale_all_dim, truncate); see
                                   rope_inv_freq. Computed in float64, then cast.
    randint(low=0, high)           integers in [low, high)
    bernoulli(p=0.5)               rand < p
  Defaults: float dtypes normal(0, 1); integer dtypes randint(0, 128); bool bernoulli(0.5); and, for
  names with a conventional meaning, `probs` power_law_probs(1.4, 2.5), names ending in `scale`
  uniform(1/128, 1/32), `top_p` uniform(0.5, 1), `top_k` randint(1, 65).
  Every random input has its own generator: torch.Generator().manual_seed(input_seed(seed, index,
  position)), `position` its place in the definition's inputs, `index` the input set (0 for the
  first; the bench draws further sets for timing). So one input can be regenerated without
  drawing the others. An fp8_block_scale input uses the generator (and seed) of its `of` input.

Using these from a definition (the recipe modules of generator/workloadgen give such inputs as
"random" in their workloads; the definition says how they are drawn), for example a Llama RoPE cache:

    "cos_sin_cache": {"shape": ["max_position", "head_dim"], "dtype": "float32",
                      "random": {"distribution": "rope_cos_sin", "theta": 500000.0, "rope_type": "llama3",
                                 "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position": 8192}}

a DeepSeek-V3 YaRN cache: {"distribution": "rope_cos_sin", "theta": 10000.0, "rope_type": "yarn",
"factor": 40.0, "original_max_position": 4096, "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0,
"mscale_all_dim": 1.0}; block-FP8 activations and their scales: "A": {"distribution": "fp8_blockwise",
"block": [1, 128]}, "A_scale": {"distribution": "fp8_block_scale", "of": "A"}.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any, Mapping, Optional, Union

try:
    import torch
except ModuleNotFoundError:  # input_recipes needs no torch: the export lists recipes without the bench extra
    torch = None

# Dataset dtype name -> torch dtype name (the dataset writes `float8_e4m3`, torch `float8_e4m3fn`).
# Spelled out here, not imported from generator/model/dtypes.py, so that this file works alone when a
# consumer copies it; tests/bench/test_inputs.py checks that both tables agree.
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
    "power_law_probs": {"low": None, "high": None},
    "skewed_logits": {"alpha": 1.0},
    "fp8_blockwise": {"block": None, "std": 1.0},
    "fp8_block_scale": {"of": None, "order": None},  # order default: the block axes in order
    "rope_cos_sin": {"theta": None, "rope_type": "default", "factor": 1.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position": 8192, "beta_fast": 32.0,
                     "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 0.0, "truncate": True},
    "randint": {"low": 0, "high": None},
    "bernoulli": {"p": 0.5},
}
OPTIONAL = {"fp8_block_scale": {"order"}}  # parameters that may stay unset (filled in when resolved)
ROPE_TYPES = ("default", "linear", "llama3", "yarn")
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
    if name == "probs":  # next-token probabilities, peaked as a served model's are
        return {"distribution": "power_law_probs", "low": 1.4, "high": 2.5}
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
    missing = sorted(p for p, v in params.items()
                     if v is None and p not in given and p not in OPTIONAL.get(kind, ()))
    if unknown or missing:
        raise ValueError(f"input '{name}': {kind} takes {', '.join(params)}"
                         + (f"; unknown {', '.join(unknown)}" if unknown else "")
                         + (f"; missing {', '.join(missing)}" if missing else ""))
    if kind == "rope_cos_sin" and given.get("rope_type", "default") not in ROPE_TYPES:
        raise ValueError(f"input '{name}': rope_type {given['rope_type']!r}; use one of {', '.join(ROPE_TYPES)}")
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
    specs = _as_dict(definition["inputs"])
    out = {}
    for position, (name, spec) in enumerate(specs.items()):
        given = dict(given_inputs[name])
        if given["type"] == "random":
            given = {"type": "random", **distribution_of(name, spec), "dtype": spec["dtype"],
                     "shape": list(shape_of(spec, axes)), "seed": input_seed(base, index, position)}
            if given["distribution"] == "fp8_block_scale":
                given.update(_scale_source(name, given, specs, axes, base, index))
        out[name] = given
    return out


def _scale_source(name: str, recipe: Mapping[str, Any], specs: Mapping[str, Any], axes: Mapping[str, int],
                  base: int, index: int) -> dict[str, Any]:
    """What an fp8_block_scale input needs of its `of` input: that input's seed, shape, dtype, block
    and std (so the scale recipe alone redraws the same x), and the axis order, checked against the
    scale's own shape."""
    of = recipe["of"]
    names = list(specs)
    if of not in specs:
        raise ValueError(f"input '{name}': fp8_block_scale of {of!r}, which is not an input ({', '.join(names)})")
    source = distribution_of(of, specs[of])
    if source["distribution"] != "fp8_blockwise":
        raise ValueError(f"input '{name}': fp8_block_scale of {of!r}, whose distribution is "
                         f"{source['distribution']}, not fp8_blockwise")
    data_shape = list(shape_of(specs[of], axes))
    block = [int(b) for b in source["block"]]
    if len(block) != len(data_shape):
        raise ValueError(f"input '{of}': block {block} has {len(block)} sizes for {len(data_shape)} axes")
    grid = [-(-d // b) for d, b in zip(data_shape, block)]
    order = list(range(len(grid))) if recipe.get("order") is None else [int(i) for i in recipe["order"]]
    if sorted(order) != list(range(len(grid))) or [grid[i] for i in order] != list(recipe["shape"]):
        raise ValueError(f"input '{name}': shape {list(recipe['shape'])} is not the block grid {grid} of "
                         f"'{of}' in order {order}")
    return {"seed": input_seed(base, index, names.index(of)), "of": of, "order": order, "block": block,
            "std": source["std"], "data_shape": data_shape, "data_dtype": specs[of]["dtype"]}


# Distributions drawn directly on an accelerator by draw(recipe, device) (the others are drawn on the
# CPU and copied): the bench's workers make every input set where it is used.
ON_DEVICE = ("normal", "uniform", "softmax_normal", "randint", "bernoulli", "power_law_probs")
SEEDLESS = ("rope_cos_sin",)  # a function of the recipe's parameters alone: the same values for every seed


def draw(recipe: Mapping[str, Any], device: str = "cpu") -> torch.Tensor:
    """The tensor of one resolved random recipe (see input_recipes), on `device`. On the CPU (the
    default) the values are the documented ones; on an accelerator the ON_DEVICE distributions use
    that device's generator, so the values differ from the CPU's but are the same for every process
    that draws the recipe on that kind of device (the bench's solution and reference workers)."""
    on_device = device != "cpu" and recipe["distribution"] in ON_DEVICE
    g = torch.Generator(device=device if on_device else "cpu").manual_seed(int(recipe["seed"]))
    where = {"device": device} if on_device else {}
    x = _draw(recipe, g, where)
    return x.to(device) if device != "cpu" else x


def _draw(recipe: Mapping[str, Any], g: "torch.Generator", where: dict) -> "torch.Tensor":
    shape, dtype, kind = tuple(recipe["shape"]), recipe["dtype"], recipe["distribution"]
    target = TORCH_DTYPES[dtype]
    if kind == "normal":  # in place: the bench draws a fresh set per call (same values as mean + std * randn)
        x = torch.randn(shape, generator=g, **where)
        if recipe["std"] != 1:
            x.mul_(recipe["std"])
        if recipe["mean"] != 0:
            x.add_(recipe["mean"])
        if dtype in FP8_MAX:
            x = x.clamp_(-FP8_MAX[dtype], FP8_MAX[dtype])
    elif kind == "uniform":
        x = recipe["low"] + (recipe["high"] - recipe["low"]) * torch.rand(shape, generator=g, **where)
    elif kind == "softmax_normal":
        x = torch.softmax(recipe["scale"] * torch.randn(shape, generator=g, **where), dim=-1)
    elif kind == "power_law_probs":
        x = _power_law_probs(g, shape, float(recipe["low"]), float(recipe["high"]), where)
    elif kind == "skewed_logits":
        x = _skewed_logits(g, shape, float(recipe["alpha"]))
    elif kind == "fp8_blockwise":
        x = _block_quantise(g, recipe)[0]
    elif kind == "fp8_block_scale":
        x = _block_quantise(g, {**recipe, "shape": recipe["data_shape"], "dtype": recipe["data_dtype"]}, False)[1]
        x = x.permute(*recipe["order"])
    elif kind == "rope_cos_sin":
        x = rope_cos_sin(shape[0], shape[-1], recipe)
    elif kind == "randint":
        x = torch.randint(int(recipe["low"]), int(recipe["high"]), shape, generator=g, **where)
    elif kind == "bernoulli":
        x = torch.rand(shape, generator=g, **where) < recipe["p"]
    else:
        raise ValueError(f"unknown distribution {kind!r}")
    return x.to(target)


def _power_law_probs(g: "torch.Generator", shape: tuple, low: float, high: float, where: dict) -> "torch.Tensor":
    rows, vocab = count_elements(shape[:-1]), shape[-1]
    exponents = low + (high - low) * torch.rand(rows, generator=g, dtype=torch.float64, **where)
    ranks = torch.arange(1, vocab + 1, dtype=torch.float64, **where)
    weights = torch.exp(-exponents[:, None] * torch.log(ranks)[None, :])  # [rows, vocab], by rank
    weights = weights / weights.sum(-1, keepdim=True)
    if where:  # on an accelerator (the bench draws a set per call): a uniform permutation per row, all rows at once
        order = torch.rand(rows, vocab, generator=g, dtype=torch.float64, **where).argsort(-1)
    else:
        order = torch.stack([torch.randperm(vocab, generator=g) for _ in range(rows)]) if rows else \
            torch.empty(0, vocab, dtype=torch.int64)
    probs = torch.empty_like(weights).scatter_(-1, order, weights)  # token order[r, i] has rank i
    return probs.reshape(shape)


def _skewed_logits(g: "torch.Generator", shape: tuple, alpha: float) -> "torch.Tensor":
    experts = shape[-1]
    order = torch.randperm(experts, generator=g)  # the same hot experts for every row
    bias = torch.empty(experts, dtype=torch.float64)
    bias[order] = -alpha * torch.log(torch.arange(1, experts + 1, dtype=torch.float64))
    u = torch.rand(shape, generator=g, dtype=torch.float64).clamp_(min=1e-20)
    return bias - torch.log(-torch.log(u))


def _block_quantise(g: "torch.Generator", recipe: Mapping[str, Any],
                    values: bool = True) -> tuple[Optional["torch.Tensor"], "torch.Tensor"]:
    """(q, scale grid) of an fp8_blockwise recipe: x = std * randn quantised per block as SGLang's
    per_token_group_quant_fp8 and the checkpoints' block weights are (scale = amax / fp8_max);
    q is None unless `values`. In place on x (an expert weight stack is ~10^9 elements)."""
    shape, block = tuple(recipe["shape"]), [int(b) for b in recipe["block"]]
    fp8_max = FP8_MAX[recipe["dtype"]]
    x = torch.randn(shape, generator=g).mul_(recipe["std"])
    grid = [-(-d // b) for d, b in zip(shape, block)]
    inside = tuple(slice(0, d) for d in shape)
    padded = [n * b for n, b in zip(grid, block)]
    work = x
    if padded != list(shape):  # partial edge blocks: zeros do not change a block's amax
        work = torch.zeros(padded)
        work[inside] = x
    blocks = work.view([s for n, b in zip(grid, block) for s in (n, b)])
    within = tuple(range(1, 2 * len(shape), 2))
    amax = torch.maximum(blocks.amax(dim=within), blocks.amin(dim=within).neg())  # [grid]
    scale = amax.clamp(min=1e-10) / fp8_max
    if not values:
        return None, scale
    blocks.div_(scale.reshape([s for n in grid for s in (n, 1)])).clamp_(-fp8_max, fp8_max)
    return work[inside], scale


def rope_inv_freq(rotary_dim: int, p: Mapping[str, Any]) -> "torch.Tensor":
    """inv_freq [rotary_dim / 2] (float64) of a rope_cos_sin recipe, as the engines compute it:
    "llama3" as vLLM's Llama3RotaryEmbedding / transformers' _compute_llama3_parameters, "yarn" as
    vLLM's YaRNScalingRotaryEmbedding / DeepseekScalingRotaryEmbedding and transformers'
    _compute_yarn_parameters (correction range from beta_fast/beta_slow, floored/ceiled when
    truncate, linear ramp between interpolated and extrapolated frequencies)."""
    theta, kind, factor = float(p["theta"]), p.get("rope_type", "default"), float(p.get("factor", 1.0))
    exponents = torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim
    inv_freq = 1.0 / theta ** exponents
    if kind == "default":
        return inv_freq
    if kind == "linear":
        return inv_freq / factor
    original = float(p["original_max_position"])
    if kind == "llama3":
        low_wavelen = original / float(p["low_freq_factor"])
        high_wavelen = original / float(p["high_freq_factor"])
        wavelen = 2 * math.pi / inv_freq
        smooth = (original / wavelen - float(p["low_freq_factor"])) / (
            float(p["high_freq_factor"]) - float(p["low_freq_factor"]))
        mid = (1 - smooth) * inv_freq / factor + smooth * inv_freq
        return torch.where(wavelen < high_wavelen, inv_freq, torch.where(wavelen > low_wavelen, inv_freq / factor, mid))
    if kind == "yarn":
        def correction_dim(rotations: float) -> float:
            return rotary_dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

        low, high = correction_dim(float(p["beta_fast"])), correction_dim(float(p["beta_slow"]))
        if p.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, rotary_dim - 1)
        if low == high:
            high += 0.001  # avoid a division by zero, as the engines do
        ramp = ((torch.arange(rotary_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
        extrapolation = 1 - ramp  # 1: keep the original frequency, 0: interpolate (divide by factor)
        return inv_freq / factor * (1 - extrapolation) + inv_freq * extrapolation
    raise ValueError(f"unknown rope_type {kind!r}; use one of {', '.join(ROPE_TYPES)}")


def rope_attention_factor(p: Mapping[str, Any]) -> float:
    """The factor YaRN multiplies cos and sin by: get_mscale(factor, mscale) / get_mscale(factor,
    mscale_all_dim) with get_mscale(s, m) = 0.1 * m * ln(s) + 1 for s > 1 (transformers and vLLM;
    DeepSeek-V3's mscale = mscale_all_dim = 1 gives 1, gpt-oss's plain YaRN 0.1 ln(32) + 1)."""
    if p.get("rope_type", "default") != "yarn":
        return 1.0
    factor = float(p["factor"])

    def get_mscale(m: float) -> float:
        return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0

    return get_mscale(float(p.get("mscale", 1.0))) / get_mscale(float(p.get("mscale_all_dim", 0.0)))


def rope_cos_sin(rows: int, rotary_dim: int, p: Mapping[str, Any]) -> "torch.Tensor":
    """The [rows, rotary_dim] cos/sin cache of a rope configuration (float64): row t is
    concat(cos(t * inv_freq), sin(t * inv_freq)) * attention factor (vLLM's _compute_cos_sin_cache)."""
    freqs = torch.arange(rows, dtype=torch.float64)[:, None] * rope_inv_freq(rotary_dim, p)[None, :]
    return torch.cat([freqs.cos(), freqs.sin()], dim=-1) * rope_attention_factor(p)


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
            if max_elements is not None and count_elements(recipe.get("data_shape") or recipe["shape"]) > max_elements:
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
    names = [row["name"] for row in rows]
    out = {}
    for position, row in enumerate(rows):
        recipe = {k: v for k, v in row.items() if v is not None and k != "name"}
        if recipe["type"] == "random":
            # An fp8_block_scale redraws its `of` input: that input's generator seed.
            source = names.index(recipe["of"]) if recipe.get("distribution") == "fp8_block_scale" else position
            recipe["seed"] = input_seed(base, index, source)
        elif recipe["type"] == "scalar" and isinstance(recipe.get("value"), str):
            recipe["value"] = json.loads(recipe["value"])
        out[row["name"]] = recipe
    return out


def count_elements(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _as_dict(value: Any) -> dict:
    """JSON columns read with pandas or pyarrow come as text; `datasets` gives dicts."""
    return json.loads(value) if isinstance(value, (str, bytes)) else dict(value)
