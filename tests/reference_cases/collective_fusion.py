"""Collectives fused with their neighbours and the expert-parallel all-to-all (issue #26 step 3), modelled on one
device like the plain all-reduce (common_kernels.py): the ranks' tensors side by side on a leading axis.

- allreduce_fused_add_rmsnorm_*: FlashInfer's trtllm_allreduce_fusion (vLLM's AllReduceFusionPass). Checked in
  float64: the sum over ranks as an einsum (the bfloat16 rounding of the all-reduce value and of the residual sum
  are the definition's, so they are applied here too), the norm through torch.linalg.vector_norm; the FP8 variant's
  expected output is the value before float8 rounding (divided by the scale, saturated at +-448), which the float8
  tolerance compares with. Sets at the real tp and hidden sizes (small: a few tokens), inputs of three magnitudes.
- ep_dispatch / ep_combine: DeepEP's normal-mode dispatch and vLLM's weighted combine. The dispatch's rows are
  found another way than the reference's loops: one nonzero() over the [destination, source, token] membership
  (row-major, so destination, then source, then token), the rows gathered by index; the combine as a dense 0/1
  matrix (token x row) times the weighted rows, in float64. hidden_size shrunk (a copy and a weighted sum are the
  same at any width); ep, experts and top_k real, so the routing spreads as at serving size.
"""

from __future__ import annotations

import math

import torch

from .common import Case, shrunk

EPS = 1e-5  # rms_norm_eps of meta-llama/Llama-3.3-70B-Instruct and meta-llama/Llama-3.1-8B
FP8_MAX = 448.0
ROWS = [{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 8}]
# Unsaturated; many values saturated at +-448; a few saturated. Each set spans the float8 range (its largest values
# near 448), as the tolerance assumes: below 2**-6 the format steps by 2**-9, coarse next to a small output.
FP8_SCALES = [0.025, 0.004, 0.01]


# --------------------------------------------------------------------------------------------------
# All-reduce + residual add + RMSNorm (+ FP8)
# --------------------------------------------------------------------------------------------------

def fused_inputs(ax, g, i, scales=(1.0, 30.0, 0.01)):
    scale = scales[i % 3]
    tp, T, H = ax["tp_size"], ax["num_tokens"], ax["hidden_size"]
    partials = (torch.randn(tp, T, H, generator=g) * scale).bfloat16()
    residual = torch.randn(T, H, generator=g) * (3.0 * scale)
    if T > 1:  # a token whose residual nearly cancels the all-reduce: the rounded sums matter there
        residual[1] = -partials.double().sum(dim=0)[1].float() + 0.01 * scale * torch.randn(H, generator=g)
    weight = (1.0 + 0.1 * torch.randn(H, generator=g)).bfloat16()
    return {"partials": partials, "residual": residual.bfloat16(), "weight": weight}


def fused_fp8_inputs(ax, g, i):
    return {**fused_inputs(ax, g, i), "scale": FP8_SCALES[i % 3]}


def _norm64(ax, x, eps=EPS):
    H = ax["hidden_size"]
    allreduced = torch.einsum("rth->th", x["partials"].double()).to(torch.bfloat16).double()
    residual_out = (allreduced + x["residual"].double()).to(torch.bfloat16).double()
    rms = torch.linalg.vector_norm(residual_out, dim=-1, keepdim=True) / math.sqrt(H)
    normed = residual_out / torch.sqrt(rms * rms + eps) * x["weight"].double()
    return normed, residual_out


def fused_expected(ax, x):
    normed, residual_out = _norm64(ax, x)
    return {"output": normed, "residual_out": residual_out}


def fused_fp8_expected(ax, x):
    normed, residual_out = _norm64(ax, x)
    return {"output": (normed / float(x["scale"])).clamp(-FP8_MAX, FP8_MAX), "residual_out": residual_out}


# --------------------------------------------------------------------------------------------------
# Expert-parallel dispatch and combine
# --------------------------------------------------------------------------------------------------

def ep_routing(ax, g):
    """Each token's top_k distinct experts (a random permutation's first top_k) and softmax weights."""
    ep, T, k, E = ax["ep_size"], ax["num_tokens"], ax["top_k"], ax.get("num_experts", 128)
    ids = torch.stack([torch.randperm(E, generator=g)[:k] for _ in range(ep * T)]).reshape(ep, T, k)
    weights = torch.softmax(torch.randn(ep, T, k, generator=g), dim=-1)
    return ids, weights


def membership(ids, num_experts):
    """in_rank[d, r, t]: rank r's token t has a pick on rank d."""
    ep = ids.shape[0]
    rank_of = ids // (num_experts // ep)  # [ep, T, k]
    return torch.stack([(rank_of == d).any(dim=-1) for d in range(ep)])


