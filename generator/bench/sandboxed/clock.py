"""The worker's clock, inside the sandbox (the statistics of its samples are the trusted side's:
trusted/samples.py).

`time_calls` is what the worker times a batch of calls with: the host clock on the CPU; on CUDA,
as triton.testing.do_bench does, the L2 flush (a buffer twice its size written) and the start event
queued ahead of each call and the end event after it, back to back with one synchronisation at the
end, so the GPU is never left idle waiting for the host (the interval holds the call's device work
and whatever launch cost the flush does not hide). The clock functions are bound when this module is
imported, before any solution is loaded; the trusted process (trusted/pair.py, trusted/outside.py) also
bounds each batch and each call from outside, so a patched clock cannot make a number smaller than the
wall clock allows.

An idle GPU runs at a fraction of its clock (an H100: 345 MHz idle, 1980 MHz busy) and takes a while to
come back up; between batches the harness keeps it idle for milliseconds to seconds (digests, messages).
So on CUDA each batch starts with `warmup_ms` of queued device work (the flush, repeated) ahead of the
first call, as do_bench's warm-up. Measured by bench_harness.py's clock probe on the H100 lent here (two
runs): its SM clock read 1980 MHz even idle, and a 4 us kernel timed after 1 s idle was 1.00x to 1.03x
do_bench with no warm-up, so there it changes nothing (the 4x-8x inflation of small kernels seen before was
the L2 flush being too short to cover the host's launch, fixed by the 256 MB flush). An H200 seen here
idled at 345 MHz, so a short warm-up stays, as insurance that costs ~10 ms a batch.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Optional

import torch

_perf_counter = time.perf_counter
_process_time = time.process_time  # every thread of this process: the reference's call CPU (trusted/cpufloor.py)
now = _perf_counter  # the worker's own clock for its phases (diagnostics only)
_Event = torch.cuda.Event if torch.cuda.is_available() else None
_synchronize = torch.cuda.synchronize if torch.cuda.is_available() else None


def time_calls(fn: Callable, make: Callable[[int], tuple[list, list]], n: int, device: str, flush: Optional["L2Flusher"],
               convert: Callable[[object, list], dict], warmup_ms: float = 0.0,
               mark: Optional[Callable[[], None]] = None, cpu: Optional[list] = None) -> tuple[list[float], list[dict]]:
    """(milliseconds, outputs) of fn(*args, *outs) for the n calls, timed back to back, where `make(i)` gives call
    i its (args, outs) just before it: no later call's input set exists while a call runs (its caller's frame holds
    none to answer ahead). `convert(result, outs)` turns a result into plain outputs inside the timed interval. On
    CUDA, `warmup_ms` of the flush is queued first and nothing synchronises between calls: a set drawn on the device
    queues behind the call before it, and the flush ahead of each call still hides its launch (as do_bench's). On the
    CPU, `mark()` runs just before and just after each call, outside its interval: the trusted process timestamps
    each mark as it arrives (trusted/pair.py's per-call bound), and each call's CPU time (this process's threads, ms)
    is appended to `cpu`: trusted only from the reference's worker, where it tells the harness's CPU from its calls'."""
    results: list[dict] = []
    if device.startswith("cuda"):
        if flush is not None and warmup_ms > 0:
            flush.warm(warmup_ms)
        events = [(_Event(enable_timing=True), _Event(enable_timing=True)) for _ in range(n)]
        for i, (start, end) in enumerate(events):
            args, outs = make(i)
            if flush is not None:
                flush()
            start.record()
            results.append(convert(fn(*args, *outs), outs))
            end.record()
        _synchronize()
        return [start.elapsed_time(end) for start, end in events], results
    ms = []
    for i in range(n):
        args, outs = make(i)
        if mark is not None:
            mark()
        c0, t0 = _process_time(), _perf_counter()
        results.append(convert(fn(*args, *outs), outs))
        ms.append((_perf_counter() - t0) * 1e3)
        if cpu is not None:
            cpu.append((_process_time() - c0) * 1e3)
        if mark is not None:
            mark()
    return ms, results


WRITE_BYTES_PER_MS = 3e9  # about an H100's memory write rate (3 TB/s)


class L2Flusher:
    """Writes a buffer at least twice the size of the L2 cache, so the next kernel reads from HBM."""

    def __init__(self, device: torch.device):
        props = torch.cuda.get_device_properties(device)
        # 256 MB, as triton.testing.do_bench: besides evicting L2, writing it keeps the GPU busy for as long as
        # a call's launch takes on the host (~0.1 ms), so the interval holds the call's device time, as do_bench's.
        size = max(2 * int(getattr(props, "L2_cache_size", 0)), 256 * 2**20)
        self.buffer = torch.empty(size // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        self.buffer.zero_()

    def launches(self, ms: float) -> int:
        """Flushes that keep the device busy for about `ms` at full speed (writes at WRITE_BYTES_PER_MS; a
        slower or idle-clocked device takes longer, which is a longer warm-up, not a shorter one)."""
        return max(0, math.ceil(ms * WRITE_BYTES_PER_MS / (self.buffer.numel() * 4)))

    def warm(self, ms: float) -> None:
        for _ in range(self.launches(ms)):
            self.buffer.zero_()
