"""The compiler contender's choices and costs, measured on the CPU.

    python tests/benchmarks/bench_compile.py recompiles [-k SUBSTRING ...]
    python tests/benchmarks/bench_compile.py compile-time [--per-type 2] [--limit-s 120] [--json FILE]
    python tests/benchmarks/bench_compile.py mode [-k SUBSTRING ...]

- recompiles: for each sampled definition (default: a norm, an activation, a GEMM, a RoPE, an attention, a GDN,
  a MoE, a sampler), how many graphs TorchDynamo makes over all of its workloads (in the order the bench runs them,
  by uuid) under each way of making the var axes dynamic: dynamic=True, automatic (dynamic=None: static first,
  dynamic after a size changes), mark_dynamic of the var-axis dims (torch._dynamo.maybe_mark_dynamic, the only
  form that accepts a size-1 axis), and dynamic=True with size-oblivious sizes. Tracing only: the graphs are
  never run (the backend records them and stops), so any workload size costs the same.
- compile-time: the first call (TorchDynamo + inductor, cold: caches off) of the generated contender (its main.py)
  on the real inputs of its smallest workload, for a stated sample: the first --per-type compiling definitions of
  every type, by name. Prints each, the median and the max, and how many definitions a 9-minute window on a 16-core
  machine could compile when the kit compiles them in parallel before timing starts.
- mode: compile time and latency (median of 20 calls) of mode="default" against "max-autotune-no-cudagraphs"
  on a few definitions (their smallest workloads).

One thread (OMP_NUM_THREADS=1, TORCHINDUCTOR_COMPILE_THREADS=1): the host is shared. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import time
import types
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")  # every compile cold, as on a fresh machine
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from generator.bench.sandboxed.worker import load_reference  # noqa: E402
from generator.bench.shared.inputs import make_inputs  # noqa: E402
from generator.bench.trusted.plan import call_bytes  # noqa: E402
from generator.contenders.compiler import DYNAMIC, MODE, compiled_source, static_dims  # noqa: E402
from generator.contenders.probe import _inputs  # noqa: E402
from generator.contenders.write import COMPILES, read_verdicts  # noqa: E402
from generator.load import load  # noqa: E402

RECOMPILE_SAMPLE = ("rmsnorm_h4096", "silu_and_mul_i14336", "gemm_n6144_k4096", "rope_neox_h32_kv8_d128",
                    "gqa_cascade_decode_h16_kv8_d128_ps16", "gdn_decode_qk4_v8_d128", "top_k_sampling_from_probs_v128256",
                    "fused_add_rmsnorm_h4096")
MODE_SAMPLE = ("gemm_n6144_k4096", "rmsnorm_h4096", "silu_and_mul_i14336")
WINDOW_S, CORES = 540, 16


class _Stop(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise TimeoutError


def graphs_over_workloads(ds, d, how: str) -> int:
    """Graphs TorchDynamo makes for the definition's workloads in bench order, traced only (never run)."""
    graphs = []

    def backend(gm, example_inputs):  # noqa: ARG001
        graphs.append(gm)

        def stop(*args):  # noqa: ARG001
            raise _Stop()
        return stop

    torch._dynamo.reset()
    torch.fx.experimental._config.backed_size_oblivious = how == "oblivious"
    dynamic = {"dynamic=True": True, "automatic": None, "mark_dynamic": False, "oblivious": True}[how]
    fn = torch.compile(load_reference(d.data["reference"], d.name), backend=backend, fullgraph=True, dynamic=dynamic)
    var = {n for n, a in d.data["axes"].items() if a["type"] == "var"}
    for w in sorted(ds.workloads_by_definition[d.name], key=lambda w: w.uuid):
        args = _inputs(d, w, ds.root)
        if how == "mark_dynamic":
            for (name, spec), x in zip(d.data["inputs"].items(), args):
                for dim, axis in enumerate(spec.get("shape") or []):
                    if axis in var and isinstance(x, torch.Tensor):
                        torch._dynamo.maybe_mark_dynamic(x, dim)
        try:
            fn(*args)
        except _Stop:
            pass
    torch.fx.experimental._config.backed_size_oblivious = False
    return len(graphs)


def cmd_recompiles(ds, names) -> None:
    hows = ("dynamic=True", "automatic", "mark_dynamic", "oblivious")
    print(f"{'definition':48s} workloads " + " ".join(f"{h:>13s}" for h in hows))
    for name in names:
        d = ds.definitions[name]
        row = []
        for how in hows:
            try:
                row.append(str(graphs_over_workloads(ds, d, how)))
            except Exception as exc:  # noqa: BLE001 - reported in the table
                row.append(type(exc).__name__[:13])
        print(f"{name:48s} {len(ds.workloads_by_definition[name]):9d} " + " ".join(f"{x:>13s}" for x in row))


