"""Independent formulations for the fused FP8 block-scale MoE definitions beside DeepSeek-V3's EP8 one
(deepseek.py): Kimi-K2 (DeepSeek routing with one group) at EP1 and EP8, and the softmax-renormalised
top-k routing of Qwen3-30B-A3B, Qwen3-235B-A22B and the Qwen3-Next-shaped draft.

The routing is checked one token at a time in float64 with sorted(): Kimi-K2's with deepseek.route_token
(n_group 1, topk_group 1, x 2.827); the renormalised softmax the other way round from the references
(they take the softmax over all experts and divide the picks by their sum; here the top-k LOGITS are
picked and their own softmax taken, as the TRT-LLM kernel's Renormalize routing orders it). The experts are
deepseek.py's block-scaled matrix-vector products in float64 (no dequantised weight matrix).

Sizes: hidden 256 and intermediate 256 (two 128-blocks of every scale, four of gemm1's rows): the block
indexing, the up/gate halves and the routing over the real expert counts are the same checks as at the
real widths, which hold 0.4-17 GB of FP8 weights.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import Case, fp8, shrunk, uniform
from .deepseek import _block_scaled_matvecs, route_token

SMALL = {"hidden_size": 256, "num_hidden_blocks": 2, "intermediate_size": 256, "num_intermediate_blocks": 2,
         "gemm1_out_size": 512, "num_gemm1_out_blocks": 4}
KIMI_SCALING = 2.827  # routed_scaling_factor, moonshotai/Kimi-K2-Instruct config.json


def _active(n_local: int) -> list[int]:
    """Local experts that hold weights and can be picked: 12, spread over the local range (more than any
    top-k here, so every pick of a token whose other logits are -8 lands on one of them)."""
    return list(range(1, n_local, max(1, n_local // 12)))[:12]


def _weights(ax, n_local: int, g) -> dict:
    I2, H, I = ax["gemm1_out_size"], ax["hidden_size"], ax["intermediate_size"]
    w1 = torch.zeros(n_local, I2, H, dtype=torch.float8_e4m3fn)
    w2 = torch.zeros(n_local, H, I, dtype=torch.float8_e4m3fn)
    for e in _active(n_local):
        w1[e] = fp8(torch.randn(I2, H, generator=g), 64)
        w2[e] = fp8(torch.randn(H, I, generator=g), 64)
    return {"gemm1_weights": w1,
            "gemm1_weights_scale": uniform((n_local, I2 // 128, H // 128), 0.5, 2.0, g) / (64 * math.sqrt(H)),
            "gemm2_weights": w2,
            "gemm2_weights_scale": uniform((n_local, H // 128, I // 128), 0.5, 2.0, g) / (64 * math.sqrt(I))}


def _hidden(ax, g) -> dict:
    T, H = ax["seq_len"], ax["hidden_size"]
    return {"hidden_states": fp8(torch.randn(T, H, generator=g), 64),
            "hidden_states_scale": uniform((H // 128, T), 0.25, 4.0, g) / 64}


def kimi_inputs(sets):
    """sets[i] = (local_expert_offset, away): away tokens pick 8 experts outside the local range."""
    def make(ax, g, i):
        T, E, L = ax["seq_len"], ax["num_experts"], ax["num_local_experts"]
        offset, away = sets[i]
        logits = torch.randn(T, E, generator=g) * 2.0
        active = [offset + e for e in _active(L)]
        logits[:, [offset + e for e in range(L) if offset + e not in active]] = -8.0
        for t in away:
            logits[t, [(offset + L + j) % E for j in range(8)]] += 10.0  # 8 sure picks on the next rank
        bias = torch.randn(E, generator=g) * 0.05
        if i == 2:  # coarse logits and no bias: exact ties, the lower id must win
            logits, bias = torch.round(logits * 2) / 2, torch.zeros(E)
        x = {"routing_logits": logits, "routing_bias": bias, **_hidden(ax, g), **_weights(ax, L, g),
             "local_expert_offset": offset if i == 0 else torch.tensor(offset, dtype=torch.int32),
             "routed_scaling_factor": KIMI_SCALING if i != 1 else torch.tensor(KIMI_SCALING, dtype=torch.float32)}
        order = ["routing_logits", "routing_bias", "hidden_states", "hidden_states_scale", "gemm1_weights",
                 "gemm1_weights_scale", "gemm2_weights", "gemm2_weights_scale", "local_expert_offset",
                 "routed_scaling_factor"]
        return {k: x[k] for k in order}
    return make


def _experts(ax, x, picks_of, offset: int, n_local: int) -> dict:
    """output[t] = sum over t's local picks (e, w) of w * W2[e] (silu(gate) * up), float64."""
    T, H, I = ax["seq_len"], ax["hidden_size"], ax["intermediate_size"]
    hs = x["hidden_states"].double() * x["hidden_states_scale"].double().T.repeat_interleave(128, dim=1)
    by_expert: dict = {}
    for t in range(T):
        for e, w in zip(*picks_of(t)):
            if 0 <= e - offset < n_local:
                by_expert.setdefault(e - offset, []).append((t, w))
    out = torch.zeros(T, H, dtype=torch.float64)
    for le, rows in by_expert.items():
        toks = [t for t, _ in rows]
        gate_up = _block_scaled_matvecs(x["gemm1_weights"][le], x["gemm1_weights_scale"][le], hs[toks])
        act = F.silu(gate_up[:, I:]) * gate_up[:, :I]  # rows [0, I) up, [I, 2I) gate
        y = _block_scaled_matvecs(x["gemm2_weights"][le], x["gemm2_weights_scale"][le], act)
        for (t, w), row in zip(rows, y):
            out[t] += w * row
    return {"output": out}


