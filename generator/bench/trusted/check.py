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

from ...model.status import TraceStatus
from ..shared.inputs import TORCH_DTYPES


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

def tolerance_for(definition: str, output: str, dtype: str) -> Tolerance:  # noqa: ARG001 - room for overrides
    # By dtype only: the magnitude scaling below makes per-definition overrides unnecessary so far.
    return DTYPE_TOLERANCE.get(dtype, EXACT)


def magnitude(expected: torch.Tensor) -> float:
    """Root mean square of the finite values of a reference output; 1.0 when they are all zero."""
    finite = expected[torch.isfinite(expected)]
    rms = finite.square().mean().sqrt().item() if finite.numel() else 0.0
    return rms if rms > 0 else 1.0


CHUNK = 1 << 18  # elements compared at a time: float32 temporaries of 1 MiB stay in cache and in malloc's heap


def _errors(a: torch.Tensor, e: torch.Tensor, tol: Tolerance) -> tuple[float, float, float, Tolerance, Optional[torch.Tensor]]:
    """(share within tolerance, max abs error, max relative error, the tolerance scaled by the reference's magnitude,
    where `a` is NaN/inf and `e` finite or None) of one output; where all is finite (the rule) a chunk at a time: whole
    float32 temporaries made a 32 MiB output's compare 0.6 to 0.9 s here, mostly page faults (chunked: 8x less)."""
    a, e = a.detach().to("cpu").reshape(-1), e.detach().to("cpu").reshape(-1)
    n = e.numel()
    squares = 0.0
    for k in range(0, n, CHUNK):  # the reference's magnitude first: the tolerance depends on it
        ac, ec = a[k:k + CHUNK].float(), e[k:k + CHUNK].float()
        if not bool(torch.isfinite(ac.sum() + ec.sum())):  # NaN and inf propagate; an overflow takes the exact path
            return _errors_nonfinite(a.float(), e.float(), tol)
        squares += torch.dot(ec, ec).item()
    rms = math.sqrt(squares / n) if n else 0.0
    tol = Tolerance(tol.atol * (rms if rms > 0 else 1.0), tol.rtol, tol.matched_ratio)
    within, max_abs, max_rel = 0, 0.0, 0.0
    for k in range(0, n, CHUNK):
        ac, ec = a[k:k + CHUNK].float(), e[k:k + CHUNK].float()
        diff, abs_e = torch.sub(ac, ec).abs_(), torch.abs(ec)  # new tensors: ac and ec may be the caller's memory
        within += int(torch.le(diff, torch.mul(abs_e, tol.rtol).add_(tol.atol)).sum())
        max_abs = max(max_abs, diff.max().item())
        max_rel = max(max_rel, diff.div_(abs_e.clamp_min_(1e-12)).max().item())
    return (within / n if n else 1.0), max_abs, max_rel, tol, None


def _errors_nonfinite(af: torch.Tensor, ef: torch.Tensor, tol: Tolerance) -> tuple:  # NaN/inf, or a sum overflowed
    fa, fe = torch.isfinite(af), torch.isfinite(ef)
    tol = Tolerance(tol.atol * magnitude(ef), tol.rtol, tol.matched_ratio)
    diff = torch.where(fa & fe, (af - ef).abs_(), torch.where(af == ef, 0.0, math.inf))
    abs_e = torch.where(fe, ef.abs(), 0.0)  # an infinite expected value (a masked logit) allows no error
    within, max_abs = int(torch.le(diff, torch.mul(abs_e, tol.rtol).add_(tol.atol)).sum()), diff.max().item()
    return within / ef.numel(), max_abs, diff.div_(abs_e.clamp_min_(1e-12)).max().item(), tol, ~fa & fe


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
        return self.status == TraceStatus.PASSED


