"""Paged GQA decode over an FP8 (e4m3) KV cache with per-tensor k/v scales (split-K over the context)."""

from __future__ import annotations

import math

from . import TritonCase
from .common import check_forced, paged_decode_shape_args, paged_inputs

# (k_scale, v_scale, std of the key codes) per set; the value codes are drawn with std 64 (the bench's draw).
# Set 2: k_scale 1.0 (vLLM's value without calibrated scales), where codes of std 64 would make one key win
# every softmax: smaller key codes there. k_scale other than 1 in sets 0 and 1, v_scale in every set: a kernel
# that drops either scale fails.
FP8_SETS = ((0.02, 0.01, 64.0), (1.0 / 64, 0.05, 64.0), (1.0, 1.0 / 128, 1.0))


def fp8_codes(x, std):
    import torch
    return (x * std).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)


def fp8kv_decode_inputs(d, g):
    import torch
    # Contexts across a 128-token step and page boundaries, a 1-token sequence; 2 KV heads (8 query heads, the
    # real group of 4) instead of 8. sm_scale and k_scale as 0-d tensors in set 1.
    lens_sets = ([1, 17, 70], [16, 33, 5, 130, 2], [600])
    sets = []
    for i, lens in enumerate(lens_sets):
        axes, inputs = paged_inputs(d, g, 300 + i, lens, sm_scale_as_tensor=(i == 1), kv_heads=2)
        k_scale, v_scale, k_std = FP8_SETS[i]
        inputs["k_cache"] = fp8_codes(torch.randn(inputs["k_cache"].shape, generator=g), k_std)
        inputs["v_cache"] = fp8_codes(torch.randn(inputs["v_cache"].shape, generator=g), 64.0)
        inputs["k_scale"] = torch.tensor(k_scale, dtype=torch.float32) if i == 1 else k_scale
        inputs["v_scale"] = v_scale
        sets.append((f"kv_len={lens} k_scale={k_scale:g} v_scale={v_scale:g} num_kv_heads=2", axes, inputs))
    return sets


def fp8kv_decode_extra(module, index, label, axes, inputs, outputs, expected, d):
    # A split-K path the heuristic does not take: 7 splits of 600 tokens end in a partial 128-token step and two
    # empty splits. (The 600-token set itself takes 2 splits, the others one.)
    return check_forced(label, d, axes, expected, "num_splits", {2: (7,)}.get(index, ()),
                        lambda s: dict(zip(("output", "lse"),
                                           module.paged_decode_fp8kv(*inputs.values(), num_splits=s))))


def fp8kv_decode_shapes(d):
    import torch
    D = d["axes"]["head_dim"]["value"]
    # batch 1 at 32k tokens (33 splits, the merge), 64 x 2k and 256 x 1k (one split: stage 1 writes the outputs)
    for batch, ctx in ((1, 32768), (64, 2048), (256, 1024)):
        yield (*paged_decode_shape_args(d, batch, ctx, torch.float8_e4m3fn), 1.0 / math.sqrt(D), 0.02, 0.01)


CASES = {"gqa_paged_decode_fp8kv_h32_kv8_d128_ps16": TritonCase(fp8kv_decode_inputs, fp8kv_decode_shapes,
                                                                 fp8kv_decode_extra)}
