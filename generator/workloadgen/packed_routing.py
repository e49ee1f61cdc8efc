"""Pre-computed routing in TRT-LLM's packed form, for the fused MoE kernels that take it instead of router logits
(FlashInfer's trtllm_fp4_block_scale_routed_moe): each int32 is (expert_id << 16) | the bfloat16 bits of the pick's
routing weight (PackedScoreIdx in flashinfer include/flashinfer/trtllm/fused_moe/RoutingKernel.h).

The picks are moe.routed_ids': each token draws top_k DISTINCT experts by Gumbel top-k over a Zipf-like
popularity (rank r weight r**-alpha, ranks shuffled over the experts). The Gumbel keys stand for the router's
logits: a Renormalize router's weights are the softmax of the picked keys, a Llama4 router's the sigmoid of its
one pick's key.
"""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from . import core, moe
from .spec import Spec

ROUTINGS = ("renormalize", "llama4")


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """The bfloat16 bit pattern (round to nearest, ties to even) of float32 values, as int64."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    return (b + 0x7FFF + ((b >> 16) & 1)) >> 16


def packed_topk(g: np.random.Generator, num_tokens: int, num_experts: int, top_k: int, alpha: float,
                routing: str) -> np.ndarray:
    """[num_tokens, top_k] int32: (id << 16) | bf16 bits of the weight, picks in descending key order."""
    if routing not in ROUTINGS:
        raise ValueError(f"routing {routing!r}: one of {ROUTINGS}")
    keys = moe.routed_keys(g, num_tokens, num_experts, alpha)
    ids = core.top_k_rows(keys, top_k)  # moe.routed_ids' picks, with their keys
    picked = np.take_along_axis(keys, ids, axis=1)
    if routing == "renormalize":  # TopK -> Softmax over the picks
        e = np.exp(picked - picked.max(axis=1, keepdims=True))
        w = e / e.sum(axis=1, keepdims=True)
    else:  # Llama4: Top-1 -> Sigmoid
        w = 1.0 / (1.0 + np.exp(-picked))
    return ((ids.astype(np.int64) << 16) | bf16_bits(w.astype(np.float32))).astype(np.int32)


def packed_routed_moe(name: str, step: Mapping, seed: int, num_experts: int, top_k: int, routing: str,
                      inputs: Mapping, text: str, fields: Optional[Mapping] = None) -> Spec:
    """One step of a routed fused MoE: topk_ids = packed_topk(core.rng(seed), tokens, num_experts, top_k, alpha,
    routing) stored as a blob, the definition's other `inputs` as given ("random"). step: {tokens, alpha, stage,
    what}. Fields: what, seed, tokens, alpha, num_experts, top_k, used (experts picked at least once)."""
    tokens, alpha = int(step["tokens"]), float(step["alpha"])
    packed = packed_topk(core.rng(seed), tokens, num_experts, top_k, alpha, routing)
    f = {**(fields or {}), "what": step["what"], "seed": seed, "tokens": tokens, "alpha": alpha,
         "num_experts": num_experts, "top_k": top_k, "used": len(np.unique(packed >> 16))}
    return Spec(name, f"t{tokens}_a{alpha}", {"seq_len": tokens}, {"topk_ids": packed, **inputs}, seed,
                text.format_map(f), stage=step["stage"], num_tokens=tokens)
