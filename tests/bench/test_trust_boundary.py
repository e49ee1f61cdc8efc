"""What runs inside the sandbox imports nothing of the trusted side: a sandboxed worker
(`python -m generator.bench.worker`) must not hold the plan, the trace store, the runner, the pair's
measurement, the checks or the workers' proxies, whose code and data a solution could read or patch there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRUSTED = ("plan", "store", "runner", "pair", "check", "remote", "run")


def bench_modules_after_importing(module: str) -> set[str]:
    """The generator.bench modules a fresh interpreter holds after importing `module` (as `python -m` would:
    its packages' __init__ first)."""
    code = (f"import sys, {module}\n"
            "print(' '.join(m.split('.', 2)[2] for m in sys.modules if m.startswith('generator.bench.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    return set(out.stdout.split())


def test_the_worker_imports_nothing_of_the_trusted_side():
    held = bench_modules_after_importing("generator.bench.worker")
    assert "worker" in held and not held & set(TRUSTED), sorted(held & set(TRUSTED))
    # The check sees the trusted side where it is imported: the bench's entry and its runner hold all of it.
    assert set(TRUSTED) <= bench_modules_after_importing("generator.bench.run, generator.bench.runner")
