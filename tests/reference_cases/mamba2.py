"""Independent formulations for the definitions of NVIDIA-Nemotron-Nano-9B-v2 (TP1, bfloat16): its Mamba-2 kernels,
and its norms, GEMMs and squared ReLU (the norms and GEMMs checked as Llama's are, same eps 1e-5).

In float64, written the other way round from the references: the state-space scan as the plain per-token
recurrence (the reference of the prefill scan uses the chunked SSD form; the decode update is the same
recurrence, one step), softplus and silu from torch.nn.functional, the causal convolution as F.conv1d with
the history as left padding, the gated group norm as F.rms_norm over each group.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .common import Case, shrunk
from .common_kernels import append_expected, append_inputs
from .gemma3 import decode_expected_with, decode_inputs, derived, prefill_expected_with, prefill_inputs
from .llama import fused_expected, fused_inputs, gemm_case, rmsnorm_expected, rmsnorm_inputs

EPS = 1e-5  # rms_norm_eps of nvidia/NVIDIA-Nemotron-Nano-9B-v2


def distinct_slots(batch, slots, g):
    return torch.randperm(slots, generator=g)[:batch].int()


def ssm_params(ax, g):
    """A (float32, negative), D and dt_bias (bfloat16) per head, in the ranges trained models have."""
    H = ax["nheads"]
    return {"A": -(1.0 + 15.0 * torch.rand(H, generator=g)),
            "D": (0.5 + torch.rand(H, generator=g)).bfloat16(),
            "dt_bias": (-6.0 + 4.0 * torch.rand(H, generator=g)).bfloat16()}


def step(h, x, dt, A, B, C, D, dt_bias):
    """One token of the recurrence in float64. h [H, P, N], x [H, P], dt [H], B/C [G, N] -> (y [H, P], h')."""
    H, G = x.shape[0], B.shape[0]
    group = torch.arange(H) // (H // G)  # head -> group
    delta = F.softplus(dt.double() + dt_bias.double(), beta=1.0, threshold=20.0)  # [H]
    decay = torch.exp(A.double() * delta)
    Bh, Ch = B.double()[group], C.double()[group]  # [H, N]
    h = decay[:, None, None] * h + delta[:, None, None] * x.double()[:, :, None] * Bh[:, None, :]
    y = torch.einsum("hpn,hn->hp", h, Ch) + D.double()[:, None] * x.double()
    return y, h


# --------------------------------------------------------------------------------------------------
# Selective-state update (decode): one step of the recurrence per sequence, on its slot of the cache.
# --------------------------------------------------------------------------------------------------

def large_steps(dt, i):
    """dt with, in set 1, heads whose dt + dt_bias (dt_bias in [-6, -2]) passes softplus's threshold of 20: 30
    (softplus(v) and v agree to float32 precision there) and 100, where exp(v) overflows float32, so that a
    reference without the pass-through branch (log1p(exp(v)) for every v) returns inf and fails."""
    if i == 1:
        dt = dt.clone()
        dt[0, :2] = torch.tensor([30.0, 100.0])
    return dt


def ssu_inputs(ax, g, i):
    B_, S, H, P, N, G = ax["batch_size"], ax["num_slots"], ax["nheads"], ax["head_dim"], ax["dstate"], ax["ngroups"]
    p = ssm_params(ax, g)
    dt_scale = [1.0, 3.0, 1.0][i % 3]  # 3: some heads with a large step
    return {"state": torch.randn(S, H, P, N, generator=g),  # float32: the model's SSM cache dtype
            "x": torch.randn(B_, H, P, generator=g).bfloat16(),
            "dt": large_steps(torch.randn(B_, H, generator=g) * dt_scale, i).bfloat16(),
            "A": p["A"],
            "B": torch.randn(B_, G, N, generator=g).bfloat16(),
            "C": torch.randn(B_, G, N, generator=g).bfloat16(),
            "D": p["D"], "dt_bias": p["dt_bias"],
            "state_batch_indices": distinct_slots(B_, S, g)}


def ssu_expected(ax, x):
    new_state = x["state"].double().clone()
    out = torch.empty(ax["batch_size"], ax["nheads"], ax["head_dim"], dtype=torch.float64)
    for b, slot in enumerate(x["state_batch_indices"].tolist()):
        out[b], new_state[slot] = step(x["state"][slot].double(), x["x"][b], x["dt"][b], x["A"], x["B"][b], x["C"][b],
                                       x["D"], x["dt_bias"])
    return {"output": out, "new_state": new_state}


# --------------------------------------------------------------------------------------------------
# SSD chunked scan (prefill): the per-token recurrence over every sequence.
# --------------------------------------------------------------------------------------------------

def lengths_to_indptr(lengths):
    return torch.tensor([0] + list(torch.tensor(lengths).cumsum(0).tolist()), dtype=torch.int32)


SSD_LENGTHS = [[7, 3], [300], [1, 260, 40]]  # 300 and 260 cross the reference's 256-token chunk boundary


def ssd_inputs(ax, g, i):
    T, Bn, H, P, N, G = ax["num_tokens"], ax["batch_size"], ax["nheads"], ax["head_dim"], ax["dstate"], ax["ngroups"]
    p = ssm_params(ax, g)
    init = torch.randn(Bn, H, P, N, generator=g)
    init[0] = 0.0  # a fresh prompt starts from zeros
    return {"x": torch.randn(T, H, P, generator=g).bfloat16(),
            "dt": large_steps(torch.randn(T, H, generator=g), i).bfloat16(),
            "A": p["A"],
            "B": torch.randn(T, G, N, generator=g).bfloat16(),
            "C": torch.randn(T, G, N, generator=g).bfloat16(),
            "D": p["D"], "dt_bias": p["dt_bias"],
            "cu_seqlens": lengths_to_indptr(SSD_LENGTHS[i]),
            "initial_states": init}  # float32: the model's SSM cache dtype


def ssd_expected(ax, x):
    out = torch.empty(ax["num_tokens"], ax["nheads"], ax["head_dim"], dtype=torch.float64)
    final = torch.empty(ax["batch_size"], ax["nheads"], ax["head_dim"], ax["dstate"], dtype=torch.float64)
    bounds = x["cu_seqlens"].tolist()
    for b in range(ax["batch_size"]):
        h = x["initial_states"][b].double()
        for t in range(bounds[b], bounds[b + 1]):
            out[t], h = step(h, x["x"][t], x["dt"][t], x["A"], x["B"][t], x["C"][t], x["D"], x["dt_bias"])
        final[b] = h
    return {"output": out, "final_states": final}


def ssd_sizes(i, **smaller):
    lengths = SSD_LENGTHS[i]
    return shrunk({"num_tokens": sum(lengths), "batch_size": len(lengths), "len_cu_seqlens": len(lengths) + 1}, **smaller)


# --------------------------------------------------------------------------------------------------
# Causal conv1d: F.conv1d (cross-correlation, depthwise) over the history followed by the new inputs.
# --------------------------------------------------------------------------------------------------

def conv_weights(ax, g):
    C, W = ax["dim"], ax["width"]
    return (torch.randn(C, W, generator=g) / 2).bfloat16(), (torch.randn(C, generator=g) / 4).bfloat16()


def conv_silu(history_and_inputs, weight, bias):
    """[dim, width - 1 + L] float64 -> silu(depthwise conv) [L, dim]."""
    y = F.conv1d(history_and_inputs[None], weight.double()[:, None, :], bias.double(), groups=weight.shape[0])
    return F.silu(y[0]).t()


def conv_update_inputs(ax, g, i):
    B_, S, C = ax["batch_size"], ax["num_slots"], ax["dim"]
    w, b = conv_weights(ax, g)
    return {"x": torch.randn(B_, C, generator=g).bfloat16(),
            "conv_state": torch.randn(S, C, ax["state_len"], generator=g).bfloat16(),
            "weight": w, "bias": b,
            "conv_state_indices": distinct_slots(B_, S, g)}


def conv_update_expected(ax, x):
    new_state = x["conv_state"].double().clone()
    out = torch.empty(ax["batch_size"], ax["dim"], dtype=torch.float64)
    for b, slot in enumerate(x["conv_state_indices"].tolist()):
        u = torch.cat([x["conv_state"][slot].double(), x["x"][b].double()[:, None]], dim=1)
        out[b] = conv_silu(u, x["weight"], x["bias"])[0]
        new_state[slot] = u[:, 1:]
    return {"output": out, "new_conv_state": new_state}


CONV_LENGTHS = [[5], [1, 2, 9], [4, 1, 30, 3]]  # 1 and 2 tokens: the new state keeps part of the history


def conv_fwd_inputs(ax, g, i):
    T, Bn, S, C = ax["num_tokens"], ax["batch_size"], ax["num_slots"], ax["dim"]
    w, b = conv_weights(ax, g)
    has = torch.rand(Bn, generator=g) < 0.5
    has[0] = i != 1  # set 1: the first sequence is a fresh prompt; the others start with one continuing
    return {"x": torch.randn(T, C, generator=g).bfloat16(), "weight": w, "bias": b,
            "conv_states": torch.randn(S, C, ax["state_len"], generator=g).bfloat16(),
            "query_start_loc": lengths_to_indptr(CONV_LENGTHS[i]),
            "cache_indices": distinct_slots(Bn, S, g),
            "has_initial_state": has}


def conv_fwd_expected(ax, x):
    new_states = x["conv_states"].double().clone()
    out = torch.empty(ax["num_tokens"], ax["dim"], dtype=torch.float64)
    bounds = x["query_start_loc"].tolist()
    for b, slot in enumerate(x["cache_indices"].tolist()):
        history = x["conv_states"][slot].double()
        if not bool(x["has_initial_state"][b]):
            history = torch.zeros_like(history)
        u = torch.cat([history, x["x"][bounds[b]:bounds[b + 1]].double().t()], dim=1)
        out[bounds[b]:bounds[b + 1]] = conv_silu(u, x["weight"], x["bias"])
        new_states[slot] = u[:, -ax["state_len"]:]
    return {"output": out, "new_conv_states": new_states}


def conv_fwd_sizes(i, slots):
    lengths = CONV_LENGTHS[i]
    return {"num_tokens": sum(lengths), "batch_size": len(lengths), "len_query_start_loc": len(lengths) + 1,
            "num_slots": slots}


# --------------------------------------------------------------------------------------------------
# Gated grouped RMSNorm: F.rms_norm over each group of x * silu(z).
# --------------------------------------------------------------------------------------------------

def gated_norm_inputs(ax, g, i):
    T, H = ax["num_tokens"], ax["hidden_size"]
    scale = [1.0, 30.0, 0.01][i % 3]  # 0.01: eps is a visible part of the mean square
    return {"x": (torch.randn(T, H, generator=g) * scale).bfloat16(),
            "z": (torch.randn(T, H, generator=g) * 2).bfloat16(),
            "weight": (0.5 + torch.rand(H, generator=g)).bfloat16()}


def gated_norm_expected(ax, x):
    T, H, G = ax["num_tokens"], ax["hidden_size"], ax["ngroups"]
    y = (x["x"].double() * F.silu(x["z"].double())).reshape(T, G, H // G)
    return {"output": F.rms_norm(y, (H // G,), eps=EPS).reshape(T, H) * x["weight"].double()}


def relu2_inputs(ax, g, i):
    scale = [1.0, 8.0, 0.1][i % 3]
    return {"input": (torch.randn(ax["num_tokens"], ax["intermediate_size"], generator=g) * scale).bfloat16()}


def relu2_expected(ax, x):
    return {"output": F.relu(x["input"].double()).pow(2)}


ROWS = [{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}]

CASES = {
    "rmsnorm_h4480": Case(ROWS, rmsnorm_inputs, rmsnorm_expected),
    # The KV append checked as the 16-token-page ones are (common_kernels), on pools of 672-token pages.
    "paged_kv_append_kv8_d128_ps672": Case([{"num_tokens": 1, "num_pages": 1}, {"num_tokens": 20, "num_pages": 2},
                                            {"num_tokens": 40, "num_pages": 3}], append_inputs, append_expected),
    # Attention checked as Gemma's global layers are (SDPA with a dense causal mask), with 40 query heads over 8; the
    # pages shrunk to 16 tokens in two sets (the reference reads the page size from the cache's shape), the real 672
    # in the third.
    "gqa_paged_decode_h40_kv8_d128_ps672": Case(
        [shrunk({"batch_size": 1, "num_kv_indices": 1, "num_pages": 3}, page_size=16),
         shrunk({"batch_size": 3, "num_kv_indices": 40, "num_pages": 50}, page_size=16),
         {"batch_size": 2, "num_kv_indices": 3, "num_pages": 4}], decode_inputs, decode_expected_with(0), derived=derived),
    "gqa_paged_prefill_causal_h40_kv8_d128_ps672": Case(
        [shrunk({"batch_size": 1, "num_kv_indices": 2, "num_pages": 3, "total_q": 5}, page_size=16),
         shrunk({"batch_size": 3, "num_kv_indices": 7, "num_pages": 12, "total_q": 20}, page_size=16),
         {"batch_size": 2, "num_kv_indices": 3, "num_pages": 4, "total_q": 60}],  # 60 queries over up to 2016 keys
        prefill_inputs, prefill_expected_with(0), derived=derived),
    "fused_add_rmsnorm_h4480": Case(ROWS, fused_inputs, fused_expected),
    "relu2_i15680": Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 7}], relu2_inputs, relu2_expected),
    "gemm_n22656_k4480": gemm_case(N=1000),
    "gemm_n4480_k10240": gemm_case(N=1000),
    "gemm_n15680_k4480": gemm_case(N=1000),
    "gemm_n4480_k15680": gemm_case(N=1000),
    "gemm_n7168_k4480": gemm_case(N=1000),
    "gemm_n4480_k5120": gemm_case(N=1000),
    "gemm_n131072_k4480": gemm_case(N=1000),
    # nheads shrunk in two sets (each head is the same recurrence); the third keeps the real 128 heads, 8 groups.
    "mamba_selective_state_update_h128_d80_s128_ng8": Case(
        [shrunk({"batch_size": 1, "num_slots": 2}, nheads=16, ngroups=2),
         shrunk({"batch_size": 3, "num_slots": 5}, nheads=32, ngroups=4),
         {"batch_size": 4, "num_slots": 4}], ssu_inputs, ssu_expected),
    # Heads, head_dim and dstate shrunk where the sequences are long (the float64 recurrence is a Python loop
    # over tokens); set 0 keeps the real sizes.
    "mamba_ssd_chunk_scan_h128_d80_s128_ng8": Case(
        [ssd_sizes(0), ssd_sizes(1, nheads=8, ngroups=2, head_dim=16, dstate=32),
         ssd_sizes(2, nheads=4, ngroups=2, head_dim=8, dstate=16)], ssd_inputs, ssd_expected),
    "causal_conv1d_update_c12288_k4": Case(
        [{"batch_size": 1, "num_slots": 1}, {"batch_size": 3, "num_slots": 7}, {"batch_size": 5, "num_slots": 6}],
        conv_update_inputs, conv_update_expected),
    "causal_conv1d_fwd_c12288_k4": Case(
        [conv_fwd_sizes(0, 2), conv_fwd_sizes(1, 3), conv_fwd_sizes(2, 9)], conv_fwd_inputs, conv_fwd_expected),
    "mamba_gated_rmsnorm_h10240_ng8": Case(
        [{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 8}], gated_norm_inputs, gated_norm_expected),
}
