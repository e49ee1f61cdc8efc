"""Time every definition's reference on the CPU on its largest dataset workload, and count its Python loops.

    python tests/benchmarks/measure_reference_cost.py [--limit-s 60] [--max-input-gib 1] [--repeats 3]
                                                      [--threads 1] [-k SUBSTRING ...] [--json FILE]
                                                      [--rev GIT_REVISION]

The bench times the reference in the same loop as the solution, many calls per workload, so a
reference whose cost is a Python loop over tokens, pages, heads or sequences can make a pair time out
on the device (one GPU kernel launch, or one host sync, per trip). This script finds such references:

- the workload: of the definition's dataset workloads, the one with the most input bytes that stays
  within --max-input-gib (inputs made by generator.bench.shared.inputs.make_inputs, seed set 0, on the CPU);
- loop trips: one traced call (sys.settrace, only the reference's own frames) counts how often each
  `for`/`while` header line of the reference runs; a header runs once per trip plus once to exit, so
  trips = runs - entries, summed over the loops. `.item()`/`int(...)` calls are counted as lines that
  contain them, times how often those lines ran (a host sync on a GPU each);
- the time: the best of --repeats untraced calls (a single call when the traced one already took
  longer than --limit-s / 4); a call is cut off after --limit-s (a timer signal, which interrupts the
  reference between Python bytecodes, so a single long torch op still runs to its end).

With --rev, each reference is the one of that git revision (e.g. HEAD, for a before/after table
while editing); the workloads are the working tree's. Prints a table sorted by time, slowest first. Not collected by pytest (no test_ prefix).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from generator.bench.shared.inputs import TORCH_DTYPES, input_recipes, make_inputs  # noqa: E402
from generator.load import load  # noqa: E402

LOOP_LINE = re.compile(r"^\s*(for|while)\b")
SYNC_CALL = re.compile(r"\.item\(\)|\bint\(|\bfloat\(|\.tolist\(\)")


class TimeLimit(Exception):
    pass


def _alarm(signum, frame):
    raise TimeLimit()


def input_bytes(definition: dict, workload: dict) -> int:
    """Bytes of the workload's tensor inputs, from the recipes (nothing drawn)."""
    total = 0
    specs = definition["inputs"]
    for name, recipe in input_recipes(definition, workload).items():
        if recipe["type"] == "scalar":
            continue
        spec = specs[name]
        shape = recipe.get("shape")
        if shape is None:  # a blob: its declared shape under this workload's axes
            axes = {n: a["value"] for n, a in definition["axes"].items() if a["type"] == "const"}
            axes.update(workload["axes"])
            shape = [axes[a] for a in spec.get("shape") or ()]
        element = torch.empty((), dtype=TORCH_DTYPES[spec["dtype"]]).element_size()
        total += math.prod(int(s) for s in shape) * element
    return total


def load_run(code: str, name: str):
    filename = f"<reference of {name}>"
    namespace: dict = {"__name__": f"kt_reference_{name}"}
    exec(compile(code, filename, "exec"), namespace)
    return namespace["run"], filename


def call_traced(run, args: list, filename: str, code: str, limit_s: float):
    """One call under sys.settrace: (seconds, loop trips, sync calls)."""
    lines = code.splitlines()
    loop_lines = {i + 1 for i, text in enumerate(lines) if LOOP_LINE.match(text)}
    sync_lines = {i + 1: len(SYNC_CALL.findall(text)) for i, text in enumerate(lines)
                  if SYNC_CALL.search(text) and not text.lstrip().startswith("#")}
    runs: Counter = Counter()
    entries: Counter = Counter()  # times a loop header line was reached from a line before it
    last: dict = {}

    def local(frame, event, arg):
        if event == "line":
            n = frame.f_lineno
            runs[n] += 1
            if n in loop_lines and last.get(id(frame), 0) < n:
                entries[n] += 1
            last[id(frame)] = n
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename == filename else None

    signal.setitimer(signal.ITIMER_REAL, limit_s)
    sys.settrace(tracer)
    t0 = time.perf_counter()
    try:
        run(*args)
    finally:
        seconds = time.perf_counter() - t0
        sys.settrace(None)
        signal.setitimer(signal.ITIMER_REAL, 0)
    # A header line reached from below is the next trip; reached from above, the loop's entry.
    trips = sum(max(runs[n] - entries[n], 0) for n in loop_lines)
    syncs = sum(runs[n] * k for n, k in sync_lines.items())
    return seconds, trips, syncs


