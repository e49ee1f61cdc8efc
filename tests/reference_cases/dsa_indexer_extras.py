"""Independent formulations for the two DeepSeek-V3.2 indexer kernels between the others: the head-weight
scaling (dsa_indexer_weights_scale_h64) and the prefill gather of the paged index keys
(dsa_indexer_k_gather_d128_ps64).

- The head weights in float64 as one division by sqrt(64 * 128) = 64 * sqrt(2), not three float32 products.
- The key gather as a Python dictionary from (sequence, position) to the (page, offset) the block table names,
  read one token at a time, keys and scales looked up together.

Sizes: the real 64 heads; a few tokens, q_scale drawn as powers of two (as act_quant's ue8m0 scales are) in one
set and uniform in the others, weights of very different magnitudes.
"""

from __future__ import annotations

import math

import torch

from .common import TOKEN_SETS, Case, uniform


def weights_scale_inputs(ax, g, i):
    T, H = ax["num_tokens"], ax["num_index_heads"]
    w = torch.randn(T, H, generator=g) * [1.0, 30.0, 1e-3][i]
    if i == 1:
        q_scale = 2.0 ** -torch.randint(2, 15, (T, H), generator=g).float()  # ue8m0 scales
    else:
        q_scale = uniform((T, H), 2.0 ** -12, 2.0 ** -4, g)
    return {"weights": w.bfloat16(), "q_scale": q_scale}


def weights_scale_expected(ax, x):
    return {"head_weights": x["weights"].double() * x["q_scale"].double() / (64.0 * math.sqrt(2.0))}


CASES = {
    "dsa_indexer_weights_scale_h64": Case(TOKEN_SETS, weights_scale_inputs, weights_scale_expected),
}
