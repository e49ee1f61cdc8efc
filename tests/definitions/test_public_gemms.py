"""MiniMax-M2's bfloat16 GEMMs under their public names (tests/reference_cases/public_gemms.py) are what their table
renders: gemm_n3072_k3072's reference, einsum cascade and baseline with other N and K."""

from __future__ import annotations

from reference_cases import public_gemms


def test_committed_files_are_what_the_table_renders():
    stale = [rel for rel, text in public_gemms.files().items() if not (public_gemms.DATASET / rel).is_file()
             or (public_gemms.DATASET / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"{stale[:3]} differ: run `cd tests && python -m reference_cases.public_gemms` and commit"


def test_a_gemm_is_the_template_with_other_constants():
    t = public_gemms.template()
    for v in public_gemms.GEMMS:
        d = public_gemms.render(v)
        assert d["reference"] == t["reference"] and d["inputs"] == t["inputs"] and d["outputs"] == t["outputs"]
        assert (d["axes"]["N"]["value"], d["axes"]["K"]["value"]) == (v.n, v.k) and d["name"] == v.name
        assert "model-alt:minimax-m2" in d["tags"] and not any(x.startswith("model:") for x in d["tags"])
