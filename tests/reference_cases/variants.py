"""The independent checks of the head-configuration and page-size variants (dataset/families/variants_*.json,
rendered by `kerneltrace definitions`).

Many models run the same attention with other head counts (a model's config.json at a tensor-parallel degree)
or another KV page size (1: SGLang's token-level cache; 64: a server launched with a 64-token page). Each
variant is one of three templates (Llama-3.1-8B's paged decode, paged causal prefill and ragged causal
prefill, checked in full by llama.py's cases) with its constants and its own description: the reference, the
einsum cascade and the baseline are the template's, byte for byte. So the mathematics is checked once, on the
template; a variant gets a cheap check of the same independent formulation at one tiny size per set (its
const axes are real). Siblings of other checked definitions (GDN, Mamba, DSA, MLA at other constants) get their
template's check with sizes fitted to their constants.

The names are the public FlashInfer-Trace set's (flashinfer-bench's dataset), which uses the same convention.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import deepseek, deepseek_v32, mamba2, qwen3_next
from .common import Case, families, shrunk
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
FAMILIES = families("variants_*")

TEMPLATES = {"decode": "gqa_paged_decode_h32_kv8_d128_ps16",
             "prefill": "gqa_paged_prefill_causal_h32_kv8_d128_ps16",
             "ragged": "gqa_ragged_prefill_causal_h32_kv8_d128"}


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


def _substituted_case(template: str, type_: str) -> Case:
    """The template's own check; the sizes change where they depend on the constants."""
    [case] = [m.CASES[template] for m in (qwen3_next, mamba2, deepseek_v32, deepseek) if template in m.CASES]
    if type_ == "mamba":  # heads and groups shrunk below the variant's (the float64 recurrence is a Python loop)
        sizes = [shrunk({"batch_size": 1, "num_slots": 2}, nheads=16, ngroups=2),
                 shrunk({"batch_size": 3, "num_slots": 5}, nheads=16, ngroups=1),
                 shrunk({"batch_size": 2, "num_slots": 3}, nheads=32, ngroups=2)]
    elif type_ == "dsa":  # one token per page: the pool holds the slots the rows select
        sizes = [{"num_tokens": 3, "num_pages": 192, "_selected": (1, 70, 192)},
                 {"num_tokens": 2, "num_pages": 256, "_selected": (100, 37)},
                 shrunk({"num_tokens": 3, "num_pages": 40, "_selected": (32, 32, 32)}, topk=32)]
    elif template.startswith("gdn_decode"):  # the real heads, small batches
        sizes = [{"batch_size": 1}, {"batch_size": 2, "free_slots": 1}, {"batch_size": 1, "free_slots": 2}]
    elif template.startswith("gdn_prefill"):  # the real heads and one token; a chunk boundary at width 16
        sizes = [{"seq_lens": (1,)}, shrunk({"seq_lens": (66,)}, head_k_dim=16, head_v_dim=16),
                 shrunk({"seq_lens": (2, 3)}, head_k_dim=16, head_v_dim=16)]
    else:
        sizes = case.sizes
    return Case(sizes, case.make_inputs, case.expected, derived=case.derived, check=case.check, extra=case.extra)


def _cases() -> dict:
    """A case per rendered variant: the GQA templates' cheap check at the variant's page size, or its template's own."""
    kinds = {t: k for k, t in TEMPLATES.items()}
    out = {}
    for family in FAMILIES:
        template = family["template"]
        t_axes = json.loads((DATASET / "definitions" / family["type"] / f"{template}.json").read_text(encoding="utf-8"))["axes"]
        for s in family["siblings"]:
            if template in kinds:
                page_size = s.get("axes", {}).get("page_size", {}).get("value", t_axes.get("page_size", {}).get("value"))
                out[s["name"]] = _case(kinds[template], page_size)
            else:
                out[s["name"]] = _substituted_case(template, family["type"])
    return out


CASES = _cases()
