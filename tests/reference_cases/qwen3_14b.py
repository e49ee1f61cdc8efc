"""Independent formulations for the Qwen3-14B definitions (TP1, bfloat16).

Qwen3-14B's kernels are Qwen3-30B-A3B's and Qwen3-8B's at other shapes (SwiGLU, plain GEMMs, rope_theta 1e6 with no
scaling), with 40 query heads over 8 KV heads (group size 5), so the float64 checks are qwen.py's (F.silu, F.linear,
complex-multiplication RoPE with the real cache) and llama.py's attention on a dense re-packing of the paged cache.
"""

from __future__ import annotations

from .common import Case, rope_expected
from .llama import (
                    gqa_cases,
)
from .qwen import gemm_case, rope_inputs, silu_expected, silu_inputs

CASES = {
    "silu_and_mul_i17408": Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 7}], silu_inputs, silu_expected),
    "rope_neox_h40_kv8_d128": Case([{"num_tokens": 1, "max_position": 16}, {"num_tokens": 5, "max_position": 300},
                                    {"num_tokens": 9, "max_position": 40960}], rope_inputs, rope_expected),
    # K (the accumulation depth the tolerances are about) stays real; wide N shrinks to 256 columns (every column is the same dot product over K).
    "gemm_n7168_k5120": gemm_case(N=256),
    "gemm_n5120_k5120": gemm_case(N=256),
    "gemm_n34816_k5120": gemm_case(N=256),
    "gemm_n5120_k17408": gemm_case(N=256),
    "gemm_n151936_k5120": gemm_case(N=256),
    **gqa_cases("h40_kv8_d128", ("decode_ps16", "prefill")),
}
