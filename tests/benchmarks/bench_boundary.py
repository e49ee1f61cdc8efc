"""What does the bench's trust boundary cost? Wall time per (solution, workload) pair, this bench
against another version of it, on the same pairs, in one run, alternating.

    git archive <old commit> | tar -x -C /tmp/oldbench
    python tests/benchmarks/bench_boundary.py --old /tmp/oldbench --definitions rmsnorm_h4096 silu_and_mul_i768
    python tests/benchmarks/bench_boundary.py --old /tmp/oldbench --every 30 --rounds 1   # whole definitions

Each bench runs in a fresh subprocess (`run_bench` imported from that version's package root) over
that version's bundled dataset (the solutions both versions hold for the chosen definitions: the same pairs where they did not change), writing traces to a temporary folder; the script prints seconds per pair for
each version and the ratio new / old, per round and in total.

Besides wall time it prints the CPU seconds of the bench's whole process tree (the bench and every
sandboxed worker: killed workers are never reaped into the bench's rusage, so their /proc times are
sampled every 0.1 s, the last sample of each process kept) and how many worker processes it started:
on a shared 2-core host wall time follows the load, CPU time follows the work.

Measured against 7678699 (2026-11-29, the shared 2-core host, one round, CPU-s per pair old -> new): the default 15
pairs 2.53 -> 1.27 (2.0x; a third of the new side is its start: torch, dataset, two workers); --every 30 (10 whole
definitions, 36 pairs old, 34 new) 19.97 -> 3.50 (5.7x; wall 29.5 -> 4.4 s a pair), but the sampler definition in it
is 406 of the old side's 719 CPU-s (4 pairs, one a 300 s TIMEOUT; the new plan runs 2 of them, both NOT_MEASURED):
without it, from a run of that definition alone, about 9.8 -> 2.1 (4.7x).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]

RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from generator.bench import run_bench
s = run_bench(Path(sys.argv[2]), device="cpu", out=Path(sys.argv[3]), definitions=json.loads(sys.argv[4]),
              correctness_only=sys.argv[5] == "1", progress=False, solutions=json.loads(sys.argv[6]))
import generator
print(json.dumps({"pairs": len(s.outcomes), "counts": s.counts(), "package": generator.__file__,
                  "keys": sorted(o.pair.solution.name + "/" + o.pair.workload.uuid for o in s.outcomes)}))
"""


TICK = os.sysconf("SC_CLK_TCK")


class TreeCPU:
    """CPU seconds of a process and all its descendants, sampled from /proc until stopped."""

    def __init__(self, pid: int):
        self.pid, self.seen, self.workers = pid, {}, set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            stats, kids = {}, {}
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        raw = Path(f"/proc/{entry}/stat").read_text()
                        cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
                    except OSError:
                        continue
                    fields = raw.rsplit(")", 1)[1].split()
                    stats[int(entry)] = ((int(fields[11]) + int(fields[12])) / TICK, cmd)
                    kids.setdefault(int(fields[1]), []).append(int(entry))
            stack = [self.pid]
            while stack:
                pid = stack.pop()
                if pid in stats:
                    cpu, cmd = stats[pid]
                    self.seen[pid] = max(self.seen.get(pid, 0.0), cpu)
                    # generator.bench.worker in the older layout (7678699), generator.bench.sandboxed.worker now
                    if (b"generator.bench.sandboxed.worker" in cmd or b"generator.bench.worker" in cmd) \
                            and not cmd.startswith(b"bwrap"):
                        self.workers.add(pid)
                stack += kids.get(pid, [])
            time.sleep(0.1)

    def done(self) -> tuple[float, int]:
        self.stop.set()
        self.thread.join()
        return sum(self.seen.values()), len(self.workers)


def definitions_in(dataset: Path) -> set[str]:
    return {path.parent.name for path in (dataset / "solutions").glob("*/*/*/*.json")}


