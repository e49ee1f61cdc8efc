"""Independent formulations for the MiniMax-M2 definitions: its norms, its partial RoPE, its samplers, and the kernels
of its calling record (SGLang TP8/EP8, block-FP8 weights; see the second half).

The norms are Qwen3's at hidden_size 3072 (rms_norm_eps 1e-6 too: qwen.py's F.rms_norm checks) and the samplers
llama.py's statistical check. The RoPE rotates only the first rotary_dim = 64 of each head's 128 dims: checked
here as a complex multiplication of the rotary part in float64 with the real rope_theta 5e6 cache, the other 64
dims compared with the input, at the head counts of two tensor-parallel degrees (the heads are var axes).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import common_kernels, deepseek, kimi, llama, moe_pipeline, qwen
from .common import ROW_SETS, TOKEN_SETS, Case, rope_sets, shrunk
from .common_kernels import joint_inputs, joint_target, statistical_check
from .llama import GROUPS, REPS
from .qwen import fused_expected, fused_inputs, rmsnorm_expected, rmsnorm_inputs

ROPE_THETA = 5_000_000.0  # rope_theta of MiniMaxAI/MiniMax-M2
ROTARY_DIM = 64  # rotary_dim of MiniMaxAI/MiniMax-M2 (head_dim 128)


def minimax_cos_sin_cache(max_position, rotary_dim=ROTARY_DIM):
    """Row p = concat(cos(p * inv_freq), sin(p * inv_freq)), inv_freq over the rotary dims only, float32."""
    inv_freq = ROPE_THETA ** (-torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)
    angles = torch.outer(torch.arange(max_position, dtype=torch.float64), inv_freq)
    return torch.cat([angles.cos(), angles.sin()], dim=-1).float()


def rope_inputs(ax, g, i):
    T, P = ax["num_tokens"], ax["max_position"]
    positions = torch.randint(0, P, (T,), generator=g)
    positions[0] = P - 1  # the last row of the cache is read
    return {"q": torch.randn(T, ax["num_qo_heads"], ax["head_dim"], generator=g).bfloat16(),
            "k": torch.randn(T, ax["num_kv_heads"], ax["head_dim"], generator=g).bfloat16(),
            "cos_sin_cache": minimax_cos_sin_cache(P, ax["rotary_dim"]), "positions": positions}


def rope_expected(ax, x):
    R = ax["rotary_dim"]
    half = R // 2
    rows = x["cos_sin_cache"].double()[x["positions"]]  # [T, rotary_dim]
    rot = torch.complex(rows[:, :half], rows[:, half:]).unsqueeze(1)  # cos + i sin, [T, 1, half]

    def rotate(t):
        t = t.double()
        z = torch.complex(t[..., :half], t[..., half:R]) * rot
        return torch.cat([z.real, z.imag, t[..., R:]], dim=-1)  # the dims past rotary_dim unchanged

    return {"q_out": rotate(x["q"]), "k_out": rotate(x["k"])}


# Per-rank heads at TP4 (12 query, 2 KV), TP8 (6, 1) and TP1 (48, 8), with rope_sets' positions.
ROPE = [{**s, **heads} for s, heads in zip(rope_sets(196608), ({"num_qo_heads": 12, "num_kv_heads": 2},
                                                              {"num_qo_heads": 6, "num_kv_heads": 1},
                                                              {"num_qo_heads": 48, "num_kv_heads": 8}))]

CASES = {
    "rmsnorm_h3072_eps1e_6": Case(ROW_SETS, rmsnorm_inputs, rmsnorm_expected),
    "fused_add_rmsnorm_h3072_eps1e_6": Case(ROW_SETS, fused_inputs, fused_expected),
    "rope_with_cos_sin_cache_neox_style_d128_rd64": Case(ROPE, rope_inputs, rope_expected),
    **{f"{kind}_sampling_from_probs_v200064": llama.sampling_case(kind, llama.TINY_VOCAB)
       for kind in ("top_k", "top_p", "top_k_top_p")},
}


# --------------------------------------------------------------------------------------------------
# The kernels of the minimax-m2 calling record (SGLang TP8/EP8, block-FP8): the block-FP8 GEMMs, quantisers and
# fused-MoE pieces reuse deepseek.py's and moe_pipeline.py's checks at MiniMax-M2's shapes (N and K shrunk as
# theirs are); the routing is deepseek.route_token with one group and no scaling; the TP q/k norm is checked
# against F.rms_norm over the whole 48 x 128 (8 x 128) row that the 8 ranks' slices make up.
# --------------------------------------------------------------------------------------------------

TP = 8
QK_EPS = 1e-6  # rms_norm_eps of MiniMax-M2


def routing_expected_with(scaling):
    def expected(ax, x):
        ids, weights = [], []
        for t in range(ax["num_tokens"]):
            i, w = deepseek.route_token(x["router_logits"][t], x["e_score_correction_bias"], n_group=1, topk_group=1,
                                        scaling=scaling)
            ids.append(i)
            weights.append(w)
        return {"topk_ids": torch.tensor(ids, dtype=torch.int64), "topk_weights": torch.tensor(weights, dtype=torch.float64)}
    return expected


def routing_case(scaling=1.0):
    return Case([{"num_tokens": 1}, {"num_tokens": 5}, {"num_tokens": 16}], kimi.routing_inputs,
                routing_expected_with(scaling))


def fp32_gemm_inputs(ax, g, i):
    scale = [1.0, 10.0, 0.01][i % 3]
    return {"A": torch.randn(ax["M"], ax["K"], generator=g) * scale, "B": torch.randn(ax["N"], ax["K"], generator=g) / 64}


def fp32_gemm_expected(ax, x):
    return {"C": torch.einsum("mk,nk->mn", x["A"].double(), x["B"].double())}


def fp32_gemm_case():
    return Case([{"M": 1}, {"M": 3}, {"M": 9}], fp32_gemm_inputs, fp32_gemm_expected)


def cast_case():
    """A cast is exact: bfloat16 inputs over a wide range (subnormal to huge), compared with their float64 values."""
    def make(ax, g, i):
        x = torch.randn(ax["num_tokens"], ax["hidden_size"], generator=g) * [1.0, 1e30, 1e-38][i % 3]
        return {"input": x.bfloat16()}
    return Case(TOKEN_SETS, make, lambda ax, x: {"output": x["input"].double()})


def joint_case():
    return Case([shrunk({"batch_size": GROUPS * REPS}, vocab_size=llama.TINY_VOCAB)] * 3, joint_inputs,
                check=statistical_check(joint_target))


def _full_rows(ax, g, i):
    """The whole query and key rows of every token across the 8 ranks, the weights, and the rank whose slices the
    definitions see."""
    T, QD, KD = ax["num_tokens"], ax["q_dim"], ax["k_dim"]
    scale = [1.0, 30.0, 0.02][i % 3]
    q = (torch.randn(T, QD * TP, generator=g) * scale).bfloat16()
    k = (torch.randn(T, KD * TP, generator=g) * scale).bfloat16()
    k[:, KD * 3:KD * 4] *= 8  # one rank's key slice larger than the others: its local norm is not the global one
    q_w = (1.0 + 0.3 * torch.randn(QD * TP, generator=g)).bfloat16()
    k_w = (1.0 + 0.3 * torch.randn(KD * TP, generator=g)).bfloat16()
    return q, k, q_w, k_w, [0, 3, 7][i % 3]


def sumsq_inputs(ax, g, i):
    q, k, _, _, r = _full_rows(ax, g, i)
    return {"q": q[:, r * ax["q_dim"]:(r + 1) * ax["q_dim"]].contiguous(),
            "k": k[:, r * ax["k_dim"]:(r + 1) * ax["k_dim"]].contiguous()}


def sumsq_expected(ax, x):
    return {"sum_sq": torch.cat([torch.linalg.vector_norm(x["q"].double(), dim=-1) ** 2,
                                 torch.linalg.vector_norm(x["k"].double(), dim=-1) ** 2])}


def sumsq_allreduce_inputs(ax, g, i):
    return {"partials": torch.rand(ax["tp_size"], ax["num_values"], generator=g) * [1000.0, 1.0, 1e5][i % 3]}


def values_derived(ax):
    return {"num_values": 2 * ax["num_tokens"]}


def apply_inputs(ax, g, i):
    q, k, q_w, k_w, r = _full_rows(ax, g, i)
    QD, KD = ax["q_dim"], ax["k_dim"]
    sum_sq = torch.cat([q.float().pow(2).sum(-1), k.float().pow(2).sum(-1)])  # what the all-reduce delivers
    return {"q": q[:, r * QD:(r + 1) * QD].contiguous(), "k": k[:, r * KD:(r + 1) * KD].contiguous(),
            "q_weight": q_w[r * QD:(r + 1) * QD].contiguous(), "k_weight": k_w[r * KD:(r + 1) * KD].contiguous(),
            "sum_sq": sum_sq}


def apply_expected(ax, x):
    """F.rms_norm over a row as wide as the whole 48 x 128 (8 x 128) one: this rank's slice, then one element that
    carries the other ranks' share of the sum of squares (sqrt(S - own)), then zeros; the slice of the result."""
    out = {}
    sums = x["sum_sq"].double().view(2, -1)  # the q sums, then the k sums
    for name, w, row in (("q_out", "q_weight", 0), ("k_out", "k_weight", 1)):
        part = x[name[0]].double()
        T, D = part.shape
        rest = (sums[row] - (part * part).sum(-1)).clamp_min(0.0).sqrt()
        full = torch.zeros(T, D * TP, dtype=torch.float64)
        full[:, :D] = part
        full[:, D] = rest
        weight = torch.ones(D * TP, dtype=torch.float64)
        weight[:D] = x[w].double()
        out[name] = F.rms_norm(full, (D * TP,), weight, eps=QK_EPS)[:, :D]
    return out


