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

A sibling's reference, einsum cascade and baseline are the template's byte for byte: `kerneltrace definitions`
renders them from dataset/families/cascade_variants_*.json (the heads per rank of each model, from its config.json).
Here: the checks, at each sibling's real heads, and vLLM's rule (use_cascade), which its workloads must satisfy.
"""

from __future__ import annotations

from pathlib import Path

from .common import Case, families
from .llama import decode_derived
from .serving_families import CASCADE_SETS, cascade_expected, cascade_inputs, merge_expected, merge_inputs

DATASET = Path(__file__).resolve().parents[2] / "dataset"
FAMILIES = families("cascade_variants_*")
NUM_SMS = 132  # H100 SXM and H200: torch.cuda.get_device_properties().multi_processor_count


def sibling_names(prefix: str) -> list[str]:
    """The rendered siblings whose names start with `prefix` (gqa_cascade_decode_ or merge_state_)."""
    return [s["name"] for family in FAMILIES for s in family["siblings"]
            if s["name"].startswith(prefix)]


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



# The templates' own tiny sets (serving_families.py) at each sibling's real heads: a few pages, one to seven rows.
CASES = {name: Case(CASCADE_SETS, cascade_inputs, cascade_expected, derived=decode_derived)
         for name in sibling_names("gqa_cascade_decode_")}
CASES.update({name: Case([{"seq_len": 1}, {"seq_len": 3}, {"seq_len": 7}], merge_inputs, merge_expected)
              for name in sibling_names("merge_state_")})
