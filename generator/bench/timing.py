"""Clocks and statistics.

`timed_call` is what the worker times one call with: the host clock on the CPU; on CUDA, device
events around the call, after the worker flushed the L2 (a buffer twice its size written). The clock
functions are bound when this module is imported, before any solution is loaded; the trusted
process (runner.py) also measures each call from outside, so a patched clock cannot make a number
smaller than the wall clock allows.

`summarize` turns samples into the trace's statistics; `unstable` says when their spread shows the
host was busy. `measure` (a loop in one process) is kept for tests/benchmarks/bench_harness.py.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch

from ..model.stability import spread_is_unstable

_perf_counter = time.perf_counter
_Event = torch.cuda.Event if torch.cuda.is_available() else None
_synchronize = torch.cuda.synchronize if torch.cuda.is_available() else None


@dataclass(frozen=True)
class TimingConfig:
    warmup: int = 3
    min_samples: int = 10
    max_samples: int = 500
    target_rse: float = 0.01  # relative standard error of the mean
    budget_s: float = 2.0  # wall-clock budget for the timed repetitions of one call


def summarize(samples_ms: list[float], timer: str) -> dict:
    ordered = sorted(samples_ms)
    n = len(ordered)

    def quantile(q: float) -> float:  # linear interpolation, as numpy's default
        pos = q * (n - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

    mean = statistics.fmean(ordered)
    stderr = statistics.stdev(ordered) / math.sqrt(n) if n > 1 else 0.0
    return {"latency_ms": statistics.median(ordered), "mean_ms": mean, "min_ms": ordered[0],
            "max_ms": ordered[-1], "p20_ms": quantile(0.2), "p80_ms": quantile(0.8),
            "stderr_ms": stderr, "samples": n, "timer": timer}


def synchronize() -> None:
    if _synchronize is not None:
        _synchronize()


def timed_call(fn: Callable, args: list, outs: list, device: str) -> tuple[float, object]:
    """(milliseconds, result) of one call fn(*args, *outs)."""
    if device.startswith("cuda"):
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        start.record()
        result = fn(*args, *outs)
        end.record()
        _synchronize()
        return start.elapsed_time(end), result
    t0 = _perf_counter()
    result = fn(*args, *outs)
    return (_perf_counter() - t0) * 1e3, result


def unstable(stats: dict) -> bool:
    """The rule in model/stability.py; such a number is re-measured, then recorded with unstable: true."""
    return spread_is_unstable(stats["latency_ms"], stats["p20_ms"], stats["p80_ms"], stats["min_ms"])


def _done(samples: list[float], cfg: TimingConfig, started: float) -> bool:
    n = len(samples)
    if n >= cfg.max_samples:
        return True
    if n < cfg.min_samples:
        return _perf_counter() - started > cfg.budget_s * 4  # a very slow call: take what we have
    mean = statistics.fmean(samples)
    rse = statistics.stdev(samples) / math.sqrt(n) / mean if mean > 0 else 0.0
    return rse < cfg.target_rse or _perf_counter() - started > cfg.budget_s


def time_cpu(fn: Callable[[], object], cfg: TimingConfig) -> dict:
    for _ in range(cfg.warmup):
        fn()
    samples: list[float] = []
    started = _perf_counter()
    while not samples or not _done(samples, cfg, started):
        t0 = _perf_counter()
        fn()
        samples.append((_perf_counter() - t0) * 1e3)
    return summarize(samples, "host_perf_counter")


class L2Flusher:
    """Writes a buffer twice the size of the L2 cache, so the next kernel reads from HBM."""

    def __init__(self, device: torch.device):
        props = torch.cuda.get_device_properties(device)
        size = 2 * max(int(getattr(props, "L2_cache_size", 0)), 50 * 2**20)
        self.buffer = torch.empty(size // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        self.buffer.zero_()


def time_cuda(fn: Callable[[], object], cfg: TimingConfig, device: torch.device) -> dict:
    flush = L2Flusher(device)
    for _ in range(cfg.warmup):
        fn()
    _synchronize()
    samples: list[float] = []
    started = _perf_counter()
    while not samples or not _done(samples, cfg, started):
        flush()
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        _synchronize()
        samples.append(start.elapsed_time(end))
    return summarize(samples, "cuda_event_cold_l2")


def measure(fn: Callable[[], object], cfg: TimingConfig, device: str) -> dict:
    if device.startswith("cuda"):
        return time_cuda(fn, cfg, torch.device(device))
    return time_cpu(fn, cfg)
