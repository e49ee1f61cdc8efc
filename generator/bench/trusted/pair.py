"""One (solution, workload) pair, measured from this (trusted) process: its batches, checks and numbers.

The solution's worker and the reference's (runner.py starts them) get the workload's fixed inputs
(blobs, scalars) once, then batches of calls. Every call of every batch gets a fresh input set whose
generator seeds are drawn here from the system's random source when the batch is sent, so no input
set exists anywhere before its batch starts and none can be computed ahead from public seeds. Both
workers draw the same sets (same recipes, same device), solution and reference alternate batch by
batch, and the same rules hold for every batch:

- The calls compared (compare() runs here): the first batches (run()), every call; later batches, every
  call when their outputs are small or they hold MIN_CHECKED calls or fewer, else MIN_CHECKED calls
  drawn at random, a choice never sent to a worker. On CUDA a worker answers a batch with each call's time and a handle to each output, and
  this process copies the chosen calls' outputs out of its device memory as the answer arrives
  (capture.py); elsewhere, where every call is compared, the outputs come with its answer, and else
  it answers with a commitment to each output (a digest), and only then are the chosen calls
  revealed. A revealed output whose digest is not the committed one, or a wrong
  answer on any compared call, fails the pair.
- The outside bound: the wall clock from sending a batch to receiving its answer (and copying its
  outputs out) holds the calls and the harness's own work in the worker (drawing inputs, flushing the
  cache, digests or outputs on the CPU). The harness's work is the same code in both workers, so the
  reference's worker measures it: whatever the solution's batch took beyond n times its median call,
  the reference's harness work and its calls' spread (less a tolerance for noise) is charged to its
  calls. Patching the clock, computing before the timed calls or after them, on another thread or
  another stream, or the whole batch's answers in one call (its inputs are all drawn before the
  first), all show there.
- The physical floor: no latency below the workload's speed-of-light time on this hardware.
- How the compared calls are judged is the pair's evaluator's (evaluate.py), chosen once: element by element, or,
  for samplers, as distributions on every batch (the first, untimed, many calls on one input set; the timed
  batches' draws as ranks pooled into one more test).
"""

from __future__ import annotations

import math
import random
import statistics
import time
from pathlib import Path
from typing import Any, Optional

import torch

from ...model.stability import batches_jump
from ...model.status import TraceStatus
from ..shared import protocol
from ..shared.inputs import SEEDLESS, TORCH_DTYPES, count_elements, draw, input_recipes, load_blob, shape_of
from . import cpufloor, outside, samples
from .check import Verdict
from .evaluate import evaluator_for
from .options import Options, timing_for
from .plan import Pair
from .remote import Failed, Remote

