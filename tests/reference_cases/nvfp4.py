"""NVFP4 on Blackwell: the activation quantiser and the FP4 x FP4 GEMM of ModelOpt NVFP4 checkpoints.

Each kernel is a family in dataset/families/ (one reference, einsum cascade and baseline per kernel, the
constants per model and layer; `kerneltrace definitions` renders them); the table below names the shapes the
checks run at. The mathematics is checked on every
definition against an independent formulation (CASES, collected by tests/test_references.py) at small sizes:

- quantiser: the scale arithmetic in numpy float32 step by step, the e4m3 rounding of the block scale by
  exhaustive nearest search over the 127 finite positive e4m3 values (ties to the even code), the e2m1 code by
  exhaustive nearest search over the 8 magnitudes (ties to the even code), the packing by integer
  arithmetic and the 128x4 swizzle by the CUDA offset formula (get_sf_out_offset_128x4), element by element;
- GEMM: the codes decoded through a 16-entry lookup table in float64, the scales gathered through the same
  offset formula, the product in float64.

The sets include exact ties of the e2m1 grid (global scale 1 and block maxima of 6 * 2**e, so the block scale
and its reciprocal are exact), a saturated block scale, an all-zero block and negative values that round to
zero, two 128-row tiles of the swizzled scales, and a calibrated (non power of two) global scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .common import Case, shrunk

# --------------------------------------------------------------------------------------------------
# The table: which model runs which shape.
# --------------------------------------------------------------------------------------------------

L8 = ("Llama-3.1-8B-Instruct at TP1", "nvidia/Llama-3.1-8B-Instruct-FP4", "meta-llama/Llama-3.1-8B-Instruct config.json",
      "model-alt:llama-3.1-8b", 1)
L70 = ("Llama-3.3-70B-Instruct at TP4", "nvidia/Llama-3.3-70B-Instruct-FP4",
       "meta-llama/Llama-3.3-70B-Instruct config.json", "model-alt:llama-3.3-70b-tp4", 4)


@dataclass(frozen=True)
class Gemm:
    model: tuple
    layer: str  # which projection, with the config fields
    n: int
    k: int


@dataclass(frozen=True)
class Quant:
    k: int
    uses: tuple  # (model, what the quantised rows feed) pairs


GEMMS = [
    Gemm(L8, "qkv_proj: N = (num_attention_heads 32 + 2 x num_key_value_heads 8) x head_dim 128, K = hidden_size",
         6144, 4096),
    Gemm(L8, "o_proj: N = hidden_size 4096, K = 32 heads x 128", 4096, 4096),
    Gemm(L8, "gate_up_proj: N = 2 x intermediate_size 14336 (gate rows, then up), K = hidden_size", 28672, 4096),
    Gemm(L8, "down_proj: N = hidden_size, K = intermediate_size 14336", 4096, 14336),
    Gemm(L70, "qkv_proj shard: N = (64 + 2 x 8) heads x 128 / 4, K = hidden_size 8192", 2560, 8192),
    Gemm(L70, "o_proj shard: N = hidden_size 8192, K = 64 heads x 128 / 4", 8192, 2048),
    Gemm(L70, "gate_up_proj shard: N = 2 x intermediate_size 28672 / 4, K = hidden_size 8192", 14336, 8192),
    Gemm(L70, "down_proj shard: N = hidden_size 8192, K = intermediate_size 28672 / 4", 8192, 7168),
]
QUANTS = [
    Quant(4096, ((L8, "qkv_proj, o_proj and gate_up_proj"),)),
    Quant(14336, ((L8, "down_proj"),)),
    Quant(8192, ((L70, "qkv_proj and gate_up_proj"),)),
    Quant(2048, ((L70, "o_proj"),)),
    Quant(7168, ((L70, "down_proj"),)),
]


def gemm_name(g: Gemm) -> str:
    return f"gemm_nvfp4_n{g.n}_k{g.k}"


def quant_name(q: Quant) -> str:
    return f"quantize_nvfp4_h{q.k}"


# --------------------------------------------------------------------------------------------------
# The shared text.
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------
# References (one per kernel; plain step-by-step torch).
# --------------------------------------------------------------------------------------------------


# The reference's NVFP4 decoding, shared word for word by every reference that reads NVFP4 operands (fp4_moe.py).


# --------------------------------------------------------------------------------------------------
# Rendering.
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------
# Independent formulations.
# --------------------------------------------------------------------------------------------------

def _e4m3_positive() -> np.ndarray:
    """The 126 finite positive float8_e4m3fn values and 0, from the bit fields (bias 7, no inf, 0x7F is NaN)."""
    vals = []
    for byte in range(0x7F):
        e, mant = byte >> 3, byte & 7
        vals.append(mant / 8 * 2.0 ** -6 if e == 0 else (1 + mant / 8) * 2.0 ** (e - 7))
    return np.array(vals)


E4M3 = _e4m3_positive()  # index = the byte
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])  # index = the magnitude code
LUT16 = np.concatenate([E2M1, -E2M1])


def nearest_even(values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Index of the grid value nearest to each value (>= 0), by exhaustive search over the grid: ties to the
    even index, saturating at the top."""
    d = np.abs(grid[None, :] - values.reshape(-1, 1).astype(np.float64))
    cand = d == d.min(axis=1, keepdims=True)
    even = cand & (np.arange(len(grid)) % 2 == 0)[None, :]
    pick = np.where(cand.sum(axis=1) > 1, even.argmax(axis=1), cand.argmax(axis=1))
    return np.where(values.reshape(-1) >= grid[-1], len(grid) - 1, pick).reshape(values.shape)


