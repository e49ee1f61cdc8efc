"""Independent formulations for the Qwen3-Next-80B-A3B definitions (TP4, bfloat16).

The gated delta net is checked against the plainest form of its recurrence: a Python loop over tokens and
heads in float64, one rank-one update per token (no chunks, no triangular solve, no vectorised gather);
the chunked prefill reference must agree with it over several chunks and with a carried-in state. The
causal conv1d is checked as an explicit sliding window over [old state, new tokens]; the norms with
F.rms_norm / F.silu; the router by a sort on (logit, expert id).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import Case, shrunk
from .gemma3 import fused_expected as gemma_fused_expected
from .gemma3 import fused_inputs as gemma_fused_inputs
from .gemma3 import norm_expected as gemma_norm_expected
from .gemma3 import norm_inputs as gemma_norm_inputs
from .qwen import (
    DECODE_PS16,
    PREFILL_PS16,
    decode_expected,
    decode_inputs,
    gemm_expected,
    gemm_inputs,
    grouped_expected,
    paged_derived,
    paged_prefill_expected,
    paged_prefill_inputs,
    route_counts,
    routing_expected,
    routing_inputs,
)

TOP_K = 10  # num_experts_per_tok

EPS = 1e-6  # rms_norm_eps of Qwen/Qwen3-Next-80B-A3B-Instruct; also the L2-norm eps of the GDN kernels
SCALE = 1.0 / math.sqrt(128)  # linear_key_head_dim ** -0.5


# --------------------------------------------------------------------------------------------------
# Gated delta net. The recurrence per (sequence, value head), float64:
#   S <- exp(g) S;  S <- S + beta (v - S k) k^T;  o = scale * S q      (S is [V, K], k-last)
# --------------------------------------------------------------------------------------------------

def delta_rule_step(S, q, k, v, g, beta, scale):
    """One token of one head: S [V, K], q/k [K], v [V] (all float64); returns (output [V], new S)."""
    S = math.exp(g) * S
    error = v - S @ k  # what the state predicts for this key, against the value
    S = S + beta * torch.outer(error, k)
    return scale * (S @ q), S


def l2_normalised(x):
    return x / torch.sqrt((x * x).sum(dim=-1, keepdim=True) + EPS)


def gdn_decode_derived(ax):
    return {"num_slots": ax["batch_size"] + ax.get("free_slots", 3)}


def gdn_decode_inputs(ax, g, i):
    B, H, HV, K, V, S = (ax["batch_size"], ax["num_qk_heads"], ax["num_v_heads"], ax["head_k_dim"],
                         ax["head_v_dim"], ax["num_slots"])
    # Set 1 pushes the gates to their ends: a + dt_bias above the softplus threshold 20 (softplus(x) = x)
    # and strongly negative (decay ~ 1), b saturating the sigmoid.
    spread = [1.0, 12.0, 3.0][i % 3]
    return {"q": (torch.randn(B, H, K, generator=g) * 2).bfloat16(),
            "k": (torch.randn(B, H, K, generator=g) * 0.3).bfloat16(),
            "v": torch.randn(B, HV, V, generator=g).bfloat16(),
            "state_pool": torch.randn(S, HV, V, K, generator=g),
            "state_indices": torch.randperm(S, generator=g)[:B].int(),
            "A_log": torch.randn(HV, generator=g) * 0.5,
            "a": (torch.randn(B, HV, generator=g) * spread).bfloat16(),
            "dt_bias": (torch.randn(HV, generator=g) * spread).bfloat16(),
            "b": (torch.randn(B, HV, generator=g) * spread).bfloat16(),
            "scale": torch.tensor(SCALE)}


def gdn_decode_expected(ax, x):
    B, H, HV = ax["batch_size"], ax["num_qk_heads"], ax["num_v_heads"]
    group = HV // H
    out = torch.empty(B, HV, ax["head_v_dim"], dtype=torch.float64)
    new_state = torch.empty(B, HV, ax["head_v_dim"], ax["head_k_dim"], dtype=torch.float64)
    A_log, dt_bias = x["A_log"].double(), x["dt_bias"].double()
    for b in range(B):
        slot = int(x["state_indices"][b])
        for h in range(HV):
            decay_rate = math.exp(float(A_log[h]))
            g = -decay_rate * float(F.softplus(x["a"][b, h].double() + dt_bias[h], beta=1.0, threshold=20.0))
            beta = float(torch.sigmoid(x["b"][b, h].double()))
            q = l2_normalised(x["q"][b, h // group].double())
            k = l2_normalised(x["k"][b, h // group].double())
            out[b, h], new_state[b, h] = delta_rule_step(x["state_pool"][slot, h].double(), q, k,
                                                         x["v"][b, h].double(), g, beta, float(x["scale"]))
    return {"output": out, "new_state": new_state}


def gdn_prefill_derived(ax):
    return {"num_seqs": len(ax["seq_lens"]), "len_cu_seqlens": len(ax["seq_lens"]) + 1,
            "total_tokens": sum(ax["seq_lens"])}


def gdn_prefill_inputs(ax, g, i):
    T, N, H, HV, K, V = (ax["total_tokens"], ax["num_seqs"], ax["num_qk_heads"], ax["num_v_heads"],
                         ax["head_k_dim"], ax["head_v_dim"])
    initial = torch.randn(N, HV, V, K, generator=g)
    initial[0] = 0.0  # a fresh prompt: vLLM zeroes the rows without an initial state
    return {"q": l2_normalised(torch.randn(T, H, K, generator=g)).bfloat16(),
            "k": l2_normalised(torch.randn(T, H, K, generator=g)).bfloat16(),
            "v": torch.randn(T, HV, V, generator=g).bfloat16(),
            # Decays from 0.05 (fast forgetting) to 0.9999 (long memory), update gates over (0, 1).
            "g": -torch.exp(torch.empty(T, HV).uniform_(-9.0, 1.0, generator=g)),
            "beta": torch.rand(T, HV, generator=g),
            "initial_state": initial,
            "cu_seqlens": torch.tensor([0] + list(ax["seq_lens"])).cumsum(0).int(),
            "scale": torch.tensor(SCALE)}


def gdn_prefill_expected(ax, x):
    HV, group = ax["num_v_heads"], ax["num_v_heads"] // ax["num_qk_heads"]
    out = torch.empty(ax["total_tokens"], HV, ax["head_v_dim"], dtype=torch.float64)
    final = torch.empty(ax["num_seqs"], HV, ax["head_v_dim"], ax["head_k_dim"], dtype=torch.float64)
    cu = x["cu_seqlens"].tolist()
    for n in range(ax["num_seqs"]):
        for h in range(HV):
            S = x["initial_state"][n, h].double()
            for t in range(cu[n], cu[n + 1]):
                out[t, h], S = delta_rule_step(S, x["q"][t, h // group].double(), x["k"][t, h // group].double(),
                                               x["v"][t, h].double(), float(x["g"][t, h]), float(x["beta"][t, h]),
                                               float(x["scale"]))
            final[n, h] = S
    return {"output": out, "final_state": final}


# --------------------------------------------------------------------------------------------------
# Causal conv1d (no bias, SiLU), checked with F.conv1d over [history, tokens] per sequence in float64.
# --------------------------------------------------------------------------------------------------

def conv_update_derived(ax):
    return {"num_slots": ax["batch_size"] + ax.get("free_slots", 2)}


def conv_update_inputs(ax, g, i):
    B, C, W, S = ax["batch_size"], ax["dim"], ax["width"], ax["num_slots"]
    return {"x": torch.randn(B, C, generator=g).bfloat16(),
            "conv_state": torch.randn(S, C, W - 1, generator=g).bfloat16(),
            "weight": (torch.randn(C, W, generator=g) * 0.5).bfloat16(),
            "conv_state_indices": torch.randperm(S, generator=g)[:B].int()}


def conv_window(history, tokens, weight):
    """silu(depthwise causal conv) of tokens [L, C] after history [C, W-1], float64; also the last W-1 inputs."""
    u = torch.cat([history.double(), tokens.double().t()], dim=1)  # [C, W - 1 + L]
    y = F.conv1d(u[None], weight.double()[:, None, :], groups=weight.shape[0])[0]  # [C, L] (valid positions)
    return F.silu(y).t(), u[:, -(weight.shape[1] - 1):]


def conv_update_expected(ax, x):
    out = torch.empty(ax["batch_size"], ax["dim"], dtype=torch.float64)
    state = x["conv_state"].double().clone()
    for b, slot in enumerate(x["conv_state_indices"].tolist()):
        y, state[slot] = conv_window(x["conv_state"][slot], x["x"][b:b + 1], x["weight"])
        out[b] = y[0]
    return {"output": out, "new_conv_state": state}


def conv_fwd_derived(ax):
    n = len(ax["seq_lens"])
    return {"batch_size": n, "len_query_start_loc": n + 1, "num_tokens": sum(ax["seq_lens"]),
            "num_slots": n + ax.get("free_slots", 2)}


def conv_fwd_inputs(ax, g, i):
    T, N, C, W, S = ax["num_tokens"], ax["batch_size"], ax["dim"], ax["width"], ax["num_slots"]
    has_initial = torch.tensor([j % 2 == 1 for j in range(N)])  # alternate fresh prompts and continued chunks
    return {"x": torch.randn(T, C, generator=g).bfloat16(),
            "weight": (torch.randn(C, W, generator=g) * 0.5).bfloat16(),
            "conv_states": torch.randn(S, C, W - 1, generator=g).bfloat16(),
            "query_start_loc": torch.tensor([0] + list(ax["seq_lens"])).cumsum(0).int(),
            "cache_indices": torch.randperm(S, generator=g)[:N].int(),
            "has_initial_state": has_initial}


def conv_fwd_expected(ax, x):
    out = torch.empty(ax["num_tokens"], ax["dim"], dtype=torch.float64)
    states = x["conv_states"].double().clone()
    starts = x["query_start_loc"].tolist()
    for b, slot in enumerate(x["cache_indices"].tolist()):
        history = x["conv_states"][slot] if bool(x["has_initial_state"][b]) else torch.zeros(ax["dim"], ax["width"] - 1)
        out[starts[b]:starts[b + 1]], states[slot] = conv_window(history, x["x"][starts[b]:starts[b + 1]], x["weight"])
    return {"output": out, "new_conv_states": states}


# --------------------------------------------------------------------------------------------------
# Gated RMSNorm: F.rms_norm per head, times F.silu(z), float64. Heads of very different scales.
# --------------------------------------------------------------------------------------------------

def gated_norm_inputs(ax, g, i):
    T, H, D = ax["num_tokens"], ax["num_heads"], ax["head_dim"]
    head_scale = torch.logspace(-3, 1.5, H)[torch.randperm(H, generator=g)].view(1, H, 1)
    return {"x": (torch.randn(T, H, D, generator=g) * head_scale).bfloat16(),
            "z": (torch.randn(T, H, D, generator=g) * [1.0, 4.0, 0.3][i % 3]).bfloat16(),
            "weight": (1.0 + 0.5 * torch.randn(D, generator=g)).bfloat16()}


def gated_norm_expected(ax, x):
    normed = F.rms_norm(x["x"].double(), (ax["head_dim"],), x["weight"].double(), eps=EPS)
    return {"output": normed * F.silu(x["z"].double())}


# --------------------------------------------------------------------------------------------------
# Output gate of the attention: x * sigmoid(gate) with torch.sigmoid in float64.
# --------------------------------------------------------------------------------------------------

def gate_inputs(ax, g, i):
    shape = (ax["num_tokens"], ax["num_heads"], ax["head_dim"])
    return {"attn_output": torch.randn(shape, generator=g).bfloat16(),
            "gate": (torch.randn(shape, generator=g) * [1.0, 8.0, 0.2][i % 3]).bfloat16()}


def gate_expected(ax, x):
    return {"output": x["attn_output"].double() * torch.sigmoid(x["gate"].double())}


# --------------------------------------------------------------------------------------------------
# Expert GEMMs over 512 experts, 10 distinct experts per token (qwen.py's row-by-row check; its input
# maker routes 8 per token). Unused experts' weights are a constant, so reading the wrong expert shows.
# --------------------------------------------------------------------------------------------------

def grouped10_derived(ax):
    return {"total_tokens": ax["tokens"] * TOP_K, "len_m_indptr": ax["num_experts"] + 1}


def grouped10_inputs(ax, g, i):
    E, N, K, T = ax["num_experts"], ax["N"], ax["K"], ax["total_tokens"]
    counts = route_counts(ax["tokens"], E, TOP_K, g)
    m_indptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)]).int()
    B = torch.full((E, N, K), 0.75, dtype=torch.bfloat16)
    for e in counts.nonzero().flatten().tolist():
        B[e].normal_(0.0, 1.0 / 16, generator=g)
    return {"A": torch.randn(T, K, generator=g).bfloat16(), "B": B, "m_indptr": m_indptr}


def gemm_case():
    return Case([{"M": 1}, {"M": 3}, {"M": 8}], gemm_inputs, gemm_expected)


# --------------------------------------------------------------------------------------------------
# GDN prefill preparation (split, L2 norms, gates) and the shared expert's gate, float64.
# --------------------------------------------------------------------------------------------------

def prep_inputs(ax, g, i):
    T, HV = ax["num_tokens"], ax["num_v_heads"]
    spread = [1.0, 12.0, 3.0][i % 3]  # 12: a + dt_bias beyond the softplus threshold, saturated sigmoids
    x = torch.randn(T, ax["conv_dim"], generator=g) * torch.logspace(-2, 1, ax["conv_dim"])[
        torch.randperm(ax["conv_dim"], generator=g)]
    return {"mixed_qkv": x.bfloat16(), "a": (torch.randn(T, HV, generator=g) * spread).bfloat16(),
            "b": (torch.randn(T, HV, generator=g) * spread).bfloat16(), "A_log": torch.randn(HV, generator=g) * 0.5,
            "dt_bias": (torch.randn(HV, generator=g) * spread).bfloat16()}


def prep_expected(ax, x):
    T, H, HV, D = ax["num_tokens"], ax["num_qk_heads"], ax["num_v_heads"], ax["head_dim"]
    q, k, v = x["mixed_qkv"].double().split([H * D, H * D, HV * D], dim=-1)
    g = -torch.exp(x["A_log"].double()) * F.softplus(x["a"].double() + x["dt_bias"].double(), beta=1.0, threshold=20.0)
    return {"q": l2_normalised(q.reshape(T, H, D)), "k": l2_normalised(k.reshape(T, H, D)), "v": v.reshape(T, HV, D),
            "g": g, "beta": torch.sigmoid(x["b"].double())}


def shared_gate_inputs(ax, g, i):
    T, H = ax["num_tokens"], ax["hidden_size"]
    return {"routed_output": torch.randn(T, H, generator=g).bfloat16(),
            "shared_output": (torch.randn(T, H, generator=g) * 3).bfloat16(),
            "shared_gate_logit": (torch.randn(T, generator=g) * [1.0, 8.0, 0.1][i % 3]).bfloat16()}


def shared_gate_expected(ax, x):
    return {"output": x["routed_output"].double()
            + torch.sigmoid(x["shared_gate_logit"].double())[:, None] * x["shared_output"].double()}


# --------------------------------------------------------------------------------------------------
# q/k zero-centred norm + partial NeoX RoPE + gate split: F.rms_norm, the kernel's bfloat16 round trip,
# then the rotation of the first 64 dims as a complex multiplication, float64.
# --------------------------------------------------------------------------------------------------

def qk_rope_inputs(ax, g, i):
    T, P, D, R = ax["num_tokens"], ax["max_position"], ax["head_dim"], ax["rotary_dim"]
    positions = torch.randint(0, P, (T,), generator=g)
    positions[0] = P - 1
    inv_freq = 1.0 / 1e7 ** (torch.arange(0, R, 2, dtype=torch.float64) / R)
    angles = torch.outer(torch.arange(P, dtype=torch.float64), inv_freq)
    scale = [1.0, 20.0, 0.01][i % 3]
    return {"q_gate": (torch.randn(T, ax["num_qo_heads"], ax["q_gate_dim"], generator=g) * scale).bfloat16(),
            "k": (torch.randn(T, ax["num_kv_heads"], D, generator=g) * scale).bfloat16(),
            "q_weight": (0.5 * torch.randn(D, generator=g)).bfloat16(),
            "k_weight": (0.5 * torch.randn(D, generator=g)).bfloat16(),
            "cos_sin_cache": torch.cat([angles.cos(), angles.sin()], dim=-1).bfloat16(), "positions": positions}


def qk_rope_expected(ax, x):
    D, half = ax["head_dim"], ax["rotary_dim"] // 2
    rows = x["cos_sin_cache"].double()[x["positions"]]
    rot = torch.complex(rows[:, :half], rows[:, half:]).unsqueeze(1)  # cos + i sin per token

    def prep(t, w):
        t = F.rms_norm(t.double(), (D,), 1.0 + w.double(), eps=EPS).to(torch.bfloat16).double()
        z = torch.complex(t[..., :half], t[..., half:2 * half]) * rot
        return torch.cat([z.real, z.imag, t[..., 2 * half:]], dim=-1)

    return {"q_out": prep(x["q_gate"][..., :D], x["q_weight"]), "k_out": prep(x["k"], x["k_weight"]),
            "gate_out": x["q_gate"][..., D:].double()}


# Decode: a single sequence, a batch in a pool with free slots, a larger batch; the heads stay real.
GDN_DECODE = [{"batch_size": 1}, {"batch_size": 3, "free_slots": 5}, {"batch_size": 6}]
# Prefill: one token, a prompt crossing a chunk boundary (64), several ragged sequences (one of 130
# tokens: three chunks, the last partial), with and without an initial state. The value and key head
# dims are shrunk to 32 in the longer sets (every head is the same recurrence at any width; the chunk
# boundaries, the GVA head mapping and the carried state are what is checked).
GDN_PREFILL = [{"seq_lens": (1,)},
               shrunk({"seq_lens": (70,)}, head_k_dim=32, head_v_dim=32),
               shrunk({"seq_lens": (5, 130, 64)}, head_k_dim=32, head_v_dim=32)]

# Conv: the real channel count (2048 is small); sequences shorter than the window (1, 2 tokens: the new
# state keeps part of the history), exactly the window, and longer; fresh and continued sequences.
CONV_UPDATE = [{"batch_size": 1}, {"batch_size": 3, "free_slots": 4}, {"batch_size": 5}]
CONV_FWD = [{"seq_lens": (1,)}, {"seq_lens": (2, 5), "free_slots": 3}, {"seq_lens": (4, 1, 9, 3)}]

CASES = {
    "qk_gemma_rmsnorm_partial_rope_gate_h4_kv1_d256_r64": Case(
        [{"num_tokens": 1, "max_position": 16}, {"num_tokens": 5, "max_position": 300},
         {"num_tokens": 9, "max_position": 4096}], qk_rope_inputs, qk_rope_expected),
    "gdn_post_conv_prep_qk4_v8_d128": Case([{"num_tokens": 1}, {"num_tokens": 5}, {"num_tokens": 33}], prep_inputs,
                                           prep_expected),
    "shared_expert_sigmoid_gate_add_h2048": Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 9}],
                                                 shared_gate_inputs, shared_gate_expected),
    # Zero-centred (1 + w) RMSNorm, gemma3.py's F.rms_norm checks (eps 1e-6 there and here).
    "gemma_rmsnorm_h2048": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], gemma_norm_inputs,
                                gemma_norm_expected),
    "gemma_fused_add_rmsnorm_h2048": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}],
                                          gemma_fused_inputs, gemma_fused_expected),
    "gemm_n3072_k2048": gemm_case(),
    "gemm_n16_k2048": gemm_case(),
    "gemm_n2048_k1024": gemm_case(),
    "gemm_n2560_k2048": gemm_case(),
    "gemm_n512_k2048": gemm_case(),
    "gemm_n1_k2048": gemm_case(),
    "gemm_n256_k2048": gemm_case(),
    "gemm_n2048_k128": gemm_case(),
    # lm_head shard: set 0 at its real size (37984 x 2048: the one wide GEMM kept whole, as the float64
    # formulation works in 16384-row chunks, which only a size past 16384 crosses), sets 1-2 with N shrunk
    # (the same dot product per column).
    "gemm_n37984_k2048": Case([{"M": 1}, shrunk({"M": 2}, N=1000), shrunk({"M": 5}, N=1000)], gemm_inputs,
                              gemm_expected),
    # N shrunk (each output column is the same per-expert dot product); all 512 segments and the real K stay.
    "grouped_gemm_e512_n256_k2048": Case([shrunk({"tokens": t}, N=16) for t in (1, 3, 10)], grouped10_inputs,
                                         grouped_expected, derived=grouped10_derived),
    "grouped_gemm_e512_n2048_k128": Case([shrunk({"tokens": t}, N=128) for t in (1, 4, 12)], grouped10_inputs,
                                         grouped_expected, derived=grouped10_derived),
    "gqa_paged_decode_h4_kv1_d256_ps16": Case(DECODE_PS16, decode_inputs, decode_expected, derived=paged_derived),
    "gqa_paged_prefill_causal_h4_kv1_d256_ps16": Case(PREFILL_PS16, paged_prefill_inputs, paged_prefill_expected,
                                                      derived=paged_derived),
    "sigmoid_gate_mul_h4_d256": Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 9}], gate_inputs,
                                     gate_expected),
    "causal_conv1d_update_c2048_k4": Case(CONV_UPDATE, conv_update_inputs, conv_update_expected,
                                          derived=conv_update_derived),
    "causal_conv1d_fwd_c2048_k4": Case(CONV_FWD, conv_fwd_inputs, conv_fwd_expected, derived=conv_fwd_derived),
    "rmsnorm_gated_silu_h8_d128": Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 9}], gated_norm_inputs,
                                       gated_norm_expected),
    # 512 experts, top-10: ties (set 1's coarse logits) and peaked rows (set 2) at the real sizes.
    "moe_routing_softmax_topk10_e512": Case([{"num_tokens": 1}, {"num_tokens": 16}, {"num_tokens": 33}],
                                            routing_inputs, routing_expected),
    "gdn_decode_qk4_v8_d128": Case(GDN_DECODE, gdn_decode_inputs, gdn_decode_expected, derived=gdn_decode_derived),
    "gdn_prefill_qk4_v8_d128": Case(GDN_PREFILL, gdn_prefill_inputs, gdn_prefill_expected,
                                    derived=gdn_prefill_derived),
}


# --------------------------------------------------------------------------------------------------
# GDN multi-token (speculative verify) step, checked in chunk form (the WY representation of chunked
# prefill kernels) in float64: within one sequence's T tokens, with G_t = exp(g_1 + ... + g_t),
#   S_t = G_t S_0 + sum_{s<=t} (G_t / G_s) u_s k_s^T,  u_s = beta_s (v_s - G_s S_0 k_s - sum_{r<s} (G_s / G_r)(k_r . k_s) u_r),
# so U solves the unit lower-triangular system (I + A) U = beta (V - G S_0 K) (torch.linalg.solve_triangular),
# and every output and state is then a closed form: no token-by-token recurrence.
# --------------------------------------------------------------------------------------------------

def gdn_mtp_derived(ax):
    return {"num_slots": ax["batch_size"] + 3}


def gdn_mtp_inputs(ax, g, i):
    B, T, H, HV, K, V, S = (ax["batch_size"], ax["seq_len"], ax["num_qk_heads"], ax["num_v_heads"], ax["head_k_dim"],
                            ax["head_v_dim"], ax["num_slots"])
    spread = [1.0, 12.0, 3.0][i % 3]  # set 1: gates at their ends (softplus threshold, saturated sigmoid)
    return {"q": (torch.randn(B, T, H, K, generator=g) * 2).bfloat16(),
            "k": (torch.randn(B, T, H, K, generator=g) * 0.3).bfloat16(),
            "v": torch.randn(B, T, HV, V, generator=g).bfloat16(),
            "state_pool": torch.randn(S, HV, V, K, generator=g),
            "state_indices": torch.randperm(S, generator=g)[:B].int(),
            "A_log": torch.randn(HV, generator=g) * 0.5,
            "a": (torch.randn(B, T, HV, generator=g) * spread).bfloat16(),
            "dt_bias": (torch.randn(HV, generator=g) * spread).bfloat16(),
            "b": (torch.randn(B, T, HV, generator=g) * spread).bfloat16(),
            "scale": torch.tensor(SCALE)}


def gdn_mtp_expected(ax, x):
    B, T, H, HV = ax["batch_size"], ax["seq_len"], ax["num_qk_heads"], ax["num_v_heads"]
    group = HV // H
    out = torch.empty(B, T, HV, ax["head_v_dim"], dtype=torch.float64)
    states = torch.empty(B, T, HV, ax["head_v_dim"], ax["head_k_dim"], dtype=torch.float64)
    lower = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)
    for b in range(B):
        S0 = x["state_pool"][int(x["state_indices"][b])].double()  # [HV, V, K]
        for h in range(HV):
            sp = F.softplus(x["a"][b, :, h].double() + x["dt_bias"][h].double(), beta=1.0, threshold=20.0)
            cum = torch.cumsum(-math.exp(float(x["A_log"][h])) * sp, dim=0)  # log G_t, [T]
            beta = torch.sigmoid(x["b"][b, :, h].double())
            q = l2_normalised(x["q"][b, :, h // group].double()) * float(x["scale"])  # [T, K]
            k = l2_normalised(x["k"][b, :, h // group].double())
            ratio = torch.exp(cum[:, None] - cum[None, :])  # G_t / G_s
            A = torch.where(lower, beta[:, None] * ratio * (k @ k.T), torch.zeros(()))
            rhs = beta[:, None] * (x["v"][b, :, h].double() - torch.exp(cum)[:, None] * (k @ S0[h].T))  # [T, V]
            U = torch.linalg.solve_triangular(torch.eye(T, dtype=torch.float64) + A, rhs, upper=False, unitriangular=True)
            causal = torch.tril(ratio)  # [t, s]: G_t / G_s for s <= t
            out[b, :, h] = torch.exp(cum)[:, None] * (q @ S0[h].T) + (causal * (q @ k.T)) @ U
            states[b, :, h] = (torch.exp(cum)[:, None, None] * S0[h][None]
                               + torch.einsum("ts,sv,sk->tvk", causal, U, k))
    return {"output": out, "intermediate_states": states}


GDN_MTP = [{"batch_size": 1, "seq_len": 2}, {"batch_size": 3, "seq_len": 4}, {"batch_size": 2, "seq_len": 7}]
CASES["gdn_mtp_qk4_v8_d128"] = Case(GDN_MTP, gdn_mtp_inputs, gdn_mtp_expected, derived=gdn_mtp_derived)
# TP2 / TP1: the same reference at more heads (the GVA grouping is the same, 2 value heads per key head), checked
# once at the real head dims above; here at head dims 32, so that they cost little.
CASES.update({f"gdn_mtp_qk{qk}_v{v}_d128": Case([shrunk(s, head_k_dim=32, head_v_dim=32) for s in GDN_MTP], gdn_mtp_inputs,
                                                gdn_mtp_expected, derived=gdn_mtp_derived)
              for qk, v in ((8, 16), (16, 32))})
