"""The greedy-draft speculative sampler (tests/reference_cases/specdec_greedy.py): the committed files are what its
table renders, one definition at every vocabulary that has the probabilistic chain_speculative_sampling_*, and the
probabilistic ones are tagged as vLLM's opt-in path. Its mathematics is checked by tests/dataset/test_references.py (with
planted mistakes: the probabilistic residual that keeps the rejected draft, the acceptance without draft
probabilities)."""

from __future__ import annotations

import json

from reference_cases import specdec_greedy as sg


def test_every_probabilistic_sampler_has_its_greedy_sibling_and_is_tagged_opt_in():
    misc = sg.DATASET / "definitions" / "misc"
    probabilistic = sorted(p.stem.rsplit("_v", 1)[1] for p in misc.glob("chain_speculative_sampling_v*.json"))
    assert probabilistic == sorted(str(v.vocab) for v in sg.VARIANTS)
    for v in sg.VARIANTS:
        greedy = json.loads((misc / f"{v.name}.json").read_text(encoding="utf-8"))
        prob = json.loads((misc / f"{v.probabilistic}.json").read_text(encoding="utf-8"))
        assert "draft_probs" not in greedy["inputs"] and set(greedy["inputs"]) == set(prob["inputs"]) - {"draft_probs"}
        assert greedy["axes"]["vocab_size"]["value"] == v.vocab == prob["axes"]["vocab_size"]["value"]
        assert {"draft_sample:probabilistic", "path:opt-in"} <= set(prob["tags"]), v.probabilistic
        assert "draft_sample:greedy" in greedy["tags"] and "path:opt-in" not in greedy["tags"]
        assert v.name in prob["description"] and v.probabilistic in greedy["description"]
        # the same model tags as the probabilistic sibling: the same records serve both
        assert sorted(t for t in greedy["tags"] if t.startswith("model")) == \
            sorted(t for t in prob["tags"] if t.startswith("model"))
