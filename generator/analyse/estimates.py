"""Model estimates: what one step of a model would gain on a hardware with every kernel at its best solution."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..model.dataset import Dataset
from .results import Leaderboard, kernel_speedup

__all__ = ["ModelEstimate", "kernel_speedup", "model_estimates"]


@dataclass(frozen=True)
class ModelEstimate:
    """What one step of a model would gain on one hardware if every kernel used its best passing solution.

    Per kernel with a baseline result on the hardware: its time is the median of the baseline's
    latencies over the workloads, and its speedup the geometric mean over those workloads of the
    baseline's latency over the best passing latency (the baseline's own when nothing beats it).
    The step's estimate weighs each kernel's time by how often the step calls it:
    sum(count x time) / sum(count x time / speedup). Kernels without a baseline result there are
    left out and counted in `calls` vs `step_calls`.
    """

    stage: str
    hardware: str
    kernels: int  # kernels of the step with a baseline result on this hardware
    step_kernels: int  # distinct kernels the step calls
    calls: int  # calls per step those kernels account for
    step_calls: int
    baseline_ms: float  # sum of count x baseline time, per step
    best_ms: float  # the same with every kernel at its best solution
    speedup: float
    parts: tuple[tuple[str, int, float, float], ...] = ()  # per kernel: (id, calls, baseline ms, best ms) per step


def model_estimates(ds: Dataset, boards: Mapping[str, Sequence[Leaderboard]]) -> dict[str, tuple[ModelEstimate, ...]]:
    """Per calling record (by file stem): an estimate per step (decode, prefill) and hardware with results."""
    kernel_on: dict[tuple[str, str], tuple[float, float]] = {}
    for name, lbs in boards.items():
        for lb in lbs:
            found = lb.kernel_speedup
            if found is not None:
                kernel_on[(name, lb.hardware)] = found
    hardware = sorted({hw for (_, hw) in kernel_on})
    out: dict[str, tuple[ModelEstimate, ...]] = {}
    for record_name, record in sorted(ds.models.items()):
        estimates = []
        for stage in ("decode", "prefill"):
            calls = [(k.id, k.count) for k in record.kernels if k.stage in (None, stage)]
            step_kernels = len({kid for kid, _ in calls})
            step_calls = sum(c for _, c in calls)
            for hw in hardware:
                known = [(kid, c, kernel_on[(kid, hw)]) for kid, c in calls if (kid, hw) in kernel_on]
                if not known:
                    continue
                base = math.fsum(c * t for _, c, (t, _) in known)
                best = math.fsum(c * t / s for _, c, (t, s) in known)
                per_kernel: dict[str, list] = {}
                for kid, c, (t, s) in known:
                    part = per_kernel.setdefault(kid, [kid, 0, 0.0, 0.0])
                    part[1] += c
                    part[2] += c * t
                    part[3] += c * t / s
                parts = tuple(sorted((tuple(p) for p in per_kernel.values()), key=lambda p: (-p[3], p[0])))
                estimates.append(ModelEstimate(stage, hw, len(per_kernel), step_kernels,
                                               sum(c for _, c, _ in known), step_calls, base, best,
                                               base / best if best > 0 else 1.0, parts))
        out[record_name] = tuple(estimates)
    return out