def compare(definition: Mapping[str, Any], actual: Mapping[str, Any], expected: Mapping[str, Any],
            axes: Mapping[str, int]) -> Verdict:
    """Compare every output; the first failing output decides the status, errors are the worst over all."""
    worst = Verdict(TraceStatus.PASSED)
    worst_ratio = 1.0
    for name, spec in definition["outputs"].items():
        if name not in actual:
            return Verdict(TraceStatus.INCORRECT_SHAPE, f"output {name!r} is missing (returned {sorted(actual)})")
        a, e = actual[name], expected[name]
        if type(a) is not torch.Tensor:  # noqa: E721 - subclasses are refused on purpose (sandboxed/guards.py)
            return Verdict(TraceStatus.REWARD_HACK, f"output {name!r} is a {type(a).__module__}.{type(a).__qualname__}, "
                                          "not a plain torch.Tensor")
        want_shape = tuple(int(axes[x]) for x in spec["shape"])
        if tuple(a.shape) != want_shape:
            return Verdict(TraceStatus.INCORRECT_SHAPE, f"output {name!r} has shape {tuple(a.shape)}, expected {want_shape}")
        if a.dtype != TORCH_DTYPES[spec["dtype"]]:
            return Verdict(TraceStatus.INCORRECT_DTYPE, f"output {name!r} has dtype {a.dtype}, expected "
                                              f"{TORCH_DTYPES[spec['dtype']]}")
        tol = tolerance_for(definition["name"], name, spec["dtype"])
        ratio, max_abs, max_rel, tol, bad_nonfinite = _errors(a, e, tol)
        worst.max_absolute_error = max(worst.max_absolute_error, max_abs)
        worst.max_relative_error = max(worst.max_relative_error, max_rel)
        worst_ratio = min(worst_ratio, ratio)
        if worst.status == TraceStatus.PASSED:
            worst.atol, worst.rtol = tol.atol, tol.rtol
            if bad_nonfinite is not None and bad_nonfinite.any():
                worst.status = TraceStatus.INCORRECT_NUMERICAL
                worst.message = (f"output {name!r} has {int(bad_nonfinite.sum())} NaN/inf element(s) where the "
                                 "reference is finite (unwritten output elements show as NaN)")
            elif ratio < tol.matched_ratio:
                worst.status = TraceStatus.INCORRECT_NUMERICAL
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

# Draws of the solution and of the reference compared on one input set (the bench does so on a sampler's
# first batch; its timed calls each have a set of their own and are compared by rank, draw_ranks; every
# draw's support is checked on its own call's inputs). A greedy sampler
# is what needs the draws: on a peaked (power_law_probs) batch-1 row the reference's top token holds up
# to ~0.85 of the filtered mass (1.0 where the filters keep one token: greedy is then right), and with 64
# draws the reference then has ~10 others, too few for p < 1e-3 (greedy passed in 1 to 5% of batch-1
# input sets, simulated); from 128 draws on none passed in 60 sets. 256 leaves a margin. A dropped top-k
# on such a row shows only as draws past the k-th token, which can hold as little as 0.2% of the mass:
# the support check finds them, over the batches (tests/bench/test_bench_checks.py).
SAMPLING_DRAWS = 256


