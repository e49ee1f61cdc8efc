"""Independent formulations for the Kimi-K2 definitions (TP16 on 2 x 8 H200, experts TP-sharded).
The FP8 GEMMs and the absorbed MLA decode reuse deepseek.py's checks (dequantise-then-matmul; dense
re-packing of the paged latent cache) at Kimi's shapes.

The router is checked one token at a time with sorted() (deepseek.route_token with one group and
routed_scaling_factor 2.827); the MoE pieces reuse the fused-MoE formulations of moe_pipeline.py at Kimi's
shapes: 384 local experts, moe_intermediate_size 2048 / 16 = 128.
"""

from __future__ import annotations

import torch

from .common import Case
from .deepseek import (
    _ABSORBS,
    _CONCATS,
    _LINEARS,
    _RAGGED,
    mla_decode_expected,
    mla_decode_inputs,
    mla_derived,
    qgemm_case,
    rope_ds_expected,
    rope_ds_inputs_with,
    route_token,
    yarn_cache,
)
from .moe_pipeline import align_case, gemm_case, quant_case, silu_case


def routing_inputs(ax, g, i):
    T, E = ax["num_tokens"], ax["num_experts"]
    logits = torch.randn(T, E, generator=g) * [1.0, 2.0, 1.0][i % 3]
    if i % 3 == 2:  # coarse logits and no bias: exact ties, the lower id must win
        return {"router_logits": torch.round(logits * 4) / 4, "e_score_correction_bias": torch.zeros(E)}
    return {"router_logits": logits, "e_score_correction_bias": torch.randn(E, generator=g) * [0.02, 0.1][i % 3]}


def routing_expected(ax, x):
    ids, weights = [], []
    for t in range(ax["num_tokens"]):
        i, w = route_token(x["router_logits"][t], x["e_score_correction_bias"], n_group=1, topk_group=1, scaling=2.827)
        ids.append(i)
        weights.append(w)
    return {"topk_ids": torch.tensor(ids, dtype=torch.int64), "topk_weights": torch.tensor(weights, dtype=torch.float64)}


def kimi_yarn_cache(rows):
    """Kimi-K2's YaRN: rope_theta 50000, factor 32, beta_fast = beta_slow = 1, original 4096, mscale ratio 1."""
    return yarn_cache(rows, theta=50000.0, factor=32.0, beta_fast=1.0, beta_slow=1.0, correction_range=(19, 20))


# K 7168 -> 256 for the w13 GEMM and N 7168 -> 384 for w2: 384 experts at real size hold 704 MB of FP8
# weights; several 128-blocks of every scale remain.
E384_W13_SMALLER = {"K": 256, "num_k_blocks": 2}
E384_W2_SMALLER = {"N": 384, "num_n_blocks": 3}

CASES = {
    "moe_routing_grouped_topk8_e384_ng1_kg1": Case([{"num_tokens": 1}, {"num_tokens": 5}, {"num_tokens": 16}],
                                                   routing_inputs, routing_expected),
    "moe_align_block_size_e384_topk8": align_case(1.0),
    "grouped_gemm_fp8_block128_sorted_e384_n256_k7168": gemm_case(False, 1.0, E384_W13_SMALLER),
    "grouped_gemm_fp8_block128_sorted_weighted_e384_n7168_k128": gemm_case(True, 1.0, E384_W2_SMALLER),
    "silu_and_mul_i128": silu_case(),
    **{f"quantize_fp8_per_token_group128_h{k}": quant_case() for k in (128, 512, 1152)},
    **{f"gemm_fp8_block128_n{n}_k{k}": qgemm_case(n)
       for n, k in ((768, 1536), (7168, 512), (1024, 512), (256, 7168), (7168, 128))},
    # DeepSeek-V3's absorbed-MLA check (dense re-packing of the paged cache, F.scaled_dot_product_attention)
    # at 4 heads per rank.
    "mla_paged_decode_h4_ckv512_kpe64_ps1": Case([{"_kv_lens": (7,)}, {"_kv_lens": (1, 13, 5)}, {"_kv_lens": (20, 2)}],
                                                 mla_decode_inputs, mla_decode_expected, derived=mla_derived),
    # DeepSeek-V3 TP16's checks of the same kernels at 8 heads, here at Kimi-K2's 4 (the checks read the head
    # count from the axes): absorption bmm's, concat_mla_k, the ragged MHA prefill, the bf16 router / lm_head.
    "batch_gemm_mla_absorb_q_h4_d128_c512": _ABSORBS["batch_gemm_mla_absorb_q_h8_d128_c512"],
    "batch_gemm_mla_absorb_v_h4_c512_d128": _ABSORBS["batch_gemm_mla_absorb_v_h8_c512_d128"],
    "concat_mla_k_h4_nope128_rope64": _CONCATS["concat_mla_k_h8_nope128_rope64"],
    "mla_ragged_prefill_causal_h4_qk192_vo128": _RAGGED["mla_ragged_prefill_causal_h8_qk192_vo128"],
    "gemm_n384_k7168": _LINEARS["gemm_n256_k7168"],
    "gemm_n10240_k7168": _LINEARS["gemm_n8080_k7168"],  # N shrunk to 520 (a 10240-row shard holds 147 MB)
    # Kimi's YaRN cache, the rotation checked as a complex multiplication (deepseek.rope_ds_expected).
    "rope_deepseek_yarn_h4_d64": Case([{"num_tokens": 1, "max_position": 5}, {"num_tokens": 6, "max_position": 4096},
                                       {"num_tokens": 9, "max_position": 131072}],
                                      rope_ds_inputs_with(kimi_yarn_cache), rope_ds_expected),
}
