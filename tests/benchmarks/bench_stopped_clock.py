"""How much can a solution that stops the worker's clock hide? Its ranked latency against its honest twin's, per
workload, in one run of the real bench (sandboxed workers, the default CPU timing).

    python tests/benchmarks/bench_stopped_clock.py [--definitions rmsnorm_h4096 silu_and_mul_i14336] [--rounds 1]

The twin is the definition's baseline source under another author; the cheat runs the same source and then patches
the worker's clock (generator.bench.sandboxed.clock._perf_counter) so that each call reads as 0.5 us. Both are timed beside
the reference as usual, each in its own pair, so a busy host moves both sides of a pair alike: the share is the
cheat's speedup over the reference timed beside it divided into the honest twin's (1.00: nothing hidden; under
1: hidden). Also printed: each one's latency over the reference beside it, for an honest solution about 1 (the
bound charges an honest solution nothing); and whether the cheat is within the issue's bar on the CPU (5 % or
10 us a call of the honest latency). The bundled
dataset is copied to a temporary folder; nothing is written to it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from generator.bench import run_bench  # noqa: E402
from generator.load import DEFAULT_DATASET  # noqa: E402

STOP = ("\nimport generator.bench.sandboxed.clock as _t\n_real = _t._perf_counter\n_run = run\n\n\n"
        "def run(*args, **kwargs):\n    start = _real()\n    out = _run(*args, **kwargs)\n\n"
        "    def _once():\n        _t._perf_counter = _real\n        return start + 5e-7\n"
        "    _t._perf_counter = _once\n    return out\n")


def plant(root: Path, definition: str) -> tuple[str, str]:
    [baseline] = (root / "solutions" / "baseline").glob(f"*/{definition}/{definition}_torch.json")
    sol = json.loads(baseline.read_text())
    kind = baseline.parent.parent.name
    names = []
    for author, extra in (("honest", ""), ("stopper", STOP)):
        name = f"{definition}_{author}"
        path = root / "solutions" / author / kind / definition / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        src = [{**sol["sources"][0], "content": sol["sources"][0]["content"] + extra}] + sol["sources"][1:]
        path.write_text(json.dumps({**sol, "name": name, "author": author, "sources": src}, indent=2))
        names.append(name)
    return names[0], names[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--definitions", nargs="+", default=["rmsnorm_h4096", "silu_and_mul_i14336"])
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ds"
        shutil.copytree(DEFAULT_DATASET, root, ignore=shutil.ignore_patterns("traces"))
        (root / "traces").mkdir()
        pairs = [plant(root, d) for d in args.definitions]
        shares = []
        print(f"{'workload':<44} {'honest ms':>10} {'/ref':>5} {'stopper ms':>11} {'/ref':>5} {'share':>6}  bar")
        for _ in range(args.rounds):
            summary = run_bench(root, device="cpu", out=Path(tmp) / "out", definitions=args.definitions,
                                solutions=[n for p in pairs for n in p], progress=False)
            got = {}
            for o in summary.outcomes:
                perf = o.record["evaluation"].get("performance") or {}
                got[(o.pair.solution.name, o.pair.workload.uuid)] = (o.status, perf.get("latency_ms"),
                                                                     perf.get("reference_latency_ms"))
            for honest, stopper in pairs:
                for (name, uuid), (status, ms, ref) in sorted(got.items()):
                    if name != honest:
                        continue
                    c_status, c_ms, c_ref = got.get((stopper, uuid), ("missing", None, None))
                    if ms is None or c_ms is None:
                        print(f"{honest[:28]}/{uuid[:14]:<15} {status} {c_status}")
                        continue
                    share = (c_ms / c_ref) / (ms / ref)
                    shares.append(share)
                    ok = share * ms >= min(0.95 * ms, ms - 0.010)
                    print(f"{honest[:28]}/{uuid[:14]:<15} {ms:>10.4f} {ms / ref:>5.2f} {c_ms:>11.4f} {c_ms / c_ref:>5.2f} "
                          f"{share:>6.2f}  {'ok' if ok else 'HIDDEN'}")
        if shares:
            print(f"cheat / honest: median {statistics.median(shares):.2f}, min {min(shares):.2f} over {len(shares)} workloads")


if __name__ == "__main__":
    main()