def solution_names(dataset: Path, definitions: list[str]) -> set[str]:
    names = set()
    for path in (dataset / "solutions").glob("*/*/*/*.json"):
        if path.parent.name in definitions:
            names.add(json.loads(path.read_text(encoding="utf-8"))["name"])
    return names


def one(root: Path, dataset: Path, definitions: list[str], correctness_only: bool,
        solutions: list[str]) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory(prefix="kt-boundary-") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", RUN, str(root), str(dataset), out, json.dumps(definitions),
                                 "1" if correctness_only else "0", json.dumps(solutions)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=str(root))
        tree = TreeCPU(proc.pid)
        stdout, stderr = proc.communicate()
        wall = time.perf_counter() - t0
        cpu, workers = tree.done()
    if proc.returncode != 0:
        raise SystemExit(f"bench from {root} failed:\n{stderr[-3000:]}")
    return wall, {**json.loads(stdout.strip().splitlines()[-1]), "cpu": cpu, "workers": workers}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="package root of the other version")
    parser.add_argument("--definitions", nargs="+", default=["rmsnorm_h4096", "silu_and_mul_i768"])
    parser.add_argument("--every", type=int, default=0, metavar="K",
                        help="instead of --definitions: every K-th (sorted by name, from the first) of the definitions "
                             "both datasets hold solutions of, each with all its common solutions and workloads: a "
                             "whole-definition sample like a real run's, where worker starts amortise")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--correctness-only", action="store_true")
    args = parser.parse_args()
    totals = {"old": [0.0, 0, 0.0, 0], "new": [0.0, 0, 0.0, 0]}
    keys: dict[str, set] = {"old": set(), "new": set()}
    # The same pairs on both sides: the solutions both datasets hold for these definitions (contenders added since
    # would make the newer bench's pairs other pairs: a compile contender's first call alone costs seconds).
    if args.every:
        both = sorted(definitions_in(args.old.resolve() / "dataset") & definitions_in(HERE / "dataset"))
        args.definitions = both[::args.every]
        print(f"definitions (every {args.every}th of {len(both)}): {' '.join(args.definitions)}")
    common = sorted(solution_names(args.old.resolve() / "dataset", args.definitions)
                    & solution_names(HERE / "dataset", args.definitions))
    print(f"solutions in both: {', '.join(common)}")
    for r in range(args.rounds):
        for label, root in (("old", args.old.resolve()), ("new", HERE)):
            # Each version reads its own copy of the dataset (an older loader may not read today's).
            wall, info = one(root, root / "dataset", args.definitions, args.correctness_only, common)
            totals[label][0] += wall
            totals[label][1] += info["pairs"]
            totals[label][2] += info["cpu"]
            totals[label][3] += info["workers"]
            keys[label] |= set(info["keys"])
            pairs = max(info["pairs"], 1)
            print(f"round {r + 1} {label}: {info['pairs']} pairs in {wall:.1f} s = {wall / pairs:.2f} s/pair, "
                  f"CPU {info['cpu']:.1f} s = {info['cpu'] / pairs:.2f} CPU-s/pair, {info['workers']} workers started "
                  f"{info['counts']} ({info['package']})", flush=True)
    if keys["old"] != keys["new"]:  # each side's plan (its CPU limits) chose its pairs: per pair is then a mean over others
        print(f"NOTE: the pairs differ: {len(keys['old'] - keys['new'])} only in old, {len(keys['new'] - keys['old'])} "
              f"only in new: {sorted(keys['old'] ^ keys['new'])[:20]}")
    per = {k: v[0] / max(v[1], 1) for k, v in totals.items()}
    cpu = {k: v[2] / max(v[1], 1) for k, v in totals.items()}
    print(f"total: old {per['old']:.2f} s/pair, new {per['new']:.2f} s/pair, new/old = {per['new'] / per['old']:.2f}; "
          f"CPU old {cpu['old']:.2f} CPU-s/pair, new {cpu['new']:.2f}, new/old = {cpu['new'] / cpu['old']:.2f}; "
          f"workers started old {totals['old'][3]}, new {totals['new'][3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
