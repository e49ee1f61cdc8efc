"""Run a plan across the trust boundary: this process is trusted; solutions run sandboxed elsewhere.

For each solution a worker process is started in the sandbox (sandbox.py) and told only the
solution's sources; the definition's reference runs in a worker of its own. For each workload this
process makes every input set from the workload's seed (inputs.make_inputs), hands the same
tensors to both workers one call at a time, interleaved, and decides after each call whether its
outputs are copied out and compared (compare() runs here, where the solution cannot reach):

- the first CORRECTNESS_SETS calls are always compared; every later (timed) call is compared with
  probability VERIFY_P, decided after it returned, and at least MIN_TIMED_VERIFIED of them are;
- every call gets a fresh input set, so no answer can be reused; a caught wrong answer, on any
  call, fails the pair;
- each call's time is the worker's own (bound clocks, device events on CUDA) but never less than
  the fastest call this process's wall clock saw (less the fastest empty round trip): samples
  below that are raised to it, so a patched clock cannot make a solution faster than its fastest
  real call;
- the reference is timed in the same loop as the solution, so a slow-down of one affects both.

Everything a worker sends is untrusted: a malformed, forged, duplicate or out-of-order message,
an exit or a hang is that pair's RUNTIME_ERROR or TIMEOUT (with the tail of its output), the worker
is killed, and a fresh one takes the remaining workloads.
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from . import protocol, timing
from .check import Verdict, check_support, compare, compare_samples
from .inputs import TORCH_DTYPES, make_inputs, shape_of
from .plan import Pair, Plan
from .sandbox import Worker
from .store import trace_path, write_trace

CORRECTNESS_SETS = 3
SAMPLING_DRAWS = 64
VERIFY_P = 0.2
MIN_TIMED_VERIFIED = 2
PINGS = 8
STARTUP_S = 300.0


@dataclass
class Options:
    device: str = "cpu"
    out: Path = Path("dataset")
    timeout_s: float = 300.0  # per workload, and for building the solution
    correctness_only: bool = False
    timing: dict = field(default_factory=dict)
    sandbox: str = "bwrap"
    # Start the next solution's worker while this one runs: saves the Python+torch start per solution,
    # at the price of a busy CPU core during the first seconds of each solution (off for CPU timing).
    prefetch: bool = False


@dataclass
class Outcome:
    pair: Pair
    status: str
    record: Optional[dict]  # the trace written, None in correctness-only runs
    log: str = ""  # why it did not pass (the trace's log; kept here too for correctness-only runs)


class Failed(Exception):
    """The pair ends with this status; `worker_lost` when the worker must be replaced."""

    def __init__(self, status: str, log: str, worker_lost: bool = True, correctness: Optional[dict] = None):
        super().__init__(log)
        self.status, self.log, self.worker_lost, self.correctness = status, log, worker_lost, correctness


class ReferenceFailed(Failed):
    pass


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def make_trace(pair: Pair, result: dict, environment: dict) -> dict:
    # log is "" rather than null when there is nothing to say: the FlashInfer-Trace dialect has no
    # null log, so exports round-trip exactly.
    evaluation = {"status": result["status"], "log": result.get("log") or "",
                  "correctness": result.get("correctness"), "performance": result.get("performance"),
                  "environment": environment, "timestamp": _now()}
    if pair.workload.seed is not None:
        evaluation["seed"] = pair.workload.seed
    if evaluation["status"] != "PASSED":
        evaluation["performance"] = None
    if evaluation["status"] not in ("PASSED", "INCORRECT_NUMERICAL"):
        evaluation["correctness"] = None
    return {"definition": pair.definition.name, "workload": dict(pair.workload.data["workload"]),
            "solution": pair.solution.name, "evaluation": evaluation}


class Remote:
    """The trusted side of one worker: every reply is parsed as untrusted input."""

    def __init__(self, opts: Options, load: dict, who: str, worker: Optional[Worker] = None):
        self.who = who
        self.device = opts.device
        self.worker = worker or Worker(opts.device, opts.sandbox)
        self.ping_ms = 0.0
        try:
            # Starting Python and importing torch is not the solution's time: a generous limit of its own.
            self.recv(("hello",), time.monotonic() + STARTUP_S, "starting the worker (Python and torch)",
                      timeout_s=STARTUP_S)
            protocol.send(self.worker.to_child, load)
            header, _ = self.recv(("loaded", "compile_error"), time.monotonic() + opts.timeout_s,
                                  "building the solution", timeout_s=opts.timeout_s)
        except Failed:
            self.worker.kill()
            raise
        if header["op"] == "compile_error":
            self.worker.kill()
            raise Failed("COMPILE_ERROR", str(header.get("log", ""))[-protocol.MAX_HEADER:])

    def _fail(self, exc: Exception, doing: str, timeout_s: float = 0) -> Failed:
        cls = ReferenceFailed if self.who == "reference" else Failed
        if isinstance(exc, protocol.Timeout):
            self.worker.kill()
            return cls("TIMEOUT", f"{doing} ran past the {timeout_s:g} s limit\n{self.worker.log.text()}")
        try:
            self.worker.proc.wait(timeout=2)  # it may be exiting: let it say how
        except Exception:  # noqa: BLE001 - still running: it is killed below
            pass
        self.worker.kill()
        how = self.worker.how_it_ended()
        if isinstance(exc, protocol.Closed):
            why = f"the {self.who}'s process ended ({how}) during this workload"
        else:
            why = f"the {self.who}'s process sent a bad message ({exc}); it was killed"
        return cls("RUNTIME_ERROR", f"{why}\n{self.worker.log.text()}")

    def recv(self, expect: tuple, deadline: float, doing: str, max_payload: int = 0, timeout_s: float = 0):
        try:
            return protocol.recv(self.worker.from_child, expect, deadline=deadline, max_payload=max_payload)
        except (protocol.ProtocolError, protocol.Timeout) as exc:
            raise self._fail(exc, doing, timeout_s) from None

    def send(self, header: dict, payload: bytes = b"") -> None:
        try:
            protocol.send(self.worker.to_child, header, payload)
        except OSError as exc:  # the worker is gone: its pipe is closed
            raise self._fail(protocol.Closed(str(exc)), "this workload") from None

    def ping(self, deadline: float, timeout_s: float) -> None:
        best = float("inf")
        for _ in range(PINGS):
            t0 = time.perf_counter()
            self.send({"op": "ping"})
            self.recv(("pong",), deadline, "this workload", timeout_s=timeout_s)
            best = min(best, (time.perf_counter() - t0) * 1e3)
        self.ping_ms = best

    def call(self, header: dict, payload: bytes, keep: bool, deadline: float, out_bytes: int,
             timeout_s: float) -> tuple[float, float, Optional[dict]]:
        """(reported ms, wall-clock lower bound ms, outputs if kept) of one call."""
        self.send(header, payload)
        self.recv(("ready",), deadline, "this workload", timeout_s=timeout_s)
        t0 = time.perf_counter()
        self.send({"op": "go"})
        reply, _ = self.recv(("done", "error"), deadline, "this workload", timeout_s=timeout_s)
        wall = (time.perf_counter() - t0) * 1e3
        if reply["op"] == "error":
            raise self._call_failed("RUNTIME_ERROR", reply)
        try:
            ms = protocol.number(reply, "ms")
        except protocol.ProtocolError as exc:
            raise self._fail(exc, "this workload") from None
        self.send({"op": "keep" if keep else "drop"})
        reply, payload = self.recv(("outputs", "dropped", "cheat", "error"), deadline, "this workload",
                                   max_payload=2 * out_bytes + (1 << 20) if keep else 0, timeout_s=timeout_s)
        if reply["op"] in ("cheat", "error"):
            raise self._call_failed("REWARD_HACK" if reply["op"] == "cheat" else "RUNTIME_ERROR", reply)
        if (reply["op"] == "outputs") != keep:
            raise self._fail(protocol.ProtocolError(f"{reply['op']!r} after {'keep' if keep else 'drop'}"),
                             "this workload")
        outputs = None
        if keep:
            try:
                outputs = protocol.unpack(payload)
            except protocol.ProtocolError as exc:
                raise self._fail(exc, "this workload") from None
        return ms, max(wall - self.ping_ms, 0.0), outputs

    def _call_failed(self, status: str, reply: dict) -> Failed:
        cls = ReferenceFailed if self.who == "reference" else Failed
        output = self.worker.log.text()
        return cls(status, str(reply.get("log"))[-8000:] + (f"\noutput of the process:\n{output}" if output else ""),
                   worker_lost=False)

    def close(self) -> None:
        try:
            protocol.send(self.worker.to_child, {"op": "exit"})
        except OSError:
            pass
        self.worker.kill()


class WorkloadRun:
    """Everything about one (solution, workload) pair that happens in this process."""

    def __init__(self, pair: Pair, opts: Options, root: Path, sol: Remote, ref: Remote, rng: random.Random):
        self.pair, self.opts, self.root, self.sol, self.ref, self.rng = pair, opts, root, sol, ref, rng
        self.definition = pair.definition.data
        self.workload = pair.workload.data["workload"]
        self.axes = {n: a["value"] for n, a in self.definition["axes"].items() if a["type"] == "const"}
        self.axes.update(self.workload["axes"])
        self.outs = [{"name": n, "shape": list(shape_of(s, self.axes)), "dtype": s["dtype"]}
                     for n, s in self.definition["outputs"].items()]
        self.out_bytes = sum(_numel(o["shape"]) * TORCH_DTYPES[o["dtype"]].itemsize for o in self.outs)
        self.deadline = time.monotonic() + opts.timeout_s
        self.index = 0  # input sets used so far; every call gets a new one
        self.cfg = timing.TimingConfig(**opts.timing)
        self.sampling = self.definition["type"] == "sampling"
        self.worst = Verdict("PASSED")
        self.verified = 0
        self.notes: list[str] = []

    def message(self, index: int) -> tuple[dict, bytes, dict]:
        inputs = make_inputs(self.definition, self.workload, self.root, index, "cpu")
        import torch

        tensors = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}
        header = {"op": "call", "order": list(inputs), "outs": self.outs,
                  "scalars": {k: v for k, v in inputs.items() if k not in tensors}}
        return header, protocol.pack(tensors), inputs

    def both(self, index: int, keep: bool, sol_first: bool) -> tuple[tuple, tuple, dict]:
        header, payload, inputs = self.message(index)
        t = self.opts.timeout_s
        order = (self.sol, self.ref) if sol_first else (self.ref, self.sol)
        results = {}
        for remote in order:
            results[remote.who] = remote.call(header, payload, keep, self.deadline, self.out_bytes, t)
        return results["solution"], results["reference"], inputs

    def verify(self, sol_out: dict, ref_out: dict, inputs: dict, what: str) -> None:
        import torch

        if self.sampling:
            v = compare(self.definition, sol_out, ref_out, self.axes)
            if v.status in ("INCORRECT_SHAPE", "INCORRECT_DTYPE", "REWARD_HACK"):
                raise Failed(v.status, f"{what}: {v.message}", worker_lost=False)
            v = check_support(self.definition, sol_out, inputs.get("probs") if isinstance(inputs.get("probs"), torch.Tensor) else None)
        else:
            v = compare(self.definition, sol_out, ref_out, self.axes)
        self.verified += 1
        if not v.ok:
            self.worst = v
            raise Failed(v.status, f"{what}: {v.message}", worker_lost=False, correctness=self.correctness_record())
        w = self.worst
        w.max_absolute_error = max(w.max_absolute_error, v.max_absolute_error)
        w.max_relative_error = max(w.max_relative_error, v.max_relative_error)
        w.matched_ratio = min(w.matched_ratio, v.matched_ratio)
        if v.atol is not None:
            w.atol, w.rtol = max(w.atol or 0.0, v.atol), v.rtol

    def correctness(self) -> None:
        if self.sampling:  # one input set, many draws from both: compare the distributions
            sol_draws, ref_draws, inputs = [], [], {}
            header, payload, inputs = self.message(0)
            for i in range(SAMPLING_DRAWS):
                s = self.sol.call(header, payload, True, self.deadline, self.out_bytes, self.opts.timeout_s)
                r = self.ref.call(header, payload, True, self.deadline, self.out_bytes, self.opts.timeout_s)
                if i == 0:
                    self.verify(s[2], r[2], inputs, "the first call")
                sol_draws.append(s[2])
                ref_draws.append(r[2])
            v = compare_samples(self.definition, sol_draws, ref_draws, inputs.get("probs"))
            if not v.ok:
                self.worst = v
                raise Failed(v.status, v.message, worker_lost=False, correctness=self.correctness_record())
            self.index = 1
            return
        for i in range(CORRECTNESS_SETS):
            s, r, inputs = self.both(self.index, True, sol_first=i % 2 == 0)
            self.index += 1
            self.verify(s[2], r[2], inputs, f"input set {i + 1}")

    def timed(self) -> tuple[dict, dict]:
        """Interleaved timed calls of the solution and the reference, each on a fresh input set."""
        cfg = self.cfg
        sol, ref, sol_wall, ref_wall = [], [], [], []
        started = time.perf_counter()
        timed_verified = 0
        n = 0
        while True:
            enough = (n >= cfg.warmup + 1 and _enough(sol[cfg.warmup:], cfg, started)
                      and _enough(ref[cfg.warmup:], cfg, started))
            if enough and timed_verified >= MIN_TIMED_VERIFIED:
                break
            if enough and n > cfg.warmup + cfg.max_samples + 40:
                break  # the verification quota is best effort past this
            keep = self.rng.random() < VERIFY_P
            s, r, inputs = self.both(self.index, keep, sol_first=n % 2 == 0)
            self.index += 1
            n += 1
            if keep:
                self.verify(s[2], r[2], inputs, f"timed call {n} (its outputs were checked after it returned)")
                timed_verified += 1
            sol.append(s[0])
            ref.append(r[0])
            sol_wall.append(s[1])
            ref_wall.append(r[1])
        w = cfg.warmup
        return (self.stats(sol[w:], sol_wall[w:], "solution"), self.stats(ref[w:], ref_wall[w:], "reference"))

    def stats(self, samples: list, walls: list, who: str) -> dict:
        timer = "cuda_event_cold_l2" if self.opts.device.startswith("cuda") else "host_perf_counter"
        stats = timing.summarize(samples, timer)
        # The fastest call seen from outside, less the fastest empty round trip: no call took less.
        bound = min(walls) if walls else 0.0
        if stats["latency_ms"] < bound:
            self.notes.append(f"the {who}'s process reported a median of {stats['latency_ms']:.4g} ms, but the "
                              f"wall clock outside it saw no call faster than {bound:.4g} ms: its samples are "
                              "raised to that bound")
            stats = timing.summarize([max(x, bound) for x in samples], "wall_clock_outside_process")
        return stats

    def run(self) -> dict:
        self.sol.ping(self.deadline, self.opts.timeout_s)
        self.ref.ping(self.deadline, self.opts.timeout_s)
        self.correctness()
        result: dict[str, Any] = {"status": "PASSED"}
        if not self.opts.correctness_only:
            sol, ref = self.timed()
            if timing.unstable(sol) or timing.unstable(ref):
                self.notes.append("the first measurement was unstable (busy host); measured again")
                sol, ref = self.timed()
                if timing.unstable(sol) or timing.unstable(ref):
                    sol["unstable"] = True
                    self.notes.append("still unstable: recorded with unstable: true, not ranked")
            sol["reference_latency_ms"] = ref["latency_ms"]
            sol["speedup_factor"] = ref["latency_ms"] / sol["latency_ms"] if sol["latency_ms"] > 0 else 0.0
            result["performance"] = sol
        result["correctness"] = self.correctness_record()
        result["log"] = "\n".join(self.notes)
        return result

    def correctness_record(self) -> dict:
        w = self.worst
        record = {"max_absolute_error": _finite(w.max_absolute_error), "max_relative_error": _finite(w.max_relative_error),
                  "matched_ratio": w.matched_ratio, "input_sets": max(self.verified, 1)}
        if w.atol is not None:
            record.update(atol=w.atol, rtol=w.rtol)
        return record


def _numel(shape: list) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _finite(x: float) -> float:
    return min(x, 1.7976931348623157e308)  # JSON has no inf


def _enough(samples: list, cfg: timing.TimingConfig, started: float) -> bool:
    n = len(samples)
    if n >= cfg.max_samples:
        return True
    if n < cfg.min_samples:
        return time.perf_counter() - started > cfg.budget_s * 4  # a very slow call: take what we have
    mean = statistics.fmean(samples)
    rse = statistics.stdev(samples) / n ** 0.5 / mean if mean > 0 else 0.0
    return rse < cfg.target_rse or time.perf_counter() - started > cfg.budget_s


def _load_message(pair: Pair, device: str, reference: bool) -> dict:
    d = pair.definition.data
    msg = {"op": "load", "device": device, "output_names": list(d["outputs"])}
    if reference:
        return {**msg, "reference": d["reference"], "name": d["name"], "dps": False}
    s = pair.solution.data
    return {**msg, "sources": s["sources"], "entry_point": s["spec"]["entry_point"],
            "dps": bool(s["spec"].get("destination_passing_style", False))}


def run_plan(plan: Plan, opts: Options, dataset_root: Path, environment: dict,
             on_outcome: Callable[[Outcome], None] = lambda o: None) -> list[Outcome]:
    """Run every pair of the plan; return the outcomes in the order they finished."""
    by_solution: dict[str, list[Pair]] = {}
    for pair in plan.pairs:
        by_solution.setdefault(pair.solution.name, []).append(pair)
    outcomes: list[Outcome] = []
    rng = random.SystemRandom()  # which timed calls are checked: nothing a solution could predict

    def finish(pair: Pair, result: dict) -> None:
        record = None
        if not opts.correctness_only:
            record = make_trace(pair, result, environment)
            s = pair.solution
            write_trace(trace_path(opts.out, s.author, pair.definition.type, pair.definition.name), record)
        outcome = Outcome(pair, result["status"], record, result.get("log") or "")
        outcomes.append(outcome)
        on_outcome(outcome)

    refs: dict[str, Remote] = {}
    spare: list[Worker] = []  # a started worker waiting for the next solution (prefetch)
    try:
        groups = list(by_solution.values())
        for k, pairs in enumerate(groups):
            definition = pairs[0].definition.name
            for name in [n for n in refs if n != definition]:  # the plan is grouped by definition
                refs.pop(name).close()
            # The last solution starts no spare: nobody would take it (one Python+torch start saved).
            _run_solution(pairs, opts, dataset_root, refs, rng, finish, spare, more=k + 1 < len(groups))
    finally:
        for ref in refs.values():
            ref.close()
        for worker in spare:
            worker.kill()
    return outcomes


def _run_solution(pairs: list[Pair], opts: Options, root: Path, refs: dict, rng, finish, spare: list,
                  more: bool = True) -> None:
    sol: Optional[Remote] = None
    definition = pairs[0].definition.name
    try:
        for i, pair in enumerate(pairs):
            try:
                if definition not in refs:
                    refs[definition] = Remote(opts, _load_message(pair, opts.device, True), "reference")
                if sol is None:
                    sol = Remote(opts, _load_message(pair, opts.device, False), "solution",
                                 spare.pop() if spare else None)
                    if opts.prefetch and more and not spare:
                        spare.append(Worker(opts.device, opts.sandbox))
                result = WorkloadRun(pair, opts, root, sol, refs[definition], rng).run()
            except ReferenceFailed as exc:
                ref = refs.pop(definition, None)  # None: the reference's worker failed before it answered once
                if ref is not None:
                    ref.worker.kill()
                result = {"status": "RUNTIME_ERROR", "log": f"the definition's reference failed: {exc.log}"}
            except Failed as exc:
                if exc.status == "COMPILE_ERROR":
                    for p in pairs[i:]:
                        finish(p, {"status": "COMPILE_ERROR", "log": exc.log})
                    return
                if exc.worker_lost and sol is not None:
                    sol.worker.kill()
                    sol = None
                result = {"status": exc.status, "log": exc.log, "correctness": exc.correctness}
            finish(pair, result)
    finally:
        if sol is not None:
            sol.close()


def warn(text: str) -> None:
    print(f"kerneltrace bench: {text}", file=sys.stderr)
