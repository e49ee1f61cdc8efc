"""Fixtures the bench's test files share (their helpers and planted solutions: planted.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_factory import write_dataset
from planted import workloads


@pytest.fixture
def bench_root(tmp_path: Path) -> Path:
    """A dataset to bench: rmsnorm_h128 with its baseline solution, one workload (wl-0000) and no trace."""
    return write_dataset(tmp_path / "ds", traces=[], workloads=workloads(1))


@pytest.fixture
def unsandboxed(monkeypatch):
    """KERNELTRACE_SANDBOX=none: the bench's workers run without bubblewrap (sandbox_mode's cached answer is dropped
    before and after, so neither this test nor the next sees another's)."""
    from generator.bench.trusted.sandbox import sandbox_mode

    monkeypatch.setenv("KERNELTRACE_SANDBOX", "none")
    sandbox_mode.cache_clear()
    yield
    sandbox_mode.cache_clear()
