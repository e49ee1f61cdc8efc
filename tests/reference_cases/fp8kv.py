"""Attention over an FP8 (float8_e4m3) KV cache for the models whose published serving configurations run one:
the MLA decode over an FP8 latent cache (DeepSeek-V3 at TP8 as the checked template, DeepSeek-V3 at TP16 and
Kimi-K2 at TP16 as its head-count variants); the chunked prefill over an FP8 GQA cache
(gqa_paged_prefill_causal_fp8kv_h32_kv8_d128_ps16, Llama-3.1-8B, checked here); and both GQA kernels (the decode,
gqa_paged_decode_fp8kv_h32_kv8_d128_ps16, is checked in serving_families.py) at the heads of Llama-3.3-70B and
Llama-4-Scout, whose vLLM recipes set kv-cache-dtype: fp8.

A variant is its template with other constants and its own text (dataset/families/fp8kv_*.json, rendered by
`kerneltrace definitions`); the reference, einsum cascade and baseline are the template's byte for byte, so the
mathematics is checked once, on the template, and a variant gets one tiny-size check per set of the same
independent formulation with its real heads. tests/definitions/test_fp8kv.py plants the templates' mistakes.

The checks are independent of the references: the codes dequantised once for the whole pool in float64, then the
bfloat16 kernels' checks (a dense re-packing of the paged cache and F.scaled_dot_product_attention; for MLA
DeepSeek-V3's absorbed-MLA check, for the prefill Llama's bottom-right causal mask).
"""

from __future__ import annotations

import torch

from . import deepseek
from .common import PAGED_PREFILL_SETS, Case, families, fp8
from .llama import decode_derived, paged_prefill_expected, paged_prefill_inputs, prefill_derived
from .serving_families import fp8kv_decode_expected, fp8kv_decode_inputs

# --------------------------------------------------------------------------------------------------
# MLA decode over an FP8 latent cache, page size 64. One per-tensor scale for the latent and the rotary key
# (vLLM's layer._k_scale for both, SGLang's 1.0); the sets vary it (one of them 1.0, with small codes there, as
# the GQA case does: codes of std 64 at scale 1 make one token win every softmax).
# --------------------------------------------------------------------------------------------------

MLA_TEMPLATE = "mla_paged_decode_fp8kv_h16_ckv512_kpe64_ps64"
MLA_K_SCALES = [0.01, 1.0 / 64, 1.0]


def mla_fp8_inputs(ax, g, i):
    x = deepseek.mla_decode_inputs(ax, g, i)
    k_scale = MLA_K_SCALES[i % 3]
    std = 64.0 if k_scale < 1.0 else 1.0
    x["ckv_cache"] = fp8(torch.randn(x["ckv_cache"].shape, generator=g), std)
    x["kpe_cache"] = fp8(torch.randn(x["kpe_cache"].shape, generator=g), std)
    x["k_scale"] = [k_scale, torch.tensor(k_scale, dtype=torch.float32), k_scale][i % 3]
    return x


def mla_fp8_expected(ax, x):
    """The whole pool dequantised in float64, then the bfloat16 cache's SDPA check."""
    k_scale = float(x["k_scale"])
    pool = {**x, "ckv_cache": x["ckv_cache"].double() * k_scale, "kpe_cache": x["kpe_cache"].double() * k_scale}
    return deepseek.mla_decode_expected(ax, pool)


# Sequences across page boundaries of 64: one partial page, a one-token sequence beside a full and a 129-token one.
MLA_SETS = [{"_kv_lens": (70,)}, {"_kv_lens": (1, 129, 64)}, {"_kv_lens": (200, 65)}]
MLA_CASE = Case(MLA_SETS, mla_fp8_inputs, mla_fp8_expected, derived=deepseek.mla_derived)

GQA_TEMPLATE = "gqa_paged_decode_fp8kv_h32_kv8_d128_ps16"
PREFILL_TEMPLATE = "gqa_paged_prefill_causal_fp8kv_h32_kv8_d128_ps16"
TEMPLATES = {"decode": GQA_TEMPLATE, "prefill": PREFILL_TEMPLATE}


def siblings_of(template: str) -> list[str]:
    """The variants `kerneltrace definitions` renders from `template` (dataset/families/fp8kv_<template>.json)."""
    return [s["name"] for family in families(f"fp8kv_{template}") for s in family["siblings"]]


# The FP8 GQA prefill: the bfloat16 prefill's check on a dequantised pool.
FP8_SCALES = [(0.02, 0.01), (1.0 / 64, 0.05), (1.0, 1.0 / 128)]  # (k_scale, v_scale); 1.0: a checkpoint without scales


def fp8kv_prefill_inputs(ax, g, i):
    """The bfloat16 prefill's inputs with the caches redrawn as float8 codes and per-tensor scales."""
    x = paged_prefill_inputs(ax, g, i)
    k_scale, v_scale = FP8_SCALES[i % 3]
    std = 64.0 if k_scale < 1.0 else 1.0  # k_scale 1.0 with codes of std 64 would make one key win every softmax
    x["k_cache"] = fp8(torch.randn(x["k_cache"].shape, generator=g), std)
    x["v_cache"] = fp8(torch.randn(x["v_cache"].shape, generator=g), 64.0)
    x["k_scale"] = [k_scale, torch.tensor(k_scale), k_scale][i % 3]
    x["v_scale"] = v_scale
    return x


def fp8kv_prefill_expected(ax, x):
    """The whole pool dequantised in float64, then the bfloat16 prefill's SDPA check (bottom-right causal mask)."""
    pool = {**x, "k_cache": x["k_cache"].double() * float(x["k_scale"]),
            "v_cache": x["v_cache"].double() * float(x["v_scale"])}
    return paged_prefill_expected(ax, pool)


# One tiny size per set for a variant (its real heads; a batch of one to four at page size 16); the template's
# cases check the mathematics.
GQA_SETS = [{"batch_size": 1, "num_kv_indices": 1, "num_pages": 2}, {"batch_size": 2, "num_kv_indices": 3, "num_pages": 6},
            {"batch_size": 3, "num_kv_indices": 4, "num_pages": 4}]
MLA_VARIANT_SETS = [{"_kv_lens": (70,)}, {"_kv_lens": (1, 65)}, {"_kv_lens": (64, 3)}]

PREFILL_SETS = [{"batch_size": 1, "num_kv_indices": 2, "num_pages": 3, "total_q": 3},
                {"batch_size": 2, "num_kv_indices": 3, "num_pages": 6, "total_q": 6},
                {"batch_size": 3, "num_kv_indices": 4, "num_pages": 4, "total_q": 9}]
GQA_CASES = {"decode": (GQA_SETS, fp8kv_decode_inputs, fp8kv_decode_expected, decode_derived),
             "prefill": (PREFILL_SETS, fp8kv_prefill_inputs, fp8kv_prefill_expected, prefill_derived)}

CASES = {MLA_TEMPLATE: MLA_CASE,
         PREFILL_TEMPLATE: Case(PAGED_PREFILL_SETS, fp8kv_prefill_inputs, fp8kv_prefill_expected,
                                derived=prefill_derived)}
CASES.update({name: Case(MLA_VARIANT_SETS, mla_fp8_inputs, mla_fp8_expected, derived=deepseek.mla_derived)
              for name in siblings_of(MLA_TEMPLATE)})
CASES.update({name: Case(*GQA_CASES[kind][:3], derived=GQA_CASES[kind][3])
              for kind, template in TEMPLATES.items() for name in siblings_of(template)})

