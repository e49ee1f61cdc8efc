"""Correctness: a solution's outputs against the reference's, compared in float32.

One tolerance table, by output dtype, in this one place. An element matches when
|actual - expected| <= atol * scale + rtol * |expected|, where scale is the root mean square of the
reference's output (1 where it is all zeros): the absolute part is relative to the output's magnitude,
so an output whose values are all far below the table's atol (an FP8 MoE's 1e-3) is still checked,
and all-zeros fails it. A check passes when the share of matching elements
is at least `matched_ratio` (1.0 by default: every element) and there is no NaN/inf where the
reference is finite. Integer and bool outputs must be equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import torch

from .inputs import TORCH_DTYPES


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    matched_ratio: float = 1.0


# Why these values: a solution that computes in float32 and rounds once differs from the reference
# by at most one ulp of the output dtype plus float32 reordering error. One ulp relative:
# bfloat16 2**-7 = 7.8e-3, float16 2**-10 = 9.8e-4; atol covers outputs that cancel to near zero.
# float32 outputs (lse, routing weights) are compared at 1e-4: different summation orders over tens
# of thousands of terms drift a few 1e-6 relative. float8 has 3 mantissa bits (ulp 2**-3).
DTYPE_TOLERANCE = {
    "float32": Tolerance(atol=1e-4, rtol=1e-4),
    "float16": Tolerance(atol=1e-3, rtol=2e-3),
    "bfloat16": Tolerance(atol=1e-2, rtol=1.6e-2),
    "float8_e4m3": Tolerance(atol=0.125, rtol=0.125),
    "float8_e5m2": Tolerance(atol=0.25, rtol=0.25),
}
EXACT = Tolerance(atol=0.0, rtol=0.0)

def tolerance_for(definition: str, output: str, dtype: str) -> Tolerance:
    # By dtype only: the magnitude scaling below makes per-definition overrides unnecessary so far.
    return DTYPE_TOLERANCE.get(dtype, EXACT)


def magnitude(expected: torch.Tensor) -> float:
    """Root mean square of the finite values of a reference output; 1.0 when they are all zero."""
    finite = expected[torch.isfinite(expected)]
    rms = finite.square().mean().sqrt().item() if finite.numel() else 0.0
    return rms if rms > 0 else 1.0


@dataclass
class Verdict:
    status: str  # PASSED | INCORRECT_SHAPE | INCORRECT_DTYPE | INCORRECT_NUMERICAL | REWARD_HACK
    message: str = ""
    max_absolute_error: float = 0.0
    max_relative_error: float = 0.0
    matched_ratio: float = 1.0
    atol: Optional[float] = None
    rtol: Optional[float] = None

    @property
    def ok(self) -> bool:
        return self.status == "PASSED"


def compare(definition: Mapping[str, Any], actual: Mapping[str, Any], expected: Mapping[str, Any],
            axes: Mapping[str, int]) -> Verdict:
    """Compare every output; the first failing output decides the status, errors are the worst over all."""
    worst = Verdict("PASSED")
    worst_ratio = 1.0
    for name, spec in definition["outputs"].items():
        if name not in actual:
            return Verdict("INCORRECT_SHAPE", f"output {name!r} is missing (returned {sorted(actual)})")
        a, e = actual[name], expected[name]
        if type(a) is not torch.Tensor:  # noqa: E721 - subclasses are refused on purpose (guards.py)
            return Verdict("REWARD_HACK", f"output {name!r} is a {type(a).__module__}.{type(a).__qualname__}, "
                                          "not a plain torch.Tensor")
        want_shape = tuple(int(axes[x]) for x in spec["shape"])
        if tuple(a.shape) != want_shape:
            return Verdict("INCORRECT_SHAPE", f"output {name!r} has shape {tuple(a.shape)}, expected {want_shape}")
        if a.dtype != TORCH_DTYPES[spec["dtype"]]:
            return Verdict("INCORRECT_DTYPE", f"output {name!r} has dtype {a.dtype}, expected "
                                              f"{TORCH_DTYPES[spec['dtype']]}")
        tol = tolerance_for(definition["name"], name, spec["dtype"])
        af = a.detach().to("cpu", torch.float32)
        ef = e.detach().to("cpu", torch.float32)
        tol = Tolerance(tol.atol * magnitude(ef), tol.rtol, tol.matched_ratio)
        bad_nonfinite = ~torch.isfinite(af) & torch.isfinite(ef)
        diff = (af - ef).abs()
        diff = torch.where(torch.isfinite(af) & torch.isfinite(ef), diff,
                           torch.where(af == ef, torch.zeros_like(diff), torch.full_like(diff, math.inf)))
        rel = diff / ef.abs().clamp_min(1e-12)
        within = diff <= tol.atol + tol.rtol * ef.abs()
        ratio = within.float().mean().item() if within.numel() else 1.0
        max_abs = diff.max().item() if diff.numel() else 0.0
        max_rel = rel.max().item() if rel.numel() else 0.0
        worst.max_absolute_error = max(worst.max_absolute_error, max_abs)
        worst.max_relative_error = max(worst.max_relative_error, max_rel)
        worst_ratio = min(worst_ratio, ratio)
        if worst.status == "PASSED":
            worst.atol, worst.rtol = tol.atol, tol.rtol
            if bad_nonfinite.any():
                worst.status = "INCORRECT_NUMERICAL"
                worst.message = (f"output {name!r} has {int(bad_nonfinite.sum())} NaN/inf element(s) where the "
                                 "reference is finite (unwritten output elements show as NaN)")
            elif ratio < tol.matched_ratio:
                worst.status = "INCORRECT_NUMERICAL"
                worst.message = (f"output {name!r}: {ratio:.4%} of elements within atol={tol.atol:g} "
                                 f"rtol={tol.rtol:g} (needs {tol.matched_ratio:.2%}); max abs error {max_abs:.3g}")
    worst.matched_ratio = worst_ratio
    # JSON has no inf: an infinite error is reported as the largest float.
    worst.max_absolute_error = min(worst.max_absolute_error, 1.7976931348623157e308)
    worst.max_relative_error = min(worst.max_relative_error, 1.7976931348623157e308)
    return worst


# --------------------------------------------------------------------------------------------------
# Sampling: outputs are random, so compare distributions, not elements.
# --------------------------------------------------------------------------------------------------

def check_support(definition: Mapping[str, Any], draw: Mapping[str, Any], probs: Optional[torch.Tensor]) -> Verdict:
    """One draw of a sampling kernel (a timed call's outputs): every token id is in range and has
    non-zero probability. (The distribution itself is checked on the correctness draws.)"""
    if probs is None:
        return Verdict("PASSED")
    name = next(iter(definition["outputs"]))
    ids = draw[name].to("cpu", torch.int64).reshape(-1)
    p = probs.to("cpu", torch.float32).reshape(ids.numel(), -1)
    if ((ids < 0) | (ids >= p.shape[-1])).any():
        return Verdict("INCORRECT_NUMERICAL", f"output {name!r} holds token ids outside [0, {p.shape[-1]})")
    if (p.gather(1, ids[:, None]) <= 0).any():
        return Verdict("INCORRECT_NUMERICAL", f"output {name!r} picked a token of probability 0")
    return Verdict("PASSED")


def chi2_sf(x: float, dof: int) -> float:
    """Upper tail of the chi-square distribution (Wilson-Hilferty normal approximation; good to a few
    per cent of the p-value for dof >= 3, which is all a pass/fail threshold of 1e-3 needs)."""
    if dof <= 0:
        return 1.0
    z = ((x / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))


def two_sample_chi2(a: torch.Tensor, b: torch.Tensor) -> tuple[float, int]:
    """Chi-square statistic and degrees of freedom of 'same distribution' for two samples of token ids,
    one row of the batch at a time (rows summed); tokens seen fewer than 5 times in total pooled."""
    stat, dof = 0.0, 0
    for row in range(a.shape[1]):
        ids = torch.cat([a[:, row], b[:, row]])
        values, counts = torch.unique(ids, return_counts=True)
        ca = torch.stack([(a[:, row] == v).sum() for v in values]).double()
        cb = torch.stack([(b[:, row] == v).sum() for v in values]).double()
        rare = counts < 5
        if rare.any():
            ca = torch.cat([ca[~rare], ca[rare].sum().reshape(1)])
            cb = torch.cat([cb[~rare], cb[rare].sum().reshape(1)])
        total = ca + cb
        keep = total > 0
        ca, cb, total = ca[keep], cb[keep], total[keep]
        if len(total) < 2:
            continue
        na, nb = ca.sum(), cb.sum()
        ea, eb = total * na / (na + nb), total * nb / (na + nb)
        stat += float((((ca - ea) ** 2) / ea + ((cb - eb) ** 2) / eb).sum())
        dof += len(total) - 1
    return stat, dof


def compare_samples(definition: Mapping[str, Any], solution_draws: list, reference_draws: list,
                    probs: Optional[torch.Tensor]) -> Verdict:
    """Sampling kernels: every draw must be a token of non-zero probability, and the solution's draws
    must follow the reference's distribution (two-sample chi-square, p >= 1e-3)."""
    name = next(iter(definition["outputs"]))
    a = torch.stack([d[name].to("cpu", torch.int64) for d in solution_draws])  # [draws, batch]
    b = torch.stack([d[name].to("cpu", torch.int64) for d in reference_draws])
    if probs is not None:
        p = probs.to("cpu", torch.float32)
        if ((a < 0) | (a >= p.shape[-1])).any():
            return Verdict("INCORRECT_NUMERICAL", f"output {name!r} holds token ids outside [0, {p.shape[-1]})")
        picked = torch.gather(p.unsqueeze(0).expand(a.shape[0], -1, -1), 2, a.unsqueeze(-1)).squeeze(-1)
        if (picked <= 0).any():
            return Verdict("INCORRECT_NUMERICAL", f"output {name!r} picked a token of probability 0")
    stat, dof = two_sample_chi2(a, b)
    p_value = chi2_sf(stat, dof)
    if p_value < 1e-3:
        return Verdict("INCORRECT_NUMERICAL", f"draws of {name!r} do not follow the reference's distribution "
                                              f"(chi-square {stat:.1f} on {dof} dof, p = {p_value:.2g})",
                       matched_ratio=0.0)
    return Verdict("PASSED", f"chi-square {stat:.1f} on {dof} dof, p = {p_value:.2g}")
