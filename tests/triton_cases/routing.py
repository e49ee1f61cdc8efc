"""Softmax top-k MoE routing."""

from __future__ import annotations

from . import TritonCase
from .common import bf16, check_forced


def routing_inputs(d, g):
    import torch
    E = d["axes"]["num_experts"]["value"]
    sets = []
    x = bf16(torch.randn(37, E, generator=g) * 2.0)
    sets.append(("num_tokens=37 (random bf16 logits)", {"num_tokens": 37}, {"router_logits": x}))
    # Coarse logits: many exact ties, including across the top-8 boundary (lower id must win).
    x = bf16(torch.round(torch.randn(5, E, generator=g) * 2.0) / 2.0)
    sets.append(("num_tokens=5 (tied logits)", {"num_tokens": 5}, {"router_logits": x}))
    x = bf16(torch.randn(1, E, generator=g) * 4.0)
    sets.append(("num_tokens=1", {"num_tokens": 1}, {"router_logits": x}))
    return sets


def routing_extra(module, index, label, axes, inputs, outputs, expected, d):
    # The prefill tilings, with a partial last tile.
    return check_forced(label, d, axes, expected, "block_t", (4, 16),
                        lambda b: module.softmax_topk(inputs["router_logits"], block_t=b))


def routing_shapes(d):
    import torch
    E = d["axes"]["num_experts"]["value"]
    for t in (1, 4096, 16384):
        yield (torch.empty(t, E, dtype=torch.bfloat16),)


CASES = {"moe_routing_softmax_topk8_e128": TritonCase(routing_inputs, routing_shapes, routing_extra)}
