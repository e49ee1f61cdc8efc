"""The bench check on masked outputs, which the serving-family definitions (reference_cases/serving_families.py)
brought: min_p_logits_v128256 returns -inf where it filters. Their planted reference mistakes are in
test_references.py's PLANTED list, with the others.
"""

from __future__ import annotations

import torch


def test_the_bench_check_allows_no_error_where_the_expected_value_is_infinite():
    """A masked logit (-inf, min_p_logits_v128256's filtered tokens) must come back -inf: rtol * |inf| once allowed
    any finite value there, so a min-p kernel that filtered nothing passed."""
    from generator.bench.trusted.check import compare

    d = {"name": "masked", "outputs": {"o": {"shape": ["n"], "dtype": "float32"}}}
    expected = {"o": torch.tensor([float("-inf"), 1.0, float("-inf")])}
    axes = {"n": 3}
    assert compare(d, {"o": expected["o"].clone()}, expected, axes).ok
    assert compare(d, {"o": torch.tensor([float("-inf"), 1.00001, float("-inf")])}, expected, axes).ok
    for wrong in ([0.0, 1.0, float("-inf")], [-1e30, 1.0, float("-inf")], [float("inf"), 1.0, float("-inf")]):
        assert not compare(d, {"o": torch.tensor(wrong)}, expected, axes).ok, wrong
