"""check.py: the tolerances per dtype and magnitude, NaN where the reference is finite, and the statistical
comparison of samplers' draws."""

from __future__ import annotations

import pytest
import torch

from generator.bench.trusted.check import chi2_sf, compare, compare_samples, tolerance_for


def test_tolerance_is_per_dtype():
    d = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "bfloat16"}}}
    e = torch.linspace(1, 2, 64)
    one_ulp = (e * (1 + 2**-8)).to(torch.bfloat16)  # within half an ulp of bf16 rounding
    assert compare(d, {"o": one_ulp}, {"o": e}, {"n": 64}).ok
    assert not compare(d, {"o": (e * 1.05).to(torch.bfloat16)}, {"o": e}, {"n": 64}).ok
    d16 = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "float16"}}}
    assert not compare(d16, {"o": (e * 1.01).half()}, {"o": e}, {"n": 64}).ok  # fine for bf16, not for fp16
    assert tolerance_for("t", "o", "float16").rtol < tolerance_for("t", "o", "bfloat16").rtol
    di = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "int32"}}}
    ids = torch.arange(64, dtype=torch.int32)
    assert compare(di, {"o": ids}, {"o": ids}, {"n": 64}).ok
    assert not compare(di, {"o": ids + (ids == 5).int()}, {"o": ids}, {"n": 64}).ok


def test_tolerance_scales_with_the_reference_magnitude():
    """Outputs of magnitude 1e-3 (the FP8 MoE's) with a bf16 atol of 1e-2: all-zeros must still fail."""
    d = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "bfloat16"}}}
    e = torch.randn(256, generator=torch.Generator().manual_seed(0)) * 1e-3
    assert not compare(d, {"o": torch.zeros(256, dtype=torch.bfloat16)}, {"o": e}, {"n": 256}).ok
    assert compare(d, {"o": e.to(torch.bfloat16)}, {"o": e}, {"n": 256}).ok


def test_nan_where_reference_is_finite_fails_and_matched_ratio_is_recorded():
    d = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "float32"}}}
    e = torch.ones(10)
    a = e.clone()
    a[3] = float("nan")
    v = compare(d, {"o": a}, {"o": e}, {"n": 10})
    assert v.status == "INCORRECT_NUMERICAL" and "NaN" in v.message and v.matched_ratio == pytest.approx(0.9)


def test_a_large_output_is_compared_whole_a_chunk_at_a_time(monkeypatch):
    """check.compare takes a large output in chunks: a wrong element, a NaN or the magnitude in the last chunk counts as
    in the first, and the caller's tensors are left as they were (float32 ones are the compare's own input)."""
    from generator.bench.trusted import check

    monkeypatch.setattr(check, "CHUNK", 64)
    d = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "float32"}}}
    e = torch.linspace(1, 2, 200)
    assert compare(d, {"o": e.clone()}, {"o": e}, {"n": 200}).ok
    wrong = e.clone()
    wrong[199] = 3.0
    v = compare(d, {"o": wrong}, {"o": e}, {"n": 200})
    assert v.status == "INCORRECT_NUMERICAL" and v.matched_ratio == pytest.approx(199 / 200)
    assert v.max_absolute_error == pytest.approx(1.0) and v.max_relative_error == pytest.approx(0.5)
    nan = e.clone()
    nan[150] = float("nan")
    assert "NaN" in compare(d, {"o": nan}, {"o": e}, {"n": 200}).message
    big = e.clone()
    big[190:] = 1e4  # the reference's magnitude comes from every chunk: its atol with it
    assert compare(d, {"o": big + 0.05}, {"o": big}, {"n": 200}).ok
    assert not compare(d, {"o": big + 0.05}, {"o": big.clone().fill_(1.5)}, {"n": 200}).ok
    assert wrong[199] == 3.0 and e[199] == 2.0 and torch.isnan(nan[150])


def test_sampling_is_checked_statistically():
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(4, 20, generator=g) * 2, -1)
    d = {"name": "s", "outputs": {"samples": {"shape": ["b"], "dtype": "int64"}}}

    def draws(fn, n=400):
        return [{"samples": fn()} for _ in range(n)]

    ref = draws(lambda: torch.multinomial(probs, 1, generator=g).squeeze(1))
    same = draws(lambda: torch.multinomial(probs, 1, generator=g).squeeze(1))
    greedy = draws(lambda: probs.argmax(-1))
    assert compare_samples(d, same, ref, probs).ok
    assert compare_samples(d, greedy, ref, probs).status == "INCORRECT_NUMERICAL"
    zero = probs.clone()
    zero[:, 0] = 0
    forced = draws(lambda: torch.zeros(4, dtype=torch.int64))
    assert "probability 0" in compare_samples(d, forced, ref, zero).message
    assert chi2_sf(10.0, 10) == pytest.approx(0.44, abs=0.02)  # table value 0.4405


def test_draws_on_a_fresh_input_set_each_are_compared_by_their_ranks():
    """Timed sampler calls each have an input set of their own: the ranks of the drawn tokens in their rows follow one
    distribution for the reference and a right sampler over the same sets; greedy, or a sampler that flattens the row
    (sampling p^0.5), does not."""
    from generator.bench.trusted.check import draw_ranks, two_sample_chi2

    g = torch.Generator().manual_seed(1)
    d = {"name": "s", "outputs": {"samples": {"shape": ["b"], "dtype": "int64"}}}
    sets = [{"probs": torch.softmax(torch.randn(4, 50, generator=g) * 2, -1)} for _ in range(300)]

    def p_value(pick):
        draws = [{"samples": pick(s["probs"])} for s in sets]
        ref = [{"samples": torch.multinomial(s["probs"], 1, generator=g).squeeze(1)} for s in sets]
        return chi2_sf(*two_sample_chi2(draw_ranks(d, draws, sets), draw_ranks(d, ref, sets)))

    assert p_value(lambda p: torch.multinomial(p, 1, generator=g).squeeze(1)) > 1e-3
    assert p_value(lambda p: p.argmax(-1)) < 1e-6
    assert p_value(lambda p: torch.multinomial(p.sqrt(), 1, generator=g).squeeze(1)) < 1e-3
