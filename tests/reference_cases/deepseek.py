"""Independent formulations for the DeepSeek-V3 definitions (TP8 + EP8 on 8 H200, TP16 on 2 x 8 H100;
FP8 block-128 weights).

Everything is computed in float64 with library calls the references may not use:
F.rms_norm for the norms; F.scaled_dot_product_attention on a dense re-packing of the paged latent
cache for MLA; dequantise-then-matmul for the block-scaled FP8 GEMMs; a per-token Python loop with
sorted() for the grouped routing; and a dense per-(token, pick) loop for the MoE.

Test sizes are small on the var axes; the const axes are the model's (K = 7168 for the GEMMs), except
the MoE's hidden and intermediate sizes, shrunk (see its case): at the real sizes its 32 experts hold
1.4 GB of FP8 weights. Only the experts the test tokens can pick hold random values (the logits of
every other local expert are pushed far down so they are never picked; their weights are zero).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import (
    LN2,
    Case,
    fp8,
    fused_expected_at,
    fused_inputs_at,
    rmsnorm_expected_at,
    rmsnorm_inputs_at,
    shrunk,
    uniform,
)

EPS = 1e-6  # rms_norm_eps of deepseek-ai/DeepSeek-V3
SM_SCALE = 192 ** -0.5 * (0.1 * math.log(40.0) + 1.0) ** 2  # yarn mscale^2 / sqrt(qk_head_dim)


# --------------------------------------------------------------------------------------------------
# Norms: rows of very different scales; 1e-3 makes eps = 1e-6 a visible part of mean(x^2).
# --------------------------------------------------------------------------------------------------

# 1e-3: eps = 1e-6 is then a visible part of mean(x^2) (common.rmsnorm_inputs_at).
rmsnorm_inputs = rmsnorm_inputs_at((1.0, 30.0, 1e-3))
rmsnorm_expected = rmsnorm_expected_at(EPS)
fused_inputs = fused_inputs_at((1.0, 30.0, 1e-3))
fused_expected = fused_expected_at(EPS)


# --------------------------------------------------------------------------------------------------
# MLA on a paged latent cache. Sizes carry the per-sequence lengths ("_kv_lens", "_q_lens"); derived
# turns them into the var axes. Pages are a random permutation of a pool with a few free pages.
# --------------------------------------------------------------------------------------------------

FREE_PAGES = 3


def _pages(lens, page_size):
    return [(n + page_size - 1) // page_size for n in lens]


def mla_derived(ax):
    pages = _pages(ax["_kv_lens"], ax["page_size"])
    out = {"batch_size": len(ax["_kv_lens"]), "len_indptr": len(ax["_kv_lens"]) + 1,
           "num_kv_indices": sum(pages), "num_pages": sum(pages) + FREE_PAGES}
    if "_q_lens" in ax:
        out["total_q"] = sum(ax["_q_lens"])
    return out


def _paged_layout(ax, g):
    lens, ps = ax["_kv_lens"], ax["page_size"]
    pages = _pages(lens, ps)
    indptr = torch.tensor([0] + pages).cumsum(0).to(torch.int32)
    indices = torch.randperm(ax["num_pages"], generator=g)[: ax["num_kv_indices"]].to(torch.int32)
    last = torch.tensor([n - (p - 1) * ps for n, p in zip(lens, pages)], dtype=torch.int32)
    return indptr, indices, last


def _caches(ax, g):
    P, ps = ax["num_pages"], ax["page_size"]
    ckv = torch.randn(P, ps, ax["head_dim_ckv"], generator=g).bfloat16()
    kpe = torch.randn(P, ps, ax["head_dim_kpe"], generator=g).bfloat16()
    return ckv, kpe


def _sm_scale(i):
    # A Python float, a 0-d float32 tensor, and a larger scale (peakier softmax).
    return [SM_SCALE, torch.tensor(SM_SCALE, dtype=torch.float32), 0.4][i % 3]


def mla_decode_inputs(ax, g, i):
    B, H = ax["batch_size"], ax["num_qo_heads"]
    indptr, indices, last = _paged_layout(ax, g)
    ckv, kpe = _caches(ax, g)
    return {"q_nope": torch.randn(B, H, ax["head_dim_ckv"], generator=g).bfloat16(),
            "q_pe": torch.randn(B, H, ax["head_dim_kpe"], generator=g).bfloat16(),
            "ckv_cache": ckv, "kpe_cache": kpe, "kv_indptr": indptr, "kv_indices": indices,
            "kv_last_page_len": last, "sm_scale": _sm_scale(i)}


def _dense_sequence(x, b, ps):
    """Sequence b's latent and rotary keys as dense float64 [kv_len, D] tensors."""
    start, end = int(x["kv_indptr"][b]), int(x["kv_indptr"][b + 1])
    n = (end - start - 1) * ps + int(x["kv_last_page_len"][b])
    rows = [(int(p), s) for p in x["kv_indices"][start:end].tolist() for s in range(ps)][:n]
    ckv = torch.stack([x["ckv_cache"][p, s] for p, s in rows]).double()
    kpe = torch.stack([x["kpe_cache"][p, s] for p, s in rows]).double()
    return ckv, kpe


