"""Paged GQA decode with attention sinks (gpt-oss-120b), full and sliding-window 128 (split-K over the keys)."""

from __future__ import annotations

import math

from . import TritonCase
from .common import check_forced, paged_decode_shape_args, paged_inputs


def with_sinks(inputs, sinks):
    """The paged inputs in the sink definitions' order: sinks before sm_scale."""
    out = {k: v for k, v in inputs.items() if k != "sm_scale"}
    out["sinks"] = sinks
    out["sm_scale"] = inputs["sm_scale"]
    return out


def sink_decode_inputs(d, g):
    import torch
    # Contexts below, at and across the window of 128 (and page boundaries); sinks from irrelevant (-30) to
    # dominant (+6 over the logits). 2 KV heads (16 query heads, the real group of 8) instead of 8.
    lens_sets = ([1, 17, 130], [16, 33, 5, 128, 129], [300])
    sets = []
    for i, lens in enumerate(lens_sets):
        axes, inputs = paged_inputs(d, g, 200 + i, lens, sm_scale_as_tensor=(i == 1), kv_heads=2)
        hq = axes["num_qo_heads"]
        sinks = (torch.randn(hq, generator=g) * 2.0, torch.full((hq,), -30.0), torch.randn(hq, generator=g) + 6.0)[i]
        sets.append((f"kv_len={lens} num_kv_heads=2", axes, with_sinks(inputs, sinks)))
    return sets


def sink_decode_extra(module, index, label, axes, inputs, outputs, expected, d):
    # Split-K paths the heuristic does not take on these short contexts: 2 splits of the first set leave
    # programs with no keys; 5 splits of 300 keys (or of a 128-key window) end in empty or partial blocks.
    return check_forced(label, d, axes, expected, "num_splits", {0: (2,), 2: (5,)}.get(index, ()),
                        lambda s: {"output": module.paged_decode_sink(*inputs.values(), num_splits=s)})


def sink_decode_shapes(d):
    import torch
    hq, D = d["axes"]["num_qo_heads"]["value"], d["axes"]["head_dim"]["value"]
    for batch, ctx in ((1, 32768), (64, 1024), (256, 512)):
        yield (*paged_decode_shape_args(d, batch, ctx), torch.empty(hq, dtype=torch.float32), 1.0 / math.sqrt(D))


SINK_DECODE = TritonCase(sink_decode_inputs, sink_decode_shapes, sink_decode_extra)
CASES = {"gqa_paged_decode_sink_h64_kv8_d64_ps16": SINK_DECODE,
         "gqa_paged_decode_sink_swa128_h64_kv8_d64_ps16": SINK_DECODE}
