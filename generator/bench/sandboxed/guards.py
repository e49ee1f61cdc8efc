"""Checks the worker makes around every call of a solution, inside the solution's process.

They run in the solution's own process, so a determined solution could defeat them; they are not
what makes the bench trustworthy (the trust boundary is: trusted/pair.py compares outputs copied out, the
wall clock outside bounds the time, the sandbox holds nothing to steal). They turn the plain
mistakes and naive cheats into a clear REWARD_HACK message:
- it mutates its inputs;
- it returns something other than a plain, dense tensor on the device (a lazy object or a subclass
  that fakes equality);
- it patches the timer or the synchronisation;
- it leaves a thread running after it returns (work finishing after the clock stopped).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Mapping, Optional

import torch


def _watched() -> dict[str, Any]:
    """The functions a timing cheat would patch, as they are before any solution is loaded: the clocks, and the
    worker's own references to them (clock.py binds its clock at import: a patch of time.perf_counter after that
    changes nothing, one of clock._perf_counter stops the worker's clock)."""
    from . import clock

    own = {f"generator.bench.sandboxed.clock.{name}": getattr(clock, name)
           for name in ("_perf_counter", "now", "time_calls", "_Event", "_synchronize")}
    return {**own, "time.perf_counter": time.perf_counter, "time.perf_counter_ns": time.perf_counter_ns,
            "time.time": time.time, "time.monotonic": time.monotonic,
            "torch.cuda.synchronize": torch.cuda.synchronize, "torch.cuda.Event": torch.cuda.Event,
            "torch.cuda.Event.record": torch.cuda.Event.record,
            "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
            "torch.cuda.Event.synchronize": torch.cuda.Event.synchronize}


ORIGINALS = _watched()  # bound at import, before the worker loads the solution


def _lookup(dotted: str) -> Any:
    parts = dotted.split(".")
    obj: Any = sys.modules[parts[0]]
    for p in parts[1:]:
        obj = getattr(obj, p)
    return obj


def watched_patched() -> Optional[str]:
    changed = []
    for name, original in ORIGINALS.items():
        try:
            if _lookup(name) is not original:
                changed.append(name)
        except (AttributeError, KeyError):
            changed.append(name)
    return f"the solution replaced {', '.join(changed)} (timer or synchronisation patched)" if changed else None


def _bits(t: torch.Tensor) -> torch.Tensor:
    """A view whose torch.equal compares bits (NaN == NaN; float8 has no equality kernel)."""
    t = t.detach()
    if t.dtype.is_floating_point and t.element_size() in (1, 2, 4, 8):
        return t.contiguous().view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def inputs_snapshot(args: list) -> list:
    return [_bits(a).clone() if isinstance(a, torch.Tensor) else a for a in args]


def mutated_input(sets: list[list], before: list[list]) -> Optional[str]:
    """A message if any call's input differs from its snapshot. The comparisons are queued on the device and
    read back once (one synchronisation per batch, not one per input: the harness's work stays small and steady)."""
    pairs = [(i, a, b) for args, snap in zip(sets, before) for i, (a, b) in enumerate(zip(args, snap))
             if isinstance(a, torch.Tensor)]
    if not pairs:
        return None
    if pairs[0][2].device.type == "cpu":  # nothing to queue: a comparison that stops at the first difference, no temporary
        for i, a, b in pairs:
            bits = _bits(a)
            if not (bits.shape == b.shape and bits.dtype == b.dtype and bits.device == b.device and torch.equal(bits, b)):
                return f"the solution modified its input number {i + 1} in place"
        return None
    flags = []
    for _, a, b in pairs:
        bits = _bits(a)
        same_layout = bits.shape == b.shape and bits.dtype == b.dtype and bits.device == b.device
        flags.append((bits != b).any().to(pairs[0][2].device) if same_layout
                     else torch.ones((), dtype=torch.bool, device=pairs[0][2].device))
    differs = torch.stack(flags).cpu()
    for (i, _, _), bad in zip(pairs, differs.tolist()):
        if bad:
            return f"the solution modified its input number {i + 1} in place"
    return None


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
    NaN for floats, the most negative value for integers. Every call gets this, checked or not."""
    for t in outputs.values():
        if t.dtype.is_floating_point:
            t.fill_(float("nan"))
        elif t.dtype == torch.bool:
            t.fill_(True)
        else:
            t.fill_(torch.iinfo(t.dtype).min)
