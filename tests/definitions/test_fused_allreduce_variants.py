"""The fused all-reduce + residual add + RMSNorm variants (dataset/families/fused_allreduce_variants.json, checked by
tests/reference_cases/fused_allreduce_variants.py): the template's structure, einsum cascade and baseline, the
references differing in the eps line only. The mathematics is checked once on the template (collective_fusion.py,
test_references' planted mistakes); each variant's own cheap check runs in tests/dataset/test_references.py. Here
also: a variant with the template's eps fails its check (so the check tells the models' eps apart)."""

from __future__ import annotations

import json

import pytest

from reference_cases import fused_allreduce_variants as fav
from reference_check import InputSets, check_outputs


def definition(name: str) -> dict:
    return json.loads((fav.DATASET / "definitions" / "reduction" / f"{name}.json").read_text(encoding="utf-8"))


def test_a_variant_is_the_template_with_its_models_eps():
    t = definition(fav.TEMPLATE)
    eps_line = next(line for line in t["reference"].splitlines() if line.strip().startswith("eps = "))
    for name, eps in fav.EPS.items():
        d = definition(name)
        ref, tref = d["reference"].splitlines(), t["reference"].splitlines()
        assert len(ref) == len(tref) and [i for i, (a, b) in enumerate(zip(ref, tref)) if a != b] in \
            ([tref.index(eps_line)], []), name
        assert f"eps = {eps:g}".replace("e-0", "e-") in d["reference"], name
        assert d["inputs"] == t["inputs"] and d["outputs"] == t["outputs"], name
        assert f"tp{d['axes']['tp_size']['value']}_h{d['axes']['hidden_size']['value']}" in name


@pytest.mark.parametrize("name", ["allreduce_fused_add_rmsnorm_tp8_h7168", "allreduce_fused_add_rmsnorm_tp4_h2048"])
def test_the_template_eps_fails_a_variant_check(name):
    d = definition(name)
    eps = f"{fav.EPS[name]:g}".replace("e-0", "e-")
    planted = InputSets({**d, "reference": d["reference"].replace(f"eps = {eps}", "eps = 1e-5")})
    caught = []
    for index in range(len(planted.case.sizes)):
        axes, _, expected = planted[index]
        try:
            check_outputs(planted.reference_outputs(index), planted.definition, axes, expected, "planted")
        except AssertionError:
            caught.append(index)
    assert caught == [2], f"{name} with eps 1e-5: caught on sets {caught}, expected [2] (values near 1e-3)"
