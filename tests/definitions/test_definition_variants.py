"""The GQA head-configuration and page-size variants, and the other checked definitions' siblings
(dataset/families/variants_*.json, checked by tests/reference_cases/variants.py): each is its template's reference,
einsum cascade and baseline with other constants. The mathematics is checked once, on the templates
(tests/dataset/test_references.py); this proves nothing else changed."""

from __future__ import annotations

import json

from reference_cases import variants


def definition(type_: str, name: str) -> dict:
    return json.loads((variants.DATASET / "definitions" / type_ / f"{name}.json").read_text(encoding="utf-8"))


def test_a_variant_is_its_template_with_other_constants():
    gqa = set(variants.TEMPLATES.values())
    seen = 0
    for family in variants.FAMILIES:
        t = definition(family["type"], family["template"])
        for s in family["siblings"]:
            d, name = definition(family["type"], s["name"]), s["name"]
            seen += 1
            assert d["reference"] == t["reference"] and d.get("constraints") == t.get("constraints"), name
            assert {n: x["shape"] for n, x in d["inputs"].items()} == {n: x["shape"] for n, x in t["inputs"].items()}
            assert {n: x["shape"] for n, x in d["outputs"].items()} == {n: x["shape"] for n, x in t["outputs"].items()}
            assert {a: x["type"] for a, x in d["axes"].items()} == {a: x["type"] for a, x in t["axes"].items()}, name
            if family["template"] in gqa:
                consts = {a: x["value"] for a, x in d["axes"].items() if x["type"] == "const"}
                assert consts["num_qo_heads"] % consts["num_kv_heads"] == 0, name
                assert f"h{consts['num_qo_heads']}_kv{consts['num_kv_heads']}_d{consts['head_dim']}" in name, name
                assert name.endswith(f"_ps{consts['page_size']}") if "page_size" in consts else True, name
    assert seen == len(variants.CASES) == 50
