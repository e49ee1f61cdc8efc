"""Head-configuration and page-size variants of the GQA kernels: the same mathematics as a checked template
definition, other constants, written from the table below.

Many models run the same attention with other head counts (a model's config.json at a tensor-parallel degree)
or another KV page size (1: SGLang's token-level cache; 64: a server launched with a 64-token page). Each
variant here is one of three templates (Llama-3.1-8B's paged decode, paged causal prefill and ragged causal
prefill, checked in full by llama.py's cases) with its constants and its own description: the reference, the
einsum cascade and the baseline are the template's, byte for byte. So the mathematics is checked once, on the
template; a variant gets a cheap check of the same independent formulation at one tiny size per set (its
const axes are real), and tests/test_definition_variants.py proves every committed file is what render()
writes from this table (`cd tests && python -m reference_cases.variants` rewrites them).

The names are the public FlashInfer-Trace set's (flashinfer-bench's dataset), which uses the same convention.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

from . import deepseek, deepseek_v32, mamba2, qwen3_next
from .common import Case, replace_in_descriptions, shrunk, write_files
from .llama import (
    decode_expected,
    decode_inputs,
    paged_prefill_expected,
    paged_prefill_inputs,
    prefill_derived,
    ragged_expected,
    ragged_inputs,
)

DATASET = Path(__file__).resolve().parents[2] / "dataset"

TEMPLATES = {"decode": "gqa_paged_decode_h32_kv8_d128_ps16",
             "prefill": "gqa_paged_prefill_causal_h32_kv8_d128_ps16",
             "ragged": "gqa_ragged_prefill_causal_h32_kv8_d128"}


@dataclass(frozen=True)
class Heads:
    """One model's attention heads at one tensor-parallel degree, from its config.json."""

    label: str  # "Qwen3-14B at TP2": the model and how it is served
    source: str  # where the constants come from
    heads: int  # num_attention_heads of the config
    kv_heads: int  # num_key_value_heads
    head_dim: int
    tp: int
    tags: tuple  # model tags of the kernel: model:<record> or model-alt:<record>
    note: str = ""  # what else the reader should know about this model's use of the kernel

    @property
    def qo(self) -> int:
        return self.heads // self.tp

    @property
    def kv(self) -> int:
        return max(1, self.kv_heads // self.tp)  # KV heads are replicated when tp exceeds them


SCALE_128 = "1 / sqrt(128) = 0.08838834764831845"

MODELS = {
    "llama-3.1-8b": Heads("Llama-3.1-8B at TP1", "meta-llama/Llama-3.1-8B config.json", 32, 8, 128, 1,
                          ("model-alt:llama-3.1-8b", "model-alt:qwen3-8b"),
                          "Qwen3-8B (Qwen/Qwen3-8B config.json: 32 / 8 heads of 128) has the same heads."),
    "llama-3.2-3b": Heads("Llama-3.2-3B at TP1", "meta-llama/Llama-3.2-3B config.json", 24, 8, 128, 1,
                          ("model-alt:llama-3.2-3b",)),
    "qwen3-30b-a3b": Heads("Qwen3-30B-A3B at TP1", "Qwen/Qwen3-30B-A3B config.json", 32, 4, 128, 1,
                           ("model-alt:qwen3-30b-a3b",)),
    "llama-3.3-70b-tp4": Heads("Llama-3.3-70B at TP4", "meta-llama/Llama-3.3-70B-Instruct config.json", 64, 8, 128, 4,
                               ("model-alt:llama-3.3-70b-tp4", "model-alt:qwen3-32b-tp4"),
                               "Qwen3-32B at TP4 (Qwen/Qwen3-32B config.json: 64 / 8 heads of 128) has the same "
                               "heads per rank."),
    "gemma-3-27b-tp1": Heads("Gemma-3-27B at TP1 (its global-attention layers)",
                             "google/gemma-3-27b-it config.json (text_config)", 32, 16, 128, 1,
                             ("model-alt:gemma-3-27b",),
                             "Gemma 3 runs this kernel in its global layers (every sixth; the other five use a "
                             "1024-token sliding window) with sm_scale = query_pre_attn_scalar^-0.5 = 168^-0.5; "
                             "the dataset's gemma-3-27b record serves it at TP2 (16 / 8 heads)."),
    "qwen3-14b-tp2": Heads("Qwen3-14B at TP2", "Qwen/Qwen3-14B config.json", 40, 8, 128, 2,
                           ("model-alt:qwen3-14b",),
                           "The dataset's qwen3-14b record serves it at TP1 (40 / 8 heads)."),
    "qwen3-next-tp2": Heads("Qwen3-Next-80B-A3B at TP2 (its full-attention layers)",
                            "Qwen/Qwen3-Next-80B-A3B-Instruct config.json", 16, 2, 256, 2,
                            ("model-alt:qwen3-next-80b-a3b",),
                            "Qwen3-Next's 12 full-attention layers (every fourth) run it with sm_scale = "
                            "256^-0.5 = 0.0625 and gate its output afterwards; the dataset's qwen3-next-80b-a3b "
                            "record serves the model at TP4 (4 / 1 heads)."),
    "mixtral-8x22b-tp1": Heads("Mixtral-8x22B at TP1", "mistralai/Mixtral-8x22B-v0.1 config.json", 48, 8, 128, 1,
                               ("model-alt:mixtral-8x22b",),
                               "head_dim = hidden_size 6144 / 48; sliding_window is null (full attention). At TP1 "
                               "the 141B parameters need FP8 weights on a 192 GB GPU; attention stays bfloat16."),
    "mixtral-8x22b-tp2": Heads("Mixtral-8x22B at TP2", "mistralai/Mixtral-8x22B-v0.1 config.json", 48, 8, 128, 2,
                               ("model-alt:mixtral-8x22b",),
                               "head_dim = hidden_size 6144 / 48; sliding_window is null (full attention)."),
    "llama-4-scout-tp8": Heads("Llama-4-Scout-17B-16E at TP8",
                               "meta-llama/Llama-4-Scout-17B-16E-Instruct config.json (text_config)", 40, 8, 128, 8,
                               ("model:llama-4-scout",),
                               "Llama 4's global layers (every fourth, no RoPE, attention temperature applied to q "
                               "beforehand) run it at any context; its chunked-attention layers "
                               "(attention_chunk_size 8192) run it as written while a sequence fits one chunk, and "
                               "SGLang's FlashAttention-3 backend runs longer ones as this same kernel on chunk-local "
                               "page lists (make_local_attention_virtual_batches). The dataset's llama-4-scout record "
                               "(SGLang --tp 8 on 8 H100) calls it in all 48 layers of its steps."),
    "llama-4-scout-tp8-alt": Heads("Llama-4-Scout-17B-16E at TP8",
                                   "meta-llama/Llama-4-Scout-17B-16E-Instruct config.json (text_config)", 40, 8, 128, 8,
                                   ("model-alt:llama-4-scout",),
                                   "Llama 4's global layers (every fourth, no RoPE) run it at any context; its "
                                   "chunked-attention layers (attention_chunk_size 8192) run it as written while a "
                                   "sequence fits one chunk. The dataset's llama-4-scout record serves page size 1 "
                                   "with SGLang's FlashAttention-3 backend."),
    "minimax-m2-tp8": Heads("MiniMax-M2 at TP8", "MiniMaxAI/MiniMax-M2 config.json", 48, 8, 128, 8,
                            ("model:minimax-m2",),
                            "The dataset's minimax-m2 record (SGLang --tp-size 8 --ep-size 8 on 8 H100, the "
                            "FlashAttention-3 backend) calls it in all 62 layers of its steps."),
    "minimax-m2-tp8-alt": Heads("MiniMax-M2 at TP8", "MiniMaxAI/MiniMax-M2 config.json", 48, 8, 128, 8,
                                ("model-alt:minimax-m2",),
                                "The dataset's minimax-m2 record serves page size 1 with SGLang's FlashAttention-3 "
                                "backend."),
    "glm-4.5-tp8": Heads("GLM-4.5 at TP8", "zai-org/GLM-4.5 config.json", 96, 8, 128, 8, ("model:glm-4.5",),
                         "The dataset's glm-4.5 record (the FP8 release on SGLang --tp-size 8, 8 H200, the "
                         "FlashAttention-3 backend; attention stays bfloat16) calls it in all 92 layers of its steps."),
    "phi-4": Heads("Phi-4 at TP1", "microsoft/phi-4 config.json", 40, 10, 128, 1, ("model-alt:phi-4",),
                   "head_dim = hidden_size 5120 / 40."),
    "qwen3-235b-a22b-tp4": Heads("Qwen3-235B-A22B at TP4", "Qwen/Qwen3-235B-A22B config.json", 64, 4, 128, 4,
                                 ("model-alt:qwen3-235b-a22b",)),
}

PAGE_SIZES = {
    1: "SGLang's default token-level KV cache, page_size 1",
    64: "a server launched with 64-token pages: SGLang --page-size 64, vLLM --block-size 64",
}

# (kind, model, page size): the variants, by the public names they get.
VARIANTS = [
    ("decode", "llama-3.1-8b", 64), ("prefill", "llama-3.1-8b", 1), ("prefill", "llama-3.1-8b", 64),
    ("decode", "llama-3.2-3b", 64), ("prefill", "llama-3.2-3b", 1), ("prefill", "llama-3.2-3b", 64),
    ("decode", "qwen3-30b-a3b", 64), ("prefill", "qwen3-30b-a3b", 1), ("prefill", "qwen3-30b-a3b", 64),
    ("decode", "llama-3.3-70b-tp4", 1), ("decode", "llama-3.3-70b-tp4", 64), ("prefill", "llama-3.3-70b-tp4", 1),
    ("prefill", "llama-3.3-70b-tp4", 64), ("ragged", "llama-3.3-70b-tp4", None),
    ("decode", "gemma-3-27b-tp1", 1), ("decode", "gemma-3-27b-tp1", 64), ("prefill", "gemma-3-27b-tp1", 1),
    ("prefill", "gemma-3-27b-tp1", 64), ("ragged", "gemma-3-27b-tp1", None),
    ("decode", "qwen3-14b-tp2", 1), ("decode", "qwen3-14b-tp2", 64), ("prefill", "qwen3-14b-tp2", 1),
    ("prefill", "qwen3-14b-tp2", 64), ("ragged", "qwen3-14b-tp2", None),
    ("ragged", "qwen3-next-tp2", None),
    ("decode", "mixtral-8x22b-tp1", 1),
    ("decode", "mixtral-8x22b-tp2", 64), ("prefill", "mixtral-8x22b-tp2", 1), ("prefill", "mixtral-8x22b-tp2", 64),
    ("decode", "llama-4-scout-tp8", 1), ("prefill", "llama-4-scout-tp8", 1), ("prefill", "llama-4-scout-tp8-alt", 64),
    ("ragged", "llama-4-scout-tp8-alt", None),
    ("decode", "minimax-m2-tp8", 1), ("decode", "minimax-m2-tp8-alt", 64), ("prefill", "minimax-m2-tp8", 1),
    ("prefill", "minimax-m2-tp8-alt", 64), ("ragged", "minimax-m2-tp8-alt", None),
    ("decode", "glm-4.5-tp8", 1), ("prefill", "glm-4.5-tp8", 1),
    ("prefill", "phi-4", 1),
    ("prefill", "qwen3-235b-a22b-tp4", 64),
]


def variant_name(kind: str, m: Heads, page_size) -> str:
    heads = f"h{m.qo}_kv{m.kv}_d{m.head_dim}"
    return {"decode": f"gqa_paged_decode_{heads}_ps{page_size}",
            "prefill": f"gqa_paged_prefill_causal_{heads}_ps{page_size}",
            "ragged": f"gqa_ragged_prefill_causal_{heads}"}[kind]


def heads_text(m: Heads) -> str:
    if m.tp == 1:
        return (f"Heads from {m.source}: num_attention_heads = {m.heads} query heads, num_key_value_heads = "
                f"{m.kv_heads} KV heads, head_dim = {m.head_dim}")
    kv = (f"{m.kv_heads} / {m.tp} = {m.kv} KV head{'s' if m.kv > 1 else ''}" if m.kv_heads >= m.tp else
          f"{m.kv} KV head ({m.kv_heads} KV heads over {m.tp} ranks: each KV head is replicated on "
          f"{m.tp // m.kv_heads} ranks)")
    return (f"Heads from {m.source}: num_attention_heads = {m.heads} and num_key_value_heads = {m.kv_heads}, head_dim "
            f"= {m.head_dim}, split over tensor parallelism {m.tp}: {m.heads} / {m.tp} = {m.qo} query heads and "
            f"{kv} per rank")


def scale_text(m: Heads) -> str:
    return f"1 / sqrt({m.head_dim}) = {m.head_dim ** -0.5!r} for most models" if m.head_dim != 128 else \
        f"{SCALE_128} for most models"


MASK = ("Causal, aligned bottom-right: the q_len[b] queries of sequence b are its LAST q_len[b] tokens, so query i "
        "(0-based within the sequence's queries) sits at position kv_len[b] - q_len[b] + i and sees keys 0 .. "
        "kv_len[b] - q_len[b] + i (its own key included, the cached prefix entirely). q_len[b] <= kv_len[b] and "
        "q_len[b] >= 1 are data properties.")
LSE = ("lse = log2(sum_j exp(s)) over the visible keys, the base-2 log-sum-exp of the scaled logits (natural-log "
       "value / ln 2), as FlashInfer returns it.")
NUMERICS = "Numerics: float32 logits, softmax and weighted sum; output rounded to bfloat16 once; lse float32."


def description(kind: str, m: Heads, page_size) -> str:
    g = m.qo // m.kv
    heads = f"{heads_text(m)}; query head h reads KV head h // {g}" + (
        " (consecutive query heads share a KV head)." if g > 1 else ".")
    pages = (f"Sequence b owns the pages kv_indices[kv_indptr[b]:kv_indptr[b+1]] in token order; all are full "
             f"except the last, which holds kv_last_page_len[b] tokens (1..{page_size}), so kv_len[b] = (pages - 1) "
             f"* {page_size} + kv_last_page_len[b] (at least 1). Page ids are distinct and below num_pages (data "
             f"properties).")
    scale = f"sm_scale is a scalar input, {scale_text(m)}."
    if kind == "decode":
        lead = (f"Grouped-query attention decode over a paged KV cache with page_size = {page_size} "
                f"({PAGE_SIZES[page_size]}), for {m.label}: one new query token per sequence.")
        math = (f"s[b, h, j] = sm_scale * q[b, h] . k[token j of b, h // {g}]; output[b, h] = sum_j softmax_j(s)[j] * "
                f"v[token j, h // {g}]; no mask (the new token sees its whole context, its own K/V already written "
                f"to the cache).")
        body = [lead, heads, pages, math, scale, LSE]
    elif kind == "prefill":
        lead = (f"Grouped-query attention for prefill over a paged KV cache with page_size = {page_size} "
                f"({PAGE_SIZES[page_size]}), for {m.label}: chunked prefill or extend, where each prompt's new tokens "
                f"attend to the prompt's whole KV (cached prefix plus the new tokens, already written to the cache).")
        math = (f"s[h, i, j] = sm_scale * q[i, h] . k[j, h // {g}]; output[i, h] = sum_j softmax_j(s)[j] * "
                f"v[j, h // {g}] over the visible keys.")
        body = [lead, heads, "Queries are ragged: sequence b owns q[qo_indptr[b]:qo_indptr[b+1]] (q_len[b] tokens).",
                pages, MASK, math, scale, LSE]
    else:
        lead = (f"Grouped-query attention for prefill over ragged (contiguous, unpaged) q, k and v, for {m.label}: "
                f"FlashInfer's BatchPrefillWithRaggedKVCache as SGLang calls it on the new tokens of an extend batch "
                f"(their own keys and values, straight from the qkv projection; a cached prefix, if any, is attended "
                f"separately and merged by lse).")
        math = (f"s[h, i, j] = sm_scale * q[i, h] . k[j, h // {g}]; output[i, h] = sum_j softmax_j(s)[j] * "
                f"v[j, h // {g}] over the visible keys.")
        body = [lead, heads, "Sequence b owns q rows [qo_indptr[b], qo_indptr[b+1]) (q_len[b] tokens) and k/v rows "
                "[kv_indptr[b], kv_indptr[b+1]) (kv_len[b] tokens).", MASK,
                "In SGLang's use q_len == kv_len (the new tokens attend to each other only), which all the workloads "
                "have.", math, scale, LSE]
    if m.note:
        body.append(m.note)
    body.append(f"The same kernel, constants and name as the FlashInfer-Trace set's {variant_name(kind, m, page_size)}"
                f" (flashinfer-bench).")
    return " ".join(body) + "\n\n" + NUMERICS


def axis_texts(m: Heads, page_size) -> dict:
    per_rank = "" if m.tp == 1 else f" / tp {m.tp}"
    return {
        "num_qo_heads": f"num_attention_heads = {m.heads}{per_rank} from {m.source}.",
        "num_kv_heads": (f"num_key_value_heads = {m.kv_heads}{per_rank} from {m.source}." if m.kv_heads >= m.tp else
                         f"num_key_value_heads = {m.kv_heads} from {m.source}, one per rank (replicated)."),
        "head_dim": f"head_dim = {m.head_dim} from {m.source}.",
        "page_size": f"Tokens per KV cache page ({PAGE_SIZES.get(page_size, '')}).",
    }


def template(kind: str) -> dict:
    name = TEMPLATES[kind]
    return json.loads((DATASET / "definitions" / "gqa" / f"{name}.json").read_text(encoding="utf-8"))


def render(kind: str, model: str, page_size) -> dict:
    """The variant's definition: the template's structure and reference, this model's constants and text."""
    m = MODELS[model]
    d = copy.deepcopy(template(kind))
    name = variant_name(kind, m, page_size)
    values = {"num_qo_heads": m.qo, "num_kv_heads": m.kv, "head_dim": m.head_dim, "page_size": page_size}
    texts = axis_texts(m, page_size)
    for axis, spec in d["axes"].items():
        if spec["type"] == "const":
            spec["value"] = values[axis]
            spec["description"] = texts[axis]
    d["inputs"]["sm_scale"]["description"] = f"Softmax scale applied to q.k ({scale_text(m)})."
    stage = "stage:decode" if kind == "decode" else "stage:prefill"
    d["tags"] = [stage, *m.tags, f"tp:{m.tp}", "quantization:bf16", "status:draft"]
    out = {"name": name, "description": description(kind, m, page_size)}
    out.update({k: v for k, v in d.items() if k not in ("name", "description")})
    return out


def rendered() -> dict:
    """name -> (kind, definition) of every variant."""
    return {variant_name(k, MODELS[m], ps): (k, render(k, m, ps)) for k, m, ps in VARIANTS}


def einsum_text(kind: str) -> str:
    return (DATASET / "einsums" / "gqa" / f"{TEMPLATES[kind]}.yaml").read_text(encoding="utf-8")


def baseline(kind: str, name: str) -> dict:
    src = DATASET / "solutions" / "baseline" / "gqa" / TEMPLATES[kind] / f"{TEMPLATES[kind]}_torch.json"
    sol = json.loads(src.read_text(encoding="utf-8"))
    return {**sol, "name": f"{name}_torch", "definition": name}


def files() -> dict:
    """Every file the variants consist of: dataset-relative path -> text."""
    out = {}
    for name, (kind, d) in rendered().items():
        out[f"definitions/gqa/{name}.json"] = json.dumps(d, indent=2, ensure_ascii=False) + "\n"
        out[f"einsums/gqa/{name}.yaml"] = einsum_text(kind)
        out[f"solutions/baseline/gqa/{name}/{name}_torch.json"] = \
            json.dumps(baseline(kind, name), indent=2, ensure_ascii=False) + "\n"
    for v in SUBSTITUTED:
        out.update(substituted_files(v))
    return out



# --------------------------------------------------------------------------------------------------
# Other families: a variant is a checked definition of ours with other constants and the text that says
# so (each replacement must apply, so a change to the template's text shows here). Our family names are
# kept where the public set names the kernel differently; the description gives the public name.
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Substituted:
    name: str
    type: str
    template: str
    consts: dict  # const axis -> value
    replace: tuple  # (old, new) text pairs over every description of the definition
    tags: tuple


QWEN3_NEXT_TP4 = ("at tensor parallelism 4 (the served configuration: Qwen's model card and the engines' recipes launch it "
                  "with --tensor-parallel-size 4 / --tp-size 4): 16 / 4 = 4 query/key heads and 32 / 4 = 8 value heads "
                  "per rank")
QWEN3_NEXT_AT = {
    2: ("at tensor parallelism 2 (two GPUs, e.g. two H200 for the bfloat16 weights; the dataset's calling record "
        "qwen3-next-80b-a3b serves TP4): 16 / 2 = 8 query/key heads and 32 / 2 = 16 value heads per rank"),
    1: ("at tensor parallelism 1 (one GPU, e.g. the FP8 checkpoint Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 on one H200, "
        "the state and activations still float32 / bfloat16; the dataset's calling record qwen3-next-80b-a3b serves "
        "TP4): all 16 query/key heads and 32 value heads on one GPU"),
}


def _gdn(kind: str, tp: int) -> Substituted:
    qk, v = 16 // tp, 32 // tp
    public = f"gdn_{kind}_qk{qk}_v{v}_d128_k_last"
    return Substituted(
        f"gdn_{kind}_qk{qk}_v{v}_d128", "gdn", f"gdn_{kind}_qk4_v8_d128", {"num_qk_heads": qk, "num_v_heads": v},
        ((QWEN3_NEXT_TP4, QWEN3_NEXT_AT[tp] + f" (flashinfer-bench's FlashInfer-Trace set names this kernel {public})"),
         ("linear_num_key_heads = 16 / tp 4.", f"linear_num_key_heads = 16 / tp {tp}."),
         ("linear_num_value_heads = 32 / tp 4.", f"linear_num_value_heads = 32 / tp {tp}."),
         *((("after causal_conv1d_update_c2048_k4 and before rmsnorm_gated_silu_h8_d128",
             "after the causal conv1d update and before the gated RMSNorm of the same rank"),) if kind == "decode" else ())),
        ("status:draft", "model-alt:qwen3-next-80b-a3b", f"stage:{kind}", f"tp:{tp}", "quantization:bf16",
         "layout:k-last"))


NANO_9B = ("as the 27 Mamba-2 mixer layers of NVIDIA-Nemotron-Nano-9B-v2 run it at TP1 in vLLM")
NANO_CONSTS = ("Constants from nvidia/NVIDIA-Nemotron-Nano-9B-v2 config.json (no Hub access here: the values as quoted "
               "identically by NVIDIA's Megatron-Bridge conversion script for this checkpoint and by other public code): "
               "mamba_num_heads = 128, mamba_head_dim = 80, ssm_state_size = 128, n_groups = 8.")


def _ssu(tp: int) -> Substituted:
    h, ng = 128 // tp, 8 // tp
    public = f"mamba_ssu_decode_h{h}_d64_s128_ng{ng}"
    per_rank = "" if tp == 1 else f", split over tensor parallelism {tp}: {h} heads and {ng} groups per rank"
    return Substituted(
        f"mamba_selective_state_update_h{h}_d64_s128_ng{ng}", "mamba", "mamba_selective_state_update_h128_d80_s128_ng8",
        {"nheads": h, "head_dim": 64, "ngroups": ng},
        ((NANO_9B, f"as the 24 Mamba-2 mixer layers of Nemotron-H-8B run it at TP{tp} in vLLM"),
         (NANO_CONSTS, "Constants from nvidia/Nemotron-H-8B-Base-8K config.json: mamba_num_heads = 128, mamba_head_dim "
                       f"= 64, ssm_state_size = 128, n_groups = 8{per_rank} (flashinfer-bench's FlashInfer-Trace set "
                       f"names this kernel {public})."),
         ("mamba_num_heads = 128 from nvidia/NVIDIA-Nemotron-Nano-9B-v2 config.json (no Hub access here: the values as "
          "quoted identically by NVIDIA's Megatron-Bridge conversion script for this checkpoint and by other public "
          "code).", f"mamba_num_heads = 128{'' if tp == 1 else f' / tp {tp}'} from nvidia/Nemotron-H-8B-Base-8K "
                    "config.json."),
         ("mamba_head_dim = 80 from the same config (mamba d_inner = 128 * 80 = 10240).",
          "mamba_head_dim = 64 from the same config (mamba d_inner = 128 * 64 = 8192)."),
         ("n_groups = 8 from the same config: B and C have one row per group, shared by 128 / 8 = 16 heads.",
          f"n_groups = 8{'' if tp == 1 else f' / tp {tp}'} from the same config: B and C have one row per group, "
          "shared by 16 heads."),
         ("mamba_gated_rmsnorm_h10240_ng8", "its grouped gated RMSNorm"),
         ("for NemotronHForCausalLM to", "for NemotronHForCausalLM (Nemotron-H-8B's architecture too) to"),
         ("NVIDIA's and vLLM's serving recipe for this model passes", "NVIDIA's and vLLM's serving recipe for "
          "NVIDIA-Nemotron-Nano-9B-v2 passes")),
        ("stage:decode", "model-alt:nemotron-h-8b", f"tp:{tp}", "quantization:bf16", "status:draft"))


DSA_PS1 = Substituted(
    "dsa_sparse_mla_h16_ckv512_kpe64_topk2048_ps1", "dsa", "dsa_sparse_mla_h16_ckv512_kpe64_topk2048_ps64",
    {"page_size": 1},
    (("in bfloat16 pages of page_size 64 (SGLang's NSA backend requires page size 64 on CUDA; bf16 is its default "
      "KV-cache dtype on H200, per sgl-project/sglang docs/basic_usage/deepseek_v32.md)",
      "in a bfloat16 token-level cache, page_size 1 (one slot per page: a server whose cache is not paged in blocks, "
      "as the public FlashInfer-Trace capture of this kernel; SGLang's NSA backend on CUDA uses page size 64, "
      "dsa_sparse_mla_h16_ckv512_kpe64_topk2048_ps64)"),
     ("slot = page * 64 + offset", "slot = page id, the page holding one token"),
     ("the flashinfer-bench FlashInfer-Trace set names the same kernel dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64",
      "the flashinfer-bench FlashInfer-Trace set names this kernel dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps1"),
     ("Tokens per cache page (SGLang NSA backend and DeepGEMM: 64).", "Tokens per cache page: 1 (a token-level cache).")),
    ("status:draft", "model-alt:deepseek-v3.2", "stage:decode", "stage:prefill", "tp:8", "quantization:bf16",
     "op_type:dsa_paged"))

MLA_PREFILL_PS64 = Substituted(
    "mla_paged_prefill_causal_h16_ckv512_kpe64_ps64", "mla", "mla_paged_prefill_causal_h16_ckv512_kpe64_ps1",
    {"page_size": 64},
    (("Tokens per KV-cache page (1).", "Tokens per KV-cache page (64: SGLang launched with --page-size 64, the page "
                                       "size of the FlashMLA and TensorRT-LLM MLA backends)."),
     ("so this kernel is tagged model-alt.", "so this kernel is tagged model-alt. The cache here is paged at 64 tokens, "
                                             "as mla_paged_decode_h16_ckv512_kpe64_ps64's; flashinfer-bench's "
                                             "FlashInfer-Trace set has the same kernel under the same name.")),
    ("status:draft", "model-alt:deepseek-v3", "stage:prefill", "tp:8", "quantization:bf16"))

SUBSTITUTED = [_gdn("decode", 2), _gdn("decode", 1), _gdn("prefill", 2), _gdn("prefill", 1), _ssu(1), _ssu(2),
               DSA_PS1, MLA_PREFILL_PS64]


def render_substituted(v: Substituted) -> dict:
    d = json.loads((DATASET / "definitions" / v.type / f"{v.template}.json").read_text(encoding="utf-8"))
    replace_in_descriptions(d, v.replace, f"{v.name} (from {v.template})")
    for axis, value in v.consts.items():
        assert d["axes"][axis]["type"] == "const", f"{v.name}: {axis} is not a const axis of {v.template}"
        d["axes"][axis]["value"] = value
    d["name"], d["tags"] = v.name, list(v.tags)
    return d


def substituted_files(v: Substituted) -> dict:
    d = render_substituted(v)
    out = {f"definitions/{v.type}/{v.name}.json": json.dumps(d, indent=2, ensure_ascii=False) + "\n"}
    einsum = DATASET / "einsums" / v.type / f"{v.template}.yaml"
    if einsum.is_file():
        out[f"einsums/{v.type}/{v.name}.yaml"] = einsum.read_text(encoding="utf-8")
    for src in sorted((DATASET / "solutions" / "baseline" / v.type / v.template).glob("*.json")):
        sol = json.loads(src.read_text(encoding="utf-8"))
        name = sol["name"].replace(v.template, v.name)
        out[f"solutions/baseline/{v.type}/{v.name}/{name}.json"] = \
            json.dumps({**sol, "name": name, "definition": v.name}, indent=2, ensure_ascii=False) + "\n"
    return out


# One tiny size per set (the template's cases check the mathematics at larger ones): the variant's real heads,
# head_dim and page size, a batch of one to three, and sm_scale as a float, a 0-d tensor and another value.
def _sets(kind: str, page_size) -> list:
    if kind == "decode":
        return [{"batch_size": 1, "num_kv_indices": 1, "num_pages": 2},
                {"batch_size": 2, "num_kv_indices": 5 if page_size == 1 else 3, "num_pages": 6},
                {"batch_size": 3, "num_kv_indices": 7 if page_size == 1 else 4, "num_pages": 7}]
    if kind == "prefill":
        return [{"batch_size": 1, "num_kv_indices": 3 if page_size == 1 else 1, "num_pages": 4, "total_q": 2},
                {"batch_size": 2, "num_kv_indices": 9 if page_size == 1 else 3, "num_pages": 12, "total_q": 6},
                {"batch_size": 3, "num_kv_indices": 12 if page_size == 1 else 4, "num_pages": 12, "total_q": 9}]
    return [{"batch_size": 1, "total_q": 3, "total_kv": 3}, {"batch_size": 2, "total_q": 5, "total_kv": 9},
            {"batch_size": 3, "total_q": 11, "total_kv": 11}]


def _case(kind: str, page_size) -> Case:
    make, expected = {"decode": (decode_inputs, decode_expected), "prefill": (paged_prefill_inputs,
                      paged_prefill_expected), "ragged": (ragged_inputs, ragged_expected)}[kind]
    return Case(_sets(kind, page_size), make, expected, derived=prefill_derived)


def _substituted_case(v: Substituted) -> Case:
    """The template's own check; the sizes change where they depend on the constants."""
    [case] = [m.CASES[v.template] for m in (qwen3_next, mamba2, deepseek_v32, deepseek) if v.template in m.CASES]
    if v.type == "mamba":  # heads and groups shrunk below the variant's (the float64 recurrence is a Python loop)
        sizes = [shrunk({"batch_size": 1, "num_slots": 2}, nheads=16, ngroups=2),
                 shrunk({"batch_size": 3, "num_slots": 5}, nheads=16, ngroups=1),
                 shrunk({"batch_size": 2, "num_slots": 3}, nheads=32, ngroups=2)]
    elif v.type == "dsa":  # one token per page: the pool holds the slots the rows select
        sizes = [{"num_tokens": 3, "num_pages": 192, "_selected": (1, 70, 192)},
                 {"num_tokens": 2, "num_pages": 256, "_selected": (100, 37)},
                 shrunk({"num_tokens": 3, "num_pages": 40, "_selected": (32, 32, 32)}, topk=32)]
    elif v.template.startswith("gdn_decode"):  # the real heads, small batches
        sizes = [{"batch_size": 1}, {"batch_size": 2, "free_slots": 1}, {"batch_size": 1, "free_slots": 2}]
    elif v.template.startswith("gdn_prefill"):  # the real heads and one token; a chunk boundary at width 16
        sizes = [{"seq_lens": (1,)}, shrunk({"seq_lens": (66,)}, head_k_dim=16, head_v_dim=16),
                 shrunk({"seq_lens": (2, 3)}, head_k_dim=16, head_v_dim=16)]
    else:
        sizes = case.sizes
    return Case(sizes, case.make_inputs, case.expected, derived=case.derived, check=case.check, extra=case.extra)


CASES = {variant_name(k, MODELS[m], ps): _case(k, ps) for k, m, ps in VARIANTS}
CASES.update({v.name: _substituted_case(v) for v in SUBSTITUTED})


def write(root: Path = DATASET) -> list:
    """Write every variant file under `root` that differs; returns the paths written."""
    return write_files(files(), root)


if __name__ == "__main__":
    for p in write():
        print(f"wrote {p.relative_to(DATASET.parent)}")