def kimi_expected(ax, x):
    scaling = float(x["routed_scaling_factor"])
    return _experts(ax, x, lambda t: route_token(x["routing_logits"][t], x["routing_bias"], n_group=1, topk_group=1,
                                                 scaling=scaling),
                    int(x["local_expert_offset"]), ax["num_local_experts"])


def renorm_inputs(ax, g, i):
    T, E = ax["seq_len"], ax["num_experts"]
    logits = torch.randn(T, E, generator=g) * 2.0
    logits[:, [e for e in range(E) if e not in _active(E)]] = -8.0
    if i == 2:  # coarse logits: exact ties (bfloat16 logits tie often), the lower id must win
        logits = torch.round(logits)
    return {"routing_logits": logits.bfloat16(), **_hidden(ax, g), **_weights(ax, E, g)}


def renorm_expected_for(top_k: int):
    def expected(ax, x):
        def picks(t):
            row = x["routing_logits"][t].double().tolist()
            ids = sorted(range(len(row)), key=lambda e: (-row[e], e))[:top_k]
            top = torch.tensor([row[e] for e in ids], dtype=torch.float64)
            return ids, torch.softmax(top, dim=0).tolist()  # softmax of the k picked logits
        return _experts(ax, x, picks, 0, ax["num_experts"])
    return expected


KIMI_E48_SETS = [(0, []), (96, [1]), (336, [0, 3])]  # ranks 0, 2 and 7 of 8; tokens with no local pick

CASES = {
    "moe_fp8_block_scale_ds_routing_topk8_ng1_kg1_e384_h7168_i2048": Case(
        [shrunk({"seq_len": t}, **SMALL) for t in (1, 3, 5)], kimi_inputs([(0, [])] * 3), kimi_expected),
    "moe_fp8_block_scale_ds_routing_topk8_ng1_kg1_e48_h7168_i2048": Case(
        [shrunk({"seq_len": t}, **SMALL) for t in (1, 3, 4)], kimi_inputs(KIMI_E48_SETS), kimi_expected),
    **{name: Case([shrunk({"seq_len": t}, **SMALL) for t in (1, 3, 5)], renorm_inputs, renorm_expected_for(k))
       for name, k in (("moe_fp8_block_scale_renorm_topk8_e128_h2048_i768", 8),
                       ("moe_fp8_block_scale_renorm_topk8_e128_h4096_i1536", 8),
                       ("moe_fp8_block_scale_renorm_topk10_e128_h2048_i512", 10))},
}
