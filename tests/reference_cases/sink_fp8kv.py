"""gpt-oss decode attention with sinks over an FP8 (float8_e4m3) KV cache: gqa_paged_decode_fp8kv_sink_h64_kv8_d64_ps16
(the full-attention layers) and gqa_paged_decode_fp8kv_sink_swa128_h64_kv8_d64_ps16 (the 128-token sliding-window
layers), the bfloat16-cache kernels gqa_paged_decode_sink_*_h64_kv8_d64_ps16 with the cache stored as float8 codes
and dequantised with one k_scale and one v_scale per tensor, as the FP8-KV GQA kernels (fp8kv.py) apply them.

vLLM's gpt-oss recipe (vllm-project/recipes OpenAI/GPT-OSS.md with GPT-OSS_Blackwell.yaml) sets kv-cache-dtype: fp8
on Blackwell (compute capability 10.0) and keeps the bfloat16 cache on Hopper (GPT-OSS_Hopper.yaml has no
kv-cache-dtype); the same launch serves gpt-oss-20b. The dataset's gpt-oss records are H100 bfloat16, so the two
kernels are tagged model-alt.

The definitions are siblings of their bfloat16 twins in dataset/families/ (tests/definitions/test_sink_fp8kv.py
compares them and plants mistakes). The independent check dequantises the whole pool once in float64 and reuses the bfloat16
sink kernels' check (gpt_oss.py: a dense re-packing, the window as a boolean mask over positions, the sink as one
more torch.softmax column).
"""

from __future__ import annotations

import torch

from . import gpt_oss
from .common import Case, fp8
from .fp8kv import FP8_SCALES
from .qwen import paged_derived

WINDOW = gpt_oss.WINDOW  # 128: sliding_window of openai/gpt-oss-120b config.json


def name(window: int) -> str:
    return f"gqa_paged_decode_fp8kv_sink{'_swa%d' % window if window else ''}_h64_kv8_d64_ps16"


def twin(window: int) -> str:
    """The bfloat16-cache kernel of the same layers."""
    return f"gqa_paged_decode_sink{'_swa%d' % window if window else ''}_h64_kv8_d64_ps16"


# --------------------------------------------------------------------------------------------------
# The reference: the bfloat16 sink kernels' loop, the codes dequantised as they are gathered.
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------
# Independent check: the bfloat16 sink kernels' inputs with the caches redrawn as codes; the pool dequantised in
# float64, then gpt_oss.py's dense check (window mask over positions, the sink as a softmax column).
# --------------------------------------------------------------------------------------------------

def inputs(ax, g, i):
    x = gpt_oss.decode_inputs(ax, g, i)
    k_scale, v_scale = FP8_SCALES[i % 3]
    std = 64.0 if k_scale < 1.0 else 1.0  # k_scale 1.0 with codes of std 64 would make one key win every softmax
    x["k_cache"] = fp8(torch.randn(x["k_cache"].shape, generator=g), std)
    x["v_cache"] = fp8(torch.randn(x["v_cache"].shape, generator=g), 64.0)
    x["k_scale"] = [k_scale, torch.tensor(k_scale), k_scale][i % 3]
    x["v_scale"] = [v_scale, v_scale, torch.tensor(v_scale)][i % 3]
    return x


def expected_with(window):
    check = gpt_oss.decode_expected_with(window)

    def expected(ax, x):
        pool = {**x, "k_cache": x["k_cache"].double() * float(x["k_scale"]),
                "v_cache": x["v_cache"].double() * float(x["v_scale"])}
        return check(ax, pool)
    return expected


# gpt_oss.DECODE: a short context; 130 > 128 beside one page and one token; 300, 128, 129 and 64 tokens.
CASES = {name(w): Case(gpt_oss.DECODE, inputs, expected_with(w), derived=paged_derived) for w in (0, WINDOW)}




