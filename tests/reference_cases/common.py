"""What every module of independent formulations shares: the Case record and input helpers."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import torch

LN2 = math.log(2.0)  # the attention kernels return their log-sum-exp in base 2
FAMILIES_DIR = Path(__file__).resolve().parents[2] / "dataset" / "families"


def families(pattern: str) -> list[dict]:
    """The definition families dataset/families/<pattern>.json (a glob), read with plain json, by file name: which
    siblings `kerneltrace definitions` renders, so that the modules give each one its check."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(FAMILIES_DIR.glob(f"{pattern}.json"))]


def fp8(values, scale=1.0):
    """float8_e4m3 tensor from float32 values times scale, clamped to +-448 (the e4m3fn range).

    In place on the float32 temporary: these tensors are large and fresh allocations are slow."""
    return values.mul_(scale).clamp_(-448.0, 448.0).to(torch.float8_e4m3fn)


def uniform(shape, low, high, g):
    return low + (high - low) * torch.rand(shape, generator=g)


def shrunk(sizes: dict, **consts) -> dict:
    """Var-axis sizes of one input set, with const axes of the definition made smaller for that set.

    For checks that are the same at any size of those axes (the reference and the independent
    formulation read them from the tensors' shapes, nothing is special about the real value), where the
    real size would only cost memory and time: a GEMM's correctness does not need 128256 output columns.
    Each use says why at its case; where size is the point, a set keeps the real size. The test asserts
    that a shrunk axis is smaller than the definition's and that the set still meets its constraints."""
    return {**sizes, **consts}


# The axis sets most cases use: a few rows or tokens, a small prime among them (no power-of-two luck).
ROW_SETS = [{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}]
TOKEN_SETS = [{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 7}]
# GQA attention (Llama-3.1-8B's sets, shared by the models with the same kernels at other head counts): paged decode
# at page size 16 and 1, causal paged prefill (page size 16) and ragged prefill; the last set of each full pages.
DECODE_PS16_SETS = [{"batch_size": 1, "num_kv_indices": 1, "num_pages": 2}, {"batch_size": 3, "num_kv_indices": 7, "num_pages": 12},
                    {"batch_size": 4, "num_kv_indices": 9, "num_pages": 9}]
DECODE_PS1_SETS = [{"batch_size": 1, "num_kv_indices": 1, "num_pages": 3}, {"batch_size": 3, "num_kv_indices": 40, "num_pages": 50},
                   {"batch_size": 5, "num_kv_indices": 97, "num_pages": 97}]
PAGED_PREFILL_SETS = [{"batch_size": 1, "num_kv_indices": 2, "num_pages": 3, "total_q": 5},
                      {"batch_size": 3, "num_kv_indices": 7, "num_pages": 12, "total_q": 20},
                      {"batch_size": 4, "num_kv_indices": 6, "num_pages": 6, "total_q": 30}]
RAGGED_SETS = [{"batch_size": 1, "total_q": 7, "total_kv": 7}, {"batch_size": 3, "total_q": 20, "total_kv": 33},
               {"batch_size": 4, "total_q": 37, "total_kv": 37}]


def rope_sets(max_position: int) -> list[dict]:
    """RoPE cases: positions near 0, a few hundred in, and up to `max_position` (the model's longest)."""
    return [{"num_tokens": 1, "max_position": 16}, {"num_tokens": 5, "max_position": 300},
            {"num_tokens": 9, "max_position": max_position}]


@dataclass
class Case:
    """How to check one definition: small var-axis sizes, an input maker and the independent result.

    sizes: var-axis values, one dict per input set (at least 3); a set may also shrink const axes
        (see shrunk).
    make_inputs: (axes, generator, set_index) -> {input name: value}, in the definition's input order.
    expected: (axes, inputs) -> {output name: float64 tensor}, computed *without* the reference.
    derived: axes -> {axis: value} for var axes that follow from others (e.g. H_qo = H_kv * H_r, or
        the length of an index tensor made by make_inputs); merged into the axes before make_inputs
        when it only needs the sizes, so make_inputs may also return them via `axes` mutation.
    check: for outputs that cannot be compared element-wise (sampling): (outputs_fn, axes, inputs,
        who) -> None, where outputs_fn() calls the code under test once more on the same inputs and
        returns its output dict; it asserts statistically. When set, `expected` is not used.
    """

    sizes: list
    make_inputs: Callable
    expected: Optional[Callable] = None
    derived: Optional[Callable] = None
    check: Optional[Callable] = None
    extra: dict = field(default_factory=dict)


