"""Attention over an FP8 KV cache (tests/reference_cases/fp8kv.py, the variants rendered from dataset/families/): a
variant is its template's reference, einsum cascade and baseline with other heads, and mistakes
planted in the MLA template's reference fail its independent check on exactly the sets that should catch them.

The GQA decode template (gqa_paged_decode_fp8kv_h32_kv8_d128_ps16) has its plants (a dropped k_scale, a dropped
v_scale) in test_references.py's PLANTED list; the prefill template's are here. The variants share their
templates' references byte for byte.
"""

from __future__ import annotations

import json

import pytest

from reference_cases import fp8kv
from reference_check import DATASET, assert_planted_mistake_fails


def definition(name: str) -> dict:
    kind = "mla" if name.startswith("mla_") else "gqa"
    return json.loads((DATASET / "definitions" / kind / f"{name}.json").read_text(encoding="utf-8"))


def test_an_fp8kv_variant_is_its_template_with_other_heads():
    for kind, template in fp8kv.TEMPLATES.items():
        t = definition(template)
        names = fp8kv.siblings_of(template)
        assert names, template
        for name in names:
            d = definition(name)
            assert d["reference"] == t["reference"] and d["constraints"] == t["constraints"], name
            assert {n: x["shape"] for n, x in d["inputs"].items()} == {n: x["shape"] for n, x in t["inputs"].items()}
            changed = {a for a, x in d["axes"].items() if x.get("value") != t["axes"][a].get("value")}
            assert changed <= {"num_qo_heads", "num_kv_heads"}, name
            consts = {a: x["value"] for a, x in d["axes"].items() if x["type"] == "const"}
            assert consts["num_qo_heads"] % consts["num_kv_heads"] == 0, name
            stem = {"decode": "gqa_paged_decode_fp8kv", "prefill": "gqa_paged_prefill_causal_fp8kv"}[kind]
            assert name == f"{stem}_h{consts['num_qo_heads']}_kv{consts['num_kv_heads']}_d128_ps16", name
    mla = definition(fp8kv.MLA_TEMPLATE)
    for name in fp8kv.siblings_of(fp8kv.MLA_TEMPLATE):
        d = definition(name)
        assert d["reference"] == mla["reference"], name
        assert {n: x["shape"] for n, x in d["inputs"].items()} == {n: x["shape"] for n, x in mla["inputs"].items()}
        assert f"_h{d['axes']['num_qo_heads']['value']}_" in name, name


PLANTED = [
    # The prefill's value scale dropped: every set has v_scale != 1.
    (fp8kv.PREFILL_TEMPLATE, "page_size].to(torch.float32) * v_scale", "page_size].to(torch.float32)", [0, 1, 2]),
    # The prefill's key scale dropped: set 2 has k_scale = 1.0, where it is moot.
    (fp8kv.PREFILL_TEMPLATE, "page_size].to(torch.float32) * k_scale", "page_size].to(torch.float32)", [0, 1]),
    # The value dequantised twice (scaled again after the weighted sum).
    (fp8kv.PREFILL_TEMPLATE, '"output": output.to(torch.bfloat16)', '"output": (output * v_scale).to(torch.bfloat16)',
     [0, 1, 2]),
    # The keys dequantised with the value's scale: every set has k_scale != v_scale.
    (fp8kv.PREFILL_TEMPLATE, "page_size].to(torch.float32) * k_scale", "page_size].to(torch.float32) * v_scale",
     [0, 1, 2]),
    # The rotary key not dequantised: sets 0 and 1 have k_scale < 1; set 2 has k_scale = 1.0 (SGLang's), where it is moot.
    (fp8kv.MLA_TEMPLATE, "to(torch.float32) * k_scale  # [blocks, BLOCK, 64]", "to(torch.float32)  # [blocks, BLOCK, 64]",
     [0, 1]),
    # The latent not dequantised (neither as key nor as value).
    (fp8kv.MLA_TEMPLATE, "to(torch.float32) * k_scale  # [blocks, BLOCK, 512]",
     "to(torch.float32)  # [blocks, BLOCK, 512]", [0, 1]),
    # The scale applied twice to the latent (dequantised once more when it is used as the value).
    (fp8kv.MLA_TEMPLATE, "[:, :, None]) @ ckv", "[:, :, None]) @ (ckv * k_scale)", [0, 1]),
    # The value read as raw codes: the scale folded into the logits only (a kernel that forgets bmm2_scale).
    (fp8kv.MLA_TEMPLATE, "[:, :, None]) @ ckv", "[:, :, None]) @ (ckv / k_scale)", [0, 1]),
    # The scale applied to the value's weights before the softmax is normalised: it cancels, so the output lacks it.
    (fp8kv.MLA_TEMPLATE, "exp = torch.exp(logits - row_max[seq][:, :, None])",
     "exp = torch.exp(logits - row_max[seq][:, :, None]) * k_scale", [0, 1]),
]


@pytest.mark.parametrize("name, right, wrong, failing", PLANTED, ids=[f"{p[0]}-{i}" for i, p in enumerate(PLANTED)])
def test_planted_fp8kv_mistakes_fail(name, right, wrong, failing, one_torch_thread):
    assert_planted_mistake_fails(name, right, wrong, failing)
