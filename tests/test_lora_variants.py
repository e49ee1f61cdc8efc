"""The qkv LoRA BGMV variants (tests/reference_cases/lora_variants.py) are what their table renders: the templates'
references (the expand's q_size / kv_size line aside), cascades and baselines; the template's slice sizes fail a
variant's check."""

from __future__ import annotations

import pytest
from test_references import InputSets, check_outputs

from reference_cases import lora_variants as lv


def test_committed_files_are_what_the_table_renders():
    stale = [rel for rel, text in lv.files().items()
             if not (lv.DATASET / rel).is_file() or (lv.DATASET / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"{stale[:3]} differ: run `cd tests && python -m reference_cases.lora_variants` and commit"


def test_variants_keep_their_templates_mathematics():
    shrink, expand = lv._load("definitions", lv.SHRINK), lv._load("definitions", lv.EXPAND)
    for m in lv.MODELS:
        s, e = lv.render_shrink(m), lv.render_expand(m)
        assert s["reference"] == shrink["reference"] and e["constraints"] == expand["constraints"]
        diff = [(a, b) for a, b in zip(e["reference"].splitlines(), expand["reference"].splitlines()) if a != b]
        assert len(diff) == 1 and diff[0][1].startswith(lv.EXPAND_SIZES), m.model
        assert e["axes"]["N"]["value"] == e["axes"]["q_size"]["value"] + 2 * e["axes"]["kv_size"]["value"]
        assert s["axes"]["K"]["value"] == m.hidden and f"model-alt:{m.record}" in s["tags"] + e["tags"]


@pytest.mark.parametrize("model", lv.MODELS, ids=lambda m: m.model)
def test_the_templates_slice_sizes_fail_a_variant(model):
    d = lv.render_expand(model)
    wrong = d["reference"].replace(f"q_size, kv_size = {model.q}, {model.kv}", "q_size, kv_size = 4096, 1024")
    planted = InputSets({**d, "reference": wrong})
    caught = []
    for index in range(3):
        axes, _, expected = planted[index]
        try:
            check_outputs(planted.reference_outputs(index), planted.definition, axes, expected, "planted")
        except (AssertionError, RuntimeError):
            caught.append(index)
    assert caught == [0, 1, 2]
