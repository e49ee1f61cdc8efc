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

    python tests/benchmarks/bench_stopped_clock.py --forge 0.05 0.1 0.15 --work-ms 0.2 --batch-sizes 1 8 --rounds 3

--forge: the CPU-time floor's resolution instead (trusted/cpufloor.py). Each forger does `--work-ms` of CPU work a
call (then the baseline's answer), all of it inside the call but the hidden amount, which it does after the call's
end mark in a patched send (as tests/bench/cheats/works_between_its_marks.py), where no clock and no mark sees it;
its honest twin does all of it inside the call. Printed per workload and round: the forger's latency over its twin's
(1.00: nothing hidden; the twin's wall time holds the host's descheduling, which CPU time does not, so on a busy host
this ratio swings both ways) and the us a call the floor left hidden (the hidden amount less what the floor charged,
from the trace's log: the floor's own resolution); then per hidden amount the spread over workloads and rounds, and
whether any honest solution (the twin, the baseline) was moved by the floor (its log says so).
"""

from __future__ import annotations

import argparse
import json
import re
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


FORGE = """
import time as _time
import generator.bench.shared.protocol as _p

_send, _owed, _IN_MS, _HIDDEN_MS = _p.send, [], {inside}, {hidden}


def _work(ms):  # CPU time, as a kernel's work
    end = _time.thread_time() + ms / 1e3
    while _time.thread_time() < end:
        pass


def _forged(fd, header, *rest, **kw):
    _send(fd, header, *rest, **kw)
    if header.get("op") == "mark" and _owed:  # the call's end mark: over, for the bench
        _owed.pop()
        _work(_HIDDEN_MS)


_answer = run


def run(*args, **kwargs):
    if _HIDDEN_MS:
        _p.send = _forged
        _owed.append(1)
    _work(_IN_MS)
    return _answer(*args, **kwargs)
"""


FLOOR_NOTE = re.compile(r"raised to the CPU-time floor \(median ([-\d.e+]+) ms reported, ([-\d.e+]+) ms charged\)")


def plant_forgers(root: Path, definition: str, work_ms: float, hidden: list[float]) -> list[str]:
    """The honest twin (hidden 0) and one forger per hidden amount, each its own author: names in that order."""
    [baseline] = (root / "solutions" / "baseline").glob(f"*/{definition}/{definition}_torch.json")
    sol = json.loads(baseline.read_text())
    kind = baseline.parent.parent.name
    names = []
    for h in [0.0, *hidden]:
        author = f"forger{round(h * 1000)}us" if h else "twin"
        name = f"{definition}_{author}"
        path = root / "solutions" / author / kind / definition / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        extra = FORGE.format(inside=work_ms - h, hidden=h)
        src = [{**sol["sources"][0], "content": sol["sources"][0]["content"] + extra}] + sol["sources"][1:]
        path.write_text(json.dumps({**sol, "name": name, "author": author, "sources": src}, indent=2))
        names.append(name)
    return names


def forge(args) -> None:
    """The --forge measurement (see the module's docstring)."""
    definition = args.definitions[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ds"
        shutil.copytree(DEFAULT_DATASET, root, ignore=shutil.ignore_patterns("traces"))
        (root / "traces").mkdir()
        if args.batch_sizes:
            [path] = (root / "workloads").glob(f"*/{definition}.jsonl")
            keep = [line for line in path.read_text().splitlines()
                    if json.loads(line)["workload"]["axes"].get("batch_size") in args.batch_sizes]
            path.write_text("".join(line + "\n" for line in keep))
        names = plant_forgers(root, definition, args.work_ms, args.forge)
        baseline = f"{definition}_torch"
        per_hidden: dict[float, list[tuple[float, float]]] = {h: [] for h in args.forge}
        moved = []
        print(f"{'round':>5} {'workload':<15} {'twin ms':>8} " + " ".join(f"{f'hide {h:g}: /twin, left':>22}" for h in args.forge))
        for k in range(args.rounds):
            summary = run_bench(root, device="cpu", out=Path(tmp) / f"out{k}", definitions=[definition],
                                solutions=[*names, baseline], progress=False)
            got = {}
            for o in summary.outcomes:
                ev = o.record["evaluation"]
                got[(o.pair.solution.name, o.pair.workload.uuid)] = ((ev.get("performance") or {}).get("latency_ms"),
                                                                     ev.get("log") or "", o.status)
                if o.pair.solution.name in (names[0], baseline) and "CPU-time floor" in (ev.get("log") or ""):
                    moved.append(f"round {k + 1}: {o.pair.solution.name} on {o.pair.workload.uuid[:14]}")
            for (name, uuid), (twin_ms, _, status) in sorted(got.items()):
                if name != names[0] or twin_ms is None:
                    continue
                cells = []
                for h, forger in zip(args.forge, names[1:]):
                    ms, log, _ = got.get((forger, uuid), (None, "", ""))
                    if ms is None:
                        cells.append(f"{'-':>22}")
                        continue
                    raised = FLOOR_NOTE.search(log)
                    left = h - (float(raised[2]) - float(raised[1]) if raised else 0.0)
                    per_hidden[h].append((ms / twin_ms, left))
                    cells.append(f"{ms / twin_ms:>13.2f} {left * 1e3:>5.0f} us")
                print(f"{k + 1:>5} {uuid[:14]:<15} {twin_ms:>8.4f} " + " ".join(cells))
        for h, seen in per_hidden.items():
            if seen:
                ratios = sorted(r for r, _ in seen)
                left = sorted(u for _, u in seen)
                print(f"hiding {h:g} ms a call of {args.work_ms:g}: forger/twin median {statistics.median(ratios):.2f}, "
                      f"range {ratios[0]:.2f}-{ratios[-1]:.2f}; left hidden by the floor median "
                      f"{statistics.median(left) * 1e3:.0f} us a call, range {left[0] * 1e3:.0f}-{left[-1] * 1e3:.0f} us "
                      f"({len(seen)} pairs)")
        print("honest solutions moved by the CPU-time floor: " + ("; ".join(moved) if moved else "none"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--definitions", nargs="+", default=["rmsnorm_h4096", "silu_and_mul_i14336"])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--forge", nargs="+", type=float, default=[], metavar="MS",
                    help="measure the CPU-time floor instead: forgers hiding these ms a call (first definition only)")
    ap.add_argument("--work-ms", type=float, default=0.2, help="--forge: each call's CPU work, hidden part included")
    ap.add_argument("--batch-sizes", nargs="+", type=int, default=[], help="--forge: only these workloads")
    args = ap.parse_args()
    if args.forge:
        forge(args)
        return
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
