"""Independent formulations for the Llama-3.2-3B definitions (TP1, bfloat16).

The kernels are Llama-3.1-8B's at other shapes (rms_norm_eps 1e-5, SwiGLU, plain GEMMs, 24 query heads over 8 KV
heads), so the float64 checks are llama.py's: F.rms_norm, F.silu, F.linear, and attention on a dense re-packing of
the paged cache (and of the ragged rows). RoPE is checked as a complex multiplication with the real llama3 cache of
this model's rope_scaling: factor 32 where Llama-3.1-8B has 8 (meta-llama/Llama-3.2-3B config.json).
"""

from __future__ import annotations

import torch

from .common import (
    ROW_SETS,
    TOKEN_SETS,
    Case,
    rope_expected,
    rope_inputs_with,
    rope_sets,
)
from .llama import (
    fused_expected,
    fused_inputs,
    gemm_case,
    gqa_cases,
    llama3_inv_freq,
    rmsnorm_expected,
    rmsnorm_inputs,
    silu_expected,
    silu_inputs,
)


def llama32_cos_sin_cache(max_position, head_dim=128):
    angles = torch.outer(torch.arange(max_position, dtype=torch.float64), llama3_inv_freq(head_dim, factor=32.0))
    return torch.cat([angles.cos(), angles.sin()], dim=-1).float()


ROWS, TOKENS, ROPE = ROW_SETS, TOKEN_SETS, rope_sets(40000)  # 40000: positions past 8192 * 4, where factor 32 bites

CASES = {
    "rmsnorm_h3072": Case(ROWS, rmsnorm_inputs, rmsnorm_expected),
    "fused_add_rmsnorm_h3072": Case(ROWS, fused_inputs, fused_expected),
    "silu_and_mul_i8192": Case(TOKENS, silu_inputs, silu_expected),
    "rope_llama3_h24_kv8_d128": Case(ROPE, rope_inputs_with(llama32_cos_sin_cache), rope_expected),
    # K (the accumulation depth the tolerances are about) stays real; wide N shrinks to 256 columns (every column is the same dot product over K).
    "gemm_n5120_k3072": gemm_case(N=256),
    "gemm_n3072_k3072": gemm_case(N=256),
    "gemm_n16384_k3072": gemm_case(N=256),
    "gemm_n3072_k8192": gemm_case(N=256),
    "gemm_n128256_k3072": gemm_case(N=256),
    **gqa_cases("h24_kv8_d128"),
}
