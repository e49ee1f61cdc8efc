"""The logits-processing kernels of every recorded vocabulary (tests/reference_cases/logits_vocab.py) are exactly
what their table renders: the v128256 template's reference, einsum cascade and baseline with another vocabulary.
The mathematics is checked on the templates (tests/dataset/test_references.py); this proves nothing else changed, and that
every recorded model's vocabulary has each kernel."""

from __future__ import annotations

import json

from reference_cases import logits_vocab


def test_committed_siblings_are_what_the_table_renders():
    stale = [rel for rel, text in logits_vocab.files().items() if not (logits_vocab.DATASET / rel).is_file()
             or (logits_vocab.DATASET / rel).read_text(encoding="utf-8") != text]
    assert not stale, (f"{len(stale)} sibling files differ from their rendering, e.g. {stale[:3]}: run "
                       "`cd tests && python -m reference_cases.logits_vocab` and commit the result")


def test_a_sibling_is_its_template_with_another_vocabulary():
    for name, (kernel, d) in logits_vocab.rendered().items():
        t = logits_vocab.template(kernel)
        assert d["reference"] == t["reference"] and d.get("constraints") == t.get("constraints"), name
        assert {n: s["shape"] for n, s in d["inputs"].items()} == {n: s["shape"] for n, s in t["inputs"].items()}, name
        assert {n: s["shape"] for n, s in d["outputs"].items()} == {n: s["shape"] for n, s in t["outputs"].items()}
        changed = {a for a, s in d["axes"].items() if s.get("value") != t["axes"][a].get("value")}
        assert changed == {"vocab_size"} | ({"bitmask_size"} if "bitmask_size" in d["axes"] else set()), name
        assert name.endswith(f"_v{d['axes']['vocab_size']['value']}"), name


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
