"""The qkv LoRA BGMV variants (tests/reference_cases/lora_variants.py) (siblings in dataset/families/) are the templates'
references (the expand's q_size / kv_size line aside), cascades and baselines; the template's slice sizes fail a
variant's check, and so do the unsharded layer's slice offsets a tensor-parallel variant's."""

from __future__ import annotations

import pytest

from reference_cases import lora_variants as lv
from reference_check import InputSets, check_outputs, definition_named

# Each expand variant with the first model whose ranks run it.
EXPANDS = [(definition_named(name), ms[0]) for name, ms in lv.groups(lv.expand_name).items()]
TP_EXPANDS = [(d, m) for d, m in EXPANDS if m.tp > 1]


def test_variants_keep_their_templates_mathematics():
    shrink, expand = definition_named(lv.SHRINK), definition_named(lv.EXPAND)
    for m in lv.MODELS:
        s, e = definition_named(lv.shrink_name(m)), definition_named(lv.expand_name(m))
        assert s["reference"] == shrink["reference"] and e["constraints"] == expand["constraints"]
        diff = [(a, b) for a, b in zip(e["reference"].splitlines(), expand["reference"].splitlines()) if a != b]
        assert len(diff) == 1 and diff[0][1].startswith(lv.EXPAND_SIZES), m.model
        assert e["axes"]["N"]["value"] == e["axes"]["q_size"]["value"] + 2 * e["axes"]["kv_size"]["value"]
        # One rank's shapes: the shrink's input whole, the expand's slices the rank's heads.
        assert s["axes"]["K"]["value"] == m.hidden and e["axes"]["q_size"]["value"] * m.tp == m.heads * 128
        assert e["axes"]["kv_size"]["value"] * m.tp == m.kv_heads * 128
        for d in (s, e):
            assert f"model-alt:{m.record}" in d["tags"] and f"tp:{m.tp}" in d["tags"], (d["name"], m.record)
            assert f"--tensor-parallel-size {m.tp}" in d["description"] if m.tp > 1 else "--enable-lora" in d["description"]


def _caught(d: dict, wrong: str) -> list:
    assert wrong != d["reference"]
    planted = InputSets({**d, "reference": wrong})
    caught = []
    for index in range(3):
        axes, _, expected = planted[index]
        try:
            check_outputs(planted.reference_outputs(index), planted.definition, axes, expected, "planted")
        except (AssertionError, RuntimeError):
            caught.append(index)
    return caught


@pytest.mark.parametrize("d,model", EXPANDS, ids=[d["name"] for d, _ in EXPANDS])
def test_the_templates_slice_sizes_fail_a_variant(d, model):
    wrong = d["reference"].replace(f"q_size, kv_size = {model.q}, {model.kv}", "q_size, kv_size = 4096, 1024")
    assert _caught(d, wrong) == [0, 1, 2]


@pytest.mark.parametrize("d,model", TP_EXPANDS, ids=[d["name"] for d, _ in TP_EXPANDS])
def test_the_unsharded_slice_offsets_fail_a_tp_variant(d, model):
    """k and v added at the unsharded layer's offsets (k at num_attention_heads * head_dim, as slice_lora_b reads
    the full lora_B), not at the rank's shard's: the k and v columns of the rank's output get no update."""
    q_total, kv_total = model.heads * 128, model.kv_heads * 128
    assert d["reference"].count(lv.EXPAND_SLICES) == 1
    wrong = d["reference"].replace(
        lv.EXPAND_SLICES, f"    slices = [(0, q_size), ({q_total}, kv_size), ({q_total + kv_total}, kv_size)]")
    assert _caught(d, wrong) == [0, 1, 2]
