"""SiLU-and-mul."""

from __future__ import annotations

from . import TritonCase
from .common import bf16


def silu_and_mul_inputs(d, g):
    import torch
    width = d["axes"]["gate_up_size"]["value"]
    sets = []
    for tokens in (2, 5):
        x = bf16(torch.randn(tokens, width, generator=g) * 3.0)
        sets.append((f"num_tokens={tokens}", {"num_tokens": tokens}, {"input": x}))
    return sets


def silu_and_mul_shapes(d):
    import torch
    yield (torch.empty(256, d["axes"]["gate_up_size"]["value"], dtype=torch.bfloat16),)


CASES = {"silu_and_mul_i14336": TritonCase(silu_and_mul_inputs, silu_and_mul_shapes)}
