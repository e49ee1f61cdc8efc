"""How close an output must be to a float64 result: the one home of the tolerances that
tests/dataset/test_references.py (references and Python baselines) and tests/dataset/test_triton_solutions.py
(the Triton solutions, in their interpreter worker) both use.

torch is imported inside assert_close, so that importing this module costs nothing where torch must
not be imported yet (test_triton_solutions' pytest side switches the Triton interpreter on in a
subprocess first).
"""

from __future__ import annotations

# Tolerances for comparing an output with the float64 independent result, by the output's dtype:
# (rtol, atol as a fraction of the largest |expected| value).
# - float16: 10 mantissa bits; one rounding of the exact value is off by at most half an ulp,
#   2**-11 ~ 4.9e-4 relative, and two independently rounded results (reference vs. solution) by at most
#   one ulp, 2**-10 ~ 9.8e-4; rtol 1e-3 covers both. float32 accumulation over K = 4096 adds about
#   sqrt(K) * 2**-24 ~ 4e-6 of the output scale, covered by atol 1e-4 * scale (near-zero outputs).
# - bfloat16: 7 mantissa bits; one ulp is at most 2**-7 ~ 7.8e-3 relative, so rtol 1e-2; atol as for
#   float16 but a little looser, 1e-3 * scale, for the few outputs that cancel to near zero.
# - float32 (the GQA lse): computed in float32 from float16 inputs; errors are a few float32 ulps of
#   values of order 1-10, so rtol 1e-5 and atol 1e-5 * scale.
# Integer outputs (ids, indices, masks) have no tolerance: they must match exactly.
# - float8_e4m3 (quantised activations): 3 mantissa bits; the float64 expectation is the value before
#   rounding, off by at most half an ulp (2**-4 relative), and two float32 computations of the scale that
#   differ in the last bit (x / s against x * (1 / s)) may round a near-tie the other way: one ulp, 2**-3.
#   atol: below 2**-6 the format is subnormal with steps of 2**-9, ~1e-5 of the largest value 448.
TOLERANCE = {"float16": (1e-3, 1e-4), "bfloat16": (1e-2, 1e-3), "float32": (1e-5, 1e-5), "float8_e4m3": (2**-3, 1e-5)}
# Solutions against the independent result: a solution may reorder a float32 reduction (torch.softmax's fused kernel
# over 262,208 logits differs from the step-by-step sum by up to 3e-5 relative), which the bench allows (its float32
# tolerance, generator/bench/trusted/check.py: 1e-4); the references keep the tighter one above.
SOLUTION_TOLERANCE = {**TOLERANCE, "float32": (1e-4, 1e-4)}


def assert_close(actual, expected, dtype: str, what: str, table: dict = TOLERANCE) -> None:
    """actual (any dtype) against expected (float64 or integer) for an output declared as `dtype`."""
    import torch

    if dtype.startswith(("int", "uint", "bool")):  # ids, indices, masks: exact
        mismatch = (actual.to(torch.int64) != expected.to(torch.int64)).sum().item()
        assert mismatch == 0, f"{what}: {mismatch} element(s) differ (integer outputs must match exactly)"
        return
    rtol, atol_rel = table[dtype]
    expected = expected.to(torch.float64)
    actual64 = actual.to(torch.float64)
    # An infinite expected value (masked logits: -inf) must be matched exactly; the rest must be finite.
    infinite = torch.isinf(expected)
    if infinite.any():
        wrong = (actual64[infinite] != expected[infinite]).sum().item()
        assert wrong == 0, f"{what}: {wrong} element(s) differ where the expected value is infinite"
        actual64, expected = actual64[~infinite], expected[~infinite]
    assert torch.isfinite(actual64).all(), f"{what}: non-finite values"
    scale = (expected.abs().max().item() if expected.numel() else 0.0) or 1.0
    atol = atol_rel * scale
    excess = (actual64 - expected).abs() - (atol + rtol * expected.abs())
    worst = excess.max().item()
    assert worst <= 0, (f"{what}: exceeds rtol={rtol} atol={atol:.3g} by {worst:.3g} "
                        f"(max abs err {(actual64 - expected).abs().max().item():.3g}, scale {scale:.3g})")
