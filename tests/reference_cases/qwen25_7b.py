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
                    rope_sets,
)
from .llama import (
                    gqa_cases,
)
from .qwen import (
                    gemm_case,
                    layer_cases,
)

ROPE = rope_sets(40960)

CASES = {
    **layer_cases("h3584", 18944, "h28_kv4_d128", ROPE),
    # K (the accumulation depth the tolerances are about) stays real; wide N shrinks to 256 columns (every column is the same dot product over K).
    "gemm_bias_n4608_k3584": gpt_oss.gemm_case(True, N=256),
    "gemm_n3584_k3584": gemm_case(N=256),
    "gemm_n37888_k3584": gemm_case(N=256),
    "gemm_n3584_k18944": gemm_case(N=256),
    "gemm_n152064_k3584": gemm_case(N=256),
    **gqa_cases("h28_kv4_d128"),
    "top_k_top_p_sampling_from_probs_v152064": llama.sampling_case("top_k_top_p"),
    "top_k_sampling_from_probs_v152064": llama.sampling_case("top_k", llama.TINY_VOCAB),
    "top_p_sampling_from_probs_v152064": llama.sampling_case("top_p", llama.TINY_VOCAB),
}
