"""Six gaps of Triton 3.9's CPU interpreter that the libraries' kernels fall into, filled for the checks.

Compiled for a GPU, a kernel sees a Python float argument as an fp32 scalar, a loop variable of
`range` as an int32 scalar, and libdevice's functions (rsqrt, exp, ...) as the GPU's. Under
TRITON_INTERPRET=1 a float argument stays a Python float (liger's `eps.to(tl.float32)` fails), a
`range` yields Python ints (fla's `i_t.to(tl.int64)` fails), and a libdevice function imported by
name into a module returns None, and arithmetic, comparisons and tl.dot on bfloat16 tiles work on their bits
(numpy has no bfloat16: the interpreter stores it as uint16), and float32 -> bfloat16 truncates where the
GPU rounds to nearest even. Each gap is filled the way the compiled kernel behaves, nothing
more; the kernels themselves run unchanged. Autotuned kernels keep their first config (the
interpreter cannot time configs, and every config computes the same result).
"""

from __future__ import annotations

import builtins
import sys

import numpy as np
import torch
import triton.language as tl
from triton.language.extra import libdevice
from triton.runtime import autotuner, interpreter

_COMPARISONS = (np.less, np.greater, np.less_equal, np.greater_equal, np.equal, np.not_equal)


# libdevice functions tl.math lacks, in terms the interpreter runs (float32, exact to a few ulps)
_IN_TL_TERMS = {"tanh": lambda x: 2.0 * tl.sigmoid(2.0 * x) - 1.0}


def _scalar(value, dtype, np_dtype):
    return tl.tensor(interpreter.TensorHandle(np.array([value], dtype=np_dtype), dtype), dtype)


class _LoopInt(int):
    """A `range` value inside a kernel: an int that also converts like the int32 scalar it is on a GPU."""

    def to(self, dtype, **kwargs):  # noqa: ARG002
        return _scalar(int(self), dtype, np.int64 if dtype == tl.int64 else np.int32)


def _kernel_range(*args):
    return (_LoopInt(i) for i in builtins.range(*args))


def install(prefixes: tuple[str, ...]) -> None:
    """Fill the gaps for the kernels of every module already imported whose name starts with `prefixes`."""
    original_cvt = interpreter._implicit_cvt

    def cvt(arg):
        if isinstance(arg, float):
            return _scalar(arg, tl.float32, np.float32)
        return original_cvt(arg)

    interpreter._implicit_cvt = cvt
    original_run = autotuner.Autotuner.run

    def first_config(self, *args, **kwargs):
        self.configs = self.configs[:1]
        return original_run(self, *args, **kwargs)

    autotuner.Autotuner.run = first_config
    original_binary = interpreter.InterpreterBuilder.binary_op

    def binary_op(self, lhs, rhs, op):
        if lhs.dtype.scalar == tl.bfloat16 and rhs.dtype.scalar == tl.bfloat16:
            # numpy holds bfloat16 as its uint16 bits: compute in float32 and round, as the GPU's bf16 ALU does
            out = original_binary(self, self.cast_impl(lhs, tl.float32), self.cast_impl(rhs, tl.float32), op)
            return out if op in _COMPARISONS else self.cast_impl(out, tl.bfloat16)
        return original_binary(self, lhs, rhs, op)

    interpreter.InterpreterBuilder.binary_op = binary_op
    original_cast = interpreter.InterpreterBuilder.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            # the interpreter truncates; the GPU's cvt.rn.bf16.f32 (and torch) round to nearest even
            bits = torch.from_numpy(np.ascontiguousarray(src.data)).to(torch.bfloat16).view(torch.uint16).numpy()
            return interpreter.TensorHandle(bits, tl.bfloat16)
        return original_cast(self, src, dst_type)

    interpreter.InterpreterBuilder.cast_impl = cast_impl
    original_dot = interpreter.InterpreterBuilder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if a.dtype.scalar == tl.bfloat16:  # bf16 products are exact in float32, accumulated there as on tensor cores
            a, b = self.cast_impl(a, tl.float32), self.cast_impl(b, tl.float32)
        return original_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

    interpreter.InterpreterBuilder.create_dot = create_dot
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(prefixes):
            continue
        module.range = _kernel_range  # the module's host code sees plain ints all the same
        for attr, value in list(vars(module).items()):
            if not (callable(value) and getattr(libdevice, attr, None) is value):
                continue
            if hasattr(tl.math, attr):
                # looked up at call time: the interpreter patches tl.math while a kernel runs
                setattr(module, attr, (lambda n: lambda *a, **k: getattr(tl.math, n)(*a, **k))(attr))
            elif attr in _IN_TL_TERMS:
                setattr(module, attr, _IN_TL_TERMS[attr])
