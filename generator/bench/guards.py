"""Anti-cheat checks around every call of a solution.

Each check looks for one way a solution can look fast or correct without doing the work:
- it mutates its inputs (to leave a precomputed answer where the checker looks, or to skip work);
- it calls the definition's reference (or reads the definition file to run it);
- it returns something other than a plain tensor (a lazy object or a subclass that fakes equality);
- it patches the timer or the synchronisation we measure with;
- it leaves work running after it returns (another thread, another CUDA stream), so the timed region
  ends before the work does;
- it reuses a previous result instead of computing (checked in worker.py: timed inputs differ from the
  checked ones, and the timed inputs are changed in place before a last checked call).
A caught cheat becomes a REWARD_HACK trace whose log says which check caught it.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import torch


class CheatDetected(Exception):
    """Raised inside the worker; becomes status REWARD_HACK with this message as the log."""


def _watched() -> dict[str, Any]:
    """The functions a timing cheat would patch, as they are before any solution is loaded."""
    watched = {"time.perf_counter": time.perf_counter, "time.perf_counter_ns": time.perf_counter_ns,
               "time.time": time.time, "time.monotonic": time.monotonic,
               "torch.cuda.synchronize": torch.cuda.synchronize, "torch.cuda.Event": torch.cuda.Event,
               "torch.cuda.Event.record": torch.cuda.Event.record,
               "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
               "torch.cuda.Event.synchronize": torch.cuda.Event.synchronize,
               "torch.Tensor.__eq__": torch.Tensor.__eq__, "torch.allclose": torch.allclose,
               "torch.equal": torch.equal, "torch.isfinite": torch.isfinite}
    return watched


def _lookup(dotted: str) -> Any:
    parts = dotted.split(".")
    obj: Any = sys.modules[parts[0]]
    for p in parts[1:]:
        obj = getattr(obj, p)
    return obj


def _bits(t: torch.Tensor) -> torch.Tensor:
    """A view whose torch.equal compares bits (NaN == NaN; float8 has no equality kernel)."""
    t = t.detach()
    if t.dtype.is_floating_point and t.element_size() in (1, 2, 4, 8):
        return t.contiguous().view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


class Guard:
    """Created in the worker before the solution is imported."""

    def __init__(self, dataset_root: Path, device: str):
        self.device = device
        self.originals = _watched()
        self.definitions_dir = str((dataset_root / "definitions").resolve())
        self.reference_calls = 0
        self.armed = False
        self.forbidden_reads: list[str] = []
        sys.addaudithook(self._audit)

    # A solution that reads a definition file during a call is fetching the reference.
    def _audit(self, event: str, args: tuple) -> None:
        if self.armed and event == "open" and args and isinstance(args[0], (str, bytes, Path)):
            path = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
            try:
                resolved = str(Path(path).resolve())
            except (OSError, RuntimeError, ValueError):
                return
            if resolved.startswith(self.definitions_dir):
                self.forbidden_reads.append(resolved)

    def wrap_reference(self, fn: Callable) -> Callable:
        def reference(*args, **kwargs):
            self.reference_calls += 1
            return fn(*args, **kwargs)
        return reference

    def patched(self) -> list[str]:
        changed = []
        for name, original in self.originals.items():
            try:
                if _lookup(name) is not original:
                    changed.append(name)
            except (AttributeError, KeyError):
                changed.append(name)
        return changed

    def call(self, fn: Callable, args: list, outputs: Optional[list] = None) -> Any:
        """Call a solution once with every check on; return its raw result. `outputs`: the
        preallocated output tensors a destination-passing solution gets after its inputs."""
        inputs_before = [_bits(a).clone() if isinstance(a, torch.Tensor) else a for a in args]
        threads_before = set(threading.enumerate())
        calls_before = self.reference_calls
        self.forbidden_reads.clear()
        self.armed = True
        try:
            result = fn(*args, *(outputs or ()))
            if self.device.startswith("cuda"):
                torch.cuda.current_stream().synchronize()  # only the stream we gave it
        finally:
            self.armed = False
        watched = outputs if outputs is not None else result
        first = _snapshot(watched)
        if self.reference_calls != calls_before:
            raise CheatDetected("the solution called the definition's reference")
        if self.forbidden_reads:
            raise CheatDetected(f"the solution read the definition file {self.forbidden_reads[0]} during a call")
        changed = self.patched()
        if changed:
            raise CheatDetected(f"the solution replaced {', '.join(changed)} (timer or check patched)")
        alive = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
        if alive:
            raise CheatDetected(f"the solution left thread {alive[0].name!r} running after it returned")
        for i, (a, before) in enumerate(zip(args, inputs_before)):
            if isinstance(a, torch.Tensor) and not torch.equal(_bits(a), before):
                raise CheatDetected(f"the solution modified its input number {i + 1} in place")
        if first:
            # Work still running elsewhere (another stream, a thread that already detached) changes
            # the outputs after the call returned: wait for everything, then look again.
            if self.device.startswith("cuda"):
                torch.cuda.synchronize()
            else:
                time.sleep(0.02)
            second = _snapshot(watched)
            if any(not torch.equal(x, y) for x, y in zip(first, second)):
                raise CheatDetected("the outputs changed after the call returned: work was left running "
                                    "on another stream or thread")
        return result


def _snapshot(result: Any) -> list:
    values = result.values() if isinstance(result, Mapping) else (
        result if isinstance(result, (tuple, list)) else [result])
    return [_bits(v).clone() for v in values if type(v) is torch.Tensor]  # noqa: E721


def check_output_types(outputs: Mapping[str, Any], device: str) -> Optional[str]:
    """A message if an output is not a plain, materialised tensor on the device we ran on."""
    for name, value in outputs.items():
        if type(value) is not torch.Tensor:  # noqa: E721 - subclasses can override comparison
            return (f"output {name!r} is a {type(value).__module__}.{type(value).__qualname__}, not a plain "
                    "torch.Tensor (lazy or subclassed outputs are not accepted)")
        if value.device.type != torch.device(device).type:
            return f"output {name!r} is on {value.device}, not on {device}"
        if value.layout is not torch.strided:
            return f"output {name!r} has layout {value.layout}; return a dense tensor"
    return None


def poison(outputs: Mapping[str, torch.Tensor]) -> None:
    """Fill preallocated outputs (destination-passing solutions) with values no correct kernel leaves:
    NaN for floats, the most negative value for integers."""
    for t in outputs.values():
        if t.dtype.is_floating_point:
            t.fill_(float("nan"))
        elif t.dtype == torch.bool:
            t.fill_(True)
        else:
            t.fill_(torch.iinfo(t.dtype).min)


def poison_allocator(device: str, nbytes: int) -> None:
    """Value-returning solutions allocate their own outputs: on CUDA, fill the memory the caching
    allocator will hand out next with NaN bytes, so outputs the solution never writes read as NaN
    instead of a previous call's correct answer. (On the CPU, freed memory goes back to malloc and
    cannot be poisoned this way.)"""
    if device.startswith("cuda") and nbytes > 0:
        block = torch.empty(nbytes // 2 + 1, dtype=torch.float16, device=device)
        block.fill_(float("nan"))
        del block