CORRECTNESS_CALLS = 3
MIN_CHECKED = 4  # calls of a later batch revealed and compared, at least (every call when outputs are small)
REVEAL_ALL_BYTES = 2**20  # reveal every call of a batch whose outputs take at most this in all
BATCH_BYTES = {"cpu": 256 * 2**20, "cuda": 4 * 2**30}  # a batch's input sets, snapshots and outputs
MAX_BATCH = 64
# Allowed beyond the harness's own work in a batch, for noise: a share of it, plus per call, plus per batch
# (a scheduler time slice of a busy 2-core host; far less on the GPU machines, which have cores to spare).
GAP_SHARE, GAP_SLACK_MS = 0.25, 0.005
BATCH_SLACK_MS = {"cpu": 5.0, "cuda": 0.1}
MIN_CALL_MS = 1e-5  # 10 ns: the least any call takes (an empty Python call takes ~50 ns), with or without a spec


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
        self.out_bytes = sum(count_elements(o["shape"]) * TORCH_DTYPES[o["dtype"]].itemsize for o in self.outs)
        self.in_bytes = sum(count_elements(shape_of(s, self.axes)) * TORCH_DTYPES[s["dtype"]].itemsize
                            for s in self.definition["inputs"].values())
        self.deadline = time.monotonic() + opts.timeout_s
        self.cfg = timing_for(opts.device, opts.timing)
        self.floor_ms = opts.floors_ms.get((pair.definition.name, pair.workload.uuid), 0.0)
        self.worst = Verdict(TraceStatus.PASSED)
        self.scalars: dict = {}
        self.verified = 0
        self.batches = 0
        self.blob_rows = self.rows_of_blobs()
        self.jumped = False  # the last timed() saw a jump between its batches (stability.batches_jump)
        self.marked: tuple = (None, None)  # the last batch's (solution, reference) answers, with their marks
        self.notes: list[str] = []
        self.evaluator = evaluator_for(self)  # element by element, or a sampler's distributions (evaluate.py)

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
        """One call's random input recipes, seeded from a secret drawn now; for a definition whose tensors are all
        blobs over one leading axis (captured routings: moe_align_block_size_*, moe_pack_bitmatrix_*), the secret
        order of that axis's rows for this call instead: the same tokens in another order, a fresh input every call."""
        seed = self.rng.getrandbits(62)
        recipes = input_recipes(self.definition, self.workload, seed=seed)
        call = {"recipes": {n: r for n, r in recipes.items() if r["type"] == "random"}}
        if self.blob_rows:
            call["rows"] = {"seed": seed, "inputs": self.blob_rows}
        return call

    def rows_of_blobs(self) -> list[str]:
        """The blob inputs whose rows each call takes in a fresh order: all of them, where every tensor input is a blob
        and they share their leading axis (else none: a random input already makes each call fresh)."""
        given = self.workload["inputs"]
        tensors = {n: s for n, s in self.definition["inputs"].items() if s.get("shape")}
        if not tensors or any(given[n]["type"] != "safetensors" for n in tensors):
            return []
        leading = {s["shape"][0] for s in tensors.values()}
        return sorted(tensors) if len(leading) == 1 else []

    def calls(self, n: int, one_set: bool = False) -> list[dict]:
        """n calls, each with an input set of its own, drawn from its own secret seed (by the workers, just before
        that call): no call's inputs overlap another's or exist before it. `one_set`: a sampler's first, untimed
        batch, many draws on one input set (compare_samples needs them); its times are dropped."""
        if one_set:
            return [self.secret_call()] * n
        return [self.secret_call() for _ in range(n)]

    @staticmethod
    def drawn(calls: list[dict]) -> list[bytes]:
        """Each call's random tensors, drawn here before the batch and packed (the CPU: each is sent to a worker when
        the call before has ended, remote.py), once per input set: drawing them in the workers was most of the
        harness's CPU time there, which the CPU-time floor subtracts as measured on the reference's, so most of
        the noise it must allow for."""
        out: list[bytes] = []
        seedless: dict = {}  # the same values for every seed (a rope cos/sin cache): drawn once, sent to every call

        def one(name: str, recipe: dict):
            if recipe["distribution"] not in SEEDLESS:
                return draw(recipe)
            if name not in seedless:
                seedless[name] = draw(recipe)
            return seedless[name]
        for i, call in enumerate(calls):
            repeated = i and call is calls[i - 1]
            out.append(out[-1] if repeated else protocol.pack({n: one(n, r) for n, r in call["recipes"].items()}))
        return out

    # -- one batch on both sides ----------------------------------------------------------------------
    def batch(self, n: int, reveal_all: bool, solution_first: bool) -> tuple[list[float], list[float], float, float]:
        """(solution's ms per call, reference's ms per call, solution's batch wall ms, reference's) of n calls."""
        judge = self.evaluator
        calls = self.calls(n, one_set=judge.one_set(reveal_all))
        t = self.opts.timeout_s
        # The calls checked. Never sent: with a capture (CUDA IPC) they are copied out of both workers' memory
        # as each answers; else they are revealed after both committed to every output. Either way nothing in
        # the solution's process can know the choice before its answers are fixed.
        small = judge.reveals_every_call or n * self.out_bytes <= REVEAL_ALL_BYTES
        every = reveal_all or small or n <= MIN_CHECKED
        chosen = list(range(n)) if every else sorted(self.rng.sample(range(n), MIN_CHECKED))
        with_inputs = judge.shown_inputs(chosen, reveal_all)
        limit = len(chosen) * (2 * self.out_bytes + 4096) + (1 << 20)
        marks = self.opts.device == "cpu"
        drawn = self.drawn(calls) if marks else ()
        runs = {}
        for remote in ((self.solution, self.ref) if solution_first else (self.ref, self.solution)):
            # Every call compared: no choice to hide, so the outputs come with the answer (no digests, no reveal).
            runs[remote.who] = remote.batch(calls, self.deadline, t, chosen, inline=limit if every else 0,
                                            marks=marks, drawn=drawn)
        self.batches += 1
        sol, ref = runs["solution"], runs["reference"]
        self.marked = (sol, ref)
        if sol.outputs is not None:
            solution_out = sol.outputs
        else:
            solution_out = self.solution.reveal(chosen, [], limit, self.deadline, t)
            self.check_commitments(chosen, solution_out, sol.digests)
        if ref.outputs is not None:
            ref_out = ref.outputs
            if with_inputs:  # asked for after the answer, not with it: the bound's measure of the harness stays the solution's
                shown = self.ref.reveal(with_inputs, with_inputs, limit + 2 * self.in_bytes * len(with_inputs),
                                        self.deadline, t)
                for i in with_inputs:
                    ref_out[i]["in"] = shown[i]["in"]
        else:
            ref_out = self.ref.reveal(chosen, with_inputs, limit + 2 * self.in_bytes * len(with_inputs), self.deadline, t)
        solution_ms, solution_wall, ref_ms, ref_wall = sol.ms, sol.wall, ref.ms, ref.wall
        how = "copied out as it answered" if sol.outputs is not None else "checked after every answer was committed"
        label = "the first batch" if reveal_all else f"batch {self.batches} (timed; {how})"
        judge.verify(solution_out, ref_out, chosen, label, n, reveal_all)
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
        fixed = self.evaluator.batch_size(self.cfg.min_batches)
        if fixed is not None:
            return fixed
        per_call = 2 * self.in_bytes + 2 * self.out_bytes  # input sets, their snapshots, outputs and buffers
        by_memory = BATCH_BYTES["cpu" if self.opts.device == "cpu" else "cuda"] // max(per_call, 1)
        by_time = (self.cfg.budget_s * 1e3 / 4) / max(first_ms, 1e-3)  # a few batches fit the budget
        return int(max(1, min(by_memory, by_time, MAX_BATCH, self.cfg.max_samples // self.cfg.min_batches + 1)))

    def timed(self, n: int) -> tuple[list[float], list[float]]:
        """Batches until both sides have enough samples (samples.enough) over at least cfg.min_batches
        batches, alternating who goes first; then the outside bound (charge)."""
        solution: list[list[float]] = []
        ref: list[float] = []
        ref_batches: list[list[float]] = []
        # Per call: the solution's batch time beyond its median call (outside its reported calls, or inside a few of
        # them: work for the whole batch done in one call, on inputs the batch drew ahead, moves no median).
        solution_gaps: list[float] = []
        harness: list[float] = []  # per call: the reference's batch time outside its calls (the harness's work)
        spread: list[float] = []  # the reference's calls' time beyond its median call, a share of that median
        marked: list[tuple] = []  # the CPU, per batch: (solution's call intervals, its ms, reference's, its ms)
        turns: list[tuple] = []  # per batch: (solution's, reference's) cpufloor.Turn, or None without a CPU count
        started = time.perf_counter()
        # Two batches a side at least, however slow the calls: one batch cannot show a host that stalled it (a jump).
        while (len(solution) < 2 or (len(solution) < self.cfg.min_batches and time.perf_counter() - started < self.cfg.budget_s * samples.SLOW_BUDGETS)
               or not (samples.enough([x for b in solution for x in b], self.cfg, started)
                       and samples.enough(ref, self.cfg, started))):
            s, r, s_wall, r_wall = self.batch(n, False, solution_first=self.batches % 2 == 0)
            solution_gaps.append((s_wall - n * statistics.median(s)) / n)
            sol_batch, ref_batch = self.marked
            if sol_batch.marks and ref_batch.marks:
                marked.append((outside.call_intervals(sol_batch.marks), s, outside.call_intervals(ref_batch.marks), r))
            turns.append(_turns(sol_batch, ref_batch))
            harness.append(max(r_wall - sum(r), 0.0) / n)
            spread.append(max(sum(r) / n / max(statistics.median(r), 1e-9) - 1, 0.0))
            if self.opts.diagnostics:
                phases = "/".join(f"{x:.3g}" for x in self.solution.phases) + " vs " + "/".join(f"{x:.3g}" for x in self.ref.phases)
                self.notes.append(f"diagnostics: batch {self.batches} of {n}: beyond the median call {solution_gaps[-1]:.4g} vs "
                                  f"{harness[-1]:.4g} ms per call (solution vs reference); reported median "
                                  f"{statistics.median(s):.4g} vs {statistics.median(r):.4g} ms; workers' phases "
                                  f"(inputs/timed/guards/digests, ms) {phases}")
            # The first call of a batch meets threads, caches and (CUDA) a queue that sat idle while the worker
            # waited for the batch: compared like the others, its time is not a sample.
            solution.append(s[1:] or s)
            ref_batches.append(r[1:] or r)
            ref += ref_batches[-1]
        self.evaluator.after_timed()
        charged = self.charge(solution, solution_gaps, harness, spread)
        if marked and len(marked) == len(solution):
            charged = self.charge_calls(marked, charged)
        if self.opts.device == "cpu":
            charged = self.charge_cpu(solution, turns, charged)
        # Per batch (charged, as ranked): a host that stalled one batch shows as a jump between them (stability.py).
        k, sol_medians = 0, []
        for calls in solution:
            sol_medians.append(statistics.median(charged[k:k + len(calls)]))
            k += len(calls)
        ref_medians = [statistics.median(r) for r in ref_batches]
        self.jumped = batches_jump(sol_medians, ref_medians, [a / max(b, 1e-9) for a, b in zip(sol_medians, ref_medians)])
        return charged, ref

    def charge(self, batches: list[list[float]], gaps: list[float], harness_gaps: list[float],
               spreads: list[float] = ()) -> list[float]:
        """The outside bound: a batch's time per call beyond the solution's median call (outside its calls, or
        concentrated in a few), beyond the harness's own work there and the spread of calls around their
        median (both measured on the reference's batches, the spread as a share of its median call, plus a
        tolerance), is added to that batch's calls. The tolerance: a share of both, a slack per call and per batch, and on a GPU
        the spread of the reference's own batches (copying and hashing large outputs there varies by
        milliseconds between batches, far more than a small kernel takes: the first H100 run charged that
        noise to 80 us kernels). Not on the CPU, where the per-batch slack covers a busy host and one slow
        reference batch must not widen the bound for all. Noise in a few batches moves the median latency
        little; work hidden in most batches beyond the tolerance is charged."""
        cpu = self.opts.device == "cpu"
        per_batch = BATCH_SLACK_MS["cpu" if cpu else "cuda"]
        harness = statistics.median(harness_gaps)
        noise = 0.0 if cpu else max(harness_gaps) - min(harness_gaps)
        spread = statistics.median(spreads) if spreads else 0.0
        out: list[float] = []
        reported: list[float] = []
        for calls, gap in zip(batches, gaps):
            allowed = ((harness + spread * statistics.median(calls)) * (1 + GAP_SHARE) + noise + GAP_SLACK_MS
                       + per_batch / len(calls))
            out += [x + max(gap - allowed, 0.0) for x in calls]
            reported += calls
        _note_charged(self.notes, reported, out, f"the solution's batches took longer than their median call allows, "
                      f"beyond the harness's own work ({harness:.4g} ms per call, measured on the reference's worker): "
                      "that time was charged to their calls")
        return out

    def charge_calls(self, marked: list[tuple], charged: list[float]) -> list[float]:
        """The per-call outside bound (outside.py) over the batch bound: each call the larger of the two, both
        being at least what the outside showed beyond their tolerances."""
        cost = outside.mark_cost([(ref_intervals, ref_ms) for _, _, ref_intervals, ref_ms in marked])
        per_call: list[float] = []
        for intervals, ms, _, _ in marked:
            c = outside.charged(ms, intervals, cost)
            per_call += c[1:] or c  # as the samples: a batch's first call is not one
        out = [max(a, b) for a, b in zip(charged, per_call)]
        _note_charged(self.notes, charged, out, f"the solution's calls took longer, as this process saw them from "
                      f"outside, than its clock reported (beyond the marks' own cost, {cost:.4g} ms a call on the "
                      "reference's worker): charged to them")
        return out

    def charge_cpu(self, samples: list[list[float]], turns: list[tuple], charged: list[float]) -> list[float]:
        """The CPU-time floor (cpufloor.py) over the other bounds: each call the larger. Where the workers' CPU time
        cannot be counted, the log says the floor was not applied."""
        if not turns or None in turns:
            why = self.solution.worker.cpu_why or self.ref.worker.cpu_why
            if cpufloor.not_applied(why) not in self.notes:
                self.notes.append(cpufloor.not_applied(why))
            return charged
        sol, ref = [t[0] for t in turns], [t[1] for t in turns]
        out = [max(a, b) for a, b in zip(charged, cpufloor.charged(samples, sol, ref))]
        cpu = cpufloor.harness(ref)
        _note_charged(self.notes, charged, out, f"the solution's sandbox used more CPU time in its batches than its "
                      f"calls reported (beyond the harness's own, {cpu:.4g} ms a call on the reference's worker; "
                      f"median floor {statistics.median(cpufloor.floors(sol, ref)):.4g} ms a call, by its second "
                      f"thread {statistics.median(cpufloor.helper_floors(sol, ref)):.4g}; host load "
                      f"{cpufloor.load(sol):.2f}): raised to the CPU-time floor")
        return out

    def run(self) -> dict:
        header, payload = self.workload_message()
        for remote in (self.solution, self.ref):
            remote.workload(header, payload, self.deadline, self.opts.timeout_s)
        # The first batches: every call compared; their times (compilation, autotuning, first touches) are dropped.
        # One call first: where the reference's (trusted code, compiled by nobody) shows the calls are slow enough
        # that timed batches hold one call each (batch_size), those batches compare every call and do the rest of
        # the checking (two calls a side fewer for the slowest pairs); else CORRECTNESS_CALLS calls in all.
        fresh, self.solution.fresh = getattr(self.solution, "fresh", False), False
        s, r, _, _ = self.batch(self.evaluator.first_calls, True, solution_first=True)
        # The first call (a compile, a JIT, autotuning where it follows the load): informational, never ranked.
        first = {"first_call_ms": max(float(s[0]), 0.0), "first_call_after_load": fresh}
        if self.evaluator.more_correctness_calls and (r[0] < self.cfg.budget_s * 1e3 / 4 or self.opts.correctness_only):
            s, r, _, _ = self.batch(CORRECTNESS_CALLS - 1, True, solution_first=True)
        result: dict[str, Any] = {"status": TraceStatus.PASSED}
        if not self.opts.correctness_only:
            n = self.batch_size(max(statistics.median(s), statistics.median(r)))
            solution, ref = self.stats(*self.timed(n))
            if self.disturbed(solution, ref):
                self.notes.append(f"the first measurement was {self.disturbed(solution, ref)} (busy host); measured again")
                solution, ref = self.stats(*self.timed(n))
                if self.disturbed(solution, ref):
                    solution["unstable"] = True
                    self.notes.append(f"still {self.disturbed(solution, ref)}: recorded with unstable: true, not ranked")
            solution["reference_latency_ms"] = ref["latency_ms"]
            solution["speedup_factor"] = ref["latency_ms"] / solution["latency_ms"] if solution["latency_ms"] > 0 else 0.0
            result["performance"] = {**solution, **first}
        result["correctness"] = self.correctness_record()
        result["log"] = "\n".join(self.notes)
        return result

    def disturbed(self, solution: dict, ref: dict) -> str:
        """Why the last measurement cannot be ranked ("" if it can): the one rule, model/stability.py."""
        if samples.unstable(solution) or samples.unstable(ref):
            return "unstable"
        return "disturbed (a jump between its batches)" if self.jumped else ""

    def stats(self, solution: list[float], ref: list[float]) -> tuple[dict, dict]:
        timer = "cuda_event_cold_l2" if self.opts.device.startswith("cuda") else "host_perf_counter"
        if self.floor_ms and min(solution) < self.floor_ms:
            self.notes.append(f"reported calls below the speed-of-light time of this workload here "
                              f"({self.floor_ms:.4g} ms) were raised to it")
            solution = [max(x, self.floor_ms) for x in solution]
        if min(solution) < MIN_CALL_MS:  # hardware without a spec has no floor: a 5e-324 ms call made the speedup inf
            self.notes.append(f"reported calls below {MIN_CALL_MS:g} ms (no call returns faster) were raised to it")
            solution = [max(x, MIN_CALL_MS) for x in solution]
        return samples.summarize(solution, timer), samples.summarize(ref, timer)

    def correctness_record(self) -> dict:
        w = self.worst
        record = {"max_absolute_error": _finite(w.max_absolute_error), "max_relative_error": _finite(w.max_relative_error),
                  "matched_ratio": w.matched_ratio, "input_sets": max(self.verified, 1)}
        if w.atol is not None:
            record.update(atol=w.atol, rtol=w.rtol)
        return record


def _turns(sol, ref) -> Optional[tuple]:
    """One batch's (solution's, reference's) cpufloor.Turn, or None where either worker's CPU was not counted."""
    if sol.used is None or ref.used is None or ref.used.calls is None:
        return None
    return (cpufloor.Turn(sol.ms, sol.used.cpu, sol.used.serial, None, sol.used.second, sol.used.others),
            cpufloor.Turn(ref.ms, ref.used.cpu, ref.used.serial, ref.used.calls, ref.used.second, ref.used.others))


def _note_charged(notes: list[str], before: list[float], after: list[float], why: str) -> None:
    """Say so in the log where a bound moved the median by more than 2 %."""
    b, a = statistics.median(before), statistics.median(after)
    if a > b * 1.02:
        notes.append(f"{why} (median {b:.4g} ms reported, {a:.4g} ms charged)")


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 1.7976931348623157e308  # JSON has no inf
