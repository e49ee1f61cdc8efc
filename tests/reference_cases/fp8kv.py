"""Attention over an FP8 (float8_e4m3) KV cache for the models whose published serving configurations run one:
the MLA decode over an FP8 latent cache (DeepSeek-V3 at TP8 as the checked template, DeepSeek-V3 at TP16 and
Kimi-K2 at TP16 as its head-count variants); the chunked prefill over an FP8 GQA cache
(gqa_paged_prefill_causal_fp8kv_h32_kv8_d128_ps16, Llama-3.1-8B, checked here); and both GQA kernels (the decode,
gqa_paged_decode_fp8kv_h32_kv8_d128_ps16, is checked in serving_families.py) at the heads of Llama-3.3-70B and
Llama-4-Scout, whose vLLM recipes set kv-cache-dtype: fp8.

The variants follow variants.py's pattern: a variant is its template with other constants and its own text; the
reference, einsum cascade and baseline are the template's byte for byte, so the mathematics is checked once, on
the template, and a variant gets one tiny-size check per set of the same independent formulation with its real
heads. tests/test_fp8kv.py proves every committed variant file is what files() writes (`cd tests && python -m
reference_cases.fp8kv` rewrites them) and plants the template's mistakes.

The checks are independent of the references: the codes dequantised once for the whole pool in float64, then the
bfloat16 kernels' checks (a dense re-packing of the paged cache and F.scaled_dot_product_attention; for MLA
DeepSeek-V3's absorbed-MLA check, for the prefill Llama's bottom-right causal mask).
"""

from __future__ import annotations

import copy
import json

import torch

from . import deepseek
from .common import PAGED_PREFILL_SETS, Case, fp8, write_files
from .llama import decode_derived, paged_prefill_expected, paged_prefill_inputs, prefill_derived
from .serving_families import fp8kv_decode_expected, fp8kv_decode_inputs
from .variants import DATASET, Heads, Substituted, heads_text, render_substituted, substituted_files

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

_TWIN = "the absorbed form of mla_paged_decode_h16_ckv512_kpe64_ps64 (its bfloat16-cache twin)"
_HEADS16 = ("num_qo_heads = 16 = num_attention_heads 128 / TP 8 (heads are split over the 8 tensor-parallel ranks; the "
            "latent cache is replicated on every rank).")
_AXIS16 = "Query heads per rank: num_attention_heads = 128 from deepseek-ai/DeepSeek-V3 config.json split over TP 8."
_RECORD = ("The dataset's deepseek-v3 record keeps the bfloat16 cache (SGLang's default), so this kernel is tagged "
           "model-alt.")
_LEAD = "Multi-head Latent Attention (MLA) decode of DeepSeek-V3 over an FP8 latent cache"
_SCALE = "(the workloads pass this value)"

MLA_VARIANTS = [
    Substituted(
        "mla_paged_decode_fp8kv_h8_ckv512_kpe64_ps64", "mla", MLA_TEMPLATE, {"num_qo_heads": 8},
        ((_LEAD, "Multi-head Latent Attention (MLA) decode of DeepSeek-V3 at TP16 (2 nodes x 8 H100) over an FP8 "
                 "latent cache"),
         (_TWIN, "the absorbed form of mla_paged_decode_h8_ckv512_kpe64_ps1 (the bfloat16 cache at page size 1) and "
                 "DeepSeek-V3 TP8's mla_paged_decode_fp8kv_h16_ckv512_kpe64_ps64 at 8 heads per rank"),
         (_HEADS16, "num_qo_heads = 8 = num_attention_heads 128 / TP 16 (heads are split over the 16 tensor-parallel "
                    "ranks of two nodes; the latent cache is replicated on every rank)."),
         (_AXIS16, "Query heads per rank: num_attention_heads = 128 from deepseek-ai/DeepSeek-V3 config.json split over "
                   "TP 16."),
         (_RECORD, "The dataset's deepseek-v3-tp16-h100 record keeps the bfloat16 cache (SGLang's default), so this "
                   "kernel is tagged model-alt.")),
        ("stage:decode", "model-alt:deepseek-v3-tp16-h100", "tp:16", "quantization:fp8", "status:draft")),
    Substituted(
        "mla_paged_decode_fp8kv_h4_ckv512_kpe64_ps64", "mla", MLA_TEMPLATE, {"num_qo_heads": 4},
        ((_LEAD, "Multi-head Latent Attention (MLA) decode of Kimi-K2 (DeepSeek-V3 architecture, "
                 "moonshotai/Kimi-K2-Instruct config.json: the same kv_lora_rank 512, qk_nope_head_dim 128 and "
                 "qk_rope_head_dim 64, 64 attention heads, 61 layers) at TP16 over an FP8 latent cache"),
         (_TWIN, "the absorbed form of mla_paged_decode_h4_ckv512_kpe64_ps1 (the bfloat16 cache at page size 1) and "
                 "DeepSeek-V3 TP8's mla_paged_decode_fp8kv_h16_ckv512_kpe64_ps64 at 4 heads per rank"),
         (_HEADS16, "num_qo_heads = 4 = num_attention_heads 64 / TP 16 (heads are split over the 16 tensor-parallel "
                    "ranks of two nodes; the latent cache is replicated on every rank)."),
         (_AXIS16, "Query heads per rank: num_attention_heads = 64 from moonshotai/Kimi-K2-Instruct config.json split "
                   "over TP 16."),
         (_SCALE, "(DeepSeek-V3's value; Kimi-K2's workloads pass 0.13086079996295005 = 192^-0.5 * (0.1 * ln(32) + "
                  "1)^2, its yarn rope_scaling factor 32)"),
         (_RECORD, "The dataset's kimi-k2 record keeps the bfloat16 cache (SGLang's default), so this kernel is tagged "
                   "model-alt.")),
        ("stage:decode", "model-alt:kimi-k2", "tp:16", "quantization:fp8", "status:draft")),
]