def _attend(q_nope, q_pe, ckv, kpe, scale, mask):
    """q_* [H, Q, D]; returns output [Q, H, 512] and base-2 lse [Q, H] in float64."""
    q = torch.cat([q_nope, q_pe], dim=-1)
    k = torch.cat([ckv, kpe], dim=-1)  # [kv_len, 576]
    out = F.scaled_dot_product_attention(q, k[None], ckv[None], attn_mask=mask, scale=scale)
    logits = (q @ k.T) * scale
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(logits, dim=-1) / LN2
    return out.transpose(0, 1), lse.transpose(0, 1)


def mla_decode_expected(ax, x):
    scale = float(x["sm_scale"])
    outs, lses = [], []
    for b in range(ax["batch_size"]):
        ckv, kpe = _dense_sequence(x, b, ax["page_size"])
        o, lse = _attend(x["q_nope"][b].double()[:, None], x["q_pe"][b].double()[:, None], ckv, kpe, scale, None)
        outs.append(o[0])
        lses.append(lse[0])
    return {"output": torch.stack(outs), "lse": torch.stack(lses)}


def mla_prefill_inputs(ax, g, i):
    T, H = ax["total_q"], ax["num_qo_heads"]
    indptr, indices, last = _paged_layout(ax, g)
    ckv, kpe = _caches(ax, g)
    qo = torch.tensor([0] + list(ax["_q_lens"])).cumsum(0).to(torch.int32)
    return {"q_nope": torch.randn(T, H, ax["head_dim_ckv"], generator=g).bfloat16(),
            "q_pe": torch.randn(T, H, ax["head_dim_kpe"], generator=g).bfloat16(),
            "ckv_cache": ckv, "kpe_cache": kpe, "qo_indptr": qo, "kv_indptr": indptr, "kv_indices": indices,
            "kv_last_page_len": last, "sm_scale": _sm_scale(i)}


def mla_prefill_expected(ax, x):
    scale = float(x["sm_scale"])
    outs, lses = [], []
    for b in range(ax["batch_size"]):
        q0, q1 = int(x["qo_indptr"][b]), int(x["qo_indptr"][b + 1])
        ckv, kpe = _dense_sequence(x, b, ax["page_size"])
        n, q_len = ckv.shape[0], q1 - q0
        # Query i is the token at position n - q_len + i: it may see keys j <= n - q_len + i.
        mask = torch.tensor([[j <= n - q_len + i for j in range(n)] for i in range(q_len)])
        o, lse = _attend(x["q_nope"][q0:q1].double().transpose(0, 1), x["q_pe"][q0:q1].double().transpose(0, 1),
                         ckv, kpe, scale, mask)
        outs.append(o)
        lses.append(lse)
    return {"output": torch.cat(outs), "lse": torch.cat(lses)}


# --------------------------------------------------------------------------------------------------
# FP8 block-scaled GEMM: dequantise both operands in float64, then one matmul.
# --------------------------------------------------------------------------------------------------

