"""Independent formulations for the Qwen3-30B-A3B definitions (TP1, plus the attention at TP4; bfloat16).

Everything here is computed in float64 with library calls the references may not use (F.rms_norm, F.silu,
F.linear, complex multiplication for RoPE, F.scaled_dot_product_attention on a dense re-packing of the paged
cache, a row-by-row expert loop for the grouped GEMM, a sort by (logit, expert id) for the router) so that
a mistake in a reference does not repeat itself in its check.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import (
    LN2,
    ROW_SETS,
    TOKEN_SETS,
    Case,
    norm_checks,
    rope_expected,
    rope_inputs_with,
    shrunk,
)
from .llama import decode_expected, gather_sequence  # the paged gather and per-sequence decode: Llama's

EPS = 1e-6  # rms_norm_eps of Qwen/Qwen3-30B-A3B
ROPE_THETA = 1_000_000.0  # rope_theta of Qwen/Qwen3-30B-A3B
SM_SCALE = 1.0 / math.sqrt(128)


# --------------------------------------------------------------------------------------------------
# Router: softmax, top-8, renormalise. Exact ids are required: the shared comparison (tests/tolerances.py)
# checks integer outputs exactly, the weights with the float32 tolerance.
# --------------------------------------------------------------------------------------------------

def routing_inputs(ax, g, i):
    T, E = ax["num_tokens"], ax["num_experts"]
    x = torch.randn(T, E, generator=g)
    if i % 3 == 1:
        x = torch.round(x * 4) / 4  # coarse logits: many exact ties, also at the 8th place
    elif i % 3 == 2:
        x = x * 4  # peaked: a few experts take most of the probability
    return {"router_logits": x.bfloat16()}


def routing_expected(ax, x):
    logits = x["router_logits"].double()
    k = ax["top_k"]
    ids, weights = [], []
    for row in logits.tolist():
        # Larger logit first; equal logits: lower expert id first.
        order = sorted(range(len(row)), key=lambda e: (-row[e], e))[:k]
        ids.append(order)
        chosen = torch.tensor([row[e] for e in order], dtype=torch.float64)
        weights.append(torch.softmax(chosen, dim=0))  # renormalised top-k softmax = softmax of the chosen
    return {"topk_ids": torch.tensor(ids, dtype=torch.int64), "topk_weights": torch.stack(weights)}


# --------------------------------------------------------------------------------------------------
# Norms. Rows of very different scales; a weight around 1.
# --------------------------------------------------------------------------------------------------

# 0.002: eps = 1e-6 is then a visible part of mean(x^2) ~ 4e-6 (common.rmsnorm_inputs_at).
rmsnorm_inputs, rmsnorm_expected, fused_inputs, fused_expected = norm_checks((1.0, 30.0, 0.002), EPS)


def qknorm_inputs(ax, g, i):
    T, H, D = ax["num_tokens"], ax["num_heads"], ax["head_dim"]
    # Heads of very different scales in one tensor: each head must get its own rms.
    head_scale = torch.logspace(-2, 1.5, H)[torch.randperm(H, generator=g)].view(1, H, 1)
    return {"input": (torch.randn(T, H, D, generator=g) * head_scale).bfloat16(),
            "weight": (1.0 + 0.5 * torch.randn(D, generator=g)).bfloat16()}


def qknorm_expected(ax, x):
    return {"output": F.rms_norm(x["input"].double(), (ax["head_dim"],), x["weight"].double(), eps=EPS)}


# --------------------------------------------------------------------------------------------------
# SwiGLU of the experts.
# --------------------------------------------------------------------------------------------------

def silu_inputs(ax, g, i):
    scale = [1.0, 6.0, 0.1][i % 3]  # 6: saturated gates (silu ~ g or ~ 0)
    return {"input": (torch.randn(ax["num_tokens"], ax["gate_up_size"], generator=g) * scale).bfloat16()}


def silu_expected(ax, x):
    gate, up = x["input"].double().split(ax["intermediate_size"], dim=-1)
    return {"output": F.silu(gate) * up}


# --------------------------------------------------------------------------------------------------
# RoPE with the real Qwen3 cache (theta 1e6, no scaling), checked as a complex multiplication.
# --------------------------------------------------------------------------------------------------

def qwen_cos_sin_cache(max_position, head_dim=128):
    inv_freq = 1.0 / ROPE_THETA ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.outer(torch.arange(max_position, dtype=torch.float64), inv_freq)
    return torch.cat([angles.cos(), angles.sin()], dim=-1).float()


rope_inputs = rope_inputs_with(qwen_cos_sin_cache)


# --------------------------------------------------------------------------------------------------
# GEMM C = A @ B.T in float64, in chunks of N (the lm_head weight is 151936 x 2048).
# --------------------------------------------------------------------------------------------------

def gemm_inputs(ax, g, i):
    # B drawn directly in bfloat16 (no float32 temporary: the lm_head weight has 311M elements).
    return {"A": torch.randn(ax["M"], ax["K"], generator=g).bfloat16(),
            "B": torch.empty((ax["N"], ax["K"]), dtype=torch.bfloat16).normal_(0.0, 0.125, generator=g)}


def gemm_expected(ax, x):
    A = x["A"].double()
    return {"C": torch.cat([F.linear(A, b.double()) for b in x["B"].split(16384, dim=0)], dim=1)}


def gemm_case(**smaller):
    """smaller: N shrunk for the larger weights (each output column is the same dot product; K stays real)."""
    return Case([shrunk({"M": m}, **smaller) for m in (1, 3, 8)], gemm_inputs, gemm_expected)


# --------------------------------------------------------------------------------------------------
# Grouped (MoE expert) GEMM. Tokens are routed to 8 distinct experts each, popular experts more often,
# so segments are skewed and many are empty; expert 0 and expert 127 are always used (boundaries).
# The weights of unused experts are a constant, so reading the wrong expert shows.
# --------------------------------------------------------------------------------------------------

def route_counts(num_tokens, num_experts, top_k, g):
    popularity = torch.rand(num_experts, generator=g) ** 4 + 1e-3
    counts = torch.zeros(num_experts, dtype=torch.int64)
    for t in range(num_tokens):
        picks = torch.multinomial(popularity, top_k, replacement=False, generator=g)
        counts[picks] += 1
    for e in (0, num_experts - 1):  # make sure the first and last segments are non-empty
        if counts[e] == 0:
            donor = int(counts.argmax())
            counts[donor] -= 1
            counts[e] += 1
    return counts


def grouped_derived(ax):
    return {"total_tokens": ax["tokens"] * 8, "len_m_indptr": ax["num_experts"] + 1}


def grouped_inputs(ax, g, i):
    E, N, K, T = ax["num_experts"], ax["N"], ax["K"], ax["total_tokens"]
    counts = route_counts(ax["tokens"], E, 8, g)
    assert int(counts.sum()) == T
    m_indptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)]).int()
    B = torch.full((E, N, K), 0.75, dtype=torch.bfloat16)
    for e in counts.nonzero().flatten().tolist():
        B[e].normal_(0.0, 1.0 / 16, generator=g)
    return {"A": torch.randn(T, K, generator=g).bfloat16(), "B": B, "m_indptr": m_indptr}


def grouped_expected(ax, x):
    m_indptr = x["m_indptr"].to(torch.int64)
    C = torch.empty(ax["total_tokens"], ax["N"], dtype=torch.float64)
    weights = {}
    for m in range(ax["total_tokens"]):
        e = int(torch.searchsorted(m_indptr, torch.tensor(m), right=True)) - 1  # segment holding row m
        if e not in weights:
            weights[e] = x["B"][e].double()
        C[m] = F.linear(x["A"][m].double(), weights[e])
    return {"C": C}


# --------------------------------------------------------------------------------------------------
# Attention. Sizes give each sequence's kv_len (and qo_len for prefill); the page table scatters the
# pages over a pool with free pages. Expected: float64 SDPA on the re-packed sequence.
# --------------------------------------------------------------------------------------------------

def pages_needed(kv_lens, page_size):
    return [(n + page_size - 1) // page_size for n in kv_lens]


def paged_derived(ax):
    used = sum(pages_needed(ax["kv_lens"], ax["page_size"]))
    out = {"batch_size": len(ax["kv_lens"]), "len_indptr": len(ax["kv_lens"]) + 1, "num_kv_indices": used,
           "num_pages": used + ax.get("free_pages", 3)}
    if "qo_lens" in ax:
        out["total_q"] = sum(ax["qo_lens"])
    return out


def page_table(ax, g):
    ps = ax["page_size"]
    pages = pages_needed(ax["kv_lens"], ps)
    indptr = torch.tensor([0] + pages).cumsum(0)
    indices = torch.randperm(ax["num_pages"], generator=g)[: ax["num_kv_indices"]]
    last = torch.tensor([n - (p - 1) * ps for n, p in zip(ax["kv_lens"], pages)])
    return indptr.int(), indices.int(), last.int()


def attend(q, k, v, scale, causal=False):
    """q [Lq, H, D], k/v [Lk, Hk, D] float64 -> (out [Lq, H, D], base-2 lse [Lq, H]); causal means the
    queries are the last Lq positions: query i sees keys j <= Lk - Lq + i."""
    H, Hk = q.shape[1], k.shape[1]
    qh = q.transpose(0, 1)  # [H, Lq, D]
    kh = k.transpose(0, 1).repeat_interleave(H // Hk, dim=0)  # head h <- kv head h // (H / Hk)
    vh = v.transpose(0, 1).repeat_interleave(H // Hk, dim=0)
    mask = None
    if causal:
        mask = torch.ones(q.shape[0], k.shape[0], dtype=torch.bool).tril(diagonal=k.shape[0] - q.shape[0])
    out = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask, scale=scale)
    logits = (qh @ kh.transpose(-1, -2)) * scale
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(logits, dim=-1) / LN2
    return out.transpose(0, 1), lse.transpose(0, 1)


def sm_scale_variant(i):
    # sm_scale as a Python float, a 0-d tensor, and another value.
    return [SM_SCALE, torch.tensor(SM_SCALE, dtype=torch.float32), 0.1][i % 3]


def cache_pair(ax, g):
    shape = (ax["num_pages"], ax["page_size"], ax["num_kv_heads"], ax["head_dim"])
    return torch.randn(shape, generator=g).bfloat16(), torch.randn(shape, generator=g).bfloat16()


def decode_inputs(ax, g, i):
    sharp = [1.0, 3.0, 0.5][i % 3]  # peakier or flatter softmax
    indptr, indices, last = page_table(ax, g)
    k_cache, v_cache = cache_pair(ax, g)
    return {"q": (torch.randn(ax["batch_size"], ax["num_qo_heads"], ax["head_dim"], generator=g) * sharp).bfloat16(),
            "k_cache": k_cache, "v_cache": v_cache, "kv_indptr": indptr, "kv_indices": indices,
            "kv_last_page_len": last, "sm_scale": sm_scale_variant(i)}


def qo_indptr_of(ax):
    return torch.tensor([0] + list(ax["qo_lens"])).cumsum(0).int()


def paged_prefill_inputs(ax, g, i):
    sharp = [1.0, 3.0, 0.5][i % 3]
    indptr, indices, last = page_table(ax, g)
    k_cache, v_cache = cache_pair(ax, g)
    return {"q": (torch.randn(ax["total_q"], ax["num_qo_heads"], ax["head_dim"], generator=g) * sharp).bfloat16(),
            "k_cache": k_cache, "v_cache": v_cache, "qo_indptr": qo_indptr_of(ax), "kv_indptr": indptr,
            "kv_indices": indices, "kv_last_page_len": last, "sm_scale": sm_scale_variant(i)}


def paged_prefill_expected(ax, x):
    outs, lses = [], []
    qo = x["qo_indptr"]
    for b, n in enumerate(ax["kv_lens"]):
        k = gather_sequence(x["k_cache"], x["kv_indptr"], x["kv_indices"], b, n)
        v = gather_sequence(x["v_cache"], x["kv_indptr"], x["kv_indices"], b, n)
        out, lse = attend(x["q"][int(qo[b]):int(qo[b + 1])].double(), k, v, float(x["sm_scale"]), causal=True)
        outs.append(out)
        lses.append(lse)
    return {"output": torch.cat(outs), "lse": torch.cat(lses)}


def ragged_derived(ax):
    return {"batch_size": len(ax["kv_lens"]), "len_indptr": len(ax["kv_lens"]) + 1,
            "total_q": sum(ax["qo_lens"]), "total_kv": sum(ax["kv_lens"])}


def ragged_inputs(ax, g, i):
    sharp = [1.0, 3.0, 0.5][i % 3]
    H, Hk, D = ax["num_qo_heads"], ax["num_kv_heads"], ax["head_dim"]
    kv_indptr = torch.tensor([0] + list(ax["kv_lens"])).cumsum(0).int()
    return {"q": (torch.randn(ax["total_q"], H, D, generator=g) * sharp).bfloat16(),
            "k": torch.randn(ax["total_kv"], Hk, D, generator=g).bfloat16(),
            "v": torch.randn(ax["total_kv"], Hk, D, generator=g).bfloat16(),
            "qo_indptr": qo_indptr_of(ax), "kv_indptr": kv_indptr, "sm_scale": sm_scale_variant(i)}


def ragged_expected(ax, x):
    outs, lses = [], []
    qo, kv = x["qo_indptr"], x["kv_indptr"]
    for b in range(ax["batch_size"]):
        q = x["q"][int(qo[b]):int(qo[b + 1])].double()
        k = x["k"][int(kv[b]):int(kv[b + 1])].double()
        v = x["v"][int(kv[b]):int(kv[b + 1])].double()
        out, lse = attend(q, k, v, float(x["sm_scale"]), causal=True)
        outs.append(out)
        lses.append(lse)
    return {"output": torch.cat(outs), "lse": torch.cat(lses)}


DECODE_PS16 = [{"kv_lens": (5,)}, {"kv_lens": (40, 16, 1), "free_pages": 5}, {"kv_lens": (100, 33, 17, 64)}]
DECODE_PS1 = [{"kv_lens": (1,)}, {"kv_lens": (9, 30, 2), "free_pages": 10}, {"kv_lens": (50, 13, 7, 64, 3)}]
# Fresh prompts (qo == kv), cached prefixes (qo < kv), page-boundary lengths, a one-token chunk.
PREFILL_PS16 = [{"kv_lens": (5,), "qo_lens": (5,)},
                {"kv_lens": (40, 16, 33), "qo_lens": (7, 16, 1), "free_pages": 4},
                {"kv_lens": (70, 20), "qo_lens": (64, 20)}]
RAGGED = [{"kv_lens": (6,), "qo_lens": (6,)}, {"kv_lens": (19, 3, 40), "qo_lens": (19, 3, 40)},
          {"kv_lens": (30, 12), "qo_lens": (9, 12)}]

def layer_cases(norm: str, intermediate: int, heads: str, rope: list) -> dict:
    """A Qwen-shaped layer's RMSNorm, fused add + RMSNorm, SwiGLU and NeoX RoPE, named as the dataset names them
    (rmsnorm_<norm>, fused_add_rmsnorm_<norm>, silu_and_mul_i<intermediate>, rope_neox_<heads>), with this module's
    checks (eps 1e-6, rope_theta 1e6)."""
    return {f"rmsnorm_{norm}": Case(ROW_SETS, rmsnorm_inputs, rmsnorm_expected),
            f"fused_add_rmsnorm_{norm}": Case(ROW_SETS, fused_inputs, fused_expected),
            f"silu_and_mul_i{intermediate}": Case(TOKEN_SETS, silu_inputs, silu_expected),
            f"rope_neox_{heads}": Case(rope, rope_inputs, rope_expected)}


CASES = {
    "moe_routing_softmax_topk8_e128": Case([{"num_tokens": 1}, {"num_tokens": 16}, {"num_tokens": 33}],
                                           routing_inputs, routing_expected),
    "rmsnorm_h2048": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], rmsnorm_inputs, rmsnorm_expected),
    "fused_add_rmsnorm_h2048": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], fused_inputs,
                                    fused_expected),
    "qk_rmsnorm_d128": Case([{"num_tokens": 1, "num_heads": 4}, {"num_tokens": 3, "num_heads": 32},
                             {"num_tokens": 7, "num_heads": 1}], qknorm_inputs, qknorm_expected),
    "silu_and_mul_i768": Case([{"num_tokens": 1}, {"num_tokens": 8}, {"num_tokens": 24}], silu_inputs, silu_expected),
    "rope_neox_h32_kv4_d128": Case([{"num_tokens": 1, "max_position": 16}, {"num_tokens": 5, "max_position": 300},
                                    {"num_tokens": 9, "max_position": 40960}], rope_inputs, rope_expected),
    "gemm_n5120_k2048": gemm_case(N=1000),
    "gemm_n2048_k4096": gemm_case(N=1000),
    "gemm_n128_k2048": gemm_case(),
    # The lm_head with N shrunk like every wide GEMM (each output column is the same dot product over
    # the real K = 2048): set 0 keeps 16384 columns, more than one chunk of any tiling, at ~0.5 GB
    # instead of the ~2.5 GB the real 151936 x 2048 weight took, so two test processes fit in 4 GB.
    "gemm_n151936_k2048": Case([shrunk({"M": 1}, N=16384), shrunk({"M": 2}, N=1000), shrunk({"M": 5}, N=1000)],
                               gemm_inputs, gemm_expected),
    # N shrunk (every output column is the same per-expert dot product); the 128 experts' segments and
    # the real K stay, so the segment walk, empty experts and the first and last expert are all checked.
    "grouped_gemm_e128_n1536_k2048": Case([shrunk({"tokens": t}, N=32) for t in (1, 3, 10)], grouped_inputs,
                                          grouped_expected, derived=grouped_derived),
    "grouped_gemm_e128_n2048_k768": Case([shrunk({"tokens": t}, N=128) for t in (1, 4, 12)], grouped_inputs,
                                         grouped_expected, derived=grouped_derived),
    "gqa_paged_decode_h32_kv4_d128_ps16": Case(DECODE_PS16, decode_inputs, decode_expected, derived=paged_derived),
    "gqa_paged_decode_h32_kv4_d128_ps1": Case(DECODE_PS1, decode_inputs, decode_expected, derived=paged_derived),
    "gqa_paged_decode_h8_kv1_d128_ps16": Case(DECODE_PS16, decode_inputs, decode_expected, derived=paged_derived),
    "gqa_paged_prefill_causal_h32_kv4_d128_ps16": Case(PREFILL_PS16, paged_prefill_inputs, paged_prefill_expected,
                                                       derived=paged_derived),
    "gqa_paged_prefill_causal_h8_kv1_d128_ps16": Case(PREFILL_PS16, paged_prefill_inputs, paged_prefill_expected,
                                                      derived=paged_derived),
    "gqa_ragged_prefill_causal_h32_kv4_d128": Case(RAGGED, ragged_inputs, ragged_expected, derived=ragged_derived),
}