def sampling_draws(rows: int) -> int:
    """Draws per compared input set for a sampler whose output has `rows` independent rows: SAMPLING_DRAWS
    row-draws in all (at least 32 calls). The two-sample test sums its statistic over rows, so a batch of
    rows gives the power of that many more draws of one row, and the reference's cost per input set stays
    that of SAMPLING_DRAWS single-row draws (a batch-64 sampler over 201k tokens otherwise takes minutes per
    input set on a CPU). Batch-1 workloads, the hardest case (tests/bench/test_bench_checks.py), keep all 256."""
    return max(32, -(-SAMPLING_DRAWS // max(int(rows), 1)))
# Slack on a top-p nucleus's mass in the support check: the reference sums up to 262k float32
# probabilities (its cumsum drifts a few 1e-6), a kernel may sum in another order or renormalise.
SUPPORT_MASS_SLACK = 1e-3
SAMPLES_P_VALUE = 1e-3


def _sampling_filters(definition: Mapping[str, Any]) -> tuple[bool, bool, bool]:
    """(has top_k, has top_p, top-p applied to the top-k-renormalised row) from the definition. Only
    FlashInfer's top_k_top_p_sampling_from_probs (top-k first) renormalises between the filters; any
    other order or a joint filter keeps a superset of the top-k-first nucleus (the raw row's rule)."""
    names = definition.get("inputs", {})
    has_k, has_p = "top_k" in names, "top_p" in names
    sequential = has_k and has_p and str(definition.get("name", "")).startswith("top_k_top_p_sampling")
    return has_k, has_p, sequential


class _Support:
    """Per row of probs, the least probability a draw may have: a token is allowed iff its probability
    is > 0 and >= floor[row]. The reference's filters keep a head of the row sorted by probability:
    - top-k: the tokens at least as probable as the k-th largest (ties at the pivot kept), i.e. fewer
      than k tokens are strictly more probable;
    - top-p: a token whose mass before it (in decreasing order) is below p. Ties may come in any
      order, so the rule here takes the mass STRICTLY more probable than the token, which is never
      more than the reference's mass before it: a superset. Top-k-first then top-p measures that mass
      on the top-k row renormalised; a joint filter (or top-p alone) on the raw row.
    Both rules keep every token of a probability >= some value of the row, so one floor per row."""

    def __init__(self, definition: Mapping[str, Any], inputs: Mapping[str, Any]):
        probs = inputs.get("probs")
        self.ok = isinstance(probs, torch.Tensor) and probs.dim() >= 1 and probs.shape[-1] > 0
        if not self.ok:
            return
        p = probs.detach().to("cpu", torch.float32)
        self.vocab = vocab = p.shape[-1]
        self.p = p = p.reshape(-1, vocab)
        rows = p.shape[0]
        self.floor = floor = torch.zeros(rows, dtype=torch.float32)
        has_k, has_p, sequential = _sampling_filters(definition)
        k = self._per_row(inputs.get("top_k"), rows, vocab) if has_k else torch.full((rows,), float(vocab))
        k = k.round().long().clamp(1, vocab)
        top_p = self._per_row(inputs.get("top_p"), rows, 1.0) if has_p else torch.ones(rows, dtype=torch.float64)
        by_k, by_p = k < vocab, top_p < 1.0
        todo = (by_k | by_p).nonzero().flatten()
        if not len(todo):
            return
        # One read of each filtered row's head, sorted: the whole top-k (and one more, to see whether the
        # pivot's ties go on past it) and the top tokens of a nucleus; deeper nuclei are read again below.
        m = min(vocab, max(int(k[by_k].max()) + 1 if by_k.any() else 0, 128))
        rows_todo = p if len(todo) == rows else p[todo]  # (no copy of a large batch where every row is filtered)
        head = torch.topk(rows_todo, m, dim=-1).values.double()  # [rows todo, m], largest first
        kk, pp = k[todo], top_p[todo]
        cut = kk < vocab
        pivot = torch.where(cut, head.gather(1, (kk.clamp(max=m) - 1)[:, None]).squeeze(1), torch.zeros(()).double())
        floor[todo] = pivot.float()
        norm = torch.ones(len(todo), dtype=torch.float64)
        seq_cut = cut & sequential
        if sequential:  # top-p over the top-k row renormalised (ties at the pivot kept)
            in_k = head >= pivot[:, None]
            norm = torch.where(seq_cut, torch.where(in_k, head, torch.zeros(()).double()).sum(1), norm)
            for j in (seq_cut & (head[:, -1] == pivot)).nonzero().flatten().tolist():  # ties go on past the head
                i, v = int(todo[j]), float(pivot[j])
                norm[j] += v * int((p[i] == v).sum() - (head[j] == v).sum())
            whole = ~cut & (pp < 1.0)  # top-k not set: the reference renormalises the whole row
            if whole.any():
                norm[whole] = p.sum(1, dtype=torch.float64)[todo[whole]]  # one read, no copy of the rows
            head = torch.where(seq_cut[:, None] & ~in_k, torch.zeros(()).double(), head)  # past top-k: out
        level, covered = self._nucleus_floor(head, norm, pp)
        use = (pp < 1.0) & covered
        floor[todo[use]] = torch.maximum(pivot[use], level[use]).float()
        # Nuclei deeper than the head where top-k does not cut first: read deeper (the head is inside).
        deep = ((pp < 1.0) & ~covered & ~cut).nonzero().flatten()
        depth = m
        while len(deep) and depth < vocab:
            depth = min(8 * depth, vocab)
            rows_ = todo[deep]
            level, covered = self._nucleus_floor(torch.topk(p[rows_], depth, dim=-1).values.double(), norm[deep],
                                                 pp[deep])
            floor[rows_[covered]] = level[covered].float()
            deep = deep[~covered]

    @staticmethod
    def _nucleus_floor(head: torch.Tensor, norm: torch.Tensor, top_p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per row of `head` (a row's largest values, sorted; zeros past a top-k cut), the least
        probability in the top-p superset: a token whose mass strictly before it, divided by norm, is below
        top_p + slack; and whether the head reaches past that superset (else the level is not known).
        The mass before position j also counts the ties before it, so the least value of the inside prefix
        is the level: its first position is inside, and every smaller value starts past the prefix."""
        before = (torch.cumsum(head, 1) - head) / norm[:, None]
        inside = (before < (top_p + SUPPORT_MASS_SLACK)[:, None]) & (head > 0)
        n = inside.sum(1).clamp(min=1)  # a prefix: before is non-decreasing; before[0] = 0
        covered = (n < head.shape[1]) | (head[:, -1] <= 0)
        return head.gather(1, (n - 1)[:, None]).squeeze(1), covered

    @staticmethod
    def _per_row(value: Any, rows: int, default: float) -> torch.Tensor:
        if value is None:
            return torch.full((rows,), float(default), dtype=torch.float64)
        t = torch.as_tensor(value).detach().to("cpu", torch.float64).reshape(-1)
        return t.expand(rows) if t.numel() == 1 else t[:rows]

    def check(self, name: str, ids: torch.Tensor) -> Optional[Verdict]:
        """ids: [draws, rows] int64. None when every draw is allowed."""
        if not self.ok:
            return None
        if ids.shape[-1] != self.p.shape[0]:
            return Verdict(TraceStatus.INCORRECT_SHAPE, f"output {name!r} has {ids.shape[-1]} token ids per draw for "
                                              f"{self.p.shape[0]} rows of probs")
        bad = (ids < 0) | (ids >= self.vocab)
        if bad.any():
            v = int(ids[bad][0])
            return Verdict(TraceStatus.INCORRECT_NUMERICAL, f"output {name!r} holds token ids outside [0, {self.vocab}) "
                                                  f"(e.g. {v})")
        picked = self.p.gather(1, ids.t()).t()  # [draws, rows]
        if (picked <= 0).any():
            return Verdict(TraceStatus.INCORRECT_NUMERICAL, f"output {name!r} picked a token of probability 0")
        out = picked < self.floor[None, :]
        if out.any():
            d, r = (int(i) for i in out.nonzero()[0])
            rank = int((self.p[r] > picked[d, r]).sum())
            return Verdict(TraceStatus.INCORRECT_NUMERICAL,
                           f"output {name!r}: {int(out.sum())} draw(s) outside the filtered support (top-k / "
                           f"top-p), e.g. row {r} picked token {int(ids[d, r])} of probability "
                           f"{float(picked[d, r]):.3g} (rank {rank}), below the least allowed {float(self.floor[r]):.3g}",
                           matched_ratio=1.0 - float(out.float().mean()))
        return None


_support_cache: list = []  # [(key, the keyed objects kept alive, _Support)]: the last input set's rules


def _support_for(definition: Mapping[str, Any], inputs: Mapping[str, Any]) -> _Support:
    """_Support of this input set, reused while the same (unchanged) tensors come back: the bench checks
    every draw of the first batch (SAMPLING_DRAWS calls on one input set) and then the batch."""
    objs = tuple(inputs.get(n) for n in ("probs", "top_k", "top_p"))
    key = (str(definition.get("name")), tuple(definition.get("inputs", {})),
           tuple((id(o), o._version) if isinstance(o, torch.Tensor) else repr(o) for o in objs))
    if _support_cache and _support_cache[0][0] == key:
        return _support_cache[0][2]
    support = _Support(definition, inputs)
    _support_cache[:] = [(key, objs, support)]
    return support


def _output_spec(definition: Mapping[str, Any]) -> tuple[str, Any]:
    name = next(iter(definition["outputs"]))
    return name, TORCH_DTYPES.get(definition["outputs"][name].get("dtype"))


def _expected_shape(definition: Mapping[str, Any], inputs: Mapping[str, Any], name: str) -> Optional[tuple]:
    """The output's shape from the definition's axes: const values, var axes read off the inputs."""
    sizes = {a: int(s["value"]) for a, s in definition.get("axes", {}).items() if s.get("value") is not None}
    for n, spec in definition.get("inputs", {}).items():
        t = inputs.get(n)
        if isinstance(t, torch.Tensor) and len(spec.get("shape") or []) == t.dim():
            for a, s in zip(spec["shape"], t.shape):
                sizes.setdefault(a, int(s))
    try:
        return tuple(sizes[a] for a in definition["outputs"][name]["shape"])
    except KeyError:
        return None


def _draw_tensor(definition: Mapping[str, Any], draw: Any, shape: Optional[tuple], which: str) -> Any:
    """The draw's output tensor, or a failing Verdict when it is missing or of another kind."""
    name, dtype = _output_spec(definition)
    if not isinstance(draw, Mapping) or name not in draw:
        got = sorted(draw) if isinstance(draw, Mapping) else type(draw).__name__
        return Verdict(TraceStatus.INCORRECT_SHAPE, f"{which}: output {name!r} is missing (returned {got})")
    t = draw[name]
    if type(t) is not torch.Tensor:  # noqa: E721 - subclasses are refused on purpose (sandboxed/guards.py)
        return Verdict(TraceStatus.REWARD_HACK, f"{which}: output {name!r} is a {type(t).__module__}.{type(t).__qualname__}, "
                                      "not a plain torch.Tensor")
    if shape is not None and tuple(t.shape) != shape:
        return Verdict(TraceStatus.INCORRECT_SHAPE, f"{which}: output {name!r} has shape {tuple(t.shape)}, expected {shape}")
    if dtype is not None and t.dtype != dtype:
        return Verdict(TraceStatus.INCORRECT_DTYPE, f"{which}: output {name!r} has dtype {t.dtype}, expected {dtype}")
    if t.is_floating_point() or t.is_complex():
        return Verdict(TraceStatus.INCORRECT_DTYPE, f"{which}: output {name!r} has dtype {t.dtype}: token ids are integers")
    return t


def _as_inputs(inputs: Any) -> Mapping[str, Any]:
    if inputs is None:
        return {}
    if isinstance(inputs, torch.Tensor):  # the former signature passed probs alone
        return {"probs": inputs}
    return inputs


def check_support(definition: Mapping[str, Any], draw: Mapping[str, Any], inputs: Mapping[str, Any]) -> Verdict:
    """One draw of a sampling kernel (a call's outputs, its inputs): the output is a tensor of the right
    shape and dtype, and every token id is in range, of probability > 0 and inside the definition's
    top-k / top-p filters (_Support). The distribution itself is checked by compare_samples."""
    inputs = _as_inputs(inputs)
    name, _ = _output_spec(definition)
    t = _draw_tensor(definition, draw, _expected_shape(definition, inputs, name), "the draw")
    if isinstance(t, Verdict):
        return t
    ids = t.detach().to("cpu", torch.int64).reshape(1, -1)
    return _support_for(definition, inputs).check(name, ids) or Verdict(TraceStatus.PASSED)


def chi2_sf(x: float, dof: int) -> float:
    """Upper tail of the chi-square distribution: the regularised upper incomplete gamma function
    Q(dof / 2, x / 2) (series below a + 1, continued fraction above; Numerical Recipes 6.2), exact to
    ~1e-12, also at the 1 or 2 degrees of freedom of a batch-1 row with few distinct tokens."""
    if dof <= 0:
        return 1.0
    if x <= 0:
        return 1.0
    a, y = dof / 2.0, x / 2.0
    log_front = a * math.log(y) - y - math.lgamma(a)
    if y < a + 1.0:  # P(a, y) by its series
        term = total = 1.0 / a
        n = a
        for _ in range(10000):
            n += 1.0
            term *= y / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300  # Q(a, y) by Lentz's continued fraction
    b = y + 1.0 - a
    c, d = 1.0 / tiny, 1.0 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * h)


def two_sample_chi2(a: torch.Tensor, b: torch.Tensor) -> tuple[float, int]:
    """Chi-square statistic and degrees of freedom of 'same distribution' for two samples of token ids,
    a [draws_a, rows] and b [draws_b, rows], one row of the batch at a time (rows summed); in each row
    the tokens seen fewer than 5 times in total are pooled into one bin."""
    a = a.to(torch.int64).reshape(a.shape[0], -1)
    b = b.to(torch.int64).reshape(b.shape[0], -1)
    rows = a.shape[1]
    if rows == 0 or a.shape[0] == 0 or b.shape[0] == 0:
        return 0.0, 0
    lo = min(int(a.min()), int(b.min()))
    span = max(int(a.max()), int(b.max())) - lo + 1
    row = torch.arange(rows, dtype=torch.int64)
    keys = torch.cat([(row * span + (a - lo)).reshape(-1), (row * span + (b - lo)).reshape(-1)])
    uniq, inverse = torch.unique(keys, return_inverse=True)
    ca = torch.bincount(inverse[:a.numel()], minlength=len(uniq)).double()
    cb = torch.bincount(inverse[a.numel():], minlength=len(uniq)).double()
    bin_row = uniq // span
    rare = (ca + cb) < 5
    # Bins: the common tokens as they are, then one pooled bin per row for its rare tokens.
    bins = torch.where(rare, len(uniq) + bin_row, torch.arange(len(uniq)))
    ca = torch.zeros(len(uniq) + rows, dtype=torch.float64).index_add_(0, bins, ca)
    cb = torch.zeros(len(uniq) + rows, dtype=torch.float64).index_add_(0, bins, cb)
    bin_row = torch.cat([bin_row, row])
    total = ca + cb
    keep = total > 0
    ca, cb, total, bin_row = ca[keep], cb[keep], total[keep], bin_row[keep]
    nbins = torch.bincount(bin_row, minlength=rows)
    use = nbins[bin_row] >= 2  # a row whose draws all fall in one bin says nothing
    if not use.any():
        return 0.0, 0
    ca, cb, total, bin_row = ca[use], cb[use], total[use], bin_row[use]
    na = torch.zeros(rows, dtype=torch.float64).index_add_(0, bin_row, ca)[bin_row]
    nb = torch.zeros(rows, dtype=torch.float64).index_add_(0, bin_row, cb)[bin_row]
    ea, eb = total * na / (na + nb), total * nb / (na + nb)
    stat = float((((ca - ea) ** 2) / ea + ((cb - eb) ** 2) / eb).sum())
    dof = int((nbins[nbins >= 2] - 1).sum())
    return stat, dof


def draw_ranks(definition: Mapping[str, Any], draws: list, inputs: list) -> torch.Tensor:
    """[draws, rows] int64: the rank of each drawn token in its row of its own call's probs (how many tokens of the
    row are strictly more probable). Over the same input sets a right sampler's ranks and the reference's follow
    one distribution (a mixture over the sets), so two_sample_chi2 compares draws made on a fresh input set per
    call. Call after check_support has passed every draw (token ids in range)."""
    name, _ = _output_spec(definition)
    out = []
    for draw, given in zip(draws, inputs):
        p = given["probs"].detach().to("cpu", torch.float32)
        p = p.reshape(-1, p.shape[-1])
        ids = draw[name].detach().to("cpu", torch.int64).reshape(-1, 1)
        out.append((p > p.gather(1, ids)).sum(1))
    return torch.stack(out)


def compare_samples(definition: Mapping[str, Any], solution_draws: list, reference_draws: list,
                    inputs: Mapping[str, Any]) -> Verdict:
    """Sampling kernels, SAMPLING_DRAWS calls of each on one input set (`inputs`: the call's inputs by
    name): every solution draw must be an integer tensor of the output's shape and dtype whose token ids
    lie in the filtered support (check_support's rule), and the solution's draws must follow the
    reference's distribution (two-sample chi-square, p >= 1e-3). Never raises on a bad solution output:
    that is a failing Verdict."""
    inputs = _as_inputs(inputs)
    name, _ = _output_spec(definition)
    if not solution_draws:
        return Verdict(TraceStatus.INCORRECT_SHAPE, f"no draws of {name!r} from the solution")
    if not reference_draws:
        raise ValueError("compare_samples needs the reference's draws")
    b = torch.stack([d[name].detach().to("cpu", torch.int64) for d in reference_draws])  # trusted
    shape = _expected_shape(definition, inputs, name)
    if shape is None:
        shape = tuple(b.shape[1:])
    ids = []
    for i, draw in enumerate(solution_draws):
        t = _draw_tensor(definition, draw, shape, f"draw {i + 1} of {len(solution_draws)}")
        if isinstance(t, Verdict):
            return t
        ids.append(t.detach().to("cpu", torch.int64))
    a = torch.stack(ids)  # [draws, *shape]
    bad = _support_for(definition, inputs).check(name, a.reshape(a.shape[0], -1))
    if bad is not None:
        return bad
    stat, dof = two_sample_chi2(a, b)
    p_value = chi2_sf(stat, dof)
    if p_value < SAMPLES_P_VALUE:
        return Verdict(TraceStatus.INCORRECT_NUMERICAL, f"draws of {name!r} do not follow the reference's distribution "
                                              f"(chi-square {stat:.1f} on {dof} dof, p = {p_value:.2g})",
                       matched_ratio=0.0)
    return Verdict(TraceStatus.PASSED, f"chi-square {stat:.1f} on {dof} dof, p = {p_value:.2g}")
