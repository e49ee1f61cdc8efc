"""The NVFP4 definitions (tests/reference_cases/nvfp4.py) are exactly what its table renders: one reference,
einsum cascade and baseline per kernel, the constants per model and layer. The mathematics of every definition
is checked by tests/dataset/test_references.py (its CASES); this proves the committed files are the rendering."""

from __future__ import annotations

from reference_cases import nvfp4


def test_every_gemm_has_its_quantiser():
    ks = {q.k for q in nvfp4.QUANTS}
    assert all(g.k in ks for g in nvfp4.GEMMS)
    assert all(g.n % 128 == 0 and g.k % 64 == 0 for g in nvfp4.GEMMS)  # whole 128x4 scale tiles of B
