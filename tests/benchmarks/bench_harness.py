"""Fidelity of the bench's clock through the real path, against an independent in-process measurement.

    python tests/benchmarks/bench_harness.py [--device cuda] [--quick] [--json FILE]

For each entry of the panel (a solution of the bundled dataset on one of its workloads) it measures:
- harness: the pair as `kerneltrace bench` runs it (make_plan, run_plan: a sandboxed worker when
  bubblewrap works, secret input sets, batches, the outside bound), latency_ms from the trace;
- in process: the same solution imported here, inputs from make_inputs on the device, timed with
  triton.testing.do_bench (cold L2, median) on CUDA; on the CPU a median over a perf_counter loop
  (a smoke test only: the bars are for GPUs).
It prints both, their ratio, and for each Triton solution its speedup over the torch baseline on the
same workload by each method. Bars on a GPU: harness within 5 % of do_bench or within 1 us, whichever
is larger; speedups within 5 %. Last, pairs per minute of the harness over the panel.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from generator.bench import CUDA_TIMING  # noqa: E402
from generator.bench.environment import describe  # noqa: E402
from generator.bench.inputs import TORCH_DTYPES, make_inputs, shape_of  # noqa: E402
from generator.bench.plan import make_plan  # noqa: E402
from generator.bench.runner import Options, run_plan  # noqa: E402
from generator.bench.sandbox import sandbox_mode  # noqa: E402
from generator.bench.worker import as_outputs, load_solution  # noqa: E402
from generator.load import load  # noqa: E402

# (definition, axis, values): every solution of the definition on the workloads with those axis values.
PANEL = [
    ("rmsnorm_h4096", "batch_size", (1, 128, 2048, 8192)),
    ("fused_add_rmsnorm_h4096", "batch_size", (1, 128, 2048, 8192)),
    ("gqa_paged_decode_h32_kv8_d128_ps16", "batch_size", (16,)),
    ("gemm_n6144_k4096", "M", (128,)),
    ("top_k_top_p_sampling_from_probs_v128256", "batch_size", (32,)),
]
QUICK = [("rmsnorm_h4096", "batch_size", (1, 128)), ("fused_add_rmsnorm_h4096", "batch_size", (1,))]


def in_process_ms(pair, device: str, workdir: Path) -> float:
    """Median ms of the solution in this process, on the workload's first input set."""
    d, s, w = pair.definition.data, pair.solution.data, pair.workload.data["workload"]
    fn = load_solution(s["sources"], s["spec"]["entry_point"], workdir / pair.solution.name)
    args = list(make_inputs(d, w, ROOT / "dataset", 0, device).values())
    axes = {n: a["value"] for n, a in d["axes"].items() if a["type"] == "const"} | dict(w["axes"])
    outs = [torch.empty(shape_of(o, axes), dtype=TORCH_DTYPES[o["dtype"]], device=device)
            for o in d["outputs"].values()] if s["spec"].get("destination_passing_style") else []

    def call():
        return as_outputs(fn(*args, *outs), list(d["outputs"])) if not outs else outs

    with torch.no_grad():
        if device.startswith("cuda"):
            import triton.testing

            return triton.testing.do_bench(call, warmup=25, rep=100, return_mode="median")
        for _ in range(3):
            call()
        samples = []
        for _ in range(30):
            t0 = time.perf_counter()
            call()
            samples.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="a small panel (a smoke test of this script)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    device = args.device
    ds = load(ROOT / "dataset")
    environment = describe(device)
    mode, why = sandbox_mode(device)
    environment["sandbox"] = mode
    print(f"device {environment['hardware']}, torch {torch.__version__}, sandbox {mode}{' (' + why + ')' if why else ''}")
    panel = QUICK if args.quick else PANEL
    pairs = []
    for definition, axis, values in panel:
        plan = make_plan(ds, device, definitions=[definition])
        pairs += [p for p in plan.pairs if p.workload.axes.get(axis) in values
                  and p.solution.author in ("baseline", "kerneltrace")]
    rows = []
    print(f"{'solution':58} {'axes':24} {'harness us':>11} {'in-proc us':>11} {'ratio':>7}  bar  (reported us, ratio)",
          flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        opts = Options(device=device, out=Path(tmp) / "out", timeout_s=600, sandbox=mode, diagnostics=True,
                       timing={"budget_s": 1.0, "min_samples": 10, "max_samples": 200} if device == "cpu" else CUDA_TIMING)
        # One run, as the bench runs it (a solution's worker across its workloads, one reference worker); each
        # pair's row is printed, and the in-process measurement made, as it finishes (a run cut short keeps
        # what it has). The in-process time is not counted in pairs per minute.
        in_process_s = 0.0

        def on_outcome(o) -> None:
            nonlocal in_process_s
            started = time.perf_counter()
            perf = (o.record or {}).get("evaluation", {}).get("performance") or {}
            log = o.log or (o.record or {}).get("evaluation", {}).get("log", "")
            charged = re.search(r"median ([0-9.e+-]+) ms reported, ([0-9.e+-]+) ms charged", log)
            r = {"definition": o.pair.definition.name, "solution": o.pair.solution.name,
                 "axes": dict(o.pair.workload.axes), "status": o.status, "harness_ms": perf.get("latency_ms"),
                 "reported_ms": float(charged.group(1)) if charged else perf.get("latency_ms"),
                 "in_process_ms": in_process_ms(o.pair, device, Path(tmp)) if o.status == "PASSED" else None,
                 "reference_ms": perf.get("reference_latency_ms"), "performance": perf, "log": log}
            rows.append(r)
            h, p, rep = r["harness_ms"], r["in_process_ms"], r["reported_ms"]
            if h is None or p is None:
                print(f"{r['solution']:58} {json.dumps(r['axes']):24} {r['status']}: {log[:300]}", flush=True)
            else:
                ok = abs(h - p) <= max(0.05 * p, 1e-3)
                print(f"{r['solution']:58} {json.dumps(r['axes']):24} {h * 1e3:11.1f} {p * 1e3:11.1f} {h / p:7.3f}  "
                      f"{'ok ' if ok else 'OFF'}  ({rep * 1e3:.1f}, {rep / p:.3f})", flush=True)
            if args.json:
                args.json.write_text(json.dumps({"environment": environment, "rows": rows}, indent=1))
            in_process_s += time.perf_counter() - started

        started = time.perf_counter()
        outcomes = run_plan(type(plan)(pairs=pairs), opts, ROOT / "dataset", environment, on_outcome)
        harness_s = time.perf_counter() - started - in_process_s
        minutes = harness_s / 60
    by_key = {(r["definition"], json.dumps(r["axes"]), r["solution"].endswith("_triton")): r for r in rows}
    for (definition, axes, fast), r in sorted(by_key.items()):
        base = by_key.get((definition, axes, False))
        if fast and base and r["harness_ms"] and base["harness_ms"]:
            ours, theirs = base["harness_ms"] / r["harness_ms"], base["in_process_ms"] / r["in_process_ms"]
            print(f"speedup {definition} {axes}: harness {ours:.2f}x, in process {theirs:.2f}x, "
                  f"ratio {ours / theirs:.3f} ({'ok' if abs(ours / theirs - 1) <= 0.05 else 'OFF'})")
    print(f"{len(outcomes)} pairs in {minutes * 60:.1f} s: {len(outcomes) / minutes:.1f} pairs per minute")
    if args.json:
        args.json.write_text(json.dumps({"environment": environment, "rows": rows,
                                         "pairs_per_minute": len(outcomes) / minutes}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
