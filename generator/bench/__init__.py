"""The bench stage: seeded inputs, strict correctness, timing across a trust boundary; traces out.

`run_bench` (run.py) is what `kerneltrace bench` calls; `merge` (store.py) folds shard outputs into a dataset.
This package's own module imports nothing: a sandboxed worker (`python -m generator.bench.worker`) imports
it first, and must not bring the trusted side (plan, store, runner, pair, check, remote) into the sandbox. The
names below are looked up on first use (PEP 562).
"""

from __future__ import annotations

import importlib

_WHERE = {"run_bench": "run", "BenchSummary": "run", "CPU_TIMING": "run", "CUDA_TIMING": "run",
          "merge": "store", "MergeSummary": "store"}

__all__ = ["BenchSummary", "run_bench", "merge", "MergeSummary"]


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