APPEND_PS1 = [{"num_tokens": 1, "num_pages": 2}, {"num_tokens": 20, "num_pages": 25}, {"num_tokens": 40, "num_pages": 41}]
E32_W13_N3072_K3072 = {"N": 256, "K": 384, "num_n_blocks": 2, "num_k_blocks": 3}  # several 128-blocks of every scale
E32_W2_N3072_K1536 = {"N": 384, "K": 256, "num_n_blocks": 3, "num_k_blocks": 2}

CASES.update({
    **{f"quantize_fp8_per_token_group128_h{k}": moe_pipeline.quant_case() for k in (3072, 768)},
    "gemm_fp8_block128_n1024_k3072": deepseek.qgemm_case(1024),
    "gemm_fp8_block128_n3072_k768": deepseek.qgemm_case(3072),
    "grouped_gemm_fp8_block128_sorted_e32_n3072_k3072": moe_pipeline.gemm_case(False, moe_pipeline.EP8_LOCAL_SHARE,
                                                                               E32_W13_N3072_K3072),
    "grouped_gemm_fp8_block128_sorted_weighted_e32_n3072_k1536": moe_pipeline.gemm_case(
        True, moe_pipeline.EP8_LOCAL_SHARE, E32_W2_N3072_K1536),
    "silu_and_mul_i1536": moe_pipeline.silu_case(),
    "moe_sum_topk8_h3072": moe_pipeline.sum_case(),
    "moe_routing_grouped_topk8_e256_ng1_kg1": routing_case(1.0),
    "gemm_fp32_n256_k3072": fp32_gemm_case(),
    "cast_to_float32_h3072": cast_case(),
    "qk_rmsnorm_tp8_sumsq_q768_k128": Case(TOKEN_SETS, sumsq_inputs, sumsq_expected, derived=values_derived),
    "allreduce_tp8_f32_qk_sumsq": Case([{"num_values": 2}, {"num_values": 6}, {"num_values": 14}], sumsq_allreduce_inputs,
                                       lambda ax, x: {"output": x["partials"].double().sum(dim=0)}),
    "qk_rmsnorm_tp8_apply_q768_k128": Case(TOKEN_SETS, apply_inputs, apply_expected, derived=values_derived),
    "paged_kv_append_kv1_d128_ps1": Case(APPEND_PS1, common_kernels.append_inputs, common_kernels.append_expected),
    "allreduce_tp8_h3072": Case(common_kernels.ROWS, common_kernels.allreduce_inputs, common_kernels.allreduce_expected),
    "embedding_v25008_h3072": common_kernels.shard_case(8, torch.int64),
    "gemm_n25008_k3072": qwen.gemm_case(N=1000),  # N shrunk: every output column is the same dot product over K
    "allgather_tp8_v25008": common_kernels.allgather_case(8),
    "softmax_temperature_v200064": common_kernels.softmax_case(),
    "top_k_top_p_joint_sampling_from_probs_v200064": joint_case(),
})
