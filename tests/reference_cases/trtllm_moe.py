"""Independent formulations for the TRT-LLM fused MoE definitions (trtllm_moe_variants.py): all thirteen.

Another route to the same numbers: MXFP4 decoded with a 16-entry table and torch.ldexp in float64 (the references
decode the bit fields); the routing one token at a time with sorted() over (-logit, id) and the softmax / sigmoid
in float64 (the references: repeated argmax in float32); the packed ids split by integer division and the weight
bits read through an int16 -> bfloat16 view; and the MoE as a DENSE computation over every expert (einsums over
[token, expert, ...], the routing as a [token, expert] weight matrix that is zero off the picks) instead of the
references' loop over the tokens of each expert.

Sizes: hidden 64 and intermediate 64 (two 32-blocks of every e8m0 scale row, 128 gemm1 rows) and the real top k:
the nibble order, the scale exponent bias, the up/gate halves and the routing are the same checks as at the real
widths (up to 17 GB of weights). Qwen3-30B-A3B's and Llama-4-Scout's definitions keep their real expert counts
(128 and 16); the others share their reference texts and route over 16 experts (more than any top k here).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import Case, fp8, shrunk, uniform
from .trtllm_moe_variants import VARIANTS, e8m0_range

SMALL_FP4 = {"hidden_size": 64, "hidden_size_packed": 32, "num_hidden_blocks": 2, "intermediate_size": 64,
             "intermediate_size_packed": 32, "num_intermediate_blocks": 2, "gemm1_out_size": 128}
SMALL_FP8 = {"hidden_size": 64, "intermediate_size": 64, "gemm1_out_size": 128}
_LUT = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)
E2M1 = torch.cat([_LUT, -_LUT])  # code c: sign bit 3, magnitude index c & 7


def dequant(blocks, scales):
    """[..., K / 2] codes and [..., K / 32] e8m0 bytes -> [..., K] float64, by table look-up and ldexp."""
    v = torch.stack([E2M1[(blocks % 16).long()], E2M1[(blocks // 16).long()]], dim=-1).flatten(-2)
    s = torch.ldexp(torch.ones(scales.shape, dtype=torch.float64), scales.long() - 127)
    return (v.unflatten(-1, (-1, 32)) * s[..., None]).flatten(-2)


def _logits(T, E, g, i):
    logits = torch.randn(T, E, generator=g) * 2.0
    if i == 2:  # coarse logits: exact ties (bfloat16 logits tie often), the lower id must win
        logits = torch.round(logits)
    return logits.bfloat16()


def _packed(T, E, k, g):
    """Distinct picks per token, weights a softmax (k > 1) or a sigmoid (k == 1) of random keys, packed."""
    ids = torch.stack([torch.randperm(E, generator=g)[:k] for _ in range(T)])
    keys = torch.randn(T, k, generator=g)
    w = (torch.softmax(keys, dim=-1) if k > 1 else torch.sigmoid(keys)).bfloat16()
    bits = w.view(torch.int16).to(torch.int32) & 0xFFFF
    return (ids.to(torch.int32) * 65536 + bits).to(torch.int32)


def fp4_inputs(kind):
    def make(ax, g, i):
        T, E, H, I = ax["seq_len"], ax["num_experts"], ax["hidden_size"], ax["intermediate_size"]
        k = ax.get("top_k")
        first = {"topk_ids": _packed(T, E, k, g)} if kind == "fp4_routed" else {"routing_logits": _logits(T, E, g, i)}
        x = {**first, "hidden_states": torch.randn(T, H, generator=g).bfloat16()}
        for gemm, rows, fan_in in (("gemm1", 2 * I, H), ("gemm2", H, I)):
            lo, hi = e8m0_range(fan_in)
            x[f"{gemm}_weights"] = torch.randint(0, 256, (E, rows, fan_in // 2), generator=g, dtype=torch.int32).to(
                torch.uint8)
            x[f"{gemm}_weights_scale"] = torch.randint(lo, hi, (E, rows, fan_in // 32), generator=g,
                                                       dtype=torch.int32).to(torch.uint8)
        return x
    return make


def fp8_inputs(ax, g, i):
    T, E, H, I = ax["seq_len"], ax["num_experts"], ax["hidden_size"], ax["intermediate_size"]
    s1 = 1.0 / (4096 * math.sqrt(H))
    return {"routing_logits": _logits(T, E, g, i), "hidden_states": fp8(torch.randn(T, H, generator=g), 64),
            "gemm1_weights": fp8(torch.randn(E, 2 * I, H, generator=g), 64),
            "output1_scales_scalar": uniform((E,), 0.5 * s1, 2 * s1, g),
            "output1_scales_gate_scalar": uniform((E,), 0.5 * s1, 2 * s1, g),
            "gemm2_weights": fp8(torch.randn(E, H, I, generator=g), 64),
            "output2_scales_scalar": uniform((E,), 0.5, 2.0, g) / (64 * math.sqrt(I))}


def routing_matrix(x, E, top_k, routing):
    """[T, E] float64: each token's routing weight on each expert, 0 off its picks."""
    if "topk_ids" in x:
        packed = x["topk_ids"].long()
        ids = torch.div(packed, 65536, rounding_mode="floor")
        w = (packed % 65536).to(torch.int16).view(torch.bfloat16).double()  # low half, as a bfloat16
        D = torch.zeros(packed.shape[0], E, dtype=torch.float64)
        return D.scatter_add_(1, ids, w)
    rows = x["routing_logits"].double()
    D = torch.zeros(rows.shape, dtype=torch.float64)
    for t, row in enumerate(rows.tolist()):
        ids = sorted(range(E), key=lambda e: (-row[e], e))[:top_k]
        picked = torch.tensor([row[e] for e in ids], dtype=torch.float64)
        w = torch.sigmoid(picked) if routing == "llama4" else torch.exp(picked - picked.max()) / torch.exp(
            picked - picked.max()).sum()
        D[t, ids] = w
    return D


