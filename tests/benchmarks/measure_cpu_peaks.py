"""Measure the CPU's attainable peaks for its speed-of-light spec (dataset/hardware/CPU_*.json).

    python tests/benchmarks/measure_cpu_peaks.py [--repeats 20] [--mib 256] [--n 2048]

CPU traces are recorded under cpu_hardware_name(torch.get_num_threads()), so the peaks are measured
with the threads torch uses by default (not one, not all the cores of the host). Prints one JSON
object: the figures and how they were measured, to paste into the spec's `source` field.

- Copy bandwidth: `dst.copy_(src)` on float32 tensors of --mib MiB each (far above the caches),
  counting the bytes read plus the bytes written; the best of --repeats runs.
- Matmul rate: `a @ b` on square --n x --n matrices of float32, bfloat16 and float16, 2 n^3 FLOPs per
  product (float16: n/4, it is slow on CPUs without native half-precision GEMM); the best of
  --repeats runs (a quarter of them for the 16-bit types) after two warm-ups.
Best-of rather than median: the spec holds what the machine can reach, and the host is shared, so
slower runs measure the neighbours, not the CPU.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from generator.bench.trusted.environment import cpu_hardware_name, cpu_model  # noqa: E402


def best_seconds(fn, repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def copy_bandwidth_gb_s(mib: int, repeats: int) -> float:
    n = mib * 2**20 // 4
    src = torch.rand(n, dtype=torch.float32)
    dst = torch.empty_like(src)
    seconds = best_seconds(lambda: dst.copy_(src), repeats)
    return 2 * n * 4 / seconds / 1e9  # read + write


def matmul_tflops(n: int, dtype: torch.dtype, repeats: int) -> float:
    a = torch.rand(n, n, dtype=dtype)
    b = torch.rand(n, n, dtype=dtype)
    seconds = best_seconds(lambda: a @ b, repeats)
    return 2 * n**3 / seconds / 1e12


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--mib", type=int, default=256, help="size of each copy buffer in MiB")
    parser.add_argument("--n", type=int, default=2048, help="matrix size of the matmuls")
    args = parser.parse_args()
    threads = torch.get_num_threads()
    result = {
        "hardware": cpu_hardware_name(threads),
        "cpu": cpu_model(),
        "threads": threads,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "copy_bandwidth_gb_s": round(copy_bandwidth_gb_s(args.mib, args.repeats), 2),
        "matmul_tflops": {
            "float32": round(matmul_tflops(args.n, torch.float32, args.repeats), 4),
            "bfloat16": round(matmul_tflops(args.n, torch.bfloat16, max(3, args.repeats // 4)), 4),
            # float16 has no fast CPU kernel here (about 1/25 of float32): a smaller product keeps the run short.
            "float16": round(matmul_tflops(args.n // 4, torch.float16, max(3, args.repeats // 4)), 4),
        },
        "method": (f"best of {args.repeats}: copy_ of two {args.mib} MiB float32 tensors (read+write bytes); "
                   f"{args.n}x{args.n} matmuls (float16: {args.n // 4}), 2n^3 FLOPs; torch threads={threads}"),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
