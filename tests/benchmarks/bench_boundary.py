"""What does the bench's trust boundary cost? Wall time per (solution, workload) pair, this bench
against another version of it, on the same pairs, in one run, alternating.

    git archive <old commit> | tar -x -C /tmp/oldbench
    python tests/benchmarks/bench_boundary.py --old /tmp/oldbench --definitions rmsnorm_h4096 silu_and_mul_i768

Each bench runs in a fresh subprocess (`run_bench` imported from that version's package root) over
that version's bundled dataset (the same pairs where the chosen definitions did not change), writing traces to a temporary folder; the script prints seconds per pair for
each version and the ratio new / old, per round and in total.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]

RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from generator.bench import run_bench
s = run_bench(Path(sys.argv[2]), device="cpu", out=Path(sys.argv[3]), definitions=json.loads(sys.argv[4]),
              correctness_only=sys.argv[5] == "1", progress=False)
import generator
print(json.dumps({"pairs": len(s.outcomes), "counts": s.counts(), "package": generator.__file__}))
"""


def one(root: Path, dataset: Path, definitions: list[str], correctness_only: bool) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory(prefix="kt-boundary-") as out:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", RUN, str(root), str(dataset), out, json.dumps(definitions),
                               "1" if correctness_only else "0"], capture_output=True, text=True, cwd=str(root))
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"bench from {root} failed:\n{proc.stderr[-3000:]}")
    return wall, json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="package root of the other version")
    parser.add_argument("--definitions", nargs="+", default=["rmsnorm_h4096", "silu_and_mul_i768"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--correctness-only", action="store_true")
    args = parser.parse_args()
    totals = {"old": [0.0, 0], "new": [0.0, 0]}
    for r in range(args.rounds):
        for label, root in (("old", args.old.resolve()), ("new", HERE)):
            # Each version reads its own copy of the dataset (an older loader may not read today's).
            wall, info = one(root, root / "dataset", args.definitions, args.correctness_only)
            totals[label][0] += wall
            totals[label][1] += info["pairs"]
            print(f"round {r + 1} {label}: {info['pairs']} pairs in {wall:.1f} s = {wall / max(info['pairs'], 1):.2f} "
                  f"s/pair {info['counts']} ({info['package']})", flush=True)
    per = {k: v[0] / max(v[1], 1) for k, v in totals.items()}
    print(f"total: old {per['old']:.2f} s/pair, new {per['new']:.2f} s/pair, new/old = {per['new'] / per['old']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