def expected_for(v):
    top_k, routing = v.m.top_k, v.m.routing

    def expected(ax, x):
        E, I = ax["num_experts"], ax["intermediate_size"]
        D = routing_matrix(x, E, top_k, routing)
        xs = x["hidden_states"].double()
        if v.kind == "fp8":
            h = torch.einsum("th,eoh->teo", xs, x["gemm1_weights"].double())
            up = h[..., :I] * x["output1_scales_scalar"].double()[None, :, None]
            gate = h[..., I:] * x["output1_scales_gate_scalar"].double()[None, :, None]
            if routing == "llama4":  # the weight on both halves of gemm1's output; the output unweighted
                up, gate, combine = up * D[..., None], gate * D[..., None], (D > 0).double()
            else:
                combine = D
            y = torch.einsum("tei,ehi->teh", F.silu(gate) * up, x["gemm2_weights"].double())
            y = y * x["output2_scales_scalar"].double()[None, :, None]
        else:
            W1 = dequant(x["gemm1_weights"], x["gemm1_weights_scale"])  # [E, 2I, H]
            W2 = dequant(x["gemm2_weights"], x["gemm2_weights_scale"])  # [E, H, I]
            h = torch.einsum("th,eoh->teo", xs, W1)
            act = (F.silu(h[..., I:]) * h[..., :I]).to(torch.bfloat16).double()  # stored as bfloat16 between GEMMs
            y = torch.einsum("tei,ehi->teh", act, W2)
            combine = D
        return {"output": torch.einsum("te,teh->th", combine, y)}
    return expected


TEMPLATES = ("qwen3-30b", "llama-4-scout")  # real expert counts: 128 (Renormalize) and 16 (Llama4) of each kind


def _sizes(v):
    """The templates route over their real expert count; their siblings (the same reference text, other
    constants) over 16 experts, at a sixth of the cost."""
    small = SMALL_FP8 if v.kind == "fp8" else SMALL_FP4
    experts = {} if v.model in TEMPLATES else {"num_experts": 16}
    return [shrunk({"seq_len": t}, **small, **experts) for t in (1, 3, 6)]


def _case(v):
    make = fp8_inputs if v.kind == "fp8" else fp4_inputs(v.kind)
    if v.kind == "fp4_routed":
        k = v.m.top_k
        inner = make

        def make(ax, g, i):  # noqa: F811 - top_k is a const axis the inputs need
            return inner({**ax, "top_k": k}, g, i)
    return Case(_sizes(v), make, expected_for(v))


CASES = {v.name: _case(v) for v in VARIANTS}
