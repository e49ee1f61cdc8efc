"""Speculative decoding's verify kernels for DeepSeek-V3, GLM-4.5 and Qwen3-Next (tests/reference_cases/
specdec_variants.py) are siblings in dataset/families/: the template's reference, tensors and axes with the variant's
constants. The mathematics is checked once, on the templates (tests/dataset/test_references.py); this
proves nothing else changed."""

from __future__ import annotations

import json

from reference_cases.common import families
from reference_check import definition_named


def test_a_specdec_variant_is_its_template_with_other_constants():
    siblings = {s["name"]: f["template"] for f in families("specdec_variants_*") for s in f["siblings"]}
    assert len(siblings) == 7
    for name, template in siblings.items():
        d, t = definition_named(name), definition_named(template)
        assert d["reference"] == t["reference"] and d["constraints"] == t["constraints"], name
        assert {n: s["shape"] for n, s in d["inputs"].items()} == {n: s["shape"] for n, s in t["inputs"].items()}, name
        assert {n: s["shape"] for n, s in d["outputs"].items()} == {n: s["shape"] for n, s in t["outputs"].items()}, name
        assert {a: s["type"] for a, s in d["axes"].items()} == {a: s["type"] for a, s in t["axes"].items()}, name
        consts = {a: s["value"] for a, s in d["axes"].items() if s["type"] == "const"}
        if "vocab_size" in consts:
            assert name.endswith(f"_v{consts['vocab_size']}"), name
            assert d["inputs"]["draft_token_ids"]["random"]["high"] == consts["vocab_size"], name
        elif "head_dim" in consts:
            assert f"h{consts['num_qo_heads']}_kv{consts['num_kv_heads']}_d{consts['head_dim']}" in name, name
        else:
            assert f"h{consts['num_qo_heads']}_ckv{consts['head_dim_ckv']}_kpe{consts['head_dim_kpe']}" in name, name
        assert name.endswith(f"_ps{consts['page_size']}") if "page_size" in consts else True, name
        assert "speculative:verify" in d["tags"] and any(t.startswith("model-alt:") for t in d["tags"]), name
        json.dumps(d)  # plain data
