"""RoPE with Llama-3's scaled cos/sin cache."""

from __future__ import annotations

import math

from . import TritonCase
from .common import bf16


def llama3_cos_sin_cache(max_position, head_dim=128):
    """The cache as vLLM's Llama3RotaryEmbedding builds it (rope_theta 500000, factor 8, 1, 4, 8192)."""
    import torch
    inv_freq = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    wavelen = 2 * math.pi / inv_freq
    smooth = (8192 / wavelen - 1) / (4 - 1)
    scaled = torch.where(wavelen < 8192 / 4, inv_freq,
                         torch.where(wavelen > 8192 / 1, inv_freq / 8, (1 - smooth) * inv_freq / 8 + smooth * inv_freq))
    angles = torch.arange(max_position, dtype=torch.float64)[:, None] * scaled[None, :]
    return torch.cat([angles.cos(), angles.sin()], dim=-1).to(torch.float32)


def rope_inputs(d, g):
    import torch
    hq = d["axes"]["num_qo_heads"]["value"]
    hk = d["axes"]["num_kv_heads"]["value"]
    D = d["axes"]["head_dim"]["value"]
    sets = []
    for tokens, max_position in ((3, 40), (6, 9000)):
        positions = torch.randint(0, max_position, (tokens,), generator=g, dtype=torch.int64)
        q = bf16(torch.randn(tokens, hq, D, generator=g))
        k = bf16(torch.randn(tokens, hk, D, generator=g))
        cache = llama3_cos_sin_cache(max_position, D)
        sets.append((f"num_tokens={tokens} max_position={max_position}",
                     {"num_tokens": tokens, "max_position": max_position},
                     {"positions": positions, "q": q, "k": k, "cos_sin_cache": cache}))
    return sets


def rope_shapes(d):
    import torch
    bf, t = torch.bfloat16, 2048
    yield (torch.zeros(t, dtype=torch.int64), torch.empty(t, 32, 128, dtype=bf), torch.empty(t, 8, 128, dtype=bf),
           torch.empty(8192, 128, dtype=torch.float32))


CASES = {"rope_llama3_h32_kv8_d128": TritonCase(rope_inputs, rope_shapes)}