# --------------------------------------------------------------------------------------------------
# GQA decode over an FP8 KV cache (per-tensor k_scale and v_scale), page size 16, at other models' heads.
# --------------------------------------------------------------------------------------------------

GQA_TEMPLATE = "gqa_paged_decode_fp8kv_h32_kv8_d128_ps16"
PREFILL_TEMPLATE = "gqa_paged_prefill_causal_fp8kv_h32_kv8_d128_ps16"
TEMPLATES = {"decode": GQA_TEMPLATE, "prefill": PREFILL_TEMPLATE}
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


RECIPE_70B = ("vLLM's Llama-3.3-70B recipe (vllm-project/recipes Llama/Llama3.3-70B.md, vLLM v0.12.0) serves "
              "nvidia/Llama-3.3-70B-Instruct-FP8 on Hopper with Llama3.3_Hopper.yaml, whose kv-cache-dtype: fp8 it "
              "tells users not to change (the Blackwell config sets it too), at --tensor-parallel-size 1 for the best "
              "throughput per GPU or 2, 4 or 8 for lower per-user latency")
RECIPE_SCOUT = ("vLLM's Llama-4-Scout recipe (vllm-project/recipes Llama/Llama4-Scout.md, vLLM v0.12.0) serves "
                "nvidia/Llama-4-Scout-Instruct-FP8 on Hopper with Llama4_Hopper.yaml, whose kv-cache-dtype: fp8 it "
                "tells users not to change (the Blackwell config sets it too), at --tensor-parallel-size 1 for the best "
                "throughput per GPU or 2, 4 or 8 for lower per-user latency")
SCOUT_LAYERS = ("Llama 4's global layers (every fourth, no RoPE) run it at any context; its chunked-attention layers "
                "(attention_chunk_size 8192) run it as written while a sequence fits one chunk.")
SRC_70B = "meta-llama/Llama-3.3-70B-Instruct config.json"
SRC_SCOUT = "meta-llama/Llama-4-Scout-17B-16E-Instruct config.json (text_config)"


def _m(label, source, heads, kv_heads, tp, tags, note):
    return Heads(label, source, heads, kv_heads, 128, tp, tags, note)


# model key -> (heads, the recipe that runs the FP8 cache, the bfloat16-cache twin or None)
GQA_MODELS = {
    "llama-3.3-70b-tp1": (_m("Llama-3.3-70B at TP1", SRC_70B, 64, 8, 1, ("model-alt:llama-3.3-70b-tp4",),
                             "The dataset's calling records serve Llama-3.3-70B in bfloat16 at TP4 and TP8; at TP1 the "
                             "FP8 checkpoint (about 70 GB) fits one H200 or B200."), RECIPE_70B, None),
    "llama-3.3-70b-tp4": (_m("Llama-3.3-70B at TP4", SRC_70B, 64, 8, 4, ("model-alt:llama-3.3-70b-tp4",),
                             "The dataset's llama-3.3-70b-tp4 record serves this configuration with a bfloat16 cache."),
                          RECIPE_70B, "gqa_paged_decode_h16_kv2_d128_ps16"),
    "llama-3.3-70b-tp8": (_m("Llama-3.3-70B at TP8", SRC_70B, 64, 8, 8, ("model-alt:llama-3.3-70b-tp8",),
                             "The dataset's llama-3.3-70b-tp8 record serves this configuration with a bfloat16 cache."),
                          RECIPE_70B, "gqa_paged_decode_h8_kv1_d128_ps16"),
    "llama-4-scout-tp1": (_m("Llama-4-Scout-17B-16E at TP1", SRC_SCOUT, 40, 8, 1, ("model-alt:llama-4-scout",),
                             SCOUT_LAYERS + " The dataset's llama-4-scout record serves the bfloat16 model with SGLang "
                             "at TP8."), RECIPE_SCOUT, "gqa_paged_decode_h40_kv8_d128_ps16"),
    "llama-4-scout-tp8": (_m("Llama-4-Scout-17B-16E at TP8", SRC_SCOUT, 40, 8, 8, ("model-alt:llama-4-scout",),
                             SCOUT_LAYERS + " The dataset's llama-4-scout record serves this head split with SGLang, a "
                             "bfloat16 cache at page size 1 (gqa_paged_decode_h5_kv1_d128_ps1)."), RECIPE_SCOUT, None),
}


