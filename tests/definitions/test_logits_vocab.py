"""The logits-processing kernels of every recorded vocabulary (tests/reference_cases/logits_vocab.py) are siblings of
the v128256 templates in dataset/families/: the template's reference and tensors with another vocabulary.
The mathematics is checked on the templates (tests/dataset/test_references.py); this proves nothing else changed, and that
every recorded model's vocabulary has each kernel."""

from __future__ import annotations

import json

from reference_cases import logits_vocab
from reference_check import definition_named


def test_a_sibling_is_its_template_with_another_vocabulary():
    for kernel, (_, template) in logits_vocab.KERNELS.items():
        t = definition_named(template)
        for v in logits_vocab.VOCABS:
            name = f"{kernel}_v{v.size}"
            d = definition_named(name)
            assert d["reference"] == t["reference"] and d.get("constraints") == t.get("constraints"), name
            for side in ("inputs", "outputs"):
                assert {n: s["shape"] for n, s in d[side].items()} == {n: s["shape"] for n, s in t[side].items()}, name
            changed = {a for a, s in d["axes"].items() if s.get("value") != t["axes"][a].get("value")}
            assert changed == {"vocab_size"} | ({"bitmask_size"} if "bitmask_size" in d["axes"] else set()), name
            assert d["axes"]["vocab_size"]["value"] == v.size, name


def test_every_recorded_vocabulary_has_each_logits_kernel():
    """Each calling record's vocabulary (the vocab_size of the temperature softmax it calls, or of its own
    description) has a penalties, a min-p and a bitmask definition tagged with the record."""
    records = sorted(p.stem for p in (logits_vocab.DATASET / "models").glob("*.json"))
    tagged = {}
    for kernel, (kind, _) in logits_vocab.KERNELS.items():
        for path in (logits_vocab.DATASET / "definitions" / kind).glob(f"{kernel}_v*.json"):
            d = json.loads(path.read_text(encoding="utf-8"))
            for tag in d["tags"]:
                if tag.startswith(("model:", "model-alt:")):
                    tagged.setdefault(tag.split(":", 1)[1], set()).add(kernel)
    missing = {r: sorted(set(logits_vocab.KERNELS) - tagged.get(r, set())) for r in records}
    assert not {r: m for r, m in missing.items() if m}, missing
