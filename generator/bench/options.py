"""A bench run's options: what the command line chose, read by the runner, each pair and each worker's proxy.

A module of its own so that pair.py and remote.py can name the type without importing the runner that uses them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional


@dataclass
class Options:
    device: str = "cpu"
    out: Path = Path("dataset")
    timeout_s: float = 300.0  # per workload, and for building the solution
    correctness_only: bool = False
    timing: dict = field(default_factory=dict)
    sandbox: str = "bwrap"
    # Start the next solution's worker while this one runs: saves the Python+torch start per solution,
    # at the price of a busy CPU core during the first seconds of each solution (off for CPU timing).
    prefetch: bool = False
    floors_ms: dict = field(default_factory=dict)  # (definition, workload uuid) -> speed-of-light ms here
    deadline: Optional[float] = None  # time.monotonic() after which no new pair starts (--budget-s)
    # Diagnostics in the trace's log: every timed batch's time outside the calls on both sides, with each
    # worker's own (untrusted) account of it. For studying the harness (tests/benchmarks/bench_harness.py).
    diagnostics: bool = False
    # How outputs leave a CUDA worker: "ipc" (the trusted process copies them out of its device memory when a
    # batch ends, capture.py), "digest" (committed by hash, revealed on request: the CPU's way), or "auto" (ipc
    # where a probe on the first reference worker shows it works, else digest).
    capture: str = "auto"
