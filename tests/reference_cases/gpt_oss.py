"""Independent formulations for the gpt-oss-120b definitions (TP1 on one H100; bfloat16, MXFP4 experts).

Everything here is computed in float64 with formulations the references do not use:
- attention sinks as an EXTRA SOFTMAX COLUMN (the sink logit concatenated to the scores, torch.softmax, the
  column dropped), the sliding window and causality as a DENSE boolean mask over positions;
- the router as a softmax over all 128 experts, a sort by (probability, expert id), top-4 and renormalisation;
- MXFP4 weights through a LOOKUP TABLE of the 16 e2m1 values and torch.ldexp with the e8m0 exponents (as
  openai/gpt-oss gpt_oss/torch/weights.py decodes the checkpoint), the expert GEMMs row by row with F.linear,
  and the scatter as a per-token loop over its rows;
- the clamped SwiGLU through F.silu (g * sigmoid(a g) = silu(a g) / a);
- the YaRN cos/sin cache rebuilt here from the rope configuration in float64, the rotation as a complex
  multiplication (common.rope_expected);
- norms with F.rms_norm, GEMMs with F.linear; the embedding, KV append and temperature softmax as
  common_kernels.py checks them for the other models.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import Case, rope_expected, rope_inputs_with, shrunk
from .common_kernels import APPEND, append_expected, append_inputs, embedding_expected, embedding_inputs, softmax_case
from .llama import gather_sequence
from .qwen import page_table, paged_derived, qo_indptr_of

EPS = 1e-5  # rms_norm_eps of openai/gpt-oss-120b
SM_SCALE = 1.0 / math.sqrt(64)
WINDOW = 128  # sliding_window
ALPHA, LIMIT = 1.702, 7.0  # swiglu alpha, swiglu_limit
NUM_EXPERTS, TOP_K = 128, 4
FP4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


# --------------------------------------------------------------------------------------------------
# Attention with sinks: dense re-packing, mask over positions, the sink as one more softmax column.
# --------------------------------------------------------------------------------------------------

def sink_attend(q, k, v, sinks, scale, q_pos, window):
    """q [Lq, H, D], k/v [Lk, Hk, D] float64, q_pos [Lq] positions of the queries (keys are at 0..Lk-1)."""
    H, Hk = q.shape[1], k.shape[1]
    kh = k.repeat_interleave(H // Hk, dim=1)  # head h <- kv head h // (H / Hk)
    vh = v.repeat_interleave(H // Hk, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q, kh) * scale
    k_pos = torch.arange(k.shape[0])
    allowed = k_pos[None, :] <= q_pos[:, None]
    if window:
        allowed &= q_pos[:, None] - k_pos[None, :] < window
    scores = scores.masked_fill(~allowed, float("-inf"))
    sink_col = sinks.double()[:, None, None].expand(H, q.shape[0], 1)
    probs = torch.softmax(torch.cat([scores, sink_col], dim=-1), dim=-1)[..., :-1]  # drop the sink column
    return torch.einsum("hqk,khd->qhd", probs, vh)


def sink_values(H, g, i):
    # Sinks around the scale of the logits, one set much larger (the sink takes most of the mass) and one
    # very negative (no effect), as learned sinks vary per head.
    return [torch.randn(H, generator=g) * 2.0, torch.randn(H, generator=g) + 6.0, torch.full((H,), -30.0)][i % 3]


def cache_pair(ax, g):
    shape = (ax["num_pages"], ax["page_size"], ax["num_kv_heads"], ax["head_dim"])
    return torch.randn(shape, generator=g).bfloat16(), torch.randn(shape, generator=g).bfloat16()


def decode_inputs(ax, g, i):
    indptr, indices, last = page_table(ax, g)
    k_cache, v_cache = cache_pair(ax, g)
    sharp = [1.0, 3.0, 0.5][i % 3]
    return {"q": (torch.randn(ax["batch_size"], ax["num_qo_heads"], ax["head_dim"], generator=g) * sharp).bfloat16(),
            "k_cache": k_cache, "v_cache": v_cache, "kv_indptr": indptr, "kv_indices": indices,
            "kv_last_page_len": last, "sinks": sink_values(ax["num_qo_heads"], g, i),
            "sm_scale": [SM_SCALE, torch.tensor(SM_SCALE), 0.2][i % 3]}


def decode_expected_with(window):
    def expected(ax, x):
        outs = []
        for b, n in enumerate(ax["kv_lens"]):
            k = gather_sequence(x["k_cache"], x["kv_indptr"], x["kv_indices"], b, n)
            v = gather_sequence(x["v_cache"], x["kv_indptr"], x["kv_indices"], b, n)
            q = x["q"][b:b + 1].double()
            outs.append(sink_attend(q, k, v, x["sinks"], float(x["sm_scale"]), torch.tensor([n - 1]), window)[0])
        return {"output": torch.stack(outs)}
    return expected


def prefill_inputs(ax, g, i):
    inputs = decode_inputs({**ax, "batch_size": ax["total_q"]}, g, i)
    return {"q": inputs["q"], "k_cache": inputs["k_cache"], "v_cache": inputs["v_cache"],
            "qo_indptr": qo_indptr_of(ax), "kv_indptr": inputs["kv_indptr"], "kv_indices": inputs["kv_indices"],
            "kv_last_page_len": inputs["kv_last_page_len"], "sinks": inputs["sinks"], "sm_scale": inputs["sm_scale"]}


def prefill_expected_with(window):
    def expected(ax, x):
        outs = []
        qo = x["qo_indptr"]
        for b, (n, lq) in enumerate(zip(ax["kv_lens"], ax["qo_lens"])):
            k = gather_sequence(x["k_cache"], x["kv_indptr"], x["kv_indices"], b, n)
            v = gather_sequence(x["v_cache"], x["kv_indptr"], x["kv_indices"], b, n)
            q = x["q"][int(qo[b]):int(qo[b + 1])].double()
            outs.append(sink_attend(q, k, v, x["sinks"], float(x["sm_scale"]), torch.arange(n - lq, n), window))
        return {"output": torch.cat(outs)}
    return expected


# Short and window-crossing contexts (130 and 300 > 128, 128 exactly, 129), page-boundary lengths.
DECODE = [{"kv_lens": (5,)}, {"kv_lens": (130, 16, 1), "free_pages": 5}, {"kv_lens": (300, 128, 129, 64)}]
# Fresh prompts (qo == kv), cached prefixes (qo < kv) with the window reaching into the prefix, one-token chunks.
PREFILL = [{"kv_lens": (5,), "qo_lens": (5,)},
           {"kv_lens": (200, 16, 140), "qo_lens": (7, 16, 1), "free_pages": 4},
           {"kv_lens": (170, 20), "qo_lens": (160, 20)}]


# --------------------------------------------------------------------------------------------------
# Router: softmax over all experts, then top-4 and renormalisation (= softmax of the top-4 logits).
# --------------------------------------------------------------------------------------------------

def routing_inputs(ax, g, i):
    x = torch.randn(ax["num_tokens"], ax["num_experts"], generator=g)
    if i % 3 == 1:
        x = torch.round(x * 4) / 4  # coarse logits: many exact ties, also at the 4th place
    elif i % 3 == 2:
        x = x * 4 - torch.arange(ax["num_experts"]) * 0.01  # peaked, a few experts dominate
    return {"router_logits": x.bfloat16()}


def routing_expected(ax, x):
    probs = torch.softmax(x["router_logits"].double(), dim=-1)
    ids, weights = [], []
    for row in probs.tolist():
        order = sorted(range(len(row)), key=lambda e: (-row[e], e))[:ax["top_k"]]  # ties: lower id first
        chosen = torch.tensor([row[e] for e in order], dtype=torch.float64)
        ids.append(order)
        weights.append(chosen / chosen.sum())
    return {"topk_weights": torch.stack(weights), "topk_ids": torch.tensor(ids, dtype=torch.int64)}


# --------------------------------------------------------------------------------------------------
# MXFP4 expert GEMMs. Tokens pick 4 distinct experts each (experts 0 and 127 always used); unused experts'
# bytes are a constant, so reading the wrong expert shows. Codes cover all 16 values; scales span 2^-9..2^0.
# --------------------------------------------------------------------------------------------------

def lut_dequantize(blocks, scales):
    """LUT decode: [N, K/2] uint8 + [N, K/32] uint8 -> [N, K] float64 (low nibble first)."""
    lut = torch.tensor(FP4_VALUES, dtype=torch.float64)
    codes = torch.stack([blocks & 0x0F, blocks >> 4], dim=-1).reshape(blocks.shape[0], -1).long()
    exponents = (scales.long() - 127).repeat_interleave(32, dim=1)
    return torch.ldexp(lut[codes], exponents)


def moe_derived(ax):
    return {"num_tokens": ax["tokens"], "total_rows": ax["tokens"] * TOP_K, "len_m_indptr": ax["num_experts"] + 1}


def routing_rows(ax, g):
    """(m_indptr, row_token): each token's 4 distinct experts, rows sorted by expert, then by token."""
    E, T = ax["num_experts"], ax["tokens"]
    popularity = torch.rand(E, generator=g) ** 4 + 1e-3
    picks = [torch.multinomial(popularity, TOP_K, replacement=False, generator=g).tolist() for _ in range(T)]
    for e, t in ((0, 0), (E - 1, T - 1)):  # the first and last segments are never empty
        if e not in picks[t]:
            picks[t][0] = e
    rows = sorted((e, t) for t, chosen in enumerate(picks) for e in chosen)
    counts = torch.bincount(torch.tensor([e for e, _ in rows]), minlength=E)
    m_indptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)]).int()
    return m_indptr, torch.tensor([t for _, t in rows], dtype=torch.int32)


