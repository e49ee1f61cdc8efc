"""Routed steps of one EP rank for fused MoEs that take the routing as pre-computed top-k ids and weights
(the routed_topk_rank family): DeepSeek-V3-style grouped top-k routing (moe.route_ids over sigmoid scores with
a skewed selection bias, moe.skewed_bias) drawn from a seeded generator, the picks' GLOBAL expert ids and their
renormalised sigmoid scores stored as blobs; the rank holds experts [rank x local, (rank + 1) x local)."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from . import core, moe
from .spec import Spec


def routed_topk_rank(name: str, step: Mapping, seed: int, num_experts: int, local_experts: int, ep: int,
                     n_group: int, topk_group: int, top_k: int, inputs: Mapping, text: str,
                     fields: Mapping) -> Spec:
    """One step {tokens, spread, rank, stage, what}: g = core.rng(seed); bias = moe.skewed_bias(g, num_experts,
    spread); logits = g.standard_normal((tokens, num_experts)); ids = moe.route_ids(logits, bias, n_group,
    topk_group, top_k); weights = sigmoid(logits) at the picks, renormalised to sum 1 (no routed scaling).
    inputs: the definition's other inputs (random or values); local_expert_offset = local_experts x rank. A rank
    holding none of the step's picks would only write zeros: the rank of token 0's first pick is recorded
    instead (said in {moved}). Template fields for `text`: what, seed, spread, tokens, rank, moved, lo, hi,
    local_picks (picks on the rank), picks, tokens_local (tokens with at least one local pick)."""
    tokens, spread, rank = int(step["tokens"]), float(step["spread"]), int(step["rank"])
    g = core.rng(seed)
    bias = moe.skewed_bias(g, num_experts, spread)
    logits = g.standard_normal((tokens, num_experts))
    ids = moe.route_ids(logits, bias.astype(np.float64), n_group, topk_group, top_k)
    scores = 1.0 / (1.0 + np.exp(-np.take_along_axis(logits, ids, axis=1)))
    weights = (scores / scores.sum(axis=1, keepdims=True)).astype(np.float32)
    moved = ""
    local = (ids >= local_experts * rank) & (ids < local_experts * (rank + 1))
    if not local.any():
        moved = f" (rank {rank} holds none of the step's picks: the rank of token 0's first pick)"
        rank = int(ids[0, 0]) // local_experts
        local = (ids >= local_experts * rank) & (ids < local_experts * (rank + 1))
    offset = local_experts * rank
    f = {**fields, "what": step["what"], "seed": seed, "spread": spread, "tokens": tokens, "rank": rank,
         "moved": moved, "lo": offset, "hi": offset + local_experts - 1, "local_picks": int(local.sum()),
         "picks": tokens * top_k, "tokens_local": int(local.any(axis=1).sum()), "ep": ep}
    given = {**inputs, "topk_ids": ids.astype(np.int32), "topk_weights": weights, "local_expert_offset": offset}
    axes = {"seq_len": tokens, "seq_len_padded": (tokens + 127) // 128 * 128}
    return Spec(name, f"t{tokens}_rank{rank}", axes, given, seed, text.format_map(f), stage=step["stage"],
                num_tokens=tokens)
