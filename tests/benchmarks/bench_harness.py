"""How good is the bench harness's clock? Prints ratios measured in one run.

    python tests/benchmarks/bench_harness.py [--device cuda] [--runs 5]

1. Bandwidth: a large copy timed by the harness (cold L2, CUDA events) against the device's copy
   bandwidth measured back to back without the harness; the harness should reach >= 90 %.
2. Spread: the harness's median for the same kernel over several runs; (max - min) / median of the
   medians, for kernels over 20 us; should be < 1 % on a GPU.
3. Agreement: the harness's median against triton.testing.do_bench (which also flushes the cache),
   on the same kernels; should agree within 5 %.
On the CPU the same script runs with the host clock (labelled), which is useful only as a smoke
test: the bars above are for GPUs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from generator.bench import timing  # noqa: E402


def kernels(device: str, small: bool):
    n = 1 << (24 if small else 28)  # bytes moved: 2 x 4 x n
    x = torch.randn(n, device=device)
    y = torch.empty_like(x)
    m = 1024 if small else 8192
    a = torch.randn(m, m, device=device, dtype=torch.bfloat16 if device != "cpu" else torch.float32)
    b = torch.randn(m, m, device=device, dtype=a.dtype)
    s = torch.randn(4096, 32768 if not small else 4096, device=device)
    return {
        "copy": (lambda: y.copy_(x), 2 * x.numel() * x.element_size()),
        "matmul": (lambda: a @ b, None),
        "softmax": (lambda: torch.softmax(s, -1), None),
    }


def raw_copy_bandwidth(device: str, fn, nbytes: int) -> float:
    """GB/s of back-to-back copies timed as one block (no flush, no per-call events)."""
    for _ in range(3):
        fn()
    if device == "cpu":
        import time
        t0 = time.perf_counter()
        for _ in range(10):
            fn()
        return nbytes * 10 / (time.perf_counter() - t0) / 1e9
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(50):
        fn()
    end.record()
    torch.cuda.synchronize()
    return nbytes * 50 / (start.elapsed_time(end) / 1e3) / 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    device = args.device
    cfg = timing.TimingConfig(budget_s=2.0 if device != "cpu" else 1.0)
    ks = kernels(device, small=device == "cpu")
    print(f"device: {torch.cuda.get_device_name() if device != 'cpu' else 'cpu'}; torch {torch.__version__}")

    fn, nbytes = ks["copy"]
    raw = raw_copy_bandwidth(device, fn, nbytes)
    harness = timing.measure(fn, cfg, device)
    got = nbytes / (harness["latency_ms"] / 1e3) / 1e9
    print(f"copy {nbytes / 2**30:.2f} GiB: device copy bandwidth {raw:.0f} GB/s, through the harness "
          f"{got:.0f} GB/s = {got / raw:.1%} of it (bar: >= 90%), timer {harness['timer']}")

    for name, (fn, _) in ks.items():
        medians = [timing.measure(fn, cfg, device)["latency_ms"] for _ in range(args.runs)]
        med = statistics.median(medians)
        spread = (max(medians) - min(medians)) / med
        line = f"{name}: median {med * 1e3:.1f} us over {args.runs} runs, spread {spread:.2%} (bar: < 1% above 20 us)"
        if device != "cpu":
            import triton.testing
            ref = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
            line += f"; do_bench {ref * 1e3:.1f} us, ours/do_bench = {med / ref:.3f} (bar: within 5%)"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
