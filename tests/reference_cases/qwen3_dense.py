"""Independent formulations for the dense Qwen3 definitions: Qwen3-8B at TP1 and Qwen3-32B at TP4 (bfloat16).

Their kernels are Qwen3-30B-A3B's at other shapes (rms_norm_eps 1e-6, rope_theta 1e6 with no scaling, SwiGLU,
plain GEMMs) and Llama-3.3-70B's TP4 collectives and vocabulary shard at other widths, so the float64 checks are
qwen.py's and common_kernels.py's: F.rms_norm, F.silu, complex-multiplication RoPE with the real rope_theta 1e6
cache, F.linear, a sum over the ranks, and F.embedding over the whole table with the other shards' rows zeroed.
"""

from __future__ import annotations

from .common import TOKEN_SETS, Case, rope_sets
from .common_kernels import allreduce_expected, allreduce_inputs, shard_case
from .qwen import (
                    gemm_case,
                    layer_cases,
)

TOKENS, ROPE = TOKEN_SETS, rope_sets(40960)

CASES = {
    # Qwen3-8B, TP1
    **layer_cases("h4096_eps1e_6", 12288, "h32_kv8_d128", ROPE),
    # K (the accumulation depth the tolerances are about) stays real; wide N shrinks to 256 columns (every column is the same dot product over K).
    "gemm_n24576_k4096": gemm_case(N=256),
    "gemm_n4096_k12288": gemm_case(N=256),
    "gemm_n151936_k4096": gemm_case(N=256),
    # Qwen3-32B, TP4 (one rank's shards)
    **layer_cases("h5120", 6400, "h16_kv2_d128", ROPE),
    "gemm_n2560_k5120": gemm_case(N=256),
    "gemm_n12800_k5120": gemm_case(N=256),
    "gemm_n5120_k6400": gemm_case(N=256),
    "gemm_n37984_k5120": gemm_case(N=256),
    "allreduce_tp4_h5120": Case(TOKENS, allreduce_inputs, allreduce_expected),
    "embedding_v37984_h5120": shard_case(4),
}
