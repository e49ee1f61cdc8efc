"""Run a plan across the trust boundary: this process is trusted; solutions run sandboxed elsewhere.

For each solution a worker process is started in the sandbox (sandbox.py) and told only the
solution's sources; the definition's reference runs in a worker of its own (trusted code, in a
process no solution can reach). For each workload both workers get the workload's fixed inputs
(blobs, scalars) once, then batches of calls. Every call of every batch gets a fresh input set whose
generator seeds are drawn here from the system's random source when the batch is sent, so no input
set exists anywhere before its batch starts and none can be computed ahead from public seeds. Both
workers draw the same sets (same recipes, same device), solution and reference alternate batch by
batch, and the same rules hold for every batch:

- The calls compared (compare() runs here): the first batch, every call; later batches, every call
  when their outputs are small, else MIN_CHECKED calls drawn at random, a choice never sent to a
  worker. On CUDA a worker answers a batch with each call's time and a handle to each output, and
  this process copies the chosen calls' outputs out of its device memory as the answer arrives
  (capture.py); elsewhere it answers with a commitment to each output (a digest), and only then are
  the chosen calls revealed. A revealed output whose digest is not the committed one, or a wrong
  answer on any compared call, fails the pair.
- The outside bound: the wall clock from sending a batch to receiving its answer (and copying its
  outputs out) holds the calls and the harness's own work in the worker (drawing inputs, flushing the
  cache, digests on the CPU). The
  harness's work is the same code in both workers, so the reference's worker measures it: whatever
  the solution's batch took beyond its reported times and the reference's harness work (less a
  tolerance for noise) is charged to its calls. Patching the clock, computing before the timed
  calls or after them, on another thread or another stream, all show there.
- The physical floor: no latency below the workload's speed-of-light time on this hardware.
- Samplers are compared as distributions on every batch: a batch of a sampling definition is many
  calls on one input set; the first batch's draws (check.sampling_draws) are compared with the reference's,
  the timed batches' are pooled into one more test, and every draw must lie in the filters' support.

Everything a worker sends is untrusted (remote.py): a malformed, forged, duplicate or out-of-order
message, an exit or a hang is that pair's RUNTIME_ERROR or TIMEOUT (with the tail of its output), the
worker is killed, and a fresh one takes the remaining workloads. Failures that are not the solution's
write no trace: a reference that fails makes the pair NOT_MEASURED and the run goes on; a worker that
cannot start at all (a broken environment) stops the run (HarnessError).
"""

from __future__ import annotations

import math
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import torch

from ..model.status import TraceStatus
from . import capture, protocol, timing
from .check import (
    SAMPLES_P_VALUE,
    Verdict,
    check_support,
    chi2_sf,
    compare,
    compare_samples,
    sampling_draws,
    two_sample_chi2,
)
from .inputs import TORCH_DTYPES, _numel, input_recipes, load_blob, shape_of
from .plan import Pair, Plan
from .remote import Failed, ReferenceFailed, Remote
from .sandbox import Worker
from .store import make_trace, trace_path, write_trace

CORRECTNESS_CALLS = 3
MIN_CHECKED = 4  # calls of a later batch revealed and compared, at least (every call when outputs are small)
REVEAL_ALL_BYTES = 2**20  # reveal every call of a batch whose outputs take at most this in all
BATCH_BYTES = {"cpu": 256 * 2**20, "cuda": 4 * 2**30}  # a batch's input sets, snapshots and outputs
MAX_BATCH = 64
# Allowed beyond the harness's own work in a batch, for noise: a share of it, plus per call, plus per batch
# (a scheduler time slice of a busy 2-core host; far less on the GPU machines, which have cores to spare).
GAP_SHARE, GAP_SLACK_MS = 0.25, 0.005
BATCH_SLACK_MS = {"cpu": 5.0, "cuda": 0.1}
ELEMENTWISE = ("normal", "uniform", "randint", "bernoulli")  # independent, identically distributed elements
PREFETCH_DEPTH = 2  # workers started ahead of the solutions that will take them
NOT_MEASURED = "NOT_MEASURED"  # an outcome, never a trace status: the reference failed, not the solution


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
    floors_ms: dict = field(default_factory=dict)  # (definition, workload uuid) -> speed-of-light ms here
    deadline: Optional[float] = None  # time.monotonic() after which no new pair starts (--budget-s)
    # Diagnostics in the trace's log: every timed batch's time outside the calls on both sides, with each
    # worker's own (untrusted) account of it. For studying the harness (tests/benchmarks/bench_harness.py).
    diagnostics: bool = False
    # How outputs leave a CUDA worker: "ipc" (the trusted process copies them out of its device memory when a
    # batch ends, capture.py), "digest" (committed by hash, revealed on request: the CPU's way), or "auto" (ipc
    # where a probe on the first reference worker shows it works, else digest).
    capture: str = "auto"


