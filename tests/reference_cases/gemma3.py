"""Independent formulations for the Gemma-3-27B definitions (TP2, bfloat16).

float64, library calls the references may not use: F.rms_norm with a weight of 1 + w, F.gelu(approximate="tanh"),
F.scaled_dot_product_attention with a dense causal / sliding-window mask over a re-packing of the paged cache,
RoPE as a complex multiplication with a cos/sin cache built here from the rope configuration (linear scaling as
positions / factor), the embedding as F.embedding over the shard.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import Case, rope_expected, rope_inputs_with, shrunk
from .llama import gather_sequence, gemm_case, indptr_of, kv_lengths, page_table, split_queries

EPS = 1e-6  # rms_norm_eps of Gemma 3
SM_SCALE = 168 ** -0.5  # query_pre_attn_scalar ** -0.5
WINDOW = 1024  # sliding_window


# --------------------------------------------------------------------------------------------------
# Gemma RMSNorm (1 + w).
# --------------------------------------------------------------------------------------------------

def gemma_weight(n, g):
    return (0.5 * torch.randn(n, generator=g)).bfloat16()  # stored w around 0: the scale 1 + w around 1


def norm_inputs(ax, g, i):
    scale = [1.0, 20.0, 0.001][i % 3]  # 0.001: eps = 1e-6 is a visible part of mean(x^2)
    return {"hidden_states": (torch.randn(ax["batch_size"], ax["hidden_size"], generator=g) * scale).bfloat16(),
            "weight": gemma_weight(ax["hidden_size"], g)}


def norm_expected(ax, x):
    H = ax["hidden_size"]
    return {"output": F.rms_norm(x["hidden_states"].double(), (H,), 1.0 + x["weight"].double(), eps=EPS)}


def fused_inputs(ax, g, i):
    scale = [1.0, 20.0, 0.001][i % 3]
    B, H = ax["batch_size"], ax["hidden_size"]
    return {"hidden_states": (torch.randn(B, H, generator=g) * scale).bfloat16(),
            "residual": (torch.randn(B, H, generator=g) * scale * 8).bfloat16(),
            "weight": gemma_weight(H, g)}


def fused_expected(ax, x):
    exact = x["hidden_states"].double() + x["residual"].double()
    rounded = exact.to(torch.bfloat16).double()  # the residual stream is stored in bfloat16
    return {"output": F.rms_norm(rounded, (ax["hidden_size"],), 1.0 + x["weight"].double(), eps=EPS),
            "residual_out": exact}


def qk_inputs(ax, g, i):
    scale = [1.0, 10.0, 0.001][i % 3]
    return {"input": (torch.randn(ax["num_tokens"], ax["num_heads"], ax["head_dim"], generator=g) * scale).bfloat16(),
            "weight": gemma_weight(ax["head_dim"], g)}


def qk_expected(ax, x):
    return {"output": F.rms_norm(x["input"].double(), (ax["head_dim"],), 1.0 + x["weight"].double(), eps=EPS)}


# --------------------------------------------------------------------------------------------------
# GeGLU.
# --------------------------------------------------------------------------------------------------

def gelu_inputs(ax, g, i):
    scale = [1.0, 6.0, 0.1][i % 3]
    return {"input": (torch.randn(ax["num_tokens"], ax["gate_up_size"], generator=g) * scale).bfloat16()}


def gelu_expected(ax, x):
    gate, up = x["input"].double().split(ax["intermediate_size"], dim=-1)
    return {"output": F.gelu(gate, approximate="tanh") * up}


# --------------------------------------------------------------------------------------------------
# Attention with a dense mask: causal, and with a window only the last WINDOW positions.
# --------------------------------------------------------------------------------------------------

def attend_masked(q, k, v, scale, q_pos, window):
    """q [Lq, H, D] at absolute positions q_pos, k/v [Lk, Hk, D] at positions 0..Lk-1, float64."""
    H, Hk = q.shape[1], k.shape[1]
    k_pos = torch.arange(k.shape[0])
    mask = k_pos[None, :] <= q_pos[:, None]
    if window:
        mask &= k_pos[None, :] >= q_pos[:, None] - (window - 1)
    out = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1).repeat_interleave(H // Hk, dim=0),
                                         v.transpose(0, 1).repeat_interleave(H // Hk, dim=0), attn_mask=mask, scale=scale)
    return out.transpose(0, 1)


def attention_scale(i):
    return [SM_SCALE, torch.tensor(SM_SCALE, dtype=torch.float32), 0.1][i % 3]


def decode_inputs(ax, g, i):
    sharp = [1.0, 3.0, 0.5][i % 3]
    indptr, indices, last = page_table(ax, g)
    shape = (ax["num_pages"], ax["page_size"], ax["num_kv_heads"], ax["head_dim"])
    return {"q": (torch.randn(ax["batch_size"], ax["num_qo_heads"], ax["head_dim"], generator=g) * sharp).bfloat16(),
            "k_cache": torch.randn(shape, generator=g).bfloat16(), "v_cache": torch.randn(shape, generator=g).bfloat16(),
            "kv_indptr": indptr, "kv_indices": indices, "kv_last_page_len": last, "sm_scale": attention_scale(i)}


def decode_expected_with(window):
    def expected(ax, x):
        outs = []
        for b, n in enumerate(kv_lengths(x["kv_indptr"], x["kv_last_page_len"], ax["page_size"])):
            k = gather_sequence(x["k_cache"], x["kv_indptr"], x["kv_indices"], b, n)
            v = gather_sequence(x["v_cache"], x["kv_indptr"], x["kv_indices"], b, n)
            outs.append(attend_masked(x["q"][b:b + 1].double(), k, v, float(x["sm_scale"]), torch.tensor([n - 1]), window)[0])
        return {"output": torch.stack(outs)}
    return expected


def prefill_inputs(ax, g, i):
    sharp = [1.0, 3.0, 0.5][i % 3]
    kv_indptr, kv_indices, last = page_table(ax, g)
    q_lens = split_queries(ax["total_q"], kv_lengths(kv_indptr, last, ax["page_size"]), g)
    shape = (ax["num_pages"], ax["page_size"], ax["num_kv_heads"], ax["head_dim"])
    return {"q": (torch.randn(ax["total_q"], ax["num_qo_heads"], ax["head_dim"], generator=g) * sharp).bfloat16(),
            "k_cache": torch.randn(shape, generator=g).bfloat16(), "v_cache": torch.randn(shape, generator=g).bfloat16(),
            "qo_indptr": indptr_of(q_lens), "kv_indptr": kv_indptr, "kv_indices": kv_indices,
            "kv_last_page_len": last, "sm_scale": attention_scale(i)}


def prefill_expected_with(window):
    def expected(ax, x):
        qo = x["qo_indptr"].tolist()
        outs = []
        for b, n in enumerate(kv_lengths(x["kv_indptr"], x["kv_last_page_len"], ax["page_size"])):
            k = gather_sequence(x["k_cache"], x["kv_indptr"], x["kv_indices"], b, n)
            v = gather_sequence(x["v_cache"], x["kv_indptr"], x["kv_indices"], b, n)
            q_len = qo[b + 1] - qo[b]
            q_pos = torch.arange(n - q_len, n)
            outs.append(attend_masked(x["q"][qo[b]:qo[b + 1]].double(), k, v, float(x["sm_scale"]), q_pos, window))
        return {"output": torch.cat(outs)}
    return expected


def derived(ax):
    return {"len_indptr": ax["batch_size"] + 1}


# Decode and prefill sets with the window shrunk would need a shrunk constant inside the reference; instead the
# window sets use sequences longer than 1024 tokens (65+ pages of 16) so that the window cuts, and the cache holds
# only the pages the sequences use plus a few free ones.
DECODE_SETS = [{"batch_size": 1, "num_kv_indices": 1, "num_pages": 3},
               {"batch_size": 3, "num_kv_indices": 40, "num_pages": 50},
               {"batch_size": 2, "num_kv_indices": 140, "num_pages": 141}]  # one sequence past 1024 tokens
PREFILL_SETS = [{"batch_size": 1, "num_kv_indices": 2, "num_pages": 3, "total_q": 5},
                {"batch_size": 3, "num_kv_indices": 7, "num_pages": 12, "total_q": 20},
                # The last 150 queries of a ~1110-token sequence: on both sides of position 1024, where the window
                # starts to cut (all 1100 cost 7x the float64 attention for the same check).
                {"batch_size": 1, "num_kv_indices": 70, "num_pages": 72, "total_q": 150}]


# --------------------------------------------------------------------------------------------------
# RoPE with the cache built here from the rope configuration.
# --------------------------------------------------------------------------------------------------

def cos_sin_cache_of(theta, factor=1.0):
    def build(max_position, head_dim):
        inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angles = torch.outer(torch.arange(max_position, dtype=torch.float64) / factor, inv_freq)  # linear: p / factor
        return torch.cat([angles.cos(), angles.sin()], dim=-1).float()
    return build


ROPE_SETS = [{"num_tokens": 1, "max_position": 16}, {"num_tokens": 5, "max_position": 300},
             {"num_tokens": 9, "max_position": 9000}]


# --------------------------------------------------------------------------------------------------
# Scaled vocab-parallel embedding.
# --------------------------------------------------------------------------------------------------

def embedding_inputs(ax, g, i):
    V, H, T = ax["vocab_shard"], ax["hidden_size"], ax["num_tokens"]
    start = [0, V, 0][i % 3]  # rank 0 or rank 1 of 2
    ids = torch.randint(0, 2 * V, (T,), generator=g)
    ids[0] = start  # the shard's first and last rows, and a token of the other rank
    ids[-1] = start + V - 1
    return {"input_ids": ids.int(), "weight": (torch.randn(V, H, generator=g) * 0.05).bfloat16(),
            "vocab_start": start}


def embedding_expected(ax, x):
    V = ax["vocab_shard"]
    local = x["input_ids"].long() - int(x["vocab_start"])
    ok = (local >= 0) & (local < V)
    rows = F.embedding(local.clamp(0, V - 1), x["weight"].double())
    normalizer = float(torch.tensor(math.sqrt(5376), dtype=torch.bfloat16))  # Gemma keeps sqrt(hidden) in bfloat16
    return {"output": torch.where(ok[:, None], rows * normalizer, torch.zeros_like(rows))}


CASES = {
    "gemma_rmsnorm_h5376": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], norm_inputs, norm_expected),
    "gemma_fused_add_rmsnorm_h5376": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], fused_inputs,
                                          fused_expected),
    "gemma_qk_rmsnorm_d128": Case([{"num_tokens": 1, "num_heads": 16}, {"num_tokens": 3, "num_heads": 8},
                                   {"num_tokens": 7, "num_heads": 16}], qk_inputs, qk_expected),
    "gelu_tanh_and_mul_i10752": Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 7}], gelu_inputs, gelu_expected),
    "gqa_paged_decode_h16_kv8_d128_ps16": Case(DECODE_SETS, decode_inputs, decode_expected_with(0), derived=derived),
    "gqa_paged_decode_swa1024_h16_kv8_d128_ps16": Case(DECODE_SETS, decode_inputs, decode_expected_with(WINDOW),
                                                       derived=derived),
    "gqa_paged_prefill_causal_h16_kv8_d128_ps16": Case(PREFILL_SETS, prefill_inputs, prefill_expected_with(0),
                                                       derived=derived),
    "gqa_paged_prefill_causal_swa1024_h16_kv8_d128_ps16": Case(PREFILL_SETS, prefill_inputs,
                                                               prefill_expected_with(WINDOW), derived=derived),
    "rope_gemma3_local_h16_kv8_d128": Case(ROPE_SETS, rope_inputs_with(cos_sin_cache_of(10000.0)), rope_expected),
    "rope_gemma3_global_h16_kv8_d128": Case(ROPE_SETS, rope_inputs_with(cos_sin_cache_of(1e6, factor=8.0)),
                                            rope_expected),
    # The shard shrunk to 1000 rows: every row is the same gather; the hidden size stays real.
    "embedding_scaled_v131104_h5376": Case([shrunk({"num_tokens": n}, vocab_shard=1000) for n in (1, 5, 64)],
                                           embedding_inputs, embedding_expected),
    "gemm_n4096_k5376": gemm_case(N=1000),
    "gemm_n5376_k2048": gemm_case(N=1000),
    "gemm_n21504_k5376": gemm_case(N=1000),
    "gemm_n5376_k10752": gemm_case(N=1000),
    # The unsharded (TP1) layer's k/v, o and down projections: the same check, K real.
    "gemm_n2048_k5376": gemm_case(N=1000),
    "gemm_n5376_k4096": gemm_case(N=1000),
    "gemm_n5376_k21504": gemm_case(N=1000),
    "gemm_n131104_k5376": gemm_case(N=1000),
}
