"""Paged GQA decode (split-K over the context)."""

from __future__ import annotations

import math

from . import TritonCase
from .common import check_forced, paged_decode_shape_args, paged_inputs


def paged_decode_inputs(d, g):
    ps = d["axes"]["page_size"]["value"]
    lens_sets = ([1, 17, 70], [16, 33, 5, 48, 2], [600]) if ps == 16 else ([5, 33, 1], [12, 2, 40, 7, 64], [600])
    sets = []
    # 2 KV heads (8 query heads, the real group of 4) instead of 8: a second KV head checks the head mapping.
    for i, lens in enumerate(lens_sets):
        axes, inputs = paged_inputs(d, g, 100 + i, lens, sm_scale_as_tensor=(i == 1), kv_heads=2)
        sets.append((f"kv_len={lens} page_size={ps} num_kv_heads=2", axes, inputs))
    return sets


def paged_decode_extra(module, index, label, axes, inputs, outputs, expected, d):
    # Split-K paths the heuristic does not take on these short contexts: 3 splits of the first set leave
    # programs with no tokens (its 1-token sequence); 7 splits of 600 tokens end in a partial block.
    return check_forced(label, d, axes, expected, "num_splits", {0: (3,), 2: (7,)}.get(index, ()),
                        lambda s: dict(zip(("output", "lse"), module.paged_decode(*inputs.values(), num_splits=s))))


def paged_decode_shapes(d):
    ps, D = d["axes"]["page_size"]["value"], d["axes"]["head_dim"]["value"]
    for batch, ctx in ((1, 32768 if ps == 16 else 4096), (64, 2048)):
        yield (*paged_decode_shape_args(d, batch, ctx), 1.0 / math.sqrt(D))


PAGED_DECODE = TritonCase(paged_decode_inputs, paged_decode_shapes, paged_decode_extra)
CASES = {"gqa_paged_decode_h32_kv8_d128_ps16": PAGED_DECODE, "gqa_paged_decode_h32_kv8_d128_ps1": PAGED_DECODE}
