"""NVFP4 on Blackwell: the activation quantiser and the FP4 x FP4 GEMM of ModelOpt NVFP4 checkpoints.

Both kernels are rendered from the table below (one reference, einsum cascade and baseline per kernel, the
constants per model and layer), like variants.py: `cd tests && python -m reference_cases.nvfp4` writes the
files, tests/test_nvfp4.py proves the committed files are this rendering. The mathematics is checked on every
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

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .common import Case, shrunk, write_files

DATASET = Path(__file__).resolve().parents[2] / "dataset"

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

FORMAT = (
    "NVFP4 (NVIDIA ModelOpt quant_algo NVFP4, group_size 16; the checkpoints' hf_quant_config.json): every value "
    "is an e2m1 code (4 bits: sign bit 3, exponent bits 2..1 with bias 1, mantissa bit 0, so the 16 codes are "
    "+-{0, 0.5, 1, 1.5, 2, 3, 4, 6}), two per byte, element 2i in the LOW nibble and 2i + 1 in the high nibble "
    "(PTX cvt.rn.satfinite.e2m1x2.f32 puts its second operand in the low nibble, and the kernels pass the even "
    "element there); each block of 16 consecutive values along K has a float8_e4m3 block scale, and the tensor a "
    "float32 global scale: real value = code value x block scale / global scale.")
SWIZZLE = (
    "Block scales are in the 128x4 swizzled layout that vLLM passes to the GEMM (scaled_fp4_quant(x, "
    "layer.input_scale_inv, is_sf_swizzled_layout=True) for the activations, swizzle_blockscale() once at load "
    "time for the weights; FlashInfer's fp4_quantize(..., is_sf_swizzled_layout=True) / nvfp4_quantize with "
    "SfLayout.layout_128x4 write the same bytes): the [rows, K / 16] scale matrix, rows padded to a multiple of "
    "128 with zeros, is stored as tiles of 128 rows x 4 scale columns, tile (mt, kt) at ((mt x K / 64) + kt) x "
    "512 bytes, and within a tile the scale of row r, column c at (r % 32) x 16 + ((r % 128) // 32) x 4 + c % 4 "
    "(get_sf_out_offset_128x4 in FlashInfer's csrc/nv_internal/tensorrt_llm/kernels/quantization_utils.cuh). "
    "The dataset holds it as a [rows_padded, K / 16] float8_e4m3 tensor in memory order, the shape vLLM "
    "allocates.")


def model_uses(model: tuple) -> str:
    label, checkpoint, config, _, _ = model
    return (f"{checkpoint} (the ModelOpt NVFP4 release of {label.split(' at ')[0]}: every Linear layer but lm_head "
            f"in NVFP4, weights and activations; {config} for the shapes), served on B200 (sm100) at "
            f"TP{model[4]} by vLLM (ModelOptNvFp4LinearMethod, --quantization modelopt_fp4)")


# --------------------------------------------------------------------------------------------------
# References (one per kernel; plain step-by-step torch).
# --------------------------------------------------------------------------------------------------

QUANT_REFERENCE = '''import torch


def run(input, global_scale):
    M, K = input.shape
    block = 16  # NVFP4: one float8_e4m3 scale per 16 values along K
    C = K // block
    M_padded = (M + 127) // 128 * 128  # the swizzled scales come in tiles of 128 rows
    g = torch.as_tensor(global_scale, dtype=torch.float32, device=input.device)
    x = input.to(torch.float32).view(M, C, block)

    # Block scale, the kernel's float32 steps: SF = g * (vec_max * (1/6)), 6 = the largest e2m1 value.
    vec_max = x.abs().amax(dim=-1)  # [M, C], exact
    sixth = torch.tensor(1.0 / 6.0, dtype=torch.float32, device=input.device)  # 1/6 rounded to float32
    sf = g * (vec_max * sixth)
    sf = sf.clamp(max=448.0)  # satfinite: the largest finite float8_e4m3fn
    sf_e4m3 = sf.to(torch.float8_e4m3fn)  # round to nearest even
    sf_value = sf_e4m3.to(torch.float32)

    # Encode scale: 1 / (SF * (1 / g)), 0 where SF rounded to 0 (an all-zero block).
    inv_g = 1.0 / g
    out_scale = torch.where(sf_value != 0, 1.0 / (sf_value * inv_g), torch.zeros_like(sf_value))
    v = x * out_scale[:, :, None]  # [M, C, 16] float32

    # e2m1 code, round to nearest with ties to the even code, saturating at 6:
    # grid 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0..7); the midpoints 0.25, 1.25, 2.5, 5 round down (to 0, 1, 2, 4:
    # even codes 0, 2, 4, 6), the midpoints 0.75, 1.75, 3.5 round up (to 1, 2, 4: codes 2, 4, 6).
    a = v.abs()
    magnitude = ((a > 0.25).to(torch.int32) + (a >= 0.75).to(torch.int32) + (a > 1.25).to(torch.int32)
                 + (a >= 1.75).to(torch.int32) + (a > 2.5).to(torch.int32) + (a >= 3.5).to(torch.int32)
                 + (a > 5.0).to(torch.int32))
    sign = torch.signbit(v).to(torch.int32)  # a negative value that rounds to 0 keeps its sign (code 8)
    codes = (sign * 8 + magnitude).view(M, K)

    # Two codes per byte: element 2i in the low nibble, 2i + 1 in the high nibble.
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).to(torch.uint8)  # [M, K / 2]

    # Scales into the 128x4 swizzled layout, padding rows zero:
    # [M_padded / 128, 4, 32, C / 4, 4] (row = mt * 128 + i * 32 + o, column = kt * 4 + j) stored as [mt, kt, o, i, j].
    linear = torch.zeros(M_padded, C, dtype=torch.float32, device=input.device)
    linear[:M] = sf_value
    tiles = linear.view(M_padded // 128, 4, 32, C // 4, 4).permute(0, 3, 2, 1, 4)
    scale = tiles.reshape(M_padded, C).to(torch.float8_e4m3fn)  # exact: the values are float8_e4m3 already
    return {"quantized": packed, "scale": scale}
'''

# The reference's NVFP4 decoding, shared word for word by every reference that reads NVFP4 operands (fp4_moe.py).
DECODE_SOURCE = '''def decode_e2m1(packed):
    """[rows, K / 2] uint8 -> [rows, K] float32 code values (element 2i in the low nibble)."""
    rows = packed.shape[0]
    codes = torch.stack([packed & 0x0F, packed >> 4], dim=-1).reshape(rows, -1).to(torch.int32)
    sign = 1.0 - 2.0 * ((codes >> 3) & 1).to(torch.float32)  # bit 3
    exponent = ((codes >> 1) & 3).to(torch.float32)  # bits 2..1, bias 1
    mantissa = (codes & 1).to(torch.float32)  # bit 0
    normal = torch.pow(2.0, exponent - 1.0) * (1.0 + 0.5 * mantissa)
    subnormal = 0.5 * mantissa  # exponent field 0: 0 or 0.5
    return sign * torch.where(exponent > 0, normal, subnormal)


def unswizzle(scale, rows):
    """[rows_padded, C] float8_e4m3 in the 128x4 layout (memory order [mt, kt, o, i, j] for row mt * 128 +
    i * 32 + o, column kt * 4 + j) -> [rows, C] float32 in row-major order."""
    rows_padded, C = scale.shape
    tiles = scale.to(torch.float32).view(rows_padded // 128, C // 4, 32, 4, 4)  # [mt, kt, o, i, j]
    return tiles.permute(0, 3, 2, 1, 4).reshape(rows_padded, C)[:rows]  # [mt, i, o, kt, j]


'''

GEMM_REFERENCE = '''import torch


''' + DECODE_SOURCE + '''def run(A, A_scale, B, B_scale, alpha):
    M = A.shape[0]
    N = B.shape[0]
    block = 16
    a = decode_e2m1(A)  # [M, K]
    b = decode_e2m1(B)  # [N, K]
    # Block scales, one per 16 values along K; code value x e4m3 scale is exact in float32.
    a = a * unswizzle(A_scale, M).repeat_interleave(block, dim=1)
    b = b * unswizzle(B_scale, N).repeat_interleave(block, dim=1)
    acc = a @ b.T  # [M, N], float32 accumulation
    C = acc * torch.as_tensor(alpha, dtype=torch.float32, device=A.device)  # 1 / (a_global * b_global)
    return {"C": C.to(torch.bfloat16)}
'''

QUANT_BASELINE = '''import torch

MIDPOINTS = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])


def run(input, global_scale):
    m, k = input.shape
    c = k // 16
    g = torch.as_tensor(global_scale, dtype=torch.float32, device=input.device)
    x = input.float().view(m, c, 16)
    sf = (g * (x.abs().amax(-1) * torch.tensor(1.0 / 6.0))).clamp(max=448.0).to(torch.float8_e4m3fn).float()
    enc = torch.where(sf != 0, 1.0 / (sf * (1.0 / g)), torch.zeros_like(sf))
    v = (x * enc[..., None]).view(m, k)
    a = v.abs()
    mid = MIDPOINTS.to(v.device)
    # bucketize: ties at a midpoint go to the lower bucket (right=False) for odd midpoint indices' even codes.
    idx = torch.bucketize(a, mid, right=False)
    tie = (a[..., None] == mid).any(-1)
    up = torch.bucketize(a, mid, right=True)
    idx = torch.where(tie & (up % 2 == 0), up, idx)
    codes = (idx + 8 * torch.signbit(v).to(idx.dtype)).to(torch.uint8)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    mp = (m + 127) // 128 * 128
    lin = torch.zeros(mp, c, device=input.device)
    lin[:m] = sf
    scale = lin.view(mp // 128, 4, 32, c // 4, 4).permute(0, 3, 2, 1, 4).reshape(mp, c)
    return {"quantized": packed, "scale": scale.to(torch.float8_e4m3fn)}
'''

GEMM_BASELINE = '''import torch
import torch.nn.functional as F

LUT = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def dequant(packed, scale):
    rows = packed.shape[0]
    lut = LUT.to(packed.device)
    vals = torch.stack([lut[(packed & 15).long()], lut[(packed >> 4).long()]], -1).reshape(rows, -1)
    rp, c = scale.shape
    s = scale.float().view(rp // 128, c // 4, 32, 4, 4).permute(0, 3, 2, 1, 4).reshape(rp, c)[:rows]
    return vals * s.repeat_interleave(16, dim=1)


def run(A, A_scale, B, B_scale, alpha):
    # Dequantise both operands to float32 through a lookup table, then one F.linear and alpha.
    out = F.linear(dequant(A, A_scale), dequant(B, B_scale)) * float(alpha)
    return {"C": out.to(torch.bfloat16)}
'''

QUANT_EINSUM = '''# NVFP4 activation quantisation: per row and 16-value block the largest magnitude (a reduction), the e4m3
# block scale (written out in the 128x4 swizzled layout, padding rows included), then each value times the
# encode scale rounded to an e2m1 code, two per byte (4 bits per value written: quantized[m, k // 2]).
workload:
  rank_sizes:
    M: {{ M }}
    MP: {{ M_padded }}
    K: {{ K }}
    KP: {{ K_packed }}
    S: {{ K_sf }}
  iteration_space_shape:
    bi: 0 <= bi < 16
  einsums:
  - name: BlockAbsMax
    tensor_accesses:
    - {name: input, projection: {M: m, K: s * 16 + bi}}
    - {name: vec_max, projection: [m, s], output: true}
  - name: BlockScale
    tensor_accesses:
    - {name: vec_max, projection: [m, s]}
    - {name: global_scale, projection: []}
    - {name: scale, projection: {MP: m, S: s}, output: true}
  - name: Quantize
    tensor_accesses:
    - {name: input, projection: [m, k]}
    - {name: vec_max, projection: {M: m, S: k // 16}}
    - {name: global_scale, projection: []}
    - {name: quantized, projection: {M: m, KP: k // 2}, output: true}
  bits_per_value: {Intermediates: 32}
'''

GEMM_EINSUM = '''# NVFP4 GEMM on Blackwell: C = alpha * (A * A_scale) @ (B * B_scale).T. The block-scaled MMA (tcgen05
# kind::mxf4nvf4) reads the e2m1 codes and their e4m3 block scales as they are: the decode of A and B is a
# view (a copy, free), and the product runs at the FP4 tensor-core rate (the decoded operands are 4-bit
# values). Bytes: A and B 4 bits per value (K / 2 bytes a row), one scale byte per 16 values.
# Left out: the final rounding to bfloat16.
workload:
  rank_sizes:
    M: {{ M }}
    MP: {{ M_padded }}
    N: {{ N }}
    K: {{ K }}
    KP: {{ K_packed }}
    S: {{ K_sf }}
  einsums:
  - name: ViewA
    is_copy_operation: true
    tensor_accesses:
    - {name: A, projection: {M: m, KP: k // 2}}
    - {name: A_scale, projection: {MP: m, S: k // 16}}
    - {name: a, projection: [m, k], output: true}
  - name: ViewB
    is_copy_operation: true
    tensor_accesses:
    - {name: B, projection: {N: n, KP: k // 2}}
    - {name: B_scale, projection: {N: n, S: k // 16}}
    - {name: b, projection: [n, k], output: true}
  - name: Matmul
    tensor_accesses:
    - {name: a, projection: [m, k]}
    - {name: b, projection: [n, k]}
    - {name: acc, projection: [m, n], output: true}
  - name: Alpha
    tensor_accesses:
    - {name: acc, projection: [m, n]}
    - {name: alpha, projection: []}
    - {name: C, projection: [m, n], output: true}
  bits_per_value: {Intermediates: 32, a: 4, b: 4}
'''


# --------------------------------------------------------------------------------------------------
# Rendering.
# --------------------------------------------------------------------------------------------------

NUMERICS_QUANT = (
    "The kernel (vLLM's scaled_fp4_quant, csrc/quantization/fp4/nvfp4_quant_kernels.cu; FlashInfer's "
    "fp4_quantize, cvt_warp_fp16_to_fp4 in quantization_utils.cuh, the same recipe), per row and block of 16: "
    "vec_max = max |x| (exact); SF = global_scale x (vec_max x 1/6) in float32, converted to float8_e4m3 with "
    "round-to-nearest-even and saturation at 448 (__nv_fp8_e4m3(SF)); the encode scale = 1 / (float(SF) x (1 / "
    "global_scale)), 0 where SF is 0; each value x encode scale (float32) is rounded to the e2m1 grid by "
    "cvt.rn.satfinite.e2m1x2.f32: nearest value, ties to the even code (0.25 -> 0, 0.75 -> 1, 1.25 -> 1, "
    "1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4), magnitudes above 6 saturate to 6, and a negative value keeps its "
    "sign bit even when it rounds to 0 (code 8). The global scale is the checkpoint's static per-tensor "
    "1 / input_scale (input_scale = calibrated amax / (448 x 6)), the same for every call.\n\nNumerics: the "
    "reference computes the reciprocals 1/6, 1 / global_scale and 1 / (SF / global_scale) correctly rounded in "
    "float32; the kernel uses rcp.approx.ftz.f32 (at most 1 ulp off), so a product that lands within an ulp "
    "of an e2m1 midpoint may round to the neighbouring code there. The quantized bytes are compared exactly and "
    "the scales as float8_e4m3 values.")

NUMERICS_GEMM = (
    "Numerics: every code value x e4m3 scale is exact in float32; the block-scaled products are accumulated "
    "over K in float32, multiplied by alpha once and rounded to bfloat16 once (the CUTLASS / TRT-LLM epilogue). "
    "alpha = 1 / (a_global x b_global) = input_scale x weight_scale_2 of the checkpoint (vLLM's layer.alpha).")


def _json(d: dict) -> str:
    return json.dumps(d, indent=2, ensure_ascii=False) + "\n"


def quant_definition(q: Quant) -> dict:
    uses = "; ".join(f"{model_uses(m)}: the input of {what} (K = {q.k})" for m, what in q.uses)
    tags = ["status:draft", *sorted({m[3] for m, _ in q.uses}), "stage:decode", "stage:prefill",
            *sorted({f"tp:{m[4]}" for m, _ in q.uses}), "quantization:nvfp4", "gpu:sm100"]
    desc = (f"NVFP4 quantisation of bfloat16 activations before an FP4 GEMM on Blackwell: {uses}. vLLM's "
            f"apply_nvfp4_linear quantises the layer input with scaled_fp4_quant (or FlashInfer's fp4_quantize "
            f"on its FlashInfer backends), then calls the FP4 GEMM (gemm_nvfp4_n*_k{q.k} of this dataset takes "
            f"exactly these outputs as A and A_scale).\n\n{FORMAT}\n\n{SWIZZLE}\n\n{NUMERICS_QUANT}")
    return {
        "name": quant_name(q),
        "description": desc,
        "type": "quantize",
        "tags": tags,
        "axes": {
            "M": {"type": "var", "description": "Tokens in the step (rows)."},
            "M_padded": {"type": "var", "description": "M rounded up to a multiple of 128: rows of the swizzled scales."},
            "K": {"type": "const", "value": q.k, "description": f"Channels per row (K of the GEMM that follows): {q.k}."},
            "K_packed": {"type": "const", "value": q.k // 2, "description": "K / 2: bytes per row, two e2m1 codes a byte."},
            "K_sf": {"type": "const", "value": q.k // 16, "description": "K / 16: block scales per row (a multiple of 4)."},
        },
        "constraints": ["M_padded == (M + 127) // 128 * 128", "K_packed * 2 == K", "K_sf * 16 == K", "K_sf % 4 == 0"],
        "inputs": {
            "input": {"shape": ["M", "K"], "dtype": "bfloat16", "description": "Activations (the layer input)."},
            "global_scale": {"shape": [], "dtype": "float32",
                             "description": "Per-tensor global encode scale: 1 / input_scale of the checkpoint "
                                            "(448 x 6 / calibrated amax)."},
        },
        "outputs": {
            "quantized": {"shape": ["M", "K_packed"], "dtype": "uint8",
                          "description": "Packed e2m1 codes, element 2i in the low nibble."},
            "scale": {"shape": ["M_padded", "K_sf"], "dtype": "float8_e4m3",
                      "description": "Block scales (e4m3) in the 128x4 swizzled layout; padding rows are 0."},
        },
        "reference": QUANT_REFERENCE,
    }


def gemm_definition(g: Gemm) -> dict:
    m = g.model
    tags = ["status:draft", m[3], "stage:decode", "stage:prefill", f"tp:{m[4]}", "quantization:nvfp4", "gpu:sm100"]
    desc = (f"NVFP4 GEMM on Blackwell, both operands FP4: C = alpha x dequant(A) @ dequant(B).T with bfloat16 "
            f"output, the {g.layer} of {model_uses(m)}. vLLM's apply_nvfp4_linear quantises the input "
            f"(quantize_nvfp4_h{g.k} of this dataset: A and A_scale are its outputs) and calls "
            f"flashinfer_scaled_fp4_mm(x_fp4, weight, x_blockscale, weight_scale, alpha) (FlashInfer's mm_fp4 "
            f"with the cutlass or trtllm backend; cutlass_scaled_fp4_mm with its own CUTLASS build: the same "
            f"computation), where\n\n    dequant(A)[m, k] = e2m1(A)[m, k] x A_scale[m, k // 16]\n    "
            f"dequant(B)[n, k] = e2m1(B)[n, k] x B_scale[n, k // 16]\n\nand alpha = 1 / (a_global x b_global). "
            f"The weight is the checkpoint's [out_features, in_features / 2] uint8 with its weight_scale swizzled "
            f"once at load time.\n\n{FORMAT}\n\n{SWIZZLE}\n\n{NUMERICS_GEMM} M is the number of tokens in the step.")
    rand_codes = {"distribution": "randint", "low": 0, "high": 256}
    # Block scales of real data span the e4m3 range below 448 (the global scales put the largest block at 448).
    rand_scale = {"distribution": "uniform", "low": 8.0, "high": 448.0}
    return {
        "name": gemm_name(g),
        "description": desc,
        "type": "gemm",
        "tags": tags,
        "axes": {
            "M": {"type": "var", "description": "Tokens in the step: the decode batch size or the prefill chunk length."},
            "M_padded": {"type": "var", "description": "M rounded up to a multiple of 128: rows of A_scale."},
            "N": {"type": "const", "value": g.n, "description": "Output features (see the description)."},
            "K": {"type": "const", "value": g.k, "description": "Input features (reduction dimension)."},
            "K_packed": {"type": "const", "value": g.k // 2, "description": "K / 2: bytes per row of A and B."},
            "K_sf": {"type": "const", "value": g.k // 16, "description": "K / 16: block scales per row."},
        },
        "constraints": ["M_padded == (M + 127) // 128 * 128", "K_packed * 2 == K", "K_sf * 16 == K", "K_sf % 4 == 0",
                        "N % 128 == 0"],
        "inputs": {
            "A": {"shape": ["M", "K_packed"], "dtype": "uint8",
                  "description": "Activations, packed e2m1 codes (quantize_nvfp4's quantized).", "random": rand_codes},
            "A_scale": {"shape": ["M_padded", "K_sf"], "dtype": "float8_e4m3",
                        "description": "Activation block scales, 128x4 swizzled (quantize_nvfp4's scale).",
                        "random": rand_scale},
            "B": {"shape": ["N", "K_packed"], "dtype": "uint8",
                  "description": "Weight, packed e2m1 codes, [out_features, in_features / 2].", "random": rand_codes},
            "B_scale": {"shape": ["N", "K_sf"], "dtype": "float8_e4m3",
                        "description": "Weight block scales (weight_scale), 128x4 swizzled.", "random": rand_scale},
            "alpha": {"shape": [], "dtype": "float32",
                      "description": "1 / (a_global x b_global): input_scale x weight_scale_2."},
        },
        "outputs": {"C": {"shape": ["M", "N"], "dtype": "bfloat16", "description": "alpha x the product, bfloat16."}},
        "reference": GEMM_REFERENCE,
    }


def baseline(name: str, kind: str, content: str, description: str) -> dict:
    return {
        "name": f"{name}_torch",
        "definition": name,
        "author": "baseline",
        "description": description,
        "spec": {"language": "python", "target_hardware": ["cpu", "B200"], "entry_point": "main.py::run",
                 "destination_passing_style": False, "dependencies": ["torch"]},
        "sources": [{"path": "main.py", "content": content}],
    }


def rendered() -> dict:
    """name -> (kind, definition dict)."""
    out = {quant_name(q): ("quantize", quant_definition(q)) for q in QUANTS}
    out.update({gemm_name(g): ("gemm", gemm_definition(g)) for g in GEMMS})
    return out


def files() -> dict:
    """Path under dataset/ -> text, for every file of the family."""
    out = {}
    for name, (kind, d) in rendered().items():
        out[f"definitions/{kind}/{name}.json"] = _json(d)
        out[f"einsums/{kind}/{name}.yaml"] = QUANT_EINSUM if kind == "quantize" else GEMM_EINSUM
        if kind == "quantize":
            sol = baseline(name, kind, QUANT_BASELINE, "Vectorised: block amax, e4m3 scale, torch.bucketize on the "
                           "e2m1 midpoints with ties to the even code, packing and the 128x4 swizzle as a permute.")
        else:
            sol = baseline(name, kind, GEMM_BASELINE, "Both operands dequantised to float32 through a 16-entry "
                           "lookup table and the unswizzled block scales, then one torch.nn.functional.linear.")
        out[f"solutions/baseline/{kind}/{name}/{name}_torch.json"] = _json(sol)
    return out


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


if __name__ == "__main__":  # cd tests && python -m reference_cases.nvfp4
    for path in write_files(files(), DATASET):
        print(f"wrote {path.relative_to(DATASET.parent)}")
