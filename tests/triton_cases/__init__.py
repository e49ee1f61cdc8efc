"""How each kerneltrace Triton solution is exercised on the CPU, one module per family of kernels.

Every Triton solution dataset/solutions/kerneltrace/<type>/<definition>/<definition>_triton.json is
found by its place; tests/dataset/test_triton_solutions.py checks each one and fails for a solution with no
TritonCase here. A module of this folder that defines CASES = {definition name: TritonCase} is
collected: a new family's file needs no registration.

A TritonCase gives:
  inputs(d, g) -> [(label, axes, inputs)]: small, coherent, seeded input sets (inputs in the
      definition's order, axes = the var-axis values); the worker runs the solution under Triton's
      interpreter (TRITON_INTERPRET=1) on each and compares it with the definition's reference
      (tests/tolerances.py), and checks that no input was modified.
  compile_shapes(d) -> iterable of argument tuples: realistic serving shapes (CPU tensors, never run)
      that take every launch branch; each launch is compiled ahead of time for sm_90a with Triton's
      compiler and ptxas and must fit an H100 SM's shared memory.
  extra(module, index, label, axes, inputs, outputs, expected, d) -> seconds (optional): checks that
      reach the solution's inner launchers (block-size or split choices the small inputs would not take).

Modules here import torch only inside functions: the pytest side collects nothing from them, the
worker subprocess (with the interpreter switched on before triton is imported) does.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class TritonCase:
    inputs: Callable
    compile_shapes: Callable
    extra: Optional[Callable] = None


def collect() -> dict:
    cases: dict = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name == "common":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for key, case in getattr(module, "CASES", {}).items():
            assert key not in cases, f"{key} has a TritonCase in two modules of tests/triton_cases/"
            cases[key] = case
    return cases
