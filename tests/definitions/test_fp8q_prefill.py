"""The FP8-query prefill over an FP8 KV cache (a sibling in dataset/families/, checked by
tests/reference_cases/fp8q_prefill.py) is the bfloat16-query template with the query's dtype, its q_scale and the
lines using them changed, nothing else. Its
mathematics is checked by tests/dataset/test_references.py (a dropped q_scale is planted there)."""

from __future__ import annotations

from reference_cases.fp8q_prefill import NAME
from reference_check import definition_named

TEMPLATE = "gqa_paged_prefill_causal_fp8kv_h32_kv8_d128_ps16"


def test_fp8q_prefill_differs_from_the_bf16_query_template_in_the_query_only():
    d, t = definition_named(NAME), definition_named(TEMPLATE)
    assert d["inputs"]["q"]["dtype"] == "float8_e4m3" and t["inputs"]["q"]["dtype"] == "bfloat16"
    assert set(d["inputs"]) - set(t["inputs"]) == {"q_scale"} and d["outputs"] == t["outputs"]
    changed = [(a, b) for a, b in zip(d["reference"].splitlines(), t["reference"].splitlines()) if a != b]
    assert len(d["reference"].splitlines()) == len(t["reference"].splitlines()) + 1 and len(changed) >= 2
    assert TEMPLATE in d["description"] and "query quantisation disabled" in t["description"]
