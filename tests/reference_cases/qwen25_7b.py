"""Independent formulations for the Qwen2.5-7B definitions (TP1, bfloat16).

Qwen2.5-7B is a Llama-style dense model with Qwen's constants (rms_norm_eps 1e-6, rope_theta 1e6 with no scaling)
and a bias on qkv_proj, so the float64 checks are qwen.py's for the norms, SwiGLU, GEMMs and RoPE (F.rms_norm,
F.silu, F.linear, complex multiplication with the real rope_theta 1e6 cache), gpt_oss.py's F.linear with bias for
the qkv projection, llama.py's attention on a dense re-packing of the paged cache (28 query heads over 4 KV heads,
group size 7) and its statistical sampler checks at a shrunk vocabulary.
"""

from __future__ import annotations

from . import gpt_oss, llama
from .common import (
                    DECODE_PS1_SETS,
                    DECODE_PS16_SETS,
                    PAGED_PREFILL_SETS,
                    RAGGED_SETS,
                    ROW_SETS,
                    TOKEN_SETS,
                    Case,
                    rope_expected,
                    rope_sets,
)
from .llama import (
                    decode_derived,
                    decode_expected,
                    decode_inputs,
                    paged_prefill_expected,
                    paged_prefill_inputs,
                    prefill_derived,
                    ragged_expected,
                    ragged_inputs,
)
from .qwen import (
                    fused_expected,
                    fused_inputs,
                    gemm_case,
                    rmsnorm_expected,
                    rmsnorm_inputs,
                    rope_inputs,
                    silu_expected,
                    silu_inputs,
)

ROWS, TOKENS, ROPE = ROW_SETS, TOKEN_SETS, rope_sets(40960)

CASES = {
    "rmsnorm_h3584": Case(ROWS, rmsnorm_inputs, rmsnorm_expected),
    "fused_add_rmsnorm_h3584": Case(ROWS, fused_inputs, fused_expected),
    "silu_and_mul_i18944": Case(TOKENS, silu_inputs, silu_expected),
    "rope_neox_h28_kv4_d128": Case(ROPE, rope_inputs, rope_expected),
    # K (the accumulation depth the tolerances are about) stays real; wide N shrinks to 256 columns (every column is the same dot product over K).
    "gemm_bias_n4608_k3584": gpt_oss.gemm_case(True, N=256),
    "gemm_n3584_k3584": gemm_case(N=256),
    "gemm_n37888_k3584": gemm_case(N=256),
    "gemm_n3584_k18944": gemm_case(N=256),
    "gemm_n152064_k3584": gemm_case(N=256),
    "gqa_paged_decode_h28_kv4_d128_ps1": Case(
        DECODE_PS1_SETS, decode_inputs, decode_expected, derived=decode_derived),
    "gqa_paged_decode_h28_kv4_d128_ps16": Case(
        DECODE_PS16_SETS, decode_inputs, decode_expected, derived=decode_derived),
    "gqa_paged_prefill_causal_h28_kv4_d128_ps16": Case(
        PAGED_PREFILL_SETS,
        paged_prefill_inputs, paged_prefill_expected, derived=prefill_derived),
    "gqa_ragged_prefill_causal_h28_kv4_d128": Case(
        RAGGED_SETS,
        ragged_inputs, ragged_expected, derived=prefill_derived),
    "top_k_top_p_sampling_from_probs_v152064": llama.sampling_case("top_k_top_p"),
    "top_k_sampling_from_probs_v152064": llama.sampling_case("top_k", llama.TINY_VOCAB),
    "top_p_sampling_from_probs_v152064": llama.sampling_case("top_p", llama.TINY_VOCAB),
}
