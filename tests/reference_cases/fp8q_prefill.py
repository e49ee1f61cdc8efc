"""Chunked prefill over an FP8 KV cache with an FP8 query, as vLLM 0.33 serves it by default on SM90/SM100 (its
FlashInfer and FlashAttention-3 backends quantise the prefill query to FP8 over an FP8 cache; issue 40's audit):
gqa_paged_prefill_causal_fp8q_fp8kv_h32_kv8_d128_ps16 (Llama-3.1-8B), a sibling of the bfloat16-query template
gqa_paged_prefill_causal_fp8kv_h32_kv8_d128_ps16 in dataset/families/ (the query's dtype, its per-tensor q_scale and
the lines that use them changed; `kerneltrace definitions` renders it). The bfloat16-query definitions stay as the
configuration with query quantisation disabled.

The check is fp8kv.py's (the pool dequantised in float64, then the bfloat16 prefill's SDPA check) with the query
codes dequantised by q_scale first; the sets' q_scale differs from 1 in two of them, so a kernel that drops it fails
there (planted in test_references.py).
"""

from __future__ import annotations

from .common import PAGED_PREFILL_SETS, Case, fp8
from .fp8kv import fp8kv_prefill_expected, fp8kv_prefill_inputs
from .llama import prefill_derived

NAME = "gqa_paged_prefill_causal_fp8q_fp8kv_h32_kv8_d128_ps16"
Q_SCALES = [0.02, 1.0 / 64, 1.0]  # 1.0: a checkpoint without a calibrated query scale (vLLM's default q_scale)


def fp8q_inputs(ax, g, i):
    x = fp8kv_prefill_inputs(ax, g, i)
    q_scale = Q_SCALES[i % 3]
    x["q"] = fp8(x["q"].float(), 1.0 / q_scale)  # codes of the same queries: q ~ code * q_scale
    x["q_scale"] = q_scale
    return x


def fp8q_expected(ax, x):
    return fp8kv_prefill_expected(ax, {**x, "q": x["q"].double() * float(x["q_scale"])})


CASES = {NAME: Case(PAGED_PREFILL_SETS, fp8q_inputs, fp8q_expected, derived=prefill_derived)}