@dataclass
class Outcome:
    pair: Pair
    status: str  # a TraceStatus, or NOT_MEASURED
    record: Optional[dict]  # the trace written, None in correctness-only runs
    log: str = ""  # why it did not pass (the trace's log; kept here too for correctness-only runs)
    seconds: float = 0.0  # wall time of the pair here, worker starts and loads included
    setup_s: float = 0.0  # of which starting and loading workers (the reference's and the solution's)

    @property
    def passed(self) -> bool:
        return self.status == TraceStatus.PASSED


def output_mode(opts: Options) -> str:
    """How the run took the solution's outputs (the trace's environment.outputs)."""
    return "cuda_ipc" if opts.device != "cpu" and opts.capture == "ipc" else "digest"


class WorkloadRun:
    """Everything about one (solution, workload) pair that happens in this process."""

    def __init__(self, pair: Pair, opts: Options, root: Path, solution: Remote, ref: Remote, rng: random.Random):
        self.pair, self.opts, self.root, self.solution, self.ref, self.rng = pair, opts, root, solution, ref, rng
        self.definition = pair.definition.data
        self.workload = pair.workload.data["workload"]
        self.axes = {n: a["value"] for n, a in self.definition["axes"].items() if a["type"] == "const"}
        self.axes.update(self.workload["axes"])
        self.outs = [{"name": n, "shape": list(shape_of(s, self.axes)), "dtype": s["dtype"]}
                     for n, s in self.definition["outputs"].items()]
        self.out_bytes = sum(_numel(o["shape"]) * TORCH_DTYPES[o["dtype"]].itemsize for o in self.outs)
        self.in_bytes = sum(_numel(shape_of(s, self.axes)) * TORCH_DTYPES[s["dtype"]].itemsize
                            for s in self.definition["inputs"].values())
        self.deadline = time.monotonic() + opts.timeout_s
        self.cfg = timing.TimingConfig(**opts.timing)
        self.sampling = self.definition["type"] == "sampling"
        self.draws = sampling_draws(_numel(self.outs[0]["shape"])) if self.sampling else 0  # per compared input set
        self.floor_ms = opts.floors_ms.get((pair.definition.name, pair.workload.uuid), 0.0)
        self.worst = Verdict(TraceStatus.PASSED)
        self.scalars: dict = {}
        self.pooled = (0.0, 0, 0, 0)  # a sampler's timed batches: chi-square, dof, draws, batches
        self.verified = 0
        self.batches = 0
        self.notes: list[str] = []

    # -- inputs ------------------------------------------------------------------------------------
    def workload_message(self) -> tuple[dict, bytes]:
        """The inputs that are the same in every call (scalars, blobs), sent once per pair."""
        recipes = input_recipes(self.definition, self.workload, seed=0)
        scalars = self.scalars = {n: r["value"] for n, r in recipes.items() if r["type"] == "scalar"}
        blobs = {n: load_blob(self.root, r["path"], r["tensor_key"]).to(TORCH_DTYPES[self.definition["inputs"][n]["dtype"]])
                 for n, r in recipes.items() if r["type"] == "safetensors"}
        # The reference's worker makes (and NaN-fills) output buffers too when the solution gets them, so the
        # harness work measured on it (charge) is the solution's.
        header = {"op": "workload", "order": list(recipes), "scalars": scalars, "outs": self.outs,
                  "buffers": bool(self.pair.solution.data["spec"].get("destination_passing_style"))}
        return header, protocol.pack({k: v for k, v in blobs.items() if isinstance(v, torch.Tensor)})

    def secret_call(self) -> dict:
        """One call's random input recipes, seeded from a secret drawn now."""
        seed = self.rng.getrandbits(62)
        recipes = input_recipes(self.definition, self.workload, seed=seed)
        return {"recipes": {n: r for n, r in recipes.items() if r["type"] == "random"}}

    def calls(self, n: int) -> list[dict]:
        if self.sampling:  # draws of one input set: a sample of one distribution per batch
            call = self.secret_call()
            return [call] * n
        calls = [self.secret_call() for _ in range(n)]
        # Inputs drawn element by element from one distribution (ELEMENTWISE): every call of the batch takes a
        # window at a secret offset of one stream of twice the input's size, drawn once per batch, instead of a
        # draw of its own: the same distribution, different values in every call, a fraction of the cost.
        for name, recipe in calls[0]["recipes"].items():
            if recipe["distribution"] in ELEMENTWISE and n > 1:
                numel = _numel(recipe["shape"])
                for call in calls:
                    call["recipes"][name] = {**recipe, "window": [self.rng.randrange(numel + 1), 2 * numel]}
        return calls

    # -- one batch on both sides ----------------------------------------------------------------------
    def batch(self, n: int, reveal_all: bool, solution_first: bool) -> tuple[list[float], list[float], float, float]:
        """(solution's ms per call, reference's ms per call, solution's batch wall ms, reference's) of n calls."""
        calls = self.calls(n)
        t = self.opts.timeout_s
        # The calls checked. Never sent: with a capture (CUDA IPC) they are copied out of both workers' memory
        # as each answers; else they are revealed after both committed to every output. Either way nothing in
        # the solution's process can know the choice before its answers are fixed.
        small = self.sampling or n * self.out_bytes <= REVEAL_ALL_BYTES
        chosen = list(range(n)) if reveal_all or small or n <= MIN_CHECKED else sorted(self.rng.sample(range(n), MIN_CHECKED))
        runs = {}
        for remote in ((self.solution, self.ref) if solution_first else (self.ref, self.solution)):
            runs[remote.who] = remote.batch(calls, self.deadline, t, chosen)
        self.batches += 1
        sol, ref = runs["solution"], runs["reference"]
        # A sampler's calls share one input set: the reference's worker (trusted) shows it, for the support check.
        with_inputs = chosen[:1] if self.sampling else []
        limit = len(chosen) * (2 * self.out_bytes + 4096) + (1 << 20)
        if sol.outputs is not None:
            solution_out = sol.outputs
        else:
            solution_out = self.solution.reveal(chosen, [], limit, self.deadline, t)
            self.check_commitments(chosen, solution_out, sol.digests)
        if ref.outputs is not None:
            ref_out = ref.outputs
            if with_inputs:
                shown = self.ref.reveal(with_inputs, with_inputs, limit + 2 * self.in_bytes, self.deadline, t)
                ref_out[with_inputs[0]]["in"] = shown[with_inputs[0]]["in"]
        else:
            ref_out = self.ref.reveal(chosen, with_inputs, limit + 2 * self.in_bytes * len(with_inputs), self.deadline, t)
        solution_ms, solution_wall, ref_ms, ref_wall = sol.ms, sol.wall, ref.ms, ref.wall
        how = "copied out as it answered" if sol.outputs is not None else "checked after every answer was committed"
        label = "the first batch" if reveal_all else f"batch {self.batches} (timed; {how})"
        if self.sampling:
            self.verify_draws([solution_out[i]["out"] for i in chosen], [ref_out[i]["out"] for i in chosen],
                              {**self.scalars, **ref_out[chosen[0]]["in"]}, label, reveal_all)
        else:
            for i in chosen:
                self.verify(solution_out[i]["out"], ref_out[i]["out"], f"{label}, call {i + 1} of {n}")
        return solution_ms, ref_ms, solution_wall, ref_wall

    def check_commitments(self, chosen: list[int], revealed: dict, committed: list[list[str]]) -> None:
        names = [o["name"] for o in self.outs]
        for i in chosen:
            for k, name in enumerate(names):
                value = revealed[i]["out"].get(name)
                if value is not None and protocol.digest(value) != committed[i][k]:
                    raise Failed(TraceStatus.REWARD_HACK, f"call {i + 1}: output {name!r} revealed after the batch is not the one "
                                                "committed when it ended (an answer changed after the clock stopped)",
                                 worker_lost=True)

    def verify(self, solution_out: dict, ref_out: dict, what: str) -> None:
        self.record(compare(self.definition, solution_out, ref_out, self.axes), what)

    def verify_draws(self, solution_draws: list, ref_draws: list, inputs: dict, what: str, first: bool) -> None:
        """A sampler's batch (draws on one input set): every draw in the definition's support; the first batch's
        draws (check.sampling_draws) compared with the reference's as a distribution, and every timed batch's draws
        pooled with the others' into one test at the end (timed_samples), as strong as the first batch's."""
        if first:
            self.record(compare_samples(self.definition, solution_draws, ref_draws, inputs), what)
            return
        for k, draw in enumerate(solution_draws):  # shape, dtype, range, probability and the filters (cached per input set)
            self.record(check_support(self.definition, draw, inputs), f"{what}, draw {k + 1}")
        name = next(iter(self.definition["outputs"]))
        stat, dof = two_sample_chi2(torch.stack([d[name].to(torch.int64) for d in solution_draws]),
                                    torch.stack([d[name].to(torch.int64) for d in ref_draws]))
        self.pooled = (self.pooled[0] + stat, self.pooled[1] + dof, self.pooled[2] + len(solution_draws), self.pooled[3] + 1)

    def timed_samples(self) -> None:
        stat, dof, draws, batches = self.pooled
        p_value = chi2_sf(stat, dof)
        if p_value < SAMPLES_P_VALUE:
            self.record(Verdict(TraceStatus.INCORRECT_NUMERICAL, f"the timed calls' draws ({draws} over {batches} input sets) do "
                                                       f"not follow the reference's distribution (chi-square {stat:.1f} "
                                                       f"on {dof} dof, p = {p_value:.2g})", matched_ratio=0.0),
                        "the timed batches")

    def record(self, v: Verdict, what: str) -> None:
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

    # -- the pair -----------------------------------------------------------------------------------
    def batch_size(self, first_ms: float) -> int:
        if self.sampling:  # the timed batches' draws pool into one test as strong as the first batch's (timed_samples)
            return max(16, -(-self.draws // self.cfg.min_batches))
        per_call = 2 * self.in_bytes + 2 * self.out_bytes  # input sets, their snapshots, outputs and buffers
        by_memory = BATCH_BYTES["cpu" if self.opts.device == "cpu" else "cuda"] // max(per_call, 1)
        by_time = (self.cfg.budget_s * 1e3 / 4) / max(first_ms, 1e-3)  # a few batches fit the budget
        return int(max(1, min(by_memory, by_time, MAX_BATCH, self.cfg.max_samples // self.cfg.min_batches + 1)))

    def timed(self, n: int) -> tuple[list[float], list[float]]:
        """Batches until both sides have enough samples (timing.enough) over at least cfg.min_batches
        batches, alternating who goes first; then the outside bound (charge)."""
        solution: list[list[float]] = []
        ref: list[float] = []
        solution_gaps: list[float] = []  # per call: the solution's batch time outside its reported calls
        harness: list[float] = []  # per call: the reference's batch time outside its calls (the harness's work)
        started = time.perf_counter()
        while ((len(solution) < self.cfg.min_batches and time.perf_counter() - started < self.cfg.budget_s * timing.SLOW_BUDGETS)
               or not (timing.enough([x for b in solution for x in b], self.cfg, started)
                       and timing.enough(ref, self.cfg, started))):
            s, r, s_wall, r_wall = self.batch(n, False, solution_first=self.batches % 2 == 0)
            solution_gaps.append((s_wall - sum(s)) / n)
            harness.append(max(r_wall - sum(r), 0.0) / n)
            if self.opts.diagnostics:
                phases = "/".join(f"{x:.3g}" for x in self.solution.phases) + " vs " + "/".join(f"{x:.3g}" for x in self.ref.phases)
                self.notes.append(f"diagnostics: batch {self.batches} of {n}: outside the calls {solution_gaps[-1]:.4g} vs "
                                  f"{harness[-1]:.4g} ms per call (solution vs reference); reported median "
                                  f"{statistics.median(s):.4g} vs {statistics.median(r):.4g} ms; workers' phases "
                                  f"(inputs/timed/guards/digests, ms) {phases}")
            # The first call of a batch meets threads, caches and (CUDA) a queue that sat idle while the worker
            # waited for the batch: compared like the others, its time is not a sample.
            solution.append(s[1:] or s)
            ref += r[1:] or r
        if self.sampling:
            self.timed_samples()
        return self.charge(solution, solution_gaps, harness), ref

    def charge(self, batches: list[list[float]], gaps: list[float], harness_gaps: list[float]) -> list[float]:
        """The outside bound: a batch's time per call outside the solution's reported calls, beyond the
        harness's own work there (the median over the reference's batches, plus a tolerance), is added to
        that batch's calls. The tolerance: a share of that work, a slack per call and per batch, and on a GPU
        the spread of the reference's own batches (copying and hashing large outputs there varies by
        milliseconds between batches, far more than a small kernel takes: the first H100 run charged that
        noise to 80 us kernels). Not on the CPU, where the per-batch slack covers a busy host and one slow
        reference batch must not widen the bound for all. Noise in a few batches moves the median latency
        little; work hidden in most batches beyond the tolerance is charged."""
        cpu = self.opts.device == "cpu"
        per_batch = BATCH_SLACK_MS["cpu" if cpu else "cuda"]
        harness = statistics.median(harness_gaps)
        noise = 0.0 if cpu else max(harness_gaps) - min(harness_gaps)
        out: list[float] = []
        reported: list[float] = []
        for calls, gap in zip(batches, gaps):
            allowed = harness * (1 + GAP_SHARE) + noise + GAP_SLACK_MS + per_batch / len(calls)
            out += [x + max(gap - allowed, 0.0) for x in calls]
            reported += calls
        before, after = statistics.median(reported), statistics.median(out)
        if after > before * 1.02:
            self.notes.append(f"the solution's batches took longer, outside its reported calls, than the harness's "
                              f"own work ({harness:.4g} ms per call, measured on the reference's worker): that time "
                              f"was charged to their calls (median {before:.4g} ms reported, {after:.4g} ms charged)")
        return out

    def run(self) -> dict:
        header, payload = self.workload_message()
        for remote in (self.solution, self.ref):
            remote.workload(header, payload, self.deadline, self.opts.timeout_s)
        # The first batch: every call compared; its times (compilation, autotuning, first touches) are dropped.
        first = self.draws if self.sampling else CORRECTNESS_CALLS
        s, r, _, _ = self.batch(first, True, solution_first=True)
        result: dict[str, Any] = {"status": TraceStatus.PASSED}
        if not self.opts.correctness_only:
            n = self.batch_size(max(statistics.median(s), statistics.median(r)))
            solution, ref = self.stats(*self.timed(n))
            if timing.unstable(solution) or timing.unstable(ref):
                self.notes.append("the first measurement was unstable (busy host); measured again")
                solution, ref = self.stats(*self.timed(n))
                if timing.unstable(solution) or timing.unstable(ref):
                    solution["unstable"] = True
                    self.notes.append("still unstable: recorded with unstable: true, not ranked")
            solution["reference_latency_ms"] = ref["latency_ms"]
            solution["speedup_factor"] = ref["latency_ms"] / solution["latency_ms"] if solution["latency_ms"] > 0 else 0.0
            result["performance"] = solution
        result["correctness"] = self.correctness_record()
        result["log"] = "\n".join(self.notes)
        return result

    def stats(self, solution: list[float], ref: list[float]) -> tuple[dict, dict]:
        timer = "cuda_event_cold_l2" if self.opts.device.startswith("cuda") else "host_perf_counter"
        if self.floor_ms and min(solution) < self.floor_ms:
            self.notes.append(f"reported calls below the speed-of-light time of this workload here "
                              f"({self.floor_ms:.4g} ms) were raised to it")
            solution = [max(x, self.floor_ms) for x in solution]
        return timing.summarize(solution, timer), timing.summarize(ref, timer)

    def correctness_record(self) -> dict:
        w = self.worst
        record = {"max_absolute_error": _finite(w.max_absolute_error), "max_relative_error": _finite(w.max_relative_error),
                  "matched_ratio": w.matched_ratio, "input_sets": max(self.verified, 1)}
        if w.atol is not None:
            record.update(atol=w.atol, rtol=w.rtol)
        return record


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 1.7976931348623157e308  # JSON has no inf


def _load_message(pair: Pair, opts: Options, reference: bool) -> dict:
    d = pair.definition.data
    msg = {"op": "load", "device": opts.device, "output_names": list(d["outputs"]),
           "warmup_ms": timing.TimingConfig(**opts.timing).warmup_ms}
    if reference:
        return {**msg, "reference": d["reference"], "name": d["name"], "dps": False}
    s = pair.solution.data
    return {**msg, "sources": s["sources"], "entry_point": s["spec"]["entry_point"],
            "dps": bool(s["spec"].get("destination_passing_style", False))}


def run_plan(plan: Plan, opts: Options, dataset_root: Path, environment: dict,
             on_outcome: Callable[[Outcome], None] = lambda o: None) -> list[Outcome]:
    """Run every pair of the plan; return the outcomes in the order they finished."""
    groups: list[list[Pair]] = []  # consecutive pairs of one solution share its worker
    for pair in plan.pairs:
        if groups and groups[-1][0].solution.name == pair.solution.name:
            groups[-1].append(pair)
        else:
            groups.append([pair])
    outcomes: list[Outcome] = []
    rng = random.SystemRandom()  # input seeds and checked calls: nothing a solution could predict

    def finish(pair: Pair, result: dict, seconds: float = 0.0, setup_s: float = 0.0) -> None:
        record = None
        if not opts.correctness_only and result["status"] != NOT_MEASURED:
            record = make_trace(pair, result, {**environment, "outputs": output_mode(opts)})
            s = pair.solution
            write_trace(trace_path(opts.out, s.author, pair.definition.type, pair.definition.name), record)
        outcome = Outcome(pair, result["status"], record, result.get("log") or "", seconds, setup_s)
        outcomes.append(outcome)
        on_outcome(outcome)

    refs: dict[str, Remote] = {}  # the reference's worker, by the definition it holds now (one at a time)
    spare: list[Worker] = []  # a started worker waiting for the next solution (prefetch)
    try:
        for k, pairs in enumerate(groups):
            # The last solution starts no spare: nobody would take it (one Python+torch start saved).
            _run_solution(pairs, opts, dataset_root, refs, rng, finish, spare, more=k + 1 < len(groups))
    finally:
        for ref in refs.values():
            ref.close()
        for worker in spare:
            worker.kill()
    return outcomes


def _reference(refs: dict, load: dict, opts: Options) -> Remote:
    """The reference's worker for `load`: the one already started, told to load it (one Python and torch
    start per run), or a new one."""
    for name in list(refs):
        remote = refs.pop(name)
        remote.load(load, opts)
        return remote
    remote = Remote(opts, load, "reference")
    if opts.capture == "auto" and opts.device != "cpu":  # decided once per run, on trusted code's worker
        why = remote.probe_capture(opts.device)
        opts.capture = "digest" if why else "ipc"
        if why:
            print(f"kerneltrace bench: outputs are committed by digest, not copied out of the workers' device "
                  f"memory (CUDA IPC did not work here: {why}); the outside bound is looser for large outputs",
                  file=sys.stderr)
    capture.attach(remote, opts)
    return remote


def _run_solution(pairs: list[Pair], opts: Options, root: Path, refs: dict, rng, finish, spare: list,
                  more: bool = True) -> None:
    solution: Optional[Remote] = None
    definition = pairs[0].definition.name
    try:
        for i, pair in enumerate(pairs):
            if opts.deadline is not None and time.monotonic() > opts.deadline:
                return  # the run's time budget is spent: the rest is for a --resume
            started = ready = time.monotonic()
            try:
                if solution is None and not spare and definition not in refs:
                    spare.append(Worker(opts.device, opts.sandbox))  # starts while the reference's worker does
                if definition not in refs:
                    refs[definition] = _reference(refs, _load_message(pair, opts, True), opts)
                if solution is None:
                    solution = Remote(opts, _load_message(pair, opts, False), "solution",
                                      spare.pop() if spare else None)
                    capture.attach(solution, opts)
                    while opts.prefetch and more and len(spare) < PREFETCH_DEPTH:
                        spare.append(Worker(opts.device, opts.sandbox))
                ready = time.monotonic()
                result = WorkloadRun(pair, opts, root, solution, refs[definition], rng).run()
            except ReferenceFailed as exc:
                # Not the solution's failure: the pair is not measured and gets no trace; the run goes on.
                ref = refs.pop(definition, None)
                if ref is not None:
                    ref.kill()
                if exc.worker_lost is False and solution is not None:  # the solution's batch may be half answered
                    solution.kill()
                    solution = None
                if exc.capture_broken:
                    capture.give_up(opts, solution)
                result = {"status": NOT_MEASURED, "log": f"the definition's reference failed ({exc.status}): {exc.log}"}
            except Failed as exc:
                if exc.status == TraceStatus.COMPILE_ERROR:
                    for p in pairs[i:]:
                        finish(p, {"status": TraceStatus.COMPILE_ERROR, "log": exc.log})
                    return
                if exc.worker_lost and solution is not None:
                    solution.kill()
                    solution = None
                result = {"status": exc.status, "log": exc.log, "correctness": exc.correctness}
            finish(pair, result, time.monotonic() - started, ready - started)
    finally:
        if solution is not None:
            solution.close()
