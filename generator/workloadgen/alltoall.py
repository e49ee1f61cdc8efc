"""Expert-parallel all-to-all of a routed MoE step, the ranks side by side on one device: the picks each rank's
tokens make and what DeepEP's normal-mode dispatch delivers from them (the rows of each destination rank, from
source rank 0 first, in token order), for the recipes' ep_alltoall family (dispatch and combine workloads of the
same step share its routing and layout).

- ep_routing: each rank's tokens pick top_k DISTINCT experts of a Zipf-like popularity shared by the ranks
  (moe.routed_ids), with renormalised softmax weights in the picks' order;
- dispatch_layout: the received rows (num_recv), their weights as the receiver holds them (0 for picks on
  other ranks) and the handle the combine reads (token_rows), as ep_dispatch_* defines them;
- ep_dispatch and ep_combine: the Specs of one step.
"""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from . import core, moe
from .scenarios import MoeStep
from .spec import Spec


def ep_routing(g: np.random.Generator, ep: int, tokens: int, num_experts: int, top_k: int,
               alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(topk_ids [ep, tokens, top_k] int64, topk_weights [ep, tokens, top_k] float32) of one step: the ids are
    moe.routed_ids(g, ep * tokens, ...) (every rank's tokens under the same expert popularity, each row in
    descending key order), the weights softmax(logits) over the picks with logits drawn standard normal and sorted
    descending (the order of the picks: a renormalised top-k, norm_topk_prob)."""
    ids = moe.routed_ids(g, ep * tokens, num_experts, top_k, alpha)
    logits = -np.sort(-g.standard_normal((ep * tokens, top_k)), axis=1)
    w = np.exp(logits - logits[:, :1])
    w /= w.sum(axis=1, keepdims=True)
    return (ids.reshape(ep, tokens, top_k).astype(np.int64),
            w.reshape(ep, tokens, top_k).astype(np.float32))


def ep_call(seed: int, ep: int, tokens: int, num_experts: int, top_k: int, alpha: float) -> str:
    """ep_routing's draw as the descriptions record it."""
    return (f"g = core.rng({seed}); topk_ids, topk_weights = alltoall.ep_routing(g, {ep}, {tokens}, {num_experts}, "
            f"{top_k}, alpha={alpha})")


def dispatch_layout(ids: np.ndarray, weights: np.ndarray, num_experts: int) -> dict:
    """What the dispatch delivers: rank d receives, from source rank 0 first, then 1, ..., the tokens of that rank
    with a pick among its experts [d * L, (d + 1) * L), L = num_experts // ep, in token order, once each. Returns
    num_recv, recv_counts [ep], recv_topk_weights [num_recv, top_k] (0 for picks on other ranks) and token_rows
    [ep, tokens, ep] (the row of each token in the concatenated rows, -1 where it was not sent)."""
    ep, tokens, _ = ids.shape
    rank_of = ids // (num_experts // ep)
    token_rows = np.full((ep, tokens, ep), -1, dtype=np.int32)
    recv_w, counts, n = [], [], 0
    for dst in range(ep):
        start = n
        for src in range(ep):
            hit = rank_of[src] == dst  # [tokens, top_k]
            sent = np.flatnonzero(hit.any(axis=1))
            token_rows[src, sent, dst] = n + np.arange(len(sent))
            recv_w.append(np.where(hit[sent], weights[src, sent], 0.0))
            n += len(sent)
        counts.append(n - start)
    return {"num_recv": n, "recv_counts": np.asarray(counts, dtype=np.int32), "token_rows": token_rows,
            "recv_topk_weights": np.concatenate(recv_w).astype(np.float32)}


def _fields(step: MoeStep, seed: int, ep: int, num_experts: int, top_k: int, layout: dict,
            fields: Optional[Mapping]) -> dict:
    counts = layout["recv_counts"]
    return {**(fields or {}), "what": step.what, "seed": seed, "tokens": step.tokens, "alpha": step.alpha,
            "ep": ep, "num_experts": num_experts, "top_k": top_k, "num_recv": layout["num_recv"],
            "all_tokens": ep * step.tokens, "ranks_per_token": round(layout["num_recv"] / (ep * step.tokens), 2),
            "counts": ", ".join(str(int(c)) for c in counts),
            "call": ep_call(seed, ep, step.tokens, num_experts, top_k, step.alpha)}


def ep_dispatch(name: str, step: MoeStep, seed: int, ep: int, num_experts: int, top_k: int, text: str,
                fields: Optional[Mapping] = None) -> Spec:
    """The dispatch of one step: hidden_states random, topk_ids and topk_weights from ep_routing(core.rng(seed)).
    Fields: what, seed, tokens, alpha, ep, num_experts, top_k, num_recv, all_tokens, ranks_per_token (rows per
    token), counts (rows per rank), call."""
    ids, w = ep_routing(core.rng(seed), ep, step.tokens, num_experts, top_k, step.alpha)
    layout = dispatch_layout(ids, w, num_experts)
    f = _fields(step, seed, ep, num_experts, top_k, layout, fields)
    return Spec(name, f"t{step.tokens}_a{step.alpha}", {"num_tokens": step.tokens, "num_recv": layout["num_recv"]},
                {"hidden_states": "random", "topk_ids": ids, "topk_weights": w}, seed, text.format_map(f),
                stage=step.stage, num_tokens=step.tokens)


def ep_combine(name: str, step: MoeStep, seed: int, ep: int, num_experts: int, top_k: int, text: str,
               fields: Optional[Mapping] = None) -> Spec:
    """The combine of the same step: expert_out random, recv_topk_weights and token_rows as the dispatch of
    ep_routing(core.rng(seed)) delivers them (dispatch_layout). Fields: those of ep_dispatch."""
    ids, w = ep_routing(core.rng(seed), ep, step.tokens, num_experts, top_k, step.alpha)
    layout = dispatch_layout(ids, w, num_experts)
    f = _fields(step, seed, ep, num_experts, top_k, layout, fields)
    return Spec(name, f"t{step.tokens}_a{step.alpha}", {"num_tokens": step.tokens, "num_recv": layout["num_recv"]},
                {"expert_out": "random", "recv_topk_weights": layout["recv_topk_weights"],
                 "token_rows": layout["token_rows"]}, seed, text.format_map(f),
                stage=step.stage, num_tokens=step.tokens)


def ep_dispatch_fp8(name: str, step: MoeStep, seed: int, ep: int, num_experts: int, top_k: int, text: str,
                    fields: Optional[Mapping] = None) -> Spec:
    """The dispatch of one step with an FP8 payload: x_fp8 and x_scale random (the definition draws them as a
    per-128-column quantiser writes them), topk_ids and topk_weights as ep_dispatch's."""
    spec = ep_dispatch(name, step, seed, ep, num_experts, top_k, text, fields)
    inputs = {"x_fp8": "random", "x_scale": "random",
              **{k: v for k, v in spec.inputs.items() if k != "hidden_states"}}
    return Spec(spec.definition, spec.key, spec.axes, inputs, seed, spec.description, stage=step.stage,
                num_tokens=step.tokens)


BUILDERS = {"dispatch": ep_dispatch, "dispatch_fp8": ep_dispatch_fp8, "combine": ep_combine}