def qgemm_inputs(ax, g, i):
    M, N, K, nb, kb = ax["M"], ax["N"], ax["K"], ax["num_n_blocks"], ax["num_k_blocks"]
    # Scales spread over a factor of 16 so that a scale applied to the wrong block shows.
    return {"A": fp8(torch.randn(M, K, generator=g), 64), "A_scale": uniform((M, kb), 0.25, 4.0, g) / 64,
            "B": fp8(torch.randn(N, K, generator=g), 64), "B_scale": uniform((nb, kb), 0.25, 4.0, g) / 64}


def qgemm_case(n):
    """The check of an FP8 block GEMM of N output features, N shrunk to 384 (3 blocks of 128), or to two
    whole blocks and the partial one where the real N ends in one (2112 -> 320): every column is the same
    block-scaled dot product over the real K, whose blocks the scales index (a 4608 x 7168 weight took 13 s
    for the same check)."""
    small = 256 + n % 128 if n % 128 else 384
    shrink = {"N": small, "num_n_blocks": -(-small // 128)} if small < n else {}
    return Case([shrunk({"M": m}, **shrink) for m in (1, 3, 4)], qgemm_inputs, qgemm_expected)


def qgemm_expected(ax, x):
    N = ax["N"]
    a = x["A"].double() * x["A_scale"].double().repeat_interleave(128, dim=1)
    b_scale = x["B_scale"].double().repeat_interleave(128, dim=0)[:N].repeat_interleave(128, dim=1)
    b = x["B"].double() * b_scale
    return {"C": a @ b.T}


# --------------------------------------------------------------------------------------------------
# Grouped top-k routing (noaux_tc), one token at a time in float64 with sorted().
# --------------------------------------------------------------------------------------------------

def route_token(logits_row, bias, n_group=8, topk_group=4, top_k=8, scaling=2.5):
    """(ids, weights) of one token: lists, ids in descending biased score (ties: lower id first)."""
    scores = [1.0 / (1.0 + math.exp(-v)) for v in logits_row.double().tolist()]
    biased = [s + b for s, b in zip(scores, bias.double().tolist())]
    size = len(scores) // n_group
    group_score = []
    for grp in range(n_group):
        top2 = sorted(biased[grp * size:(grp + 1) * size], reverse=True)[:2]
        group_score.append(top2[0] + top2[1])
    groups = sorted(range(n_group), key=lambda grp: (-group_score[grp], grp))[:topk_group]
    candidates = [e for grp in groups for e in range(grp * size, (grp + 1) * size)]
    ids = sorted(candidates, key=lambda e: (-biased[e], e))[:top_k]
    total = sum(scores[e] for e in ids)
    return ids, [scores[e] / total * scaling for e in ids]


def routing_inputs(ax, g, i):
    T, E = ax["num_tokens"], ax["num_experts"]
    logits = torch.randn(T, E, generator=g)
    if i % 3 == 2:  # coarse logits and no bias: many exact ties (scores, group sums, the 8th place)
        return {"router_logits": torch.round(logits * 4) / 4, "e_score_correction_bias": torch.zeros(E)}
    spread = [0.02, 0.1][i % 3]  # skewed, strongly skewed selection bias
    logits = logits * [1.0, 2.0][i % 3]
    if i % 3 == 1:
        # In one group per token a single very high logit and the rest very low: the group's top-1 is the
        # best score of the token, but its top-2 SUM loses, so the group (and that expert) must be dropped.
        for t in range(T):
            grp = int(torch.randint(0, 8, (1,), generator=g))
            logits[t, grp * 32:(grp + 1) * 32] = -4.0
            logits[t, grp * 32 + int(torch.randint(0, 32, (1,), generator=g))] = 6.0
    return {"router_logits": logits, "e_score_correction_bias": torch.randn(E, generator=g) * spread}


def routing_expected(ax, x):
    ids, weights = [], []
    for t in range(ax["num_tokens"]):
        i, w = route_token(x["router_logits"][t], x["e_score_correction_bias"])
        ids.append(i)
        weights.append(w)
    return {"topk_ids": torch.tensor(ids, dtype=torch.int64), "topk_weights": torch.tensor(weights, dtype=torch.float64)}


# --------------------------------------------------------------------------------------------------
# FP8 block-scale MoE for 32 local experts. One weight bank (the same seed for the three sets); only the
# local experts in ACTIVE can be picked (the others' logits are -8 for every token) and only they hold data.
# --------------------------------------------------------------------------------------------------

ACTIVE = (1, 17, 30)  # local expert indices that hold random weights
MOE_SETS = [  # (local_expert_offset, per token: local experts whose logits are boosted; "away": no local pick)
    (0, [ACTIVE]),
    (96, [(1, 17), (30,), ()]),
    (224, [(30, 1), "away", (17,), ()]),
]
def _weight_bank(ax):
    E, I2, H, I = ax["num_local_experts"], ax["gemm1_out_size"], ax["hidden_size"], ax["intermediate_size"]
    g = torch.Generator().manual_seed(4242)
    w1 = torch.zeros(E, I2, H, dtype=torch.float8_e4m3fn)
    w2 = torch.zeros(E, H, I, dtype=torch.float8_e4m3fn)
    for e in ACTIVE:
        w1[e] = fp8(torch.randn(I2, H, generator=g), 64)
        w2[e] = fp8(torch.randn(H, I, generator=g), 64)
    # Block scales over a factor of 4, sized so that dequantised weights are ~ N(0, 1 / fan_in).
    return {"gemm1_weights": w1, "gemm2_weights": w2,
            "gemm1_weights_scale": uniform((E, I2 // 128, H // 128), 0.5, 2.0, g) / (64 * math.sqrt(H)),
            "gemm2_weights_scale": uniform((E, H // 128, I // 128), 0.5, 2.0, g) / (64 * math.sqrt(I))}


def moe_inputs(ax, g, i):
    T, E, H = ax["seq_len"], ax["num_experts"], ax["hidden_size"]
    offset, plan = MOE_SETS[i]
    assert len(plan) == T
    logits = torch.randn(T, E, generator=g)
    local = torch.arange(offset, offset + ax["num_local_experts"])
    inactive = [offset + e for e in range(ax["num_local_experts"]) if e not in ACTIVE]
    logits[:, inactive] = -8.0  # never picked: their weights are zero
    for t, boost in enumerate(plan):
        if boost == "away":  # 8 sure picks in two non-local groups: this token gets no local pick
            away = [(offset + 32 + k) % E for k in range(4)] + [(offset + 64 + k) % E for k in range(4)]
            logits[t, away] += 8.0
        else:
            logits[t, [offset + e for e in boost]] += 5.0
    bias = torch.randn(E, generator=g) * 0.03
    x = {"routing_logits": logits, "routing_bias": bias,
         "hidden_states": fp8(torch.randn(T, H, generator=g), 64),
         "hidden_states_scale": uniform((H // 128, T), 0.25, 4.0, g) / 64}
    x.update(_weight_bank(ax))
    x["local_expert_offset"] = offset if i == 0 else torch.tensor(offset, dtype=torch.int32)
    x["routed_scaling_factor"] = 2.5 if i != 1 else torch.tensor(2.5, dtype=torch.float32)
    picks = [route_token(logits[t], bias)[0] for t in range(T)]
    assert any(int(local[0]) <= e <= int(local[-1]) for p in picks for e in p), "the test must exercise a local expert"
    order = ["routing_logits", "routing_bias", "hidden_states", "hidden_states_scale", "gemm1_weights",
             "gemm1_weights_scale", "gemm2_weights", "gemm2_weights_scale", "local_expert_offset", "routed_scaling_factor"]
    return {k: x[k] for k in order}


def _block_scaled_matvecs(w, s, x):
    """float64 rows of (w * block scales) @ x.T for a few vectors x [T, C], without dequantising w:
    per 128-wide column block an unscaled partial product, then the block's scale, then the sum."""
    R, C = w.shape
    partial = torch.einsum("rbk,tbk->trb", w.double().view(R, C // 128, 128), x.view(-1, C // 128, 128))
    return (partial * s.double().repeat_interleave(128, dim=0)[None]).sum(dim=-1)  # [T, R]


def moe_expected(ax, x):
    T, H, I = ax["seq_len"], ax["hidden_size"], ax["intermediate_size"]
    offset = int(x["local_expert_offset"])
    scaling = float(x["routed_scaling_factor"])
    hs = x["hidden_states"].double() * x["hidden_states_scale"].double().T.repeat_interleave(128, dim=1)
    # Dense loop over (token, pick): collect each local expert's picks first, so that every expert's
    # weights are converted once.
    picks: dict = {}
    for t in range(T):
        ids, ws = route_token(x["routing_logits"][t], x["routing_bias"], scaling=scaling)
        for e, w in zip(ids, ws):
            if 0 <= e - offset < ax["num_local_experts"]:  # else another rank's expert
                picks.setdefault(e - offset, []).append((t, w))
    out = torch.zeros(T, H, dtype=torch.float64)
    for le, rows in picks.items():
        toks = [t for t, _ in rows]
        gate_up = _block_scaled_matvecs(x["gemm1_weights"][le], x["gemm1_weights_scale"][le], hs[toks])  # [n, 2I]
        act = F.silu(gate_up[:, I:]) * gate_up[:, :I]  # rows [0, I) up, [I, 2I) gate
        y = _block_scaled_matvecs(x["gemm2_weights"][le], x["gemm2_weights_scale"][le], act)  # [n, H]
        for (t, w), row in zip(rows, y):
            out[t] += w * row
    return {"output": out}


# --------------------------------------------------------------------------------------------------
# The attention side at TP8 (16 heads per rank) and TP16 (8 heads): YaRN RoPE, the absorption bmm's,
# the latent cache store, the MHA prefill path; the router gate and lm_head GEMMs.
# --------------------------------------------------------------------------------------------------

def yarn_cache(rows, theta, factor, beta_fast, beta_slow, correction_range, d=64, original=4096):
    """[rows, d] float32 cos/sin cache of a YaRN RoPE whose mscale / mscale_all_dim is 1 (DeepSeek-V3,
    Kimi-K2), its inverse frequencies written out in float64 from the YaRN paper's wavelength form
    (transformers' _compute_yarn_parameters): a frequency whose wavelength fits more than beta_fast rotations
    into the original positions keeps theta^(-2i/d), one with fewer than beta_slow rotations is divided by
    factor, and the band between blends linearly over the dims. correction_range is the (low, high) pair
    of dims the constants must give, asserted, so a mistyped constant fails here."""
    def dim_of(rotations):  # the dim whose wavelength is original / rotations
        return d * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = max(math.floor(dim_of(beta_fast)), 0), min(math.ceil(dim_of(beta_slow)), d - 1)
    assert (low, high) == correction_range, (low, high)
    freqs = []
    for i in range(d // 2):
        base = theta ** (-2.0 * i / d)
        keep = 1.0 - min(max((i - low) / (high - low), 0.0), 1.0)  # 1: extrapolate, 0: interpolate
        freqs.append(base * keep + base / factor * (1.0 - keep))
    angles = torch.arange(rows, dtype=torch.float64)[:, None] * torch.tensor(freqs, dtype=torch.float64)[None, :]
    return torch.cat([angles.cos(), angles.sin()], dim=-1).float()


def deepseek_yarn_cache(rows):
    """DeepSeek-V3's rope_scaling: theta 10000, factor 40, beta_fast 32, beta_slow 1, original 4096."""
    return yarn_cache(rows, theta=10000.0, factor=40.0, beta_fast=32.0, beta_slow=1.0, correction_range=(10, 23))


def rope_ds_inputs_with(cos_sin_cache):
    """An input maker for a rope_deepseek definition whose cache rows are cos_sin_cache(max_position)."""
    def rope_ds_inputs(ax, g, i):
        T, P = ax["num_tokens"], ax["max_position"]
        positions = torch.randint(0, P, (T,), generator=g)
        positions[0] = P - 1  # the last row of the cache is read
        return {"positions": positions,
                "q_pe": torch.randn(T, ax["num_qo_heads"], ax["rope_dim"], generator=g).bfloat16(),
                "k_pe": torch.randn(T, ax["rope_dim"], generator=g).bfloat16(),
                "cos_sin_cache": cos_sin_cache(P)}
    return rope_ds_inputs


rope_ds_inputs = rope_ds_inputs_with(deepseek_yarn_cache)


def rope_ds_expected(ax, x):
    # Interleaved pairs (x[2i], x[2i + 1]) as complex numbers, multiplied by cos + i sin of their frequency.
    rows = x["cos_sin_cache"].double()[x["positions"]]
    rot = torch.complex(rows[:, :32], rows[:, 32:])  # [T, 32]

    def rotate(t, r):
        z = torch.view_as_complex(t.double().reshape(*t.shape[:-1], 32, 2).contiguous()) * r
        return torch.view_as_real(z).reshape(t.shape)

    return {"q_pe_out": rotate(x["q_pe"], rot[:, None, :]), "k_pe_out": rotate(x["k_pe"], rot)}


def absorb_inputs(x_name, w_name, i_axis, o_axis):
    def make(ax, g, i):
        T, H = ax["num_tokens"], ax["num_heads"]
        return {x_name: torch.randn(T, H, ax[i_axis], generator=g).bfloat16(),
                w_name: (torch.randn(H, ax[i_axis], ax[o_axis], generator=g) / math.sqrt(ax[i_axis])).bfloat16()}
    return make


def absorb_expected(x_name, w_name, out_name):
    def expected(ax, x):
        # One matrix product per head, in float64.
        heads = [x[x_name][:, h].double() @ x[w_name][h].double() for h in range(ax["num_heads"])]
        return {out_name: torch.stack(heads, dim=1)}
    return expected


def store_inputs(ax, g, i):
    T, P = ax["num_tokens"], ax["num_pages"]
    return {"ckv": torch.randn(T, ax["head_dim_ckv"], generator=g).bfloat16(),
            "kpe": torch.randn(T, ax["head_dim_kpe"], generator=g).bfloat16(),
            "cache_loc": torch.randperm(P, generator=g)[:T],
            "ckv_cache": torch.randn(P, 1, ax["head_dim_ckv"], generator=g).bfloat16(),
            "kpe_cache": torch.randn(P, 1, ax["head_dim_kpe"], generator=g).bfloat16()}


def store_expected(ax, x):
    # Slot by slot: the step's row where a token was written, the old row elsewhere.
    written = {int(s): t for t, s in enumerate(x["cache_loc"].tolist())}
    ckv = [x["ckv"][written[p]] if p in written else x["ckv_cache"][p, 0] for p in range(ax["num_pages"])]
    kpe = [x["kpe"][written[p]] if p in written else x["kpe_cache"][p, 0] for p in range(ax["num_pages"])]
    return {"ckv_cache_out": torch.stack(ckv).double()[:, None], "kpe_cache_out": torch.stack(kpe).double()[:, None]}


def ragged_derived(ax):
    return {"batch_size": len(ax["_q_lens"]), "len_indptr": len(ax["_q_lens"]) + 1,
            "total_q": sum(ax["_q_lens"]), "total_kv": sum(ax["_kv_lens"])}


def ragged_inputs(ax, g, i):
    H = ax["num_qo_heads"]
    return {"q": torch.randn(ax["total_q"], H, ax["qk_dim"], generator=g).bfloat16(),
            "k": torch.randn(ax["total_kv"], H, ax["qk_dim"], generator=g).bfloat16(),
            "v": torch.randn(ax["total_kv"], H, ax["vo_dim"], generator=g).bfloat16(),
            "qo_indptr": torch.tensor([0] + list(ax["_q_lens"])).cumsum(0).to(torch.int32),
            "kv_indptr": torch.tensor([0] + list(ax["_kv_lens"])).cumsum(0).to(torch.int32),
            "sm_scale": _sm_scale(i)}


def ragged_expected(ax, x):
    scale = float(x["sm_scale"])
    outs, lses = [], []
    for b in range(ax["batch_size"]):
        q0, q1 = int(x["qo_indptr"][b]), int(x["qo_indptr"][b + 1])
        k0, k1 = int(x["kv_indptr"][b]), int(x["kv_indptr"][b + 1])
        n, m = q1 - q0, k1 - k0
        q = x["q"][q0:q1].double().transpose(0, 1)  # [H, n, 192]
        k = x["k"][k0:k1].double().transpose(0, 1)
        v = x["v"][k0:k1].double().transpose(0, 1)
        mask = torch.tensor([[j <= m - n + i for j in range(m)] for i in range(n)])
        outs.append(F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale).transpose(0, 1))
        logits = (q @ k.transpose(1, 2) * scale).masked_fill(~mask, float("-inf"))
        lses.append((torch.logsumexp(logits, dim=-1) / LN2).transpose(0, 1))
    return {"output": torch.cat(outs), "lse": torch.cat(lses)}


def concat_inputs(ax, g, i):
    T, H = ax["num_tokens"], ax["num_heads"]
    return {"k_nope": torch.randn(T, H, ax["nope_dim"], generator=g).bfloat16(),
            "k_pe": torch.randn(T, ax["rope_dim"], generator=g).bfloat16()}


def concat_expected(ax, x):
    # Head by head: its own 128 non-rotary values, then the token's shared 64 rotary values.
    heads = [torch.cat([x["k_nope"][:, h].double(), x["k_pe"].double()], dim=-1) for h in range(ax["num_heads"])]
    return {"k": torch.stack(heads, dim=1)}


def linear_inputs(ax, g, i):
    return {"A": torch.randn(ax["M"], ax["K"], generator=g).bfloat16(),
            "B": (torch.randn(ax["N"], ax["K"], generator=g) / math.sqrt(ax["K"])).bfloat16()}


def linear_expected(ax, x):
    return {"C": x["A"].double() @ x["B"].double().T}


_ROPES = {f"rope_deepseek_yarn_h{h}_d64": Case(
    [{"num_tokens": 1, "max_position": 5},
     {"num_tokens": 6, "max_position": 4096},  # around the original context, where YaRN blends
     {"num_tokens": 9, "max_position": 163840}],  # the whole serving cache: original 4096 x factor 40
    rope_ds_inputs, rope_ds_expected) for h in (16, 8)}
_ABSORBS = {}
for _h in (16, 8):
    _ABSORBS[f"batch_gemm_mla_absorb_q_h{_h}_d128_c512"] = Case(
        [{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 5}],
        absorb_inputs("q_nope", "w_kc", "qk_nope_head_dim", "kv_lora_rank"),
        absorb_expected("q_nope", "w_kc", "q_nope_absorbed"))
    _ABSORBS[f"batch_gemm_mla_absorb_v_h{_h}_c512_d128"] = Case(
        [{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 5}],
        absorb_inputs("attn_latent", "w_vc", "kv_lora_rank", "v_head_dim"),
        absorb_expected("attn_latent", "w_vc", "attn_output"))
_RAGGED = {f"mla_ragged_prefill_causal_h{h}_qk192_vo128": Case(
    [{"_q_lens": (5,), "_kv_lens": (5,)},  # one fresh prompt
     {"_q_lens": (3, 1, 4), "_kv_lens": (3, 1, 4)},  # fresh prompts of different lengths
     {"_q_lens": (2, 6), "_kv_lens": (9, 6)}],  # kv longer than q: bottom-right aligned mask
    ragged_inputs, ragged_expected, derived=ragged_derived) for h in (16, 8)}
# lm_head shards: N = 16160 / 8080 rows would hold 232 / 116 MB of bfloat16 weights (and 8x that in
# the float64 check) for a check that is the same at any N; 520 rows keep a partial 128-multiple.
_CONCATS = {f"concat_mla_k_h{h}_nope128_rope64": Case([{"num_tokens": 1}, {"num_tokens": 4}, {"num_tokens": 9}],
                                                      concat_inputs, concat_expected) for h in (16, 8)}
_LINEARS = {
    "gemm_n256_k7168": Case([{"M": 1}, {"M": 3}, {"M": 17}], linear_inputs, linear_expected),
    "gemm_n16160_k7168": Case([shrunk({"M": m}, N=520) for m in (1, 2, 4)], linear_inputs, linear_expected),
    "gemm_n8080_k7168": Case([shrunk({"M": m}, N=520) for m in (1, 2, 4)], linear_inputs, linear_expected),
}


# --------------------------------------------------------------------------------------------------

MOE_SMALLER = {"hidden_size": 512, "num_hidden_blocks": 4, "intermediate_size": 256, "num_intermediate_blocks": 2,
               "gemm1_out_size": 512, "num_gemm1_out_blocks": 4}
_NORMS = {f"rmsnorm_h{h}": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 4}], rmsnorm_inputs, rmsnorm_expected)
          for h in (7168, 1536, 512)}
_GEMMS = {f"gemm_fp8_block128_n{n}_k{k}": qgemm_case(n)
          for n, k in ((2112, 7168), (3072, 1536), (7168, 2048), (4608, 7168), (7168, 2304), (512, 7168), (7168, 256),
                       (4096, 512), (2048, 512), (1536, 1536), (7168, 1024), (2304, 7168), (7168, 1152))}

CASES = {
    **_NORMS,
    "fused_add_rmsnorm_h7168": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 4}], fused_inputs, fused_expected),
    "mla_paged_decode_h16_ckv512_kpe64_ps1": Case(
        [{"_kv_lens": (7,)}, {"_kv_lens": (1, 13, 5)}, {"_kv_lens": (20, 2)}],
        mla_decode_inputs, mla_decode_expected, derived=mla_derived),
    "mla_paged_decode_h16_ckv512_kpe64_ps64": Case(
        [{"_kv_lens": (70,)}, {"_kv_lens": (1, 129, 64)}, {"_kv_lens": (200, 65)}],
        mla_decode_inputs, mla_decode_expected, derived=mla_derived),
    "mla_paged_prefill_causal_h16_ckv512_kpe64_ps1": Case(
        [{"_q_lens": (5,), "_kv_lens": (5,)},  # a whole prompt
         {"_q_lens": (3, 1, 4), "_kv_lens": (9, 6, 4)},  # chunks after cached prefixes
         {"_q_lens": (2, 6), "_kv_lens": (11, 6)}],
        mla_prefill_inputs, mla_prefill_expected, derived=mla_derived),
    "mla_paged_decode_h8_ckv512_kpe64_ps1": Case(
        [{"_kv_lens": (7,)}, {"_kv_lens": (1, 13, 5)}, {"_kv_lens": (20, 2)}],
        mla_decode_inputs, mla_decode_expected, derived=mla_derived),
    "mla_paged_prefill_causal_h8_ckv512_kpe64_ps1": Case(
        [{"_q_lens": (5,), "_kv_lens": (5,)}, {"_q_lens": (3, 1, 4), "_kv_lens": (9, 6, 4)},
         {"_q_lens": (2, 6), "_kv_lens": (11, 6)}],
        mla_prefill_inputs, mla_prefill_expected, derived=mla_derived),
    "mla_kv_cache_store_ckv512_kpe64_ps1": Case(
        [{"num_tokens": 1, "num_pages": 3}, {"num_tokens": 4, "num_pages": 9}, {"num_tokens": 7, "num_pages": 7}],
        store_inputs, store_expected),
    **_ROPES,
    **_ABSORBS,
    **_RAGGED,
    **_LINEARS,
    **_CONCATS,
    **_GEMMS,
    "moe_routing_grouped_topk8_e256_ng8_kg4": Case([{"num_tokens": 1}, {"num_tokens": 5}, {"num_tokens": 16}],
                                                   routing_inputs, routing_expected),
    # Hidden 7168 -> 512 and intermediate 2048 -> 256 (and their block counts): still several 128-blocks
    # of every scale, so the block-scale indexing, the gate/up halves, the routing over the real 256
    # experts in 8 groups, the local offset and the 32 local experts are checked as at the real sizes,
    # which would hold 1.4 GB of FP8 weights (twice, with the unchanged-input copy) for the same checks.
    "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048": Case(
        [shrunk({"seq_len": t}, **MOE_SMALLER) for t in (1, 3, 4)], moe_inputs, moe_expected),
}
