"""Independent formulations for the Llama-3.3-70B definitions at TP4 and TP8 (bfloat16).

The kernels are Llama-3.1-8B's at other shapes (per-rank shards of the same layers, rms_norm_eps 1e-5, the
same llama3 rope scaling), so the float64 checks are llama.py's: F.rms_norm, F.silu, complex-multiplication
RoPE with the real llama3 cache, F.linear, and F.scaled_dot_product_attention on a dense re-packing of
the paged cache, here with 16 or 8 query heads over 2 or 1 KV heads.
"""

from __future__ import annotations

from .common import ROW_SETS, TOKEN_SETS, Case, rope_expected, rope_sets
from .llama import (
                    fused_expected,
                    fused_inputs,
                    gemm_case,
                    gqa_cases,
                    rmsnorm_expected,
                    rmsnorm_inputs,
                    rope_inputs,
                    silu_expected,
                    silu_inputs,
)

ROWS, TOKENS, ROPE = ROW_SETS, TOKEN_SETS, rope_sets(9000)

CASES = {
    "rmsnorm_h8192": Case(ROWS, rmsnorm_inputs, rmsnorm_expected),
    "fused_add_rmsnorm_h8192": Case(ROWS, fused_inputs, fused_expected),
    "silu_and_mul_i7168": Case(TOKENS, silu_inputs, silu_expected),
    "silu_and_mul_i3584": Case(TOKENS, silu_inputs, silu_expected),
    "rope_llama3_h16_kv2_d128": Case(ROPE, rope_inputs, rope_expected),
    "rope_llama3_h8_kv1_d128": Case(ROPE, rope_inputs, rope_expected),
    # K (the accumulation depth the tolerances are about) stays real; wide N shrinks to 1000 columns.
    "gemm_n2560_k8192": gemm_case(N=1000),
    "gemm_n8192_k2048": gemm_case(N=1000),
    "gemm_n14336_k8192": gemm_case(N=1000),
    "gemm_n8192_k7168": gemm_case(N=1000),
    "gemm_n32064_k8192": gemm_case(N=1000),
    "gemm_n1280_k8192": gemm_case(N=1000),
    "gemm_n8192_k1024": gemm_case(N=1000),
    "gemm_n7168_k8192": gemm_case(N=1000),
    "gemm_n8192_k3584": gemm_case(N=1000),
    "gemm_n16032_k8192": gemm_case(N=1000),
    # The unsharded (TP1) layer: the same check, K real (28672 for down_proj).
    "gemm_n10240_k8192": gemm_case(N=1000),
    "gemm_n8192_k8192": gemm_case(N=1000),
    "gemm_n57344_k8192": gemm_case(N=1000),
    "gemm_n8192_k28672": gemm_case(N=1000),
    **gqa_cases("h16_kv2_d128", ("decode_ps16", "prefill")),
}
