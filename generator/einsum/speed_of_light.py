"""Speed of light of one workload on one machine: T_SOL = max(compute time, memory time).

Compute time sums each Einsum's FLOPs over the hardware's peak for its dtype (or the first wider
dtype the machine lists); memory time is the cascade's minimum bytes over the memory bandwidth. The
roofline analysis (analyse/roofline.py) reports it; the bench uses it as the physical floor no
reported latency may go below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .counting import Counts

# Wider dtypes to fall back to when a machine lists no peak for a dtype (it has no faster unit for it).
FALLBACK = {
    "float4_e2m1": ("float8_e4m3", "bfloat16", "float16", "float32"),
    "float8_e4m3": ("float8_e5m2", "bfloat16", "float16", "float32"),
    "float8_e5m2": ("float8_e4m3", "bfloat16", "float16", "float32"),
    "int8": ("float8_e4m3", "bfloat16", "float16", "float32"),
    "uint8": ("int8", "float8_e4m3", "bfloat16", "float16", "float32"),
    "float16": ("bfloat16", "float32"),
    "bfloat16": ("float16", "float32"),
    "int16": ("bfloat16", "float16", "float32"),
    "int32": ("float32",),
    "int64": ("float32",),
    "bool": ("float32",),
    "float32": (),
}


@dataclass(frozen=True)
class SpeedOfLight:
    hardware: str
    compute_s: float
    memory_s: float
    dtypes: tuple[tuple[str, str], ...]  # (dtype asked for, dtype whose peak was used)
    compute_by_dtype: tuple[tuple[str, float], ...] = ()  # (dtype whose peak was used, seconds at it)

    @property
    def t_sol_s(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def compute_dtype(self) -> str:
        """The dtype whose peak most of the compute time is counted at ("" when nothing computes)."""
        return max(self.compute_by_dtype, key=lambda x: x[1])[0] if self.compute_by_dtype else ""

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s > self.memory_s else "memory"


def peak_tflops(peaks: Mapping[str, float], dtype: str) -> tuple[str, float]:
    """The peak for `dtype`, or for the first wider dtype the machine lists; KeyError if none."""
    for d in (dtype,) + FALLBACK.get(dtype, ("float32",)):
        if d in peaks:
            return d, peaks[d]
    raise KeyError(dtype)


def speed_of_light(counts: Counts, hardware) -> SpeedOfLight:
    """T_SOL of `counts` on a HardwareSpec (peak_tflops per dtype, memory_bandwidth_gb_s)."""
    compute, used, by_dtype = 0.0, {}, {}
    for e in counts.einsums:
        if not e.flops:
            continue
        d, tflops = peak_tflops(hardware.peak_tflops, e.dtype)
        used[e.dtype] = d
        seconds = e.flops / (tflops * 1e12)
        compute += seconds
        by_dtype[d] = by_dtype.get(d, 0.0) + seconds
    memory = counts.bytes / (hardware.memory_bandwidth_gb_s * 1e9)
    return SpeedOfLight(hardware.name, compute, memory, tuple(sorted(used.items())), tuple(sorted(by_dtype.items())))
