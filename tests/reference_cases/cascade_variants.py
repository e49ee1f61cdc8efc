"""Cascade (shared-prefix) attention at the head configurations of the other vLLM-served GQA models: siblings of
gqa_cascade_decode_h32_kv8_d128_ps16 and merge_state_h32_d128 (serving_families.py checks both templates in full).
They are FlashInfer API kernels: vLLM 0.33 has removed cascade attention and SGLang has none merged (issue 40), so
no description says an engine runs them; the workloads keep the batches vLLM's former rule, below, picked.

vLLM decided by itself to run a decode step as cascade attention (before 0.33) (vllm/v1/worker/gpu_model_runner.py,
_compute_cascade_attn_prefix_len, and use_cascade_attention in vllm/v1/attention/backends/flash_attn.py), per KV
cache group, for every model it serves with the FlashAttention backend: the batch's common cached prefix cut to
whole blocks (and to the shortest computed context) must be at least 256 tokens, the batch at least 8 requests, the
group's layers without ALiBi, sliding window or chunked local attention, and no decode context parallelism; for a
pure decode batch with grouped queries (FlashDecoding is then the alternative) its performance model must also
favour cascade: ceil(qo * ceil(B / 128) / num_sms) * ceil(S / 128) < ceil(B * kv * ceil(S / 128) / num_sms), with
B requests, a prefix of S tokens, qo / kv heads per rank and num_sms = 132 (H100 SXM and H200). So each model runs
the template's kernel at its own heads; the workloads here are steps for which that rule holds (checked by
tests/test_cascade_variants.py).

Excluded models (their records are vLLM's but the rule or the mathematics differ): gpt-oss-20b / gpt-oss-120b
(alternate sliding-window layers, which the rule excludes, and attention sinks in every layer, a softmax term the
template does not have: another reference, not a constant variant); nemotron-nano-9b-v2 and qwen3-next-80b-a3b
(hybrid state-space models: vLLM does not enable prefix caching for them by default, so no shared cached blocks;
Qwen3-Next's attention is also gated, head_dim 256). Gemma-3-27B is included for its global layers only (its
sliding-window group is excluded by the rule, its full-attention group is not). SGLang-served records
(DeepSeek, Kimi, GLM, MiniMax, Llama-4-Scout) are not vLLM's rule's to decide.

A sibling's reference, einsum cascade and baseline are the template's byte for byte; the table renders the
constants and the text, and `cd tests && python -m reference_cases.cascade_variants` rewrites the files.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

from .common import Case, write_files
from .llama import decode_derived
from .serving_families import CASCADE_SETS, cascade_expected, cascade_inputs, merge_expected, merge_inputs
from .variants import MODELS, Heads

DATASET = Path(__file__).resolve().parents[2] / "dataset"
CASCADE_TEMPLATE = "gqa_cascade_decode_h32_kv8_d128_ps16"
MERGE_TEMPLATE = "merge_state_h32_d128"
NUM_SMS = 132  # H100 SXM and H200: torch.cuda.get_device_properties().multi_processor_count

# Heads of the vLLM records that variants.MODELS does not have at the records' tensor parallelism.
_MORE = {
    "llama-3.3-70b-tp8": Heads("Llama-3.3-70B at TP8", "meta-llama/Llama-3.3-70B-Instruct config.json", 64, 8, 128, 8,
                               ("model-alt:llama-3.3-70b-tp8",)),
    "qwen3-30b-a3b-tp4": Heads("Qwen3-30B-A3B at TP4", "Qwen/Qwen3-30B-A3B config.json", 32, 4, 128, 4,
                               ("model-alt:qwen3-30b-a3b-tp4",)),
    "qwen3-235b-a22b-tp8": Heads("Qwen3-235B-A22B at TP8", "Qwen/Qwen3-235B-A22B config.json", 64, 4, 128, 8,
                                 ("model-alt:qwen3-235b-a22b-tp8",)),
    "qwen3-14b": Heads("Qwen3-14B at TP1", "Qwen/Qwen3-14B config.json", 40, 8, 128, 1, ("model-alt:qwen3-14b",)),
    "qwen2.5-7b": Heads("Qwen2.5-7B at TP1", "Qwen/Qwen2.5-7B config.json (head_dim = hidden_size 3584 / 28)", 28, 4,
                        128, 1, ("model-alt:qwen2.5-7b",)),
    "gemma-3-27b": Heads("Gemma-3-27B at TP2 (its global-attention layers)",
                         "google/gemma-3-27b-it config.json (text_config)", 32, 16, 128, 2, ("model-alt:gemma-3-27b",),
                         "Only Gemma 3's global layers (every sixth) run it, with sm_scale = query_pre_attn_scalar^-0.5 "
                         "= 168^-0.5: vLLM keeps them in their own KV cache group, a full-attention one, which the "
                         "rule allows; the five sliding-window layers of each six (window 1024) form another group, "
                         "which it excludes."),
}
HEADS = {**MODELS, **_MORE}


@dataclass(frozen=True)
class Sibling:
    models: tuple  # keys of HEADS: the models (at their records' tensor parallelism) with these heads per rank

    @property
    def heads(self) -> list:
        return [HEADS[m] for m in self.models]

    @property
    def qo(self) -> int:
        return self.heads[0].qo

    @property
    def kv(self) -> int:
        return self.heads[0].kv

    @property
    def cascade_name(self) -> str:
        return f"gqa_cascade_decode_h{self.qo}_kv{self.kv}_d128_ps16"

    @property
    def merge_name(self) -> str:
        return f"merge_state_h{self.qo}_d128"

    @property
    def tags(self) -> list:
        return [t for h in self.heads for t in h.tags]

    @property
    def tp(self) -> list:
        return sorted({h.tp for h in self.heads})


# The siblings, by heads per rank. Llama-3.1-8B, Qwen3-8B and Mistral-7B-Instruct-v0.3 (32 / 8 heads of 128, no
# sliding window: sliding_window is null in mistralai/Mistral-7B-Instruct-v0.3 config.json) share the template.
SIBLINGS = [
    Sibling(("llama-3.2-3b",)),
    Sibling(("qwen3-30b-a3b",)),
    Sibling(("llama-3.3-70b-tp4",)),  # its Heads entry carries Qwen3-32B at TP4 too
    Sibling(("llama-3.3-70b-tp8", "qwen3-30b-a3b-tp4", "qwen3-235b-a22b-tp8")),
    Sibling(("qwen3-14b",)),
    Sibling(("qwen2.5-7b",)),
    Sibling(("gemma-3-27b",)),
]
# merge_state needs only the query heads: Qwen3-30B-A3B at TP1 has the template's 32; Gemma-3-27B at TP2 has
# Llama-3.3-70B at TP4's 16.
MERGE_SIBLINGS = [s for s in SIBLINGS if s.qo != 32 and s.models != ("gemma-3-27b",)]


def use_cascade(batch: int, shared: int, qo: int, kv: int, num_sms: int = NUM_SMS) -> bool:
    """vLLM's use_cascade_attention for a pure decode batch (every query length 1) with grouped queries, written
    from its comments: thresholds, then the CTA-wave model against FlashDecoding."""
    if shared < 256 or batch < 8:
        return False
    if qo // kv <= 1:
        return True  # no FlashDecoding to compete with
    tiles = -(-shared // 128)
    cascade_time = -(-(qo * -(-batch // 128)) // num_sms) * tiles
    flash_decoding_time = -(-(batch * kv * tiles) // num_sms)
    return cascade_time < flash_decoding_time


def _heads_text(h: Heads) -> str:
    if h.tp == 1:
        return f"{h.label}: {h.heads} query heads and {h.kv_heads} KV heads of {h.head_dim} ({h.source})"
    rep = " (each KV head replicated)" if h.kv_heads < h.tp else ""
    return (f"{h.label}: {h.heads} query heads and {h.kv_heads} KV heads of {h.head_dim} ({h.source}) over tensor "
            f"parallelism {h.tp}, {h.qo} and {h.kv} per rank{rep}")


def _min_batch(s: Sibling) -> int:
    return min(b for b in range(8, 4096) if use_cascade(b, 1024, s.qo, s.kv))


def cascade_description(s: Sibling) -> str:
    g = s.qo // s.kv
    heads = "; ".join(_heads_text(h) for h in s.heads)
    notes = " ".join(h.note for h in s.heads if h.note)
    return (
        f"Cascade (shared-prefix) grouped-query attention decode over a paged KV cache with page_size = 16 (vLLM's "
        f"default block_size), at {s.qo} query and {s.kv} KV heads of 128 per rank: {heads}. A decode batch whose "
        f"requests all begin with the same cached prefix (a shared system prompt, or n parallel completions of one "
        f"prompt) keeps that prefix once, in pages every request's block table lists first (prefix caching); the "
        f"prefix is attended once for all queries, each request's own pages separately, and the two states merged. "
        f"No engine runs it today: vLLM 0.33 has removed cascade attention (earlier releases had made it opt-in, "
        f"--no-disable-cascade-attn) and SGLang has none merged, so this is FlashInfer's cascade API kernel "
        f"(MultiLevelCascadeAttentionWrapper), the calling records count plain paged decode, and the kernel is tagged "
        f"model-alt. The workloads are the shared-prefix decode batches vLLM's former FlashAttention rule picked "
        f"cascade for (use_cascade_attention: a common prefix of at least 256 tokens cut to whole blocks, at least 8 "
        f"requests, no ALiBi, sliding window or chunked local attention, and for a decode batch with grouped queries "
        f"ceil({s.qo} * ceil(B / 128) / 132) * ceil(S / 128) < ceil(B * {s.kv} * ceil(S / 128) / 132) on 132 SMs, from "
        f"about {_min_batch(s)} requests on at these heads with a 1k-token prefix). This definition returns the result "
        f"as FlashInfer's MultiLevelCascadeAttentionWrapper does, with a base-2 lse. {notes + ' ' if notes else ''}"
        f"The shared prefix is the pages shared_kv_indices, all full (num_shared_pages * page_size tokens); sequence "
        f"b then owns the pages kv_indices[kv_indptr[b]:kv_indptr[b+1]] (at least one: the new token's K/V is "
        f"already written), all full except the last, which holds kv_last_page_len[b] tokens (1..page_size). The "
        f"result is plain attention over the concatenation: with j over the prefix tokens then the sequence's own, "
        f"s[b, h, j] = sm_scale * q[b, h] . k[token j, h // {g}]; output[b, h] = sum_j softmax_j(s)[j] * v[token j, "
        f"h // {g}]; no mask. lse[b, h] = log2(sum_j exp(s[b, h, j])), base 2. Page ids (shared and own) are distinct "
        f"and below num_pages (data properties). The same mathematics as {CASCADE_TEMPLATE} (Llama-3.1-8B's, also "
        f"Qwen3-8B's and Mistral-7B-Instruct-v0.3's heads), other constants. Numerics: float32 logits, softmax and "
        f"weighted sum; output rounded to bfloat16 once; lse float32.")


def merge_description(s: Sibling) -> str:
    heads = "; ".join(_heads_text(h) for h in s.heads)
    return (
        f"Merge of two partial attention states into one, FlashInfer's merge_state (flashinfer.cascade), at {s.qo} "
        f"query heads of head_dim 128 per rank: {heads}. The same queries attended over two disjoint sets of keys give "
        f"(v_a, s_a) and (v_b, s_b), each an attention output normalised over its own keys and the base-2 "
        f"log-sum-exp of its scaled logits (FlashInfer's lse); the attention over the union of the keys is their "
        f"softmax-weighted average. These models run it when served by SGLang with the FlashInfer backend: every layer "
        f"of an extend step whose prompts have a cached prefix attends the new tokens to each other (ragged prefill) "
        f"and to the cached prefix (paged prefill) and merges the two with merge_state; their calling records serve "
        f"them with vLLM, which does not call it, so the kernel is tagged model-alt. FlashInfer's cascade API "
        f"(MultiLevelCascadeAttentionWrapper) merges a shared prefix's state the same way; no engine runs cascade "
        f"attention today (vLLM 0.33 has removed it, SGLang has none merged).\n\n"
        f"    w_a = 2^s_a / (2^s_a + 2^s_b),  w_b = 2^s_b / (2^s_a + 2^s_b)     (per token and head)\n"
        f"    v_merged[t, h, :] = w_a * v_a[t, h, :] + w_b * v_b[t, h, :]\n"
        f"    s_merged[t, h] = log2(2^s_a + 2^s_b)\n\n"
        f"The same mathematics as {MERGE_TEMPLATE}, other constants. Numerics: float32, the larger lse subtracted "
        f"before exponentiating; v_merged rounded to bfloat16 once, s_merged float32.")


def _read(kind: str, name: str) -> dict:
    return json.loads((DATASET / "definitions" / kind / f"{name}.json").read_text(encoding="utf-8"))


def _per_rank(h: Heads, total: int) -> str:
    return f"{total}" if h.tp == 1 else f"{total} / tp {h.tp}"


def render_cascade(s: Sibling) -> dict:
    d = copy.deepcopy(_read("gqa", CASCADE_TEMPLATE))
    h = s.heads[0]
    d["axes"]["num_qo_heads"].update(value=s.qo, description=f"num_attention_heads = {_per_rank(h, h.heads)} from "
                                     f"{h.source}" + (" (and the other models named above)." if len(s.heads) > 1 else "."))
    kv = (f"num_key_value_heads = {_per_rank(h, h.kv_heads)} from {h.source}" if h.kv_heads >= h.tp else
          f"num_key_value_heads = {h.kv_heads} from {h.source}, one per rank (replicated)")
    d["axes"]["num_kv_heads"].update(value=s.kv, description=kv + (
        " (and the other models named above)." if len(s.heads) > 1 else "."))
    d["axes"]["head_dim"]["description"] = f"head_dim = 128 from {h.source}."
    d["inputs"]["sm_scale"]["description"] = ("Softmax scale applied to q.k (1 / sqrt(head_dim) = 0.08838834764831845; "
                                              "Gemma 3: 168^-0.5).")
    d["tags"] = ["stage:decode", *s.tags, *(f"tp:{t}" for t in s.tp), "quantization:bf16", "status:draft"]
    return {"name": s.cascade_name, "description": cascade_description(s),
            **{k: v for k, v in d.items() if k not in ("name", "description")}}


def render_merge(s: Sibling) -> dict:
    d = copy.deepcopy(_read("reduction", MERGE_TEMPLATE))
    h = s.heads[0]
    d["axes"]["num_heads"].update(value=s.qo, description=f"num_attention_heads = {_per_rank(h, h.heads)} query heads "
                                  f"({h.source}" + (", and the other models named above)." if len(s.heads) > 1 else ")."))
    d["axes"]["head_dim"]["description"] = f"head_dim = 128 ({h.source})."
    d["tags"] = ["stage:prefill", *s.tags, *(f"tp:{t}" for t in s.tp), "quantization:bf16", "status:draft"]
    return {"name": s.merge_name, "description": merge_description(s),
            **{k: v for k, v in d.items() if k not in ("name", "description")}}


def rendered() -> dict:
    """name -> (type, template, definition) of every sibling."""
    out = {s.cascade_name: ("gqa", CASCADE_TEMPLATE, render_cascade(s)) for s in SIBLINGS}
    out.update({s.merge_name: ("reduction", MERGE_TEMPLATE, render_merge(s)) for s in MERGE_SIBLINGS})
    return out


def files() -> dict:
    """Every file of the siblings: dataset-relative path -> text."""
    out = {}
    for name, (kind, template, d) in rendered().items():
        out[f"definitions/{kind}/{name}.json"] = json.dumps(d, indent=2, ensure_ascii=False) + "\n"
        out[f"einsums/{kind}/{name}.yaml"] = (DATASET / "einsums" / kind / f"{template}.yaml").read_text(encoding="utf-8")
        src = DATASET / "solutions" / "baseline" / kind / template / f"{template}_torch.json"
        sol = json.loads(src.read_text(encoding="utf-8"))
        out[f"solutions/baseline/{kind}/{name}/{name}_torch.json"] = json.dumps(
            {**sol, "name": f"{name}_torch", "definition": name}, indent=2, ensure_ascii=False) + "\n"
    return out


# The templates' own tiny sets (serving_families.py) at each sibling's real heads: a few pages, one to seven rows.
CASES = {s.cascade_name: Case(CASCADE_SETS, cascade_inputs, cascade_expected, derived=decode_derived) for s in SIBLINGS}
CASES.update({s.merge_name: Case([{"seq_len": 1}, {"seq_len": 3}, {"seq_len": 7}], merge_inputs, merge_expected)
              for s in MERGE_SIBLINGS})


def write(root: Path = DATASET) -> list:
    return write_files(files(), root)


if __name__ == "__main__":
    for p in write():
        print(f"wrote {p.relative_to(DATASET.parent)}")
