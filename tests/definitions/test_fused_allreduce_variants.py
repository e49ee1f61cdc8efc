"""The fused all-reduce + residual add + RMSNorm variants (tests/reference_cases/fused_allreduce_variants.py) are what
their table renders: the template's structure, einsum cascade and baseline, the references differing in the eps line
only. The mathematics is checked once on the template (collective_fusion.py, test_references' planted mistakes);
each variant's own cheap check runs in tests/dataset/test_references.py. Here also: a variant with the template's eps fails
its check (so the check tells the models' eps apart)."""

from __future__ import annotations

import json

import pytest
from reference_check import InputSets, check_outputs

from reference_cases import fused_allreduce_variants as fav


def test_committed_variants_are_what_the_table_renders():
    stale = [rel for rel, text in fav.files().items()
             if not (fav.DATASET / rel).is_file() or (fav.DATASET / rel).read_text(encoding="utf-8") != text]
    assert not stale, (f"{len(stale)} variant files differ from their rendering, e.g. {stale[:3]}: run "
                       "`cd tests && python -m reference_cases.fused_allreduce_variants` and commit the result")


def test_a_variant_is_the_template_with_other_constants():
    t = fav.template()
    names = set()
    for v in fav.VARIANTS:
        d = fav.render(v)
        names.add(d["name"])
        ref, tref = d["reference"].splitlines(), t["reference"].splitlines()
        assert len(ref) == len(tref) and [i for i, (a, b) in enumerate(zip(ref, tref)) if a != b] == \
            [tref.index(fav.TEMPLATE_EPS.rstrip("\n"))], v.name
        assert f"eps = {v.eps}  #" in d["reference"]
        assert {n: s for n, s in d["inputs"].items()} == t["inputs"] and d["outputs"] == t["outputs"], v.name
        assert (d["axes"]["tp_size"]["value"], d["axes"]["hidden_size"]["value"]) == (v.tp, v.hidden)
        # model: tags exactly for the records that count it (their release fuses by default), model-alt: for the rest
        assert all(f"model-alt:{r}" in d["tags"] for r in v.records), v.name
        assert sorted(t for t in d["tags"] if t.startswith("model:")) == sorted(f"model:{r}" for r in v.counted), v.name
        assert v.limit >= 64, v.name
        json.dumps(d)
    assert len(names) == len(fav.VARIANTS)


@pytest.mark.parametrize("name", ["allreduce_fused_add_rmsnorm_tp8_h7168", "allreduce_fused_add_rmsnorm_tp4_h2048"])
def test_the_template_eps_fails_a_variant_check(name):
    [v] = [v for v in fav.VARIANTS if v.name == name]
    d = fav.render(v)
    planted = InputSets({**d, "reference": d["reference"].replace(f"eps = {v.eps}", "eps = 1e-5")})
    caught = []
    for index in range(len(planted.case.sizes)):
        axes, _, expected = planted[index]
        try:
            check_outputs(planted.reference_outputs(index), planted.definition, axes, expected, "planted")
        except AssertionError:
            caught.append(index)
    assert caught == [2], f"{name} with eps 1e-5: caught on sets {caught}, expected [2] (values near 1e-3)"