def mxfp4_weights(ax, g, m_indptr):
    E, N, K = ax["num_experts"], ax["N"], ax["K"]
    blocks = torch.full((E, N, K // 2), 0x77, dtype=torch.uint8)
    scales = torch.full((E, N, K // 32), 127, dtype=torch.uint8)
    counts = m_indptr[1:] - m_indptr[:-1]
    for e in counts.nonzero().flatten().tolist():
        blocks[e] = torch.randint(0, 256, (N, K // 2), generator=g, dtype=torch.uint8)
        scales[e] = torch.randint(118, 128, (N, K // 32), generator=g, dtype=torch.uint8)
    return blocks, scales, torch.randn(E, N, generator=g) * 0.5


def gate_up_inputs(ax, g, i):
    m_indptr, row_token = routing_rows(ax, g)
    blocks, scales, bias = mxfp4_weights(ax, g, m_indptr)
    scale = [0.05, 0.3, 0.01][i % 3]  # 0.3: many outputs beyond the +-7 clamp
    return {"hidden_states": (torch.randn(ax["num_tokens"], ax["K"], generator=g) * scale).bfloat16(),
            "w_blocks": blocks, "w_scales": scales, "bias": bias, "m_indptr": m_indptr, "row_token": row_token}


def clamped_swiglu(h):
    gate = torch.minimum(h[:, 0::2], torch.tensor(LIMIT, dtype=h.dtype))
    linear = h[:, 1::2].clamp(-LIMIT, LIMIT)
    return F.silu(ALPHA * gate) / ALPHA * (linear + 1)


def expert_of_rows(m_indptr, total_rows):
    return torch.repeat_interleave(torch.arange(len(m_indptr) - 1), (m_indptr[1:] - m_indptr[:-1]).long(),
                                   output_size=total_rows)


def gate_up_expected(ax, x):
    experts = expert_of_rows(x["m_indptr"], ax["total_rows"])
    weights = {}
    out = torch.empty(ax["total_rows"], ax["N"] // 2, dtype=torch.float64)
    for r in range(ax["total_rows"]):
        e = int(experts[r])
        if e not in weights:
            weights[e] = lut_dequantize(x["w_blocks"][e], x["w_scales"][e])
        h = F.linear(x["hidden_states"][int(x["row_token"][r])].double()[None], weights[e], x["bias"][e].double())
        out[r] = clamped_swiglu(h)[0]
    return {"output": out}


def down_inputs(ax, g, i):
    m_indptr, row_token = routing_rows(ax, g)
    blocks, scales, bias = mxfp4_weights(ax, g, m_indptr)
    scale = [0.05, 0.5, 0.01][i % 3]
    return {"act": (torch.randn(ax["total_rows"], ax["K"], generator=g) * scale).bfloat16(),
            "w_blocks": blocks, "w_scales": scales, "bias": bias, "m_indptr": m_indptr, "row_token": row_token,
            "row_weight": torch.rand(ax["total_rows"], generator=g).bfloat16()}


def down_expected(ax, x):
    experts = expert_of_rows(x["m_indptr"], ax["total_rows"])
    weights = {}
    out = torch.zeros(ax["num_tokens"], ax["N"], dtype=torch.float64)
    for t in range(ax["num_tokens"]):
        for r in (x["row_token"] == t).nonzero().flatten().tolist():  # this token's 4 rows
            e = int(experts[r])
            if e not in weights:
                weights[e] = lut_dequantize(x["w_blocks"][e], x["w_scales"][e])
            y = F.linear(x["act"][r].double()[None], weights[e], x["bias"][e].double())[0]
            out[t] += float(x["row_weight"][r]) * y
    return {"output": out}


def metadata_inputs(ax, g, i):
    E, T = NUM_EXPERTS, ax["num_tokens"]
    popularity = torch.rand(E, generator=g) ** 4 + 1e-3
    ids = torch.stack([torch.multinomial(popularity, TOP_K, replacement=False, generator=g) for _ in range(T)])
    return {"topk_ids": ids.int(), "topk_weights": torch.rand(T, TOP_K, generator=g).bfloat16()}


def metadata_expected(ax, x):
    pairs = sorted((int(e), t * TOP_K + k) for t, row in enumerate(x["topk_ids"].tolist()) for k, e in enumerate(row))
    counts = [0] * (NUM_EXPERTS + 1)
    for e, _ in pairs:
        counts[e + 1] += 1
    flat_weights = x["topk_weights"].double().flatten()
    return {"m_indptr": torch.tensor(counts).cumsum(0), "row_token": torch.tensor([i // TOP_K for _, i in pairs]),
            "row_weight": torch.stack([flat_weights[i] for _, i in pairs])}


def metadata_derived(ax):
    return {"total_rows": ax["num_tokens"] * TOP_K, "len_m_indptr": NUM_EXPERTS + 1}


# The MoE checks shrink N, K (and I) to a few blocks of 32: each output is the same dot product at any size,
# while the 128 experts' segments, the block scales along K and the nibble order are all exercised.
MOE_SHRINK = {"K": 64, "K_packed": 32, "K_blocks": 2}


# --------------------------------------------------------------------------------------------------
# Clamped SwiGLU, GEMMs with bias, norms, YaRN RoPE.
# --------------------------------------------------------------------------------------------------

def swiglu_inputs(ax, g, i):
    scale = [1.0, 6.0, 0.1][i % 3]  # 6: far beyond the clamps
    return {"input": (torch.randn(ax["num_tokens"], ax["gate_up_size"], generator=g) * scale).bfloat16()}


def swiglu_expected(ax, x):
    return {"output": clamped_swiglu(x["input"].double())}


def gemm_inputs(ax, g, i):
    x = {"A": torch.randn(ax["M"], ax["K"], generator=g).bfloat16(),
         "B": torch.empty((ax["N"], ax["K"]), dtype=torch.bfloat16).normal_(0.0, 0.125, generator=g)}
    if ax.get("bias"):
        x["bias"] = (torch.randn(ax["N"], generator=g) * 4).bfloat16()  # as large as the products
    return x


def gemm_expected(ax, x):
    bias = x["bias"].double() if "bias" in x else None
    return {"C": F.linear(x["A"].double(), x["B"].double(), bias)}


def gemm_case(bias, **shrink):
    return Case([shrunk({"M": m, "bias": bias}, **shrink) for m in (1, 3, 8)], gemm_inputs, gemm_expected)


def rmsnorm_inputs(ax, g, i):
    scale = [1.0, 30.0, 0.002][i % 3]  # 0.002: eps = 1e-5 is then a visible part of mean(x^2) ~ 4e-6
    return {"hidden_states": (torch.randn(ax["batch_size"], ax["hidden_size"], generator=g) * scale).bfloat16(),
            "weight": (1.0 + 0.5 * torch.randn(ax["hidden_size"], generator=g)).bfloat16()}


def rmsnorm_expected(ax, x):
    return {"output": F.rms_norm(x["hidden_states"].double(), (ax["hidden_size"],), x["weight"].double(), eps=EPS)}


def fused_inputs(ax, g, i):
    x = rmsnorm_inputs(ax, g, i)
    residual = (torch.randn(ax["batch_size"], ax["hidden_size"], generator=g) * [8.0, 240.0, 0.016][i % 3])
    return {"hidden_states": x["hidden_states"], "residual": residual.bfloat16(), "weight": x["weight"]}


def fused_expected(ax, x):
    exact = x["hidden_states"].double() + x["residual"].double()
    rounded = exact.to(torch.bfloat16).double()  # the residual stream is stored in bfloat16
    return {"output": F.rms_norm(rounded, (ax["hidden_size"],), x["weight"].double(), eps=EPS),
            "residual_out": exact}


def yarn_cos_sin_cache(max_position, head_dim=64):
    """The YaRN cache of gpt-oss-120b's rope configuration, rebuilt here in float64 (theta 150000, factor 32,
    beta_fast 32, beta_slow 1, original context 4096, truncate false, mscale 0.1 ln 32 + 1)."""
    theta, factor, original = 150000.0, 32.0, 4096
    dims = torch.arange(0, head_dim, 2, dtype=torch.float64)
    def wavelength_turns(beta):
        return head_dim * math.log(original / (beta * 2 * math.pi)) / (2 * math.log(theta))

    low, high = wavelength_turns(32.0), wavelength_turns(1.0)
    blend = ((dims / 2 - low) / (high - low)).clamp(0, 1)  # 0: original frequency, 1: divided by the factor
    inv_freq = theta ** (-dims / head_dim) * (1 - blend + blend / factor)
    angles = torch.outer(torch.arange(max_position, dtype=torch.float64), inv_freq)
    mscale = 0.1 * math.log(factor) + 1.0
    return (torch.cat([angles.cos(), angles.sin()], dim=-1) * mscale).float()


rope_inputs = rope_inputs_with(yarn_cos_sin_cache)


CASES = {
    "gqa_paged_decode_sink_h64_kv8_d64_ps16": Case(DECODE, decode_inputs, decode_expected_with(0), derived=paged_derived),
    "gqa_paged_decode_sink_swa128_h64_kv8_d64_ps16": Case(DECODE, decode_inputs, decode_expected_with(WINDOW),
                                                          derived=paged_derived),
    "gqa_paged_prefill_causal_sink_h64_kv8_d64_ps16": Case(PREFILL, prefill_inputs, prefill_expected_with(0),
                                                           derived=paged_derived),
    "gqa_paged_prefill_causal_sink_swa128_h64_kv8_d64_ps16": Case(PREFILL, prefill_inputs,
                                                                  prefill_expected_with(WINDOW), derived=paged_derived),
    "moe_routing_softmax_topk4_e128": Case([{"num_tokens": 1}, {"num_tokens": 16}, {"num_tokens": 33}],
                                           routing_inputs, routing_expected),
    "moe_routing_metadata_e128_topk4": Case([{"num_tokens": 1}, {"num_tokens": 9}, {"num_tokens": 40}], metadata_inputs,
                                            metadata_expected, derived=metadata_derived),
    "grouped_gemm_mxfp4_swiglu_e128_n5760_k2880": Case(
        [shrunk({"tokens": t}, N=96, I=48, **MOE_SHRINK) for t in (1, 3, 10)], gate_up_inputs, gate_up_expected,
        derived=moe_derived),
    "grouped_gemm_mxfp4_scatter_e128_n2880_k2880": Case(
        [shrunk({"tokens": t}, N=80, **MOE_SHRINK) for t in (1, 4, 12)], down_inputs, down_expected,
        derived=moe_derived),
    "swiglu_oai_and_mul_i2880": Case([{"num_tokens": 1}, {"num_tokens": 8}, {"num_tokens": 24}], swiglu_inputs,
                                     swiglu_expected),
    "gemm_bias_n5120_k2880": gemm_case(True, N=1000),
    "gemm_bias_n2880_k4096": gemm_case(True, N=1000),
    "gemm_bias_n128_k2880": gemm_case(True),
    # The lm_head shrinks N (every output column is the same dot product; 201088 x 2880 would be ~4.6 GB at
    # the test's peak).
    "gemm_n201088_k2880": gemm_case(False, N=1000),
    "rmsnorm_h2880": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], rmsnorm_inputs, rmsnorm_expected),
    "fused_add_rmsnorm_h2880": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], fused_inputs,
                                    fused_expected),
    # The kernels every model runs, checked as tests/reference_cases/common_kernels.py checks the other models'
    # (one-hot lookup with the vocabulary shrunk, indexed assignment, torch.softmax; set 0 of the softmax at the
    # real 201088).
    "embedding_v201088_h2880": Case([shrunk({"num_tokens": n}, vocab_size=v) for n, v in ((1, 50), (7, 300), (33, 1000))],
                                    embedding_inputs, embedding_expected),
    "paged_kv_append_kv8_d64_ps16": Case(APPEND, append_inputs, append_expected),
    "softmax_temperature_v201088": softmax_case(),
    "rope_yarn_h64_kv8_d64": Case([{"num_tokens": 1, "max_position": 16}, {"num_tokens": 5, "max_position": 300},
                                   {"num_tokens": 9, "max_position": 131072}], rope_inputs, rope_expected),
}
