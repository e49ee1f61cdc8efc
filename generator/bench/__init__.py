"""The bench stage: seeded inputs, strict correctness, timing across a trust boundary; traces out.

Its folders are the trust boundary:
- sandboxed/: what runs inside the sandbox, beside the solution and open to it (the worker, its guards, its clock,
  the handles it hands out, enter.py that starts it);
- shared/: what both sides use (the messages, input drawing, the CUDA driver's IPC calls);
- trusted/: the bench's own process (plan, pairs, checks, the outside bounds, the sandbox, the store).
sandboxed/ imports nothing of trusted/ (tests/bench/test_trust_boundary.py, tests/test_layering.py).

`run_bench` (trusted/run.py) is what `kerneltrace bench` calls; `merge` (trusted/store.py) folds shard outputs
into a dataset. This package's own module imports nothing: a sandboxed worker
(`python -m generator.bench.sandboxed.worker`) imports it first, and must not bring the trusted side into the
sandbox. The names below are looked up on first use (PEP 562).
"""

from __future__ import annotations

import importlib

_WHERE = {"run_bench": "trusted.run", "BenchSummary": "trusted.run", "CPU_TIMING": "trusted.run",
          "CUDA_TIMING": "trusted.run", "merge": "trusted.store", "MergeSummary": "trusted.store"}

__all__ = ["BenchSummary", "run_bench", "merge", "MergeSummary"]


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
