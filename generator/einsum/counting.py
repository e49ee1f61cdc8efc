"""Counting: MACs, element-wise operations, FLOPs and minimum bytes of a cascade (pure functions).

The model, per workload of a definition (its Einsum cascade rendered with the workload's axes):

- MACs of an Einsum: the points of its iteration space (the product of its rank variables'
  sizes, fewer where iteration_space_shape couples them, e.g. a causal mask) times its
  n_instances and the workload's; zero for copies.
- FLOPs: an Einsum that sums over a rank variable (one that indexes no output) does a
  multiply and an add per point: 2 FLOPs per MAC. An Einsum that sums over nothing is
  element-wise: 1 operation per point (exp, silu, a scale), counted as one FLOP.
- Minimum bytes: every input read once and every output written once, at its bits per
  value; intermediates cost nothing (they may live in registers or shared memory);
  persistent tensors count once however many instances run. A tensor's size is the part
  its projections reach (a paged KV cache counts the pages the workload reads, not the pool).
- Each Einsum's dtype, whose peak rate applies on a machine (analyse/roofline.py turns counts
  into time): Einsums that sum over a rank variable and read two or more tensors run at the
  rate of their compute_dtype, else of their inputs' dtype (e.g. tensor cores; precision.py);
  the rest at the float32 rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from .bits import access_bits
from .constraints import count_points, countable_points
from .expressions import ExprError
from .model import Cascade
from .precision import VECTOR_DTYPE, contraction_dtype
from .problems import CascadeProblem, Problem
from .render import axis_values, load_cascade, tensor_dtypes


@dataclass(frozen=True)
class EinsumCount:
    name: str
    kind: str  # "copy" | "contraction" (sums, reads >= 2 tensors) | "reduction" | "elementwise"
    macs: int  # iteration points x instances (the "MACs per Einsum"); 0 for copies
    flops: int
    dtype: str  # whose peak rate applies


@dataclass(frozen=True)
class TensorBytes:
    name: str
    role: str  # "input" | "output" | "intermediate"
    elements: int  # reached by the projections, times instances unless persistent
    bits: int
    bytes: float

    @property
    def counted(self) -> bool:
        return self.role != "intermediate"


@dataclass(frozen=True)
class Counts:
    einsums: tuple[EinsumCount, ...]
    tensors: tuple[TensorBytes, ...]

    @property
    def macs(self) -> int:
        """MACs of the Einsums that sum over a rank variable (2 FLOPs each)."""
        return sum(e.macs for e in self.einsums if e.kind in ("contraction", "reduction"))

    @property
    def elementwise_ops(self) -> int:
        return sum(e.macs for e in self.einsums if e.kind == "elementwise")

    @property
    def flops(self) -> int:
        return sum(e.flops for e in self.einsums)

    @property
    def flops_by_dtype(self) -> dict[str, int]:
        """FLOPs per dtype whose peak rate they are counted at, most first."""
        out: dict[str, int] = {}
        for e in self.einsums:
            if e.flops:
                out[e.dtype] = out.get(e.dtype, 0) + e.flops
        return dict(sorted(out.items(), key=lambda x: -x[1]))

    @property
    def bytes(self) -> float:
        return sum(t.bytes for t in self.tensors if t.counted)

    @property
    def intensity(self) -> float:
        """FLOPs per byte (0 when nothing moves)."""
        return self.flops / self.bytes if self.bytes else 0.0


def count(cascade: Cascade, dtypes: Optional[Mapping[str, str]] = None) -> Counts:
    """MACs, FLOPs and minimum bytes of a parsed cascade. `dtypes`: the definition's tensors.

    Raises CascadeProblem when an iteration space cannot be counted.
    """
    dtypes = dict(dtypes or {})
    bits = access_bits(cascade, dtypes)
    einsums = []
    for e in cascade.einsums:
        instances = e.n_instances * cascade.n_instances
        if e.is_copy:
            einsums.append(EinsumCount(e.name, "copy", 0, 0, VECTOR_DTYPE))
            continue
        macs = _points(e, count_points) * instances
        sums = bool(e.reduced_variables)
        if e.is_contraction:
            kind, dtype = "contraction", contraction_dtype(cascade, e, bits, dtypes)
        else:
            kind, dtype = ("reduction" if sums else "elementwise"), VECTOR_DTYPE
        einsums.append(EinsumCount(e.name, kind, macs, 2 * macs if sums else macs, dtype))
    return Counts(tuple(einsums), _tensor_bytes(cascade, bits))


def check_countable(cascade: Cascade) -> None:
    """Raise the CascadeProblem that count(cascade) would, without counting."""
    for e in cascade.einsums:
        if not e.is_copy:
            _points(e, countable_points)


def _points(e, how):
    """`how` (count_points, or countable_points) over Einsum `e`'s iteration space; CascadeProblem if it is too large."""
    try:
        return how(e.rank_variables, e.bounds, e.constraints)
    except ExprError as ex:
        raise CascadeProblem([Problem(e.pointer, f"iteration space of Einsum '{e.name}' {ex}",
                                      "split the Einsum or loosen its iteration_space_shape")]) from None


def _tensor_bytes(cascade: Cascade, bits) -> tuple[TensorBytes, ...]:
    out = []
    for t in cascade.tensors:
        role = cascade.role(t)
        elements, width, persistent, instances = 0, 0, False, 1
        for e in cascade.einsums:
            for a in e.accesses:
                if a.tensor != t:
                    continue
                # An input's bits are those it is read with; an output's, those it is written with.
                if role == "intermediate" or a.output == (role == "output"):
                    width = max(width, bits[(e.name, t)][0])
                elements = max(elements, _footprint(e, a))
                persistent = persistent or a.persistent
                instances = max(instances, e.n_instances * cascade.n_instances)
        if not persistent:
            elements *= instances
        out.append(TensorBytes(t, role, elements, width, elements * width / 8))
    return tuple(out)


def _footprint(e, a) -> int:
    """Elements of the tensor one access reaches: per rank, the distinct in-range index values."""
    n = 1
    for rank, idx in zip(a.ranks, a.indices):
        lo, hi = idx.interval(e.bounds)
        lo, hi = max(lo, 0), min(hi, e.rank_sizes[rank] - 1)
        n *= max(0, hi - lo + 1)
    return n



def workload_counts(ds, definition, axes: Mapping[str, int], cache: Optional[dict] = None) -> Counts:
    """Counts of one workload of a definition (its cascade rendered with the workload's axes)."""
    key = (definition.name, tuple(sorted(axes.items())))
    if cache is not None and key in cache:
        return cache[key]
    cascade_record = ds.einsums[definition.name]
    cascade = load_cascade(cascade_record.template, axis_values(definition, axes))
    counts = count(cascade, tensor_dtypes(definition))
    if cache is not None:
        cache[key] = counts
    return counts
