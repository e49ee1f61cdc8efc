"""Independent formulations for the six definitions of seed 000."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import Case, fp8, shrunk, uniform


# GEMM: C = A @ B.T, independently as F.linear in float64.
def gemm_inputs(ax, g, i):
    return {"A": torch.randn(ax["M"], ax["K"], generator=g).half(),
            "B": torch.randn(ax["N"], ax["K"], generator=g).half()}


def gemm_expected(ax, x):
    return {"C": F.linear(x["A"].double(), x["B"].double())}


# Block-scaled FP8 GEMM, independently as a real kernel does it: integer-like partial sums per
# (K group, N group) block first, then scaled by the two scales of the block, all in float64.
def qgemm_inputs(ax, g, i):
    M, N, K, Ng, Kg = ax["M"], ax["N"], ax["K"], ax["N_group"], ax["K_group"]
    return {"A": fp8(torch.randn(M, K, generator=g), 64), "B": fp8(torch.randn(N, K, generator=g), 64),
            # Scales spread over a factor of 16 so that a scale applied to the wrong block shows.
            "A_scale": uniform((M, Kg), 0.25, 4.0, g) / 64, "B_scale": uniform((Ng, Kg), 0.25, 4.0, g) / 64}


def qgemm_expected(ax, x):
    M, N, K, Ng, Kg = ax["M"], ax["N"], ax["K"], ax["N_group"], ax["K_group"]
    a = x["A"].double().view(M, Kg, K // Kg)  # [m, j, kk]
    b = x["B"].double().view(Ng, N // Ng, Kg, K // Kg)  # [i, nn, j, kk]
    partial = torch.einsum("mjk,injk->minj", a, b)  # per-block dot products
    c = torch.einsum("minj,mj,ij->min", partial, x["A_scale"].double(), x["B_scale"].double())
    return {"C": c.reshape(M, N)}


# Grouped GEMM: C[g] = A[g] @ B[g], independently as a Python loop over the groups.
def ggemm_inputs(ax, g, i):
    return {"A": torch.randn(ax["G"], ax["M"], ax["K"], generator=g).half(),
            "B": torch.randn(ax["G"], ax["K"], ax["N"], generator=g).half()}


def ggemm_expected(ax, x):
    return {"C": torch.stack([x["A"][j].double() @ x["B"][j].double() for j in range(ax["G"])])}


# FP8 grouped GEMM with per-K-group scales: loop over groups, block partial sums, then scales.
def qggemm_inputs(ax, g, i):
    G, M, N, K, Kg = ax["G"], ax["M"], ax["N"], ax["K"], ax["K_group"]
    return {"A": fp8(torch.randn(G, M, K, generator=g), 64), "B": fp8(torch.randn(G, K, N, generator=g), 64),
            "A_scale": uniform((G, M, Kg), 0.25, 4.0, g) / 64, "B_scale": uniform((G, Kg, N), 0.25, 4.0, g) / 64}


def qggemm_expected(ax, x):
    G, M, N, K, Kg = ax["G"], ax["M"], ax["N"], ax["K"], ax["K_group"]
    out = []
    for j in range(G):
        a = x["A"][j].double().view(M, Kg, K // Kg)  # [m, group, kk]
        b = x["B"][j].double().view(Kg, K // Kg, N)  # [group, kk, n]
        partial = torch.einsum("mgk,gkn->mgn", a, b)
        out.append(torch.einsum("mgn,mg,gn->mn", partial, x["A_scale"][j].double(), x["B_scale"][j].double()))
    return {"C": torch.stack(out)}


# RMSNorm, independently with F.rms_norm in float64. The sets vary how eps is passed (Python float,
# 0-d tensor) and one uses small inputs so that eps changes the result noticeably.
def rmsnorm_inputs(ax, g, i):
    B, H = ax["batch_size"], ax["hidden_size"]
    x_scale, eps = [(3.0, 1e-5), (1.0, torch.tensor(1e-6, dtype=torch.float32)), (0.05, 1e-2)][i % 3]
    return {"input": (torch.randn(B, H, generator=g) * x_scale).half(),
            "weight": (1.0 + 0.5 * torch.randn(H, generator=g)).half(), "eps": eps}


def rmsnorm_expected(ax, x):
    eps = float(x["eps"])
    return {"output": F.rms_norm(x["input"].double(), (ax["hidden_size"],), x["weight"].double(), eps=eps)}


# GQA, independently with F.scaled_dot_product_attention in float64 on K/V heads expanded so that
# query head h reads KV head h // H_r; lse as torch.logsumexp of the scaled logits over ln 2.
def gqa_inputs(ax, g, i):
    B, Q, KV, Hq, Hk, Dqk, Dvo = (ax[n] for n in ("B", "Q", "KV", "H_qo", "H_kv", "D_qk", "D_vo"))
    sharpness = [1.0, 3.0, 0.5][i % 3]  # peakier or flatter softmax
    return {"q": (torch.randn(B, Q, Hq, Dqk, generator=g) * sharpness).half(),
            "k": torch.randn(B, KV, Hk, Dqk, generator=g).half(),
            "v": torch.randn(B, KV, Hk, Dvo, generator=g).half()}


def gqa_expected(ax, x):
    B, KV, Hq, Hk = ax["B"], ax["KV"], ax["H_qo"], ax["H_kv"]
    r = Hq // Hk

    def expand(t):  # [B, KV, H_kv, D] -> [B, H_qo, KV, D], head h = kv_head * r + j
        return t.double().unsqueeze(3).expand(B, KV, Hk, r, t.shape[-1]).reshape(B, KV, Hq, t.shape[-1]).transpose(1, 2)

    q = x["q"].double().transpose(1, 2)  # [B, H_qo, Q, D]
    k, v = expand(x["k"]), expand(x["v"])
    out = F.scaled_dot_product_attention(q, k, v)  # default scale 1/sqrt(D_qk), no mask
    logits = (q @ k.transpose(-1, -2)) / math.sqrt(ax["D_qk"])
    lse = torch.logsumexp(logits, dim=-1) / math.log(2.0)  # [B, H_qo, Q]
    return {"out": out.transpose(1, 2), "lse": lse.transpose(1, 2)}


CASES = {
    # The GEMMs shrink N to 512 (every output column is the same dot product over the real K = 4096, the
    # accumulation depth the tolerances are about); the block-scaled one keeps 32 rows per N group.
    "gemm_fp16_n4096_k4096": Case([shrunk({"M": m}, N=512) for m in (1, 3, 8)], gemm_inputs, gemm_expected),
    "quantized_gemm_n4096_k4096_ng128_kg128": Case([shrunk({"M": m}, N=512, N_group=16) for m in (1, 4, 8)],
                                                   qgemm_inputs, qgemm_expected),
    "grouped_gemm_n4096_k4096": Case([shrunk(s, N=512) for s in ({"G": 1, "M": 2}, {"G": 2, "M": 3}, {"G": 1, "M": 1})],
                                     ggemm_inputs, ggemm_expected),
    "quantized_grouped_gemm_n4096_k4096_kg128": Case(
        [shrunk(s, N=512) for s in ({"G": 1, "M": 2}, {"G": 2, "M": 3}, {"G": 1, "M": 1})], qggemm_inputs,
        qggemm_expected),
    "rmsnorm_fp16_h4096": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], rmsnorm_inputs,
                          rmsnorm_expected),
    "gqa_hr4_dqk128_dvo128": Case([{"B": 1, "Q": 1, "KV": 9, "H_kv": 1}, {"B": 2, "Q": 5, "KV": 7, "H_kv": 2},
                                   {"B": 3, "Q": 16, "KV": 4, "H_kv": 2}], gqa_inputs, gqa_expected,
                                  derived=lambda ax: {"H_qo": ax["H_kv"] * ax["H_r"]}),
}
