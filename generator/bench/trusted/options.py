"""A bench run's options: what the command line chose, read by the runner, each pair and each worker's proxy, and
how long a pair is timed on each kind of device (the trusted side's: the worker is only told its warm-up).

A module of its own, standard library only, so that pair.py and remote.py can name the type without importing the
runner that uses them, and the bench package need not import torch to read the timing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional


@dataclass
class Options:
    device: str = "cpu"
    out: Path = Path("dataset")
    timeout_s: float = 300.0  # per workload, and for building the solution
    correctness_only: bool = False
    timing: dict = field(default_factory=dict)  # overrides of the device's timing (timing.timing_for)
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


@dataclass(frozen=True)
class TimingConfig:
    """How long a pair is timed. No defaults here: DEVICE_TIMING holds the one set per kind of device."""

    min_samples: int
    max_samples: int
    target_rse: float  # relative standard error of the mean
    budget_s: float  # wall-clock budget for the timed repetitions of one call
    # Timed batches at least (unless the calls are too slow for them in SLOW_BUDGETS budgets): the outside bound takes
    # a median over batches, so that noise in a few does not count.
    min_batches: int
    # CUDA: device work queued ahead of each timed batch, so the clocks are up when the first call runs.
    warmup_ms: float


DEVICE_TIMING = {
    # A host clock over back-to-back calls settles in a fraction of a second. Batches are as long as a quarter of the
    # budget allows (up to 33 calls): the outside bound's slack for a busy host is per batch (pair.BATCH_SLACK_MS), so
    # its share of each call is ~10 % of a call of 1.5 ms to 12 ms and 0.15 ms below (batches of 5 calls forgave
    # 1 ms a call: issue 38's stopped clock on sub-millisecond kernels).
    "cpu": TimingConfig(min_samples=5, max_samples=96, target_rse=0.02, budget_s=0.2, min_batches=3, warmup_ms=0.0),
    # GPUs: do_bench's median settles within ~100 samples; 0.5 s a pair's timed loop (both sides) keeps a ten-minute
    # GPU window for hundreds of pairs. Each batch starts with 10 ms of device work, so the clocks are up.
    "cuda": TimingConfig(min_samples=10, max_samples=200, target_rse=0.01, budget_s=0.5, min_batches=5, warmup_ms=10.0),
}


def timing_for(device: str, overrides: Optional[dict] = None) -> TimingConfig:
    """The device's timing (cpu, else cuda's), with the fields `overrides` names (a test's shorter budget) replaced."""
    return dataclasses.replace(DEVICE_TIMING["cpu" if device == "cpu" else "cuda"], **(overrides or {}))