def gqa_name(m: Heads, kind: str = "decode") -> str:
    stem = "gqa_paged_decode_fp8kv" if kind == "decode" else "gqa_paged_prefill_causal_fp8kv"
    return f"{stem}_h{m.qo}_kv{m.kv}_d{m.head_dim}_ps16"


def gqa_description(key: str, kind: str = "decode") -> str:
    m, recipe, twin = GQA_MODELS[key]
    g = m.qo // m.kv
    if kind == "prefill":
        twin = twin and twin.replace("gqa_paged_decode_", "gqa_paged_prefill_causal_")
    twin_text = (f"the bfloat16-cache twin is {twin}" if twin else
                 "the dataset has no bfloat16-cache kernel at these heads and page size")
    heads = f"{heads_text(m)}; query head h reads KV head h // {g}" + (
        " (consecutive query heads share a KV head)." if g > 1 else ".")
    cache = ("The query stays bfloat16 (FlashInfer's kernels with q_data_type bfloat16 and kv_data_type float8_e4m3; "
             "vLLM's FlashAttention-3 backend also quantises the query to FP8 with q_scale first, a separate step); the "
             "cache stores the codes k_code = fp8(k / k_scale), v_code = fp8(v / v_scale) written by the KV append, so "
             "the key and value of token j are k_code[j] * k_scale and v_code[j] * v_scale.")
    if kind == "prefill":  # issue 40: vLLM 0.33 quantises the prefill query over an FP8 cache by default
        cache = cache.replace(
            "The query stays bfloat16 (FlashInfer's kernels with q_data_type bfloat16 and kv_data_type float8_e4m3; "
            "vLLM's FlashAttention-3 backend also quantises the query to FP8 with q_scale first, a separate step); ",
            "The query stays bfloat16 (FlashInfer's kernels with q_data_type bfloat16 and kv_data_type float8_e4m3): "
            "the configuration with query quantisation disabled, since on SM90/SM100 vLLM 0.33's FlashInfer and "
            "FlashAttention-3 backends quantise the prefill query to FP8 over an FP8 cache by default (issue 40's "
            "audit), a kernel with an FP8 query the dataset does not define yet; ")
    fold = ("FlashInfer computes the same by folding k_scale into the softmax scale and multiplying the output by "
            "v_scale (its k_scale and v_scale arguments, which vLLM passes as the layer's _k_scale_float and "
            "_v_scale_float: 1.0 unless the checkpoint carries calibrated KV-cache scales).")
    tail = [m.note, f"The reference, einsum cascade and baseline are {TEMPLATES[kind]}'s (Llama-3.1-8B) with these "
            "heads.", "Numerics: codes converted to float32 and scaled in float32; float32 logits, softmax and weighted "
            "sum; output rounded to bfloat16 once; lse float32."]
    if kind == "decode":
        return " ".join([
            f"Grouped-query attention decode over a paged FP8 KV cache (float8_e4m3 codes with one scale per tensor for "
            f"K and one for V) with page_size = 16 (vLLM's default block_size), for {m.label} served with an FP8 KV "
            f"cache: {recipe}; {twin_text}.", heads, cache,
            "Sequence b owns the pages kv_indices[kv_indptr[b]:kv_indptr[b+1]] in order; all are full except the last, "
            "which holds kv_last_page_len[b] tokens (1..page_size).",
            f"s[b, h, j] = sm_scale * q[b, h] . (k_scale * k_code[token j of b, h // {g}]); output[b, h] = sum_j "
            f"softmax_j(s)[j] * v_scale * v_code[token j, h // {g}]; no mask.", fold,
            "lse[b, h] = log2(sum_j exp(s[b, h, j])), base 2, as FlashInfer returns it.", *tail])
    return " ".join([
        f"Grouped-query attention for prefill over a paged FP8 KV cache (float8_e4m3 codes with one scale per tensor "
        f"for K and one for V) with page_size = 16 (vLLM's default block_size), for {m.label} served with an FP8 KV "
        f"cache: chunked prefill, where each prompt's new tokens attend to the prompt's whole KV (cached prefix plus "
        f"the chunk itself, already written to the cache as FP8 codes); vLLM runs its prefill attention on the paged "
        f"cache as its decode. {recipe}; {twin_text}.", heads, cache,
        "Queries are ragged: sequence b owns q[qo_indptr[b]:qo_indptr[b+1]] (q_len[b] tokens). Sequence b owns the "
        "pages kv_indices[kv_indptr[b]:kv_indptr[b+1]] in token order; all are full except the last, which holds "
        "kv_last_page_len[b] tokens (1..16).",
        "Causal, aligned bottom-right: the q_len[b] queries of sequence b are its LAST q_len[b] tokens, so query i sits "
        "at position kv_len[b] - q_len[b] + i and sees keys 0 .. kv_len[b] - q_len[b] + i.",
        f"s[h, i, j] = sm_scale * q[i, h] . (k_scale * k_code[j, h // {g}]); output[i, h] = sum_j softmax_j(s)[j] * "
        f"v_scale * v_code[j, h // {g}] over the visible keys.", fold,
        "lse[i, h] = log2(sum_j exp(s[h, i, j])) over the visible keys, base 2, as FlashInfer returns it.", *tail])


