"""Load + validate throughput on synthetic datasets at 10% and 100% of full size.

Full size: 1,000 definitions, 10,000 solutions, 1,000,000 trace lines. Each size is loaded
and validated in a fresh process (so memory from one run does not slow the next), and the
script prints records per second and the time ratio 100% / 10%: linear cost means a ratio
near 10 (the bar is <= 11).

With --bundled it times `kerneltrace validate`'s work on the bundled dataset instead (what CI, the
site build and both exports run): load, then each record kind's checks, wall and CPU seconds, the
median of --repeat fresh processes. Run it with another checkout on PYTHONPATH to compare.

    python tests/benchmarks/bench_load_validate.py [--workdir DIR] [--repeat N] [--bundled]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import synthetic  # noqa: E402

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from generator.load import load
from generator.validate import validate
ds = load(sys.argv[1])
t1 = time.perf_counter()
diags = validate(ds)
t2 = time.perf_counter()
import resource
print(json.dumps({"load_s": t1 - t0, "validate_s": t2 - t1, "total_s": t2 - t0,
                  "errors": sum(d.is_error for d in diags), "traces": len(ds.traces),
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


BUNDLED_CHILD = r"""
import json, time
clock = lambda: (time.perf_counter(), time.process_time())
t = clock()
from generator.load import DEFAULT_DATASET, load
from generator.validate import CHECKS, validate
ds = load(DEFAULT_DATASET)
out = {}
for name, check in [("load", None), *CHECKS.items()]:
    if check is not None:
        t = clock()
        list(check(ds))
    now = clock()
    out[name] = (now[0] - t[0], now[1] - t[1])
out["diagnostics"] = (len(validate(ds)), 0)
print(json.dumps(out))
"""


def bundled(repeat: int) -> None:
    """Median wall and CPU seconds of loading the bundled dataset and of each kind's checks."""
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", BUNDLED_CHILD], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    def median(values):
        return sorted(values)[len(values) // 2]
    total_wall = total_cpu = 0.0
    for name in runs[0]:
        if name == "diagnostics":
            continue
        wall, cpu = median([r[name][0] for r in runs]), median([r[name][1] for r in runs])
        total_wall, total_cpu = total_wall + wall, total_cpu + cpu
        print(f"{name:>24}: {wall:6.2f} s wall {cpu:6.2f} s CPU")
    print(f"{'load + checks':>24}: {total_wall:6.2f} s wall {total_cpu:6.2f} s CPU "
          f"(median of {repeat} run(s) each; {runs[0]['diagnostics'][0]} diagnostic(s))")


def measure(root: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(root)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, help="where to write the synthetic datasets (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the median is reported")
    parser.add_argument("--bundled", action="store_true", help="time validate's checks on the bundled dataset")
    args = parser.parse_args()
    if args.bundled:
        bundled(args.repeat)
        return
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        results = {}
        for scale in (0.1, 1.0):
            root = Path(tmp) / f"scale{scale}"
            t = time.perf_counter()
            counts = synthetic.write(root, scale)
            print(f"scale {scale:>4}: wrote {counts} in {time.perf_counter() - t:.1f} s", flush=True)
            runs = sorted((measure(root) for _ in range(args.repeat)), key=lambda r: r["total_s"])
            r = runs[len(runs) // 2]
            if r["errors"]:
                raise SystemExit(f"synthetic dataset has {r['errors']} validation errors: the benchmark is broken")
            records = sum(counts.values())
            print(f"scale {scale:>4}: load {r['load_s']:.2f} s + validate {r['validate_s']:.2f} s = {r['total_s']:.2f} s; "
                  f"{records / r['total_s']:,.0f} records/s; {counts['traces'] / r['total_s']:,.0f} trace lines/s; "
                  f"peak RSS {r['max_rss_mb']:.0f} MB", flush=True)
            results[scale] = (records, r["total_s"])
        (n_small, t_small), (n_big, t_big) = results[0.1], results[1.0]
        print(f"data ratio {n_big / n_small:.2f}x, time ratio {t_big / t_small:.2f}x "
              f"(linear within 10%: {'yes' if t_big / t_small <= 1.1 * n_big / n_small else 'NO'})")


if __name__ == "__main__":
    main()
