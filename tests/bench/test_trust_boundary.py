"""What runs inside the sandbox imports nothing of the trusted side: a sandboxed worker
(`python -m generator.bench.sandboxed.worker`) must hold only generator/bench/sandboxed/ and generator/bench/shared/
of the bench (and what lies outside the bench: model/, torch), never generator/bench/trusted/ (the plan, the trace
store, the runner, the pair's measurement, the checks, the workers' proxies), whose code and data a solution could
read or patch there. tests/test_layering.py checks the same in the source (lazy imports included)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INSIDE = ("generator.bench.sandboxed", "generator.bench.shared")  # and the bench package itself, which imports nothing
TRUSTED = ("plan", "store", "runner", "pair", "check", "remote", "run")


def bench_modules_after_importing(module: str) -> set[str]:
    """The generator.bench modules a fresh interpreter holds after importing `module` (as `python -m` would:
    its packages' __init__ first)."""
    code = (f"import sys, {module}\n"
            "print(' '.join(m for m in sys.modules if m.startswith('generator.bench.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    return set(out.stdout.split())


def outside_the_sandbox(held: set[str]) -> list[str]:
    """The bench modules in `held` that belong neither to sandboxed/ nor to shared/."""
    return sorted(m for m in held if not any(m == room or m.startswith(room + ".") for room in INSIDE))


def test_the_worker_imports_only_the_sandboxed_and_shared_rooms():
    held = bench_modules_after_importing("generator.bench.sandboxed.worker")
    assert "generator.bench.sandboxed.worker" in held and "generator.bench.shared.protocol" in held
    assert outside_the_sandbox(held) == []
    # The check sees the trusted side where it is imported: the bench's entry and its runner hold all of it.
    trusted = bench_modules_after_importing("generator.bench.trusted.run, generator.bench.trusted.runner")
    assert {f"generator.bench.trusted.{m}" for m in TRUSTED} <= trusted
    assert {f"generator.bench.trusted.{m}" for m in TRUSTED} <= set(outside_the_sandbox(trusted))
