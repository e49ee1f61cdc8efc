"""moe_sum: the weighted sum of each token's top-k expert outputs."""

from __future__ import annotations

from . import TritonCase
from .common import bf16


def moe_sum_inputs(d, g):
    import torch
    k, h = d["axes"]["top_k"]["value"], d["axes"]["hidden_size"]["value"]
    sets = []
    for tokens, scale in ((1, 1.0), (3, 30.0)):
        x = torch.randn(tokens, k, h, generator=g) * scale
        x[:, 5] = 0.0  # a pick on another EP rank contributes a zero row
        sets.append((f"num_tokens={tokens}", {"num_tokens": tokens}, {"input": bf16(x)}))
    return sets


def moe_sum_shapes(d):
    import torch
    k, h = d["axes"]["top_k"]["value"], d["axes"]["hidden_size"]["value"]
    for t in (1, 8192):
        yield (torch.empty(t, k, h, dtype=torch.bfloat16),)


CASES = {"moe_sum_topk8_h7168": TritonCase(moe_sum_inputs, moe_sum_shapes)}