def call_timed(run, args: list, limit_s: float) -> float:
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    t0 = time.perf_counter()
    try:
        run(*args)
    finally:
        seconds = time.perf_counter() - t0
        signal.setitimer(signal.ITIMER_REAL, 0)
    return seconds


def reference_at(rev: str, name: str) -> str:
    """The reference of definition `name` at git revision `rev`."""
    path = next((ROOT / "dataset" / "definitions").glob(f"*/{name}.json")).relative_to(ROOT)
    text = subprocess.run(["git", "show", f"{rev}:{path.as_posix()}"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout
    return json.loads(text)["reference"]


def measure(name: str, definition: dict, workloads: list, args) -> dict:
    sized = []
    for w in workloads:
        try:
            sized.append((input_bytes(definition, w), w))
        except Exception as exc:  # noqa: BLE001
            return {"name": name, "status": f"size: {type(exc).__name__}: {exc}"}
    fitting = [s for s in sized if s[0] <= args.max_input_gib * 2**30]
    if not fitting:
        return {"name": name, "status": "no workload within the input limit"}
    nbytes, workload = max(fitting, key=lambda s: s[0])
    row = {"name": name, "axes": workload["axes"], "input_mib": nbytes / 2**20}
    try:
        inputs = make_inputs(definition, workload, ROOT / "dataset", 0, "cpu")
    except Exception as exc:  # noqa: BLE001
        row["status"] = f"inputs: {type(exc).__name__}: {exc}"
        return row
    code = reference_at(args.rev, name) if args.rev else definition["reference"]
    run, filename = load_run(code, name)
    call_args = list(inputs.values())
    try:
        traced_s, trips, syncs = call_traced(run, call_args, filename, code, args.limit_s)
        row.update(trips=trips, syncs=syncs, traced_ms=traced_s * 1e3)
        best = traced_s
        if traced_s < args.limit_s / 4:
            best = min(call_timed(run, call_args, args.limit_s) for _ in range(args.repeats))
        row.update(ms=best * 1e3, status="ok")
    except TimeLimit:
        row.update(ms=args.limit_s * 1e3, status=f"over {args.limit_s:g} s")
    except Exception as exc:  # noqa: BLE001
        row["status"] = f"error: {type(exc).__name__}: {exc}"[:200]
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit-s", type=float, default=60.0, help="time limit of one reference call")
    p.add_argument("--max-input-gib", type=float, default=1.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="torch threads (the host is shared: 1 by default)")
    p.add_argument("-k", action="append", default=[], help="only definitions whose name contains this")
    p.add_argument("--json", help="also write the rows to this file")
    p.add_argument("--rev", help="time the references of this git revision (default: the working tree's)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    signal.signal(signal.SIGALRM, _alarm)

    ds = load(ROOT / "dataset")
    rows = []
    for name in sorted(ds.definitions):
        if args.k and not any(k in name for k in args.k):
            continue
        workloads = [w.data["workload"] for w in ds.workloads_by_definition.get(name, [])]
        if not workloads:
            rows.append({"name": name, "status": "no workloads"})
            continue
        row = measure(name, ds.definitions[name].data, workloads, args)
        rows.append(row)
        print(f"  {row.get('ms', float('nan')):10.1f} ms  {name}  {row.get('status')}", file=sys.stderr, flush=True)

    rows.sort(key=lambda r: -r.get("ms", -1))
    print(f"{'ms/call':>10} {'trips':>7} {'syncs':>7} {'in MiB':>8}  {'definition':<58} axes / status")
    for r in rows:
        ms = f"{r['ms']:10.1f}" if "ms" in r else f"{'-':>10}"
        trips = f"{r['trips']:7d}" if "trips" in r else f"{'-':>7}"
        syncs = f"{r['syncs']:7d}" if "syncs" in r else f"{'-':>7}"
        mib = f"{r['input_mib']:8.1f}" if "input_mib" in r else f"{'-':>8}"
        tail = json.dumps(r.get("axes", {}), separators=(",", ":")) if r.get("status") == "ok" else r.get("status")
        print(f"{ms} {trips} {syncs} {mib}  {r['name']:<58} {tail}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