def dispatch_inputs(ax, g, i):
    ids, weights = ep_routing(ax, g)
    if i == 0:  # rank 3 holds none of the step's picks: it receives nothing (recv_counts[3] = 0)
        ids = torch.stack([torch.randperm(96, generator=g)[:ax["top_k"]] for _ in range(ids.shape[0] * ids.shape[1])])
        ids = ids.reshape(ax["ep_size"], ax["num_tokens"], ax["top_k"])
    if i == 2:  # every pick of rank 0's tokens on rank 3, and rank 2's first token only on rank 0
        ids[0] = 96 + torch.stack([torch.randperm(32, generator=g)[:ax["top_k"]] for _ in range(ax["num_tokens"])])
        ids[2, 0] = torch.randperm(32, generator=g)[:ax["top_k"]]
    ax["num_recv"] = int(membership(ids, ax["num_experts"]).sum())
    hidden = torch.randn(ax["ep_size"], ax["num_tokens"], ax["hidden_size"], generator=g).bfloat16()
    return {"hidden_states": hidden, "topk_ids": ids.to(torch.int64), "topk_weights": weights.float()}


def dispatch_expected(ax, x):
    ids, E = x["topk_ids"], ax["num_experts"]
    ep, T, k = ids.shape
    L = E // ep
    pairs = membership(ids, E).nonzero()  # [num_recv, 3]: (destination, source, token), row-major order
    d, r, t = pairs[:, 0], pairs[:, 1], pairs[:, 2]
    picks = ids[r, t]  # [num_recv, k]
    local = (picks // L) == d[:, None]
    token_rows = torch.full((ep, T, ep), -1, dtype=torch.int64)
    token_rows[r, t, d] = torch.arange(len(pairs))
    one_hot = torch.nn.functional.one_hot(ids.reshape(-1), E)
    return {"recv_x": x["hidden_states"].double()[r, t],
            "recv_topk_ids": torch.where(local, picks - d[:, None] * L, -torch.ones_like(picks)),
            "recv_topk_weights": torch.where(local, x["topk_weights"].double()[r, t], torch.zeros(()).double()),
            "recv_src": r * T + t,
            "recv_counts": torch.bincount(d, minlength=ep),
            "recv_tokens_per_expert": one_hot.sum(dim=0),
            "token_rows": token_rows}


def combine_inputs(ax, g, i):
    ax_full = {**ax, "num_experts": 128}
    routed = dispatch_inputs(ax_full, g, i)
    layout = dispatch_expected(ax_full, routed)
    ax["num_recv"] = ax_full["num_recv"]
    out_scale = [1.0, 30.0, 0.01][i % 3]
    expert_out = (torch.randn(ax["num_recv"], ax["top_k"], ax["hidden_size"], generator=g) * out_scale).bfloat16()
    return {"expert_out": expert_out, "recv_topk_weights": layout["recv_topk_weights"].float(),
            "token_rows": layout["token_rows"].to(torch.int32)}


def combine_expected(ax, x):
    ep, T, _ = x["token_rows"].shape
    n = x["expert_out"].shape[0]
    weighted = torch.einsum("nk,nkh->nh", x["recv_topk_weights"].double(), x["expert_out"].double())
    rows = x["token_rows"].long()
    owner = torch.zeros(ep * T, n, dtype=torch.float64)  # owner[token, row] = 1: the row is that token's
    flat = torch.arange(ep * T)[:, None].expand(ep * T, ep)
    sent = rows.reshape(ep * T, ep) >= 0
    owner[flat[sent], rows.reshape(ep * T, ep)[sent]] = 1.0
    return {"output": (owner @ weighted).reshape(ep, T, -1)}


EP_SETS = [shrunk({"num_tokens": 1}, hidden_size=64), shrunk({"num_tokens": 3}, hidden_size=96),
           shrunk({"num_tokens": 7}, hidden_size=64)]

CASES = {
    "allreduce_fused_add_rmsnorm_tp4_h8192": Case(ROWS, fused_inputs, fused_expected),
    "allreduce_fused_add_rmsnorm_tp8_h8192": Case(ROWS, fused_inputs, fused_expected),
    "allreduce_fused_add_rmsnorm_tp2_h4096": Case(ROWS, fused_inputs, fused_expected),
    "allreduce_fused_add_rmsnorm_fp8_tp4_h8192": Case(ROWS, fused_fp8_inputs, fused_fp8_expected),
    "ep_dispatch_ep4_e128_topk8_h2048": Case(EP_SETS, dispatch_inputs, dispatch_expected),
    "ep_combine_ep4_topk8_h2048": Case(EP_SETS, combine_inputs, combine_expected),
}
