"""Independent formulations for the Llama-4-Scout definitions of its calling record (SGLang TP8 on 8 H100,
bfloat16: meta-llama/Llama-4-Scout-17B-16E-Instruct config.json, text_config).

The GEMMs, norms, collectives, vocabulary shards and samplers reuse the other models' checks at Llama 4's shapes
(F.linear in float64, F.rms_norm, torch.sum over ranks, a zero table of the whole vocabulary, the statistical
sampler checks). Its own kernels are checked another way than their references: the RoPE cache from llama.py's
llama3 frequencies (factor 16, low = high frequency factor 1) and the rotation as a complex multiplication; the
temperature factor per token with Python's math in float64; the top-1 router with Python's max() and math.exp;
the expert GEMMs row by row with the expert found by searchsorted over m_indptr (the weighted one times each row's
weight in float64).
"""

from __future__ import annotations

import math

import torch

from . import common_kernels, llama, moe_pipeline, qwen
from .common import ROW_SETS, TOKEN_SETS, Case, rope_expected, rope_inputs_with, rope_sets, shrunk
from .minimax_m2 import joint_case

FLOOR_SCALE, ATTN_SCALE = 8192.0, 0.1  # floor_scale, attn_scale of Llama-4-Scout


def llama4_cos_sin_cache(max_position, head_dim=128):
    inv_freq = llama.llama3_inv_freq(head_dim, theta=500000.0, factor=16.0, low=1.0, high=1.0, original=8192)
    angles = torch.outer(torch.arange(max_position, dtype=torch.float64), inv_freq)
    return torch.cat([angles.cos(), angles.sin()], dim=-1).float()


def temperature_inputs(ax, g, i):
    T = ax["num_tokens"]
    edges = torch.tensor([0, 8190, 8191, 16382, 16383, 1048575, 3 * 8192 - 1], dtype=torch.int64)
    positions = torch.randint(0, 1 << 20, (T,), generator=g)
    positions[: min(T, len(edges))] = edges[(torch.arange(min(T, len(edges))) + i) % len(edges)]
    q = torch.randn(T, ax["num_qo_heads"], ax["head_dim"], generator=g) * [1.0, 20.0, 0.05][i % 3]
    return {"positions": positions, "q": q.bfloat16()}


def temperature_expected(ax, x):
    scale = [math.log(math.floor((p + 1) / FLOOR_SCALE) + 1) * ATTN_SCALE + 1 for p in x["positions"].tolist()]
    return {"q_out": x["q"].double() * torch.tensor(scale, dtype=torch.float64)[:, None, None]}


def top1_inputs(ax, g, i):
    T, E = ax["num_tokens"], ax["num_experts"]
    logits = torch.randn(T, E, generator=g) * [1.0, 4.0, 1.0][i % 3]
    if i % 3 == 2:  # coarse logits: ties for the maximum, the lower id must win
        logits = torch.round(logits * 2) / 2
        logits[0, 3] = logits[0, 11] = logits[0].max() + 0.5
    return {"router_logits": logits.bfloat16()}


def top1_expected(ax, x):
    ids, weights = [], []
    for row in x["router_logits"].double().tolist():
        best = max(row)
        e = row.index(best)  # the first maximum: the lower id on ties
        ids.append([e])
        weights.append([1.0 / (1.0 + math.exp(-best))])
    return {"topk_weights": torch.tensor(weights, dtype=torch.float64), "topk_ids": torch.tensor(ids, dtype=torch.int64)}


# Expert GEMMs over rows sorted by expert: one pick per token (top 1), skewed segments, expert 0 and 15 used.
def grouped_derived(ax):
    return {"total_tokens": ax["tokens"], "len_m_indptr": ax["num_experts"] + 1}


def grouped_inputs_with(weighted):
    def make(ax, g, i):
        E, N, K, T = ax["num_experts"], ax["N"], ax["K"], ax["total_tokens"]
        counts = qwen.route_counts(ax["tokens"], E, 1, g)
        m_indptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)]).int()
        B = torch.full((E, N, K), 0.75, dtype=torch.bfloat16)  # unused experts' weights: a constant
        for e in counts.nonzero().flatten().tolist():
            B[e].normal_(0.0, 1.0 / 16, generator=g)
        x = {"A": torch.randn(T, K, generator=g).bfloat16(), "B": B}
        if weighted:
            x["row_weight"] = torch.rand(T, generator=g).bfloat16()
        x["m_indptr"] = m_indptr
        return x
    return make


def grouped_expected_with(weighted):
    def expected(ax, x):
        out = qwen.grouped_expected(ax, x)["C"]
        if weighted:
            out = out * x["row_weight"].double()[:, None]
        return {"C": out}
    return expected


def grouped_case(weighted, n):
    # N shrunk (each output column is the same dot product over the real K); the 16 experts real.
    sizes = [shrunk({"tokens": t}, N=n) for t in (2, 5, 17)]
    return Case(sizes, grouped_inputs_with(weighted), grouped_expected_with(weighted), derived=grouped_derived)


CASES = {
    **{name: qwen.gemm_case() for name in ("gemm_n896_k5120", "gemm_n5120_k640", "gemm_n16_k5120", "gemm_n5120_k1024")},
    "gemm_n2048_k5120": qwen.gemm_case(N=640),  # N shrunk: the same dot product over the real K per column
    "gemm_n25256_k5120": qwen.gemm_case(N=1000),
    "silu_and_mul_i1024": moe_pipeline.silu_case(),
    "rmsnorm_h5120_eps1e_5": Case(ROW_SETS, llama.rmsnorm_inputs, llama.rmsnorm_expected),
    "fused_add_rmsnorm_h5120_eps1e_5": Case(ROW_SETS, llama.fused_inputs, llama.fused_expected),
    "rmsnorm_h128": Case([{"batch_size": 6}, {"batch_size": 18}, {"batch_size": 48}], llama.rmsnorm_inputs,
                         llama.rmsnorm_expected),
    # Per-rank heads are constants: 5 query and 1 key head; positions up to the cache's last row.
    "rope_llama4_h5_kv1_d128": Case(rope_sets(40000), rope_inputs_with(llama4_cos_sin_cache), rope_expected),
    "llama4_attn_temperature_h5_d128": Case([{"num_tokens": 1}, {"num_tokens": 7}, {"num_tokens": 12}],
                                            temperature_inputs, temperature_expected),
    "moe_routing_top1_sigmoid_e16": Case(TOKEN_SETS, top1_inputs, top1_expected),
    "moe_align_block_size_e16_topk1": moe_pipeline.align_case(1.0),
    "grouped_gemm_weighted_e16_n2048_k5120": grouped_case(True, 96),
    "grouped_gemm_e16_n5120_k1024": grouped_case(False, 96),
    "allreduce_tp8_h5120": Case(common_kernels.ROWS, common_kernels.allreduce_inputs, common_kernels.allreduce_expected),
    "embedding_v25256_h5120": common_kernels.shard_case(8, torch.int64),
    "allgather_tp8_v25256": common_kernels.allgather_case(8),
    "softmax_temperature_v202048": common_kernels.softmax_case(),
    "top_k_top_p_joint_sampling_from_probs_v202048": joint_case(),
}