# RoPE (NeoX, rotate-half) shared by the models: inputs with a model's real cos/sin cache, and the
# rotation checked independently as a complex multiplication in float64.
def rope_inputs_with(cos_sin_cache):
    """An input maker for a rope definition whose cache rows are cos_sin_cache(max_position, head_dim)."""
    def rope_inputs(ax, g, i):
        T, P = ax["num_tokens"], ax["max_position"]
        positions = torch.randint(0, P, (T,), generator=g)
        positions[0] = P - 1  # the last row of the cache is read
        return {"positions": positions,
                "q": torch.randn(T, ax["num_qo_heads"], ax["head_dim"], generator=g).bfloat16(),
                "k": torch.randn(T, ax["num_kv_heads"], ax["head_dim"], generator=g).bfloat16(),
                "cos_sin_cache": cos_sin_cache(P, ax["head_dim"])}
    return rope_inputs


def rope_expected(ax, x):
    half = ax["head_dim"] // 2
    rows = x["cos_sin_cache"].double()[x["positions"]]  # [T, head_dim]
    rot = torch.complex(rows[:, :half], rows[:, half:]).unsqueeze(1)  # cos + i sin, [T, 1, half]

    def rotate(t):
        t = t.double()
        z = torch.complex(t[..., :half], t[..., half:]) * rot
        return torch.cat([z.real, z.imag], dim=-1)

    return {"q_out": rotate(x["q"]), "k_out": rotate(x["k"])}


# --------------------------------------------------------------------------------------------------
# RMSNorm and fused add + RMSNorm, as several models' modules check them: rows at three scales (the third makes
# the model's eps a visible part of mean(x^2)), a weight around 1, float64 F.rms_norm.
# --------------------------------------------------------------------------------------------------

def rmsnorm_inputs_at(scales: tuple):
    def rmsnorm_inputs(ax, g, i):
        B, H = ax["batch_size"], ax["hidden_size"]
        scale = scales[i % 3]
        return {"hidden_states": (torch.randn(B, H, generator=g) * scale).bfloat16(),
                "weight": (1.0 + 0.5 * torch.randn(H, generator=g)).bfloat16()}
    return rmsnorm_inputs


def rmsnorm_expected_at(eps: float):
    import torch.nn.functional as F

    def rmsnorm_expected(ax, x):
        return {"output": F.rms_norm(x["hidden_states"].double(), (ax["hidden_size"],), x["weight"].double(), eps=eps)}
    return rmsnorm_expected


def fused_inputs_at(scales: tuple):
    def fused_inputs(ax, g, i):
        B, H = ax["batch_size"], ax["hidden_size"]
        scale = scales[i % 3]
        # The residual dominates the sum, so rounding the sum to bfloat16 before normalising matters.
        return {"hidden_states": (torch.randn(B, H, generator=g) * scale).bfloat16(),
                "residual": (torch.randn(B, H, generator=g) * scale * 8).bfloat16(),
                "weight": (1.0 + 0.5 * torch.randn(H, generator=g)).bfloat16()}
    return fused_inputs


def fused_expected_at(eps: float):
    import torch.nn.functional as F

    def fused_expected(ax, x):
        exact = x["hidden_states"].double() + x["residual"].double()
        rounded = exact.to(torch.bfloat16).double()  # the residual stream is stored in bfloat16
        return {"output": F.rms_norm(rounded, (ax["hidden_size"],), x["weight"].double(), eps=eps),
                "residual_out": exact}
    return fused_expected


def norm_checks(scales: tuple, eps: float) -> tuple:
    """A model's RMSNorm and fused add + RMSNorm checks at its eps, inputs drawn at these scales:
    (rmsnorm_inputs, rmsnorm_expected, fused_inputs, fused_expected)."""
    return rmsnorm_inputs_at(scales), rmsnorm_expected_at(eps), fused_inputs_at(scales), fused_expected_at(eps)