def gqa_template(kind: str = "decode") -> dict:
    return json.loads((DATASET / "definitions" / "gqa" / f"{TEMPLATES[kind]}.json").read_text(encoding="utf-8"))


def render_gqa(key: str, kind: str = "decode") -> dict:
    m = GQA_MODELS[key][0]
    d = copy.deepcopy(gqa_template(kind))
    per_rank = "" if m.tp == 1 else f" / tp {m.tp}"
    texts = {
        "num_qo_heads": f"Query heads per GPU: num_attention_heads = {m.heads}{per_rank} from {m.source}.",
        "num_kv_heads": f"KV heads per GPU: num_key_value_heads = {m.kv_heads}{per_rank} from {m.source}.",
        "head_dim": f"head_dim = {m.head_dim} from {m.source}.",
    }
    values = {"num_qo_heads": m.qo, "num_kv_heads": m.kv, "head_dim": m.head_dim}
    for axis, text in texts.items():
        d["axes"][axis]["value"] = values[axis]
        d["axes"][axis]["description"] = text
    d["tags"] = [f"stage:{kind}", *m.tags, f"tp:{m.tp}", "quantization:fp8", "status:draft"]
    out = {"name": gqa_name(m, kind), "description": gqa_description(key, kind)}
    out.update({k: v for k, v in d.items() if k not in ("name", "description")})
    return out


def rendered() -> dict:
    """name -> (kind, definition) of every GQA variant: the decode and the prefill at each model's heads."""
    return {gqa_name(GQA_MODELS[k][0], kind): (kind, render_gqa(k, kind)) for kind in TEMPLATES for k in GQA_MODELS}


def files() -> dict:
    """Every variant file: dataset-relative path -> text."""
    out = {}
    for name, (kind, d) in rendered().items():
        t = TEMPLATES[kind]
        einsum = (DATASET / "einsums" / "gqa" / f"{t}.yaml").read_text(encoding="utf-8")
        sol = json.loads((DATASET / "solutions" / "baseline" / "gqa" / t / f"{t}_torch.json").read_text(encoding="utf-8"))
        out[f"definitions/gqa/{name}.json"] = json.dumps(d, indent=2, ensure_ascii=False) + "\n"
        out[f"einsums/gqa/{name}.yaml"] = einsum
        out[f"solutions/baseline/gqa/{name}/{name}_torch.json"] = \
            json.dumps({**sol, "name": f"{name}_torch", "definition": name}, indent=2, ensure_ascii=False) + "\n"
    for v in MLA_VARIANTS:
        out.update(substituted_files(v))
    return out


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
CASES.update({v.name: Case(MLA_VARIANT_SETS, mla_fp8_inputs, mla_fp8_expected, derived=deepseek.mla_derived)
              for v in MLA_VARIANTS})
CASES.update({name: Case(*GQA_CASES[kind][:3], derived=GQA_CASES[kind][3]) for name, (kind, _) in rendered().items()})


def write(root=DATASET) -> list:
    """Write every variant file under `root` that differs; returns the paths written."""
    return write_files(files(), root)


__all__ = ["CASES", "render_substituted"]

if __name__ == "__main__":
    for p in write():
        print(f"wrote {p.relative_to(DATASET.parent)}")