def _contender(d, mode: str, dynamic):
    """The generated contender's run (its main.py: the reference, the compile switches, the const axes static),
    compiled with `mode` and `dynamic`; a module in sys.modules, as the bench imports it."""
    source = compiled_source(d.data["reference"], static_dims(d.data)).replace(
        f"mode={MODE!r}, dynamic={DYNAMIC!r})", f"mode={mode!r}, dynamic={dynamic!r})")
    module = types.ModuleType(f"kt_contender_{d.name}")
    sys.modules[module.__name__] = module
    exec(compile(source, f"<contender of {d.name}>", "exec"), module.__dict__)
    return module.run


def first_call(ds, d, mode: str, dynamic, limit_s: float, calls: int = 0) -> tuple[float, float]:
    """(seconds of the first call: the compile, ms median of `calls` later calls) on the smallest workload."""
    w = min(ds.workloads_by_definition[d.name], key=lambda w: (call_bytes(d, w), w.uuid))
    args = list(make_inputs(d.data, w.data["workload"], ds.root).values())
    torch._dynamo.reset()
    fn = _contender(d, mode, dynamic)
    signal.alarm(int(limit_s))
    try:
        t0 = time.perf_counter()
        fn(*args)
        compile_s = time.perf_counter() - t0
    finally:
        signal.alarm(0)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    return compile_s, statistics.median(times) if times else 0.0


def cmd_compile_time(ds, per_type: int, limit_s: float, out, names=None) -> None:
    verdicts = read_verdicts(ds.root)["verdicts"]
    by_type = defaultdict(list)
    for name in sorted(names or ds.definitions):
        if names or verdicts.get(name, {}).get("verdict") == COMPILES:
            by_type[ds.definitions[name].type].append(name)
    sample = [n for t in sorted(by_type) for n in by_type[t][:per_type]]
    print(f"sample: the first {per_type} compiling definitions of each of {len(by_type)} types, by name: "
          f"{len(sample)} definitions; mode={MODE!r}, dynamic={DYNAMIC!r}, cold caches, one thread")
    rows = {}
    started = time.perf_counter()
    for name in sample:
        try:
            seconds, _ = first_call(ds, ds.definitions[name], MODE, DYNAMIC, limit_s)
            rows[name] = {"seconds": seconds}
            print(f"  {name:60s} {seconds:7.2f} s", flush=True)
        except BaseException as exc:  # noqa: BLE001 - a failure is a row of the table
            if isinstance(exc, KeyboardInterrupt):
                raise
            rows[name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:150] if str(exc) else ''}"}
            print(f"  {name:60s} FAILED {rows[name]['error']}", flush=True)
    ok = [r["seconds"] for r in rows.values() if "seconds" in r]
    if ok:
        mean = statistics.fmean(ok)
        print(f"compiled {len(ok)} of {len(rows)} in {time.perf_counter() - started:.0f} s: median {statistics.median(ok):.2f} s, "
              f"mean {mean:.2f} s, max {max(ok):.2f} s (this CPU, one thread)")
        print(f"a {WINDOW_S} s window on {CORES} cores compiling in parallel: ~{int(WINDOW_S * CORES / mean)} "
              f"definitions at the mean (~{int(WINDOW_S * CORES / max(ok))} if every one took the max)")
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))


def cmd_mode(ds, names) -> None:
    for name in names:
        for mode in ("default", "max-autotune-no-cudagraphs"):
            try:
                seconds, ms = first_call(ds, ds.definitions[name], mode, DYNAMIC, 600, calls=20)
                print(f"{name:40s} {mode:28s} compile {seconds:7.2f} s  latency {ms:8.3f} ms", flush=True)
            except Exception as exc:  # noqa: BLE001
                print(f"{name:40s} {mode:28s} FAILED {type(exc).__name__}: {str(exc)[:120]}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("recompiles", "compile-time", "mode"))
    ap.add_argument("-k", nargs="+", default=None, help="definitions (default: the built-in sample)")
    ap.add_argument("--per-type", type=int, default=2)
    ap.add_argument("--limit-s", type=float, default=120)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    signal.signal(signal.SIGALRM, _alarm)
    ds = load(ROOT / "dataset")
    if args.what == "recompiles":
        cmd_recompiles(ds, args.k or RECOMPILE_SAMPLE)
    elif args.what == "compile-time":
        cmd_compile_time(ds, args.per_type, args.limit_s, args.json, args.k)
    else:
        cmd_mode(ds, args.k or MODE_SAMPLE)


if __name__ == "__main__":
    main()