def sf_offset(r, c, cols: int):
    """get_sf_out_offset_128x4: byte offset of the scale of row r, scale column c (cols per row)."""
    k_tiles = (cols + 3) // 4
    return ((r // 128) * k_tiles * 512 + (c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4)


def quant_expected(ax, inputs):
    x = inputs["input"].to(torch.float32).numpy()
    f32 = np.float32
    g = f32(float(inputs["global_scale"]))
    M, K = x.shape
    C = K // 16
    blocks = x.reshape(M, C, 16)
    sixth, inv_g = f32(1) / f32(6), f32(1) / g
    sf = (g * (np.abs(blocks).max(axis=-1).astype(f32) * sixth).astype(f32)).astype(f32)  # [M, C]
    sf_val = np.where(sf > 448, f32(448), E4M3[nearest_even(np.minimum(sf, f32(448)), E4M3)]).astype(f32)
    with np.errstate(divide="ignore"):
        enc = np.where(sf_val != 0, f32(1) / (sf_val * inv_g).astype(f32), f32(0)).astype(f32)
    v = (blocks * enc[:, :, None]).astype(f32).reshape(M, K)
    codes = nearest_even(np.abs(v), E2M1) + 8 * np.signbit(v)
    packed = codes[:, 0::2] + 16 * codes[:, 1::2]
    scale_flat = np.zeros(ax["M_padded"] * C, dtype=np.float64)
    rows, cols = np.meshgrid(np.arange(M), np.arange(C), indexing="ij")
    scale_flat[sf_offset(rows, cols, C)] = sf_val  # the CUDA offset formula, element by element
    return {"quantized": torch.from_numpy(packed.astype(np.int64)),
            "scale": torch.from_numpy(scale_flat.reshape(ax["M_padded"], C))}


def gemm_expected(ax, inputs):
    A, B = inputs["A"].numpy().astype(np.int64), inputs["B"].numpy().astype(np.int64)
    sa = inputs["A_scale"].to(torch.float64).numpy().reshape(-1)
    sb = inputs["B_scale"].to(torch.float64).numpy().reshape(-1)
    C = ax["K_sf"]

    def dequant(packed, flat):
        rows, kp = packed.shape
        vals = np.empty((rows, 2 * kp))
        vals[:, 0::2], vals[:, 1::2] = LUT16[packed & 15], LUT16[packed >> 4]
        r, k = np.meshgrid(np.arange(rows), np.arange(2 * kp), indexing="ij")
        idx = sf_offset(r, k // 16, C)
        return vals * flat[idx]

    out = dequant(A, sa) @ dequant(B, sb).T * float(inputs["alpha"])
    return {"C": torch.from_numpy(out)}


def _m_padded(ax):
    return {"M_padded": (ax["M"] + 127) // 128 * 128}


def _bf16(t):
    return t.to(torch.bfloat16)


def quant_inputs(ax, g, i):
    M, K = ax["M"], ax["K"]
    if i == 0:
        # Exact ties: global scale 1, every block's largest magnitude 6 * 2**e (block scale 2**e, exact), the
        # other values drawn from the midpoints and grid values times 2**e with random signs; one block all
        # zero, one of small negative values that round to -0.
        grid = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.5, 1.0, 3.0, 0.1, 5.5])
        pick = grid[torch.randint(0, len(grid), (M, K // 16, 16), generator=g)]
        pick[:, :, 0] = 6.0
        sign = torch.where(torch.rand(M, K // 16, 16, generator=g) < 0.5, -1.0, 1.0)
        exp = torch.randint(-4, 4, (M, K // 16, 1), generator=g).to(torch.float32)
        x = (pick * sign * torch.pow(2.0, exp)).view(M, K)
        x[0, :16] = 0.0
        x[-1, 16:32] = -0.01
        x[-1, 16] = -6.0
        return {"input": _bf16(x), "global_scale": 1.0}
    x = torch.randn(M, K, generator=g) * 3.0
    if i == 1:  # a calibrated global scale (448 * 6 / an amax of 11.2 = 240), a block far above it (saturates)
        x[1, :16] *= 1000.0
        return {"input": _bf16(x), "global_scale": 240.0}
    return {"input": _bf16(x), "global_scale": 2688.0 / 7.3}


def gemm_inputs(ax, g, i):
    M, N, KP, C = ax["M"], ax["N"], ax["K_packed"], ax["K_sf"]
    codes = lambda r: torch.randint(0, 256, (r, KP), generator=g, dtype=torch.int32).to(torch.uint8)  # noqa: E731
    scales = lambda r: (torch.rand(r, C, generator=g) * 440 + 8).to(torch.float8_e4m3fn)  # noqa: E731
    return {"A": codes(M), "A_scale": scales(ax["M_padded"]), "B": codes(N), "B_scale": scales(N),
            "alpha": [1.0 / 240.0, 1.0 / (240.0 * 5376.0), 0.5][i]}


# The quantiser's sets: K shrunk to 64 or 128 (the per-block mathematics is the same at any K; K / 16 stays a
# multiple of 4, and 128 gives two 4-column scale tiles); M up to 130 for two 128-row tiles of the scales.
QUANT_SETS = [shrunk({"M": 3}, K=128, K_packed=64, K_sf=8), shrunk({"M": 130}, K=64, K_packed=32, K_sf=4),
              shrunk({"M": 5}, K=128, K_packed=64, K_sf=8)]
# The GEMM's sets: N shrunk to 128 or 256, K to 64 or 128 (any size checks the same block arithmetic).
GEMM_SETS = [shrunk({"M": 1}, N=128, K=64, K_packed=32, K_sf=4), shrunk({"M": 130}, N=256, K=128, K_packed=64, K_sf=8),
             shrunk({"M": 7}, N=128, K=128, K_packed=64, K_sf=8)]

CASES = {quant_name(q): Case(QUANT_SETS, quant_inputs, quant_expected, derived=_m_padded) for q in QUANTS}
CASES.update({gemm_name(gm): Case(GEMM_SETS, gemm_inputs, gemm_expected, derived=_m_padded) for gm in GEMMS})


