"""The GQA head-configuration and page-size variants (tests/reference_cases/variants.py) are exactly what their
table renders: the template's reference, einsum cascade and baseline with the variant's constants. The
mathematics is checked once, on the templates (tests/dataset/test_references.py); this proves nothing else changed."""

from __future__ import annotations

import json

from reference_cases import variants


def test_committed_variants_are_what_the_table_renders():
    stale = [rel for rel, text in variants.files().items()
             if not (variants.DATASET / rel).is_file() or (variants.DATASET / rel).read_text(encoding="utf-8") != text]
    assert not stale, (f"{len(stale)} variant files differ from their rendering, e.g. {stale[:3]}: run "
                       "`cd tests && python -m reference_cases.variants` and commit the result")


def test_a_variant_is_its_template_with_other_constants():
    for name, (kind, d) in variants.rendered().items():
        t = variants.template(kind)
        assert d["reference"] == t["reference"] and d["constraints"] == t["constraints"], name
        assert list(d["inputs"]) == list(t["inputs"]) and list(d["outputs"]) == list(t["outputs"]), name
        assert {a: s["type"] for a, s in d["axes"].items()} == {a: s["type"] for a, s in t["axes"].items()}, name
        consts = {a: s["value"] for a, s in d["axes"].items() if s["type"] == "const"}
        assert consts["num_qo_heads"] % consts["num_kv_heads"] == 0, name
        assert f"h{consts['num_qo_heads']}_kv{consts['num_kv_heads']}_d{consts['head_dim']}" in name, name
        assert name.endswith(f"_ps{consts['page_size']}") if "page_size" in consts else True, name
        json.dumps(d)  # plain data


def test_other_variants_keep_their_templates_mathematics():
    for v in variants.SUBSTITUTED:
        d = variants.render_substituted(v)  # asserts that every text replacement still applies
        t = json.loads((variants.DATASET / "definitions" / v.type / f"{v.template}.json").read_text(encoding="utf-8"))
        assert d["reference"] == t["reference"] and d.get("constraints") == t.get("constraints"), v.name
        assert {n: s["shape"] for n, s in d["inputs"].items()} == {n: s["shape"] for n, s in t["inputs"].items()}
        assert {n: s["shape"] for n, s in d["outputs"].items()} == {n: s["shape"] for n, s in t["outputs"].items()}
        changed = {a for a, s in d["axes"].items() if s.get("value") != t["axes"][a].get("value")}
        assert changed == {a for a, value in v.consts.items() if value != t["axes"][a]["value"]}, v.name
