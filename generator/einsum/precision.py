"""The precision a contraction runs at, and the check that it is not wider than the data it multiplies.

A contraction's FLOPs count at the peak rate of one dtype (analyse/roofline.py): the cascade's
`compute_dtype` where it states one (the unit that runs the products: float4_e2m1 for e2m1 x e2m1,
float8_e4m3 for MXFP8 x MXFP4, bfloat16 for bfloat16 activations with dequantised weights), else
the widest of the data it is fed from outside the cascade.

Quantised kernels keep their operands narrow up to the tensor cores, while a cascade written like
its reference dequantises them into 32-bit intermediates; derived from those, the products would
count at the float32 rate, two orders of magnitude too slow. So the data width of every operand
is traced back to the tensors it came from: through copies and element-wise Einsums (a dequantise,
a gather) the width of their inputs, capped by the bits the cascade gives the intermediate; out of
an Einsum that sums, the bits it is written with. A contraction counted at a dtype wider than all
of its operands is a problem.
"""

from __future__ import annotations

from typing import Mapping

from ..model.dtypes import DTYPE_BITS
from .bits import BITS_DTYPE, access_bits
from .model import Cascade, Einsum
from .problems import Problem

VECTOR_DTYPE = "float32"  # element-wise work and single-input reductions run on the vector units
# Tensors that steer rather than feed: indices (which rows, which expert) and masks.
_STEERING = ("bool", "int16", "int32", "int64")


def _bits_dtype(bits: int) -> str:
    return BITS_DTYPE.get(bits, "float32")


def contraction_dtype(cascade: Cascade, e: Einsum, bits, dtypes: Mapping[str, str]) -> str:
    """The dtype whose peak rate a contraction runs at: its compute_dtype, else the widest of the data
    it is fed from outside the cascade (floating-point tensors before index tensors, which steer rather
    than feed the units); intermediates only when it reads nothing else (their dtype follows their bits)."""
    if e.compute_dtype:
        return e.compute_dtype

    def dtype_of(a) -> str:
        b, origin = bits[(e.name, a.tensor)]
        return dtypes[a.tensor] if origin.startswith("dtype") else _bits_dtype(b)

    outside = [a for a in e.inputs if a.tensor not in cascade.intermediates]
    floating = [a for a in outside if dtype_of(a).startswith(("float", "bfloat"))]
    chosen = floating or outside or list(e.inputs)
    best = max(chosen, key=lambda a: bits[(e.name, a.tensor)][0])
    return dtype_of(best)


class _Widths:
    """Data width in bits of each tensor of a cascade, traced back to the tensors it came from."""

    def __init__(self, cascade: Cascade, bits, dtypes: Mapping[str, str]):
        self.cascade, self.bits, self.dtypes = cascade, bits, dtypes
        self.writers = {}
        for e in cascade.einsums:
            for a in e.outputs:
                self.writers.setdefault(a.tensor, []).append(e)
        self.memo: dict[str, int] = {}

    def steers(self, tensor: str) -> bool:
        return self.dtypes.get(tensor) in _STEERING

    def of(self, e: Einsum, tensor: str) -> int:
        """Width of `tensor` as Einsum `e` reads it."""
        stated = self.bits[(e.name, tensor)][0]
        if tensor not in self.cascade.intermediates:
            return stated
        if tensor not in self.memo:
            self.memo[tensor] = stated  # a cycle (none in a checked cascade) ends here
            self.memo[tensor] = min(stated, max(self.written(w, tensor) for w in self.writers[tensor]))
        return self.memo[tensor]

    def written(self, w: Einsum, tensor: str) -> int:
        """Width of what `w` writes to `tensor`: what it sums comes out at the bits it is written with; a copy
        or an element-wise Einsum passes on its widest data input (the inputs indexed by the most rank variables:
        a per-tensor, per-row or per-expert scale is broadcast, not carried)."""
        if w.reduced_variables and not w.is_copy:
            return self.bits[(w.name, tensor)][0]
        data = [a for a in w.inputs if not self.steers(a.tensor)]
        most = max((len(a.variables) for a in data), default=0)
        return max((self.of(w, a.tensor) for a in data if len(a.variables) == most),
                   default=self.bits[(w.name, tensor)][0])


def precision_problems(cascade: Cascade, dtypes: Mapping[str, str]) -> list[Problem]:
    """Contractions counted at a dtype wider than every operand they multiply (e.g. e2m1 weights and
    bfloat16 activations counted at the float32 rate because the cascade dequantises into 32 bits)."""
    bits = access_bits(cascade, dtypes)
    widths = _Widths(cascade, bits, dtypes)
    problems = []
    for e in cascade.einsums:
        if not e.is_contraction:
            continue
        dtype = contraction_dtype(cascade, e, bits, dtypes)
        fed = [(a.tensor, widths.of(e, a.tensor)) for a in e.multiplicands if not widths.steers(a.tensor)]
        if not fed or DTYPE_BITS.get(dtype, 32) <= max(w for _, w in fed):
            continue
        operands = ", ".join(f"{t} {w}" for t, w in fed)
        where = "its compute_dtype" if e.compute_dtype else "the dtype of the tensors it reads"
        problems.append(Problem(
            e.pointer + ("/compute_dtype" if e.compute_dtype else ""),
            f"Einsum '{e.name}' counts its FLOPs at the {dtype} rate ({where}), but the data it multiplies is "
            f"narrower (bits per operand, traced back through copies and dequantisation: {operands})",
            "set compute_dtype to the unit that runs the products: float4_e2m1 for e2m1 x e2m1, float8_e4m3 for "
            "8-bit operands (MXFP8 x MXFP4), bfloat16 for bfloat16 activations with dequantised weights; "
            "dequantisation itself is a copy (is_copy_operation: true), its bytes counted where the codes are read"))
    return problems
