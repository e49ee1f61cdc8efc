"""Speculative decoding's verify kernels for the other models whose published recipes run it: the same mathematics
as a checked template definition, other constants: families in dataset/families/ (`kerneltrace definitions` renders them).

- The MLA verify (DeepSeek-V3's MTP, template mla_paged_verify_causal_h16_ckv512_kpe64_ps1, checked in full by
  specdec_mla.py) at TP16 (8 heads per rank) and at page size 64 (vLLM's FlashMLA).
- The chain verify attention (template gqa_paged_verify_causal_h32_kv8_d128_ps16, checked by specdec.py) for GLM-4.5
  (SGLang EAGLE with its MTP layer, page size 1) and Qwen3-Next-80B-A3B's full-attention layers (vLLM
  qwen3_next_mtp): their own description, the template's axes, inputs, outputs, constraints and reference.
- The rejection sampler (template chain_speculative_sampling_v128256, vLLM's arithmetic) at the vocabularies of
  the models whose vLLM recipes enable MTP (DeepSeek-V3, GLM-4.5, Qwen3-Next): the template with the model's
  text and vocabulary; vLLM's opt-in probabilistic path, tagged so (its default greedy-draft sampler:
  specdec_greedy.py).

Every variant's reference, einsum cascade and baseline are its template's (tests/definitions/test_specdec_variants.py
proves it). Each gets a cheap check of its template's independent
formulation at tiny sizes with its real constants (the sampler's vocabulary shrunk, as the template's sets do).
"""

from __future__ import annotations

from . import specdec, specdec_mla
from .common import Case

# Tiny sets with the variants' real heads, head_dim and page size (the templates' cases check the mathematics).
GQA_SETS = {1: [{"batch_size": 1, "num_verify_tokens": 4, "num_kv_indices": 4, "num_pages": 6},
                {"batch_size": 2, "num_verify_tokens": 3, "num_kv_indices": 11, "num_pages": 12},
                {"batch_size": 3, "num_verify_tokens": 2, "num_kv_indices": 10, "num_pages": 10}],
            16: [{"batch_size": 1, "num_verify_tokens": 3, "num_kv_indices": 1, "num_pages": 2},
                 {"batch_size": 2, "num_verify_tokens": 4, "num_kv_indices": 3, "num_pages": 5},
                 {"batch_size": 3, "num_verify_tokens": 2, "num_kv_indices": 4, "num_pages": 4}]}
# The siblings of dataset/families/specdec_variants_*.json: DeepSeek-V3's MLA verify at TP16 and with FlashMLA's
# pages, GLM-4.5's (SGLang, page size 1) and Qwen3-Next's (vLLM, page size 16) chain verify, and the rejection
# sampler at the vocabularies of DeepSeek-V3, GLM-4.5 and Qwen3-Next.
MLA_PS1, MLA_PS64 = "mla_paged_verify_causal_h8_ckv512_kpe64_ps1", "mla_paged_verify_causal_h16_ckv512_kpe64_ps64"
GQA_VARIANTS = {"gqa_paged_verify_causal_h12_kv1_d128_ps1": 1, "gqa_paged_verify_causal_h4_kv1_d256_ps16": 16}
SAMPLERS = [f"chain_speculative_sampling_v{vocab}" for vocab in (129280, 151552, 151936)]

CASES = {
    MLA_PS1: Case(specdec_mla.PS1_SETS, specdec_mla.mla_verify_inputs, specdec_mla.mla_verify_expected,
                  derived=specdec.verify_derived),
    MLA_PS64: Case(specdec_mla.PS64_SETS, specdec_mla.mla_verify_inputs, specdec_mla.mla_verify_expected,
                   derived=specdec.verify_derived),
    **{name: Case(GQA_SETS[page_size], specdec.verify_inputs, specdec.verify_expected, derived=specdec.verify_derived)
       for name, page_size in GQA_VARIANTS.items()},
    **{name: Case(specdec.SAMPLING_SETS, specdec.sampling_inputs, specdec.sampling_expected) for name in SAMPLERS},
}
