"""Run a plan across the trust boundary: this process is trusted; solutions run sandboxed elsewhere.

Solutions run in sandboxed worker processes (sandbox.py) told only their sources; one worker serves an
author's consecutive solutions, never two authors' (what one solution leaves in it can only reach
another of its author's, code that author could have written into it). The author is the folder the dataset
layout stores the solution in (plan.worker_owner), never its `author` field: a file claiming another author's
name is refused (plan.claimed_author), and the earlier solution's folder is gone before the next loads. References run in a worker of
their own (trusted code, in a process no solution can reach), one per run, told to load each
definition's reference in turn. Each pair is measured by pair.py.

Everything a worker sends is untrusted (remote.py): a malformed, forged, duplicate or out-of-order
message, an exit or a hang is that pair's RUNTIME_ERROR or TIMEOUT (with the tail of its output), the
worker is killed, and a fresh one takes the remaining workloads. Failures that are not the solution's
write no trace: a reference that fails makes the pair NOT_MEASURED and the run goes on; a worker that
cannot start at all (a broken environment) stops the run (HarnessError).
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ...model.status import NOT_MEASURED, TraceStatus
from . import capture
from .options import Options, timing_for
from .pair import WorkloadRun
from .plan import Pair, Plan, worker_owner
from .remote import Failed, ReferenceFailed, Remote
from .sandbox import Worker
from .store import make_trace, trace_path, write_trace

PREFETCH_DEPTH = 2  # workers started ahead of the solutions that will take them


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


def _load_message(pair: Pair, opts: Options, reference: bool) -> dict:
    d = pair.definition.data
    msg = {"op": "load", "device": opts.device, "output_names": list(d["outputs"]),
           "warmup_ms": timing_for(opts.device, opts.timing).warmup_ms}
    if reference:
        return {**msg, "reference": d["reference"], "name": d["name"], "dps": False}
    s = pair.solution.data
    return {**msg, "sources": s["sources"], "entry_point": s["spec"]["entry_point"],
            "dps": bool(s["spec"].get("destination_passing_style", False))}


def run_plan(plan: Plan, opts: Options, dataset_root: Path, environment: dict,
             on_outcome: Callable[[Outcome], None] = lambda o: None, started: Optional[list[Worker]] = None) -> list[Outcome]:
    """Run every pair of the plan; return the outcomes in the order they finished. `started`: workers the
    caller started ahead (while it loaded the dataset); the first becomes the reference's."""
    groups: list[list[Pair]] = []  # consecutive pairs of one solution share its worker
    for pair in plan.pairs:
        if groups and groups[-1][0].solution.name == pair.solution.name:
            groups[-1].append(pair)
        else:
            groups.append([pair])
    authors = [worker_owner(g[0].solution) for g in groups]  # the author folder: a file cannot claim another's worker
    # Fresh solution workers the groups after each one need: one per change of author (a worker is reused for
    # the next solution of the same author; make_plan orders pairs by author).
    switches = [sum(a != b for a, b in zip(authors[k:], authors[k + 1:])) for k in range(len(groups))]
    outcomes: list[Outcome] = []
    rng = random.SystemRandom()  # input seeds and checked calls: nothing a solution could predict

    def finish(pair: Pair, result: dict, seconds: float = 0.0, setup_s: float = 0.0) -> None:
        record = None
        if not opts.correctness_only and result["status"] != NOT_MEASURED:
            record = make_trace(pair, result, {**environment, "outputs": output_mode(opts)})
            s = pair.solution
            write_trace(trace_path(opts.out, s.author, pair.definition.type, pair.definition.name), record)
        status, log = result["status"], result.get("log") or ""
        if record is not None:  # what was stored (store.storable may have refused a timing as a measurement)
            status, log = record["evaluation"]["status"], record["evaluation"]["log"]
        outcome = Outcome(pair, status, record, log, seconds, setup_s)
        outcomes.append(outcome)
        on_outcome(outcome)

    def skip(pair: Pair, why: str) -> None:  # listed with the plan's skips (not started, no trace)
        plan.pairs.remove(pair)
        plan.skipped.append((f"{pair.solution.name} on {pair.workload.uuid[:8]} {dict(pair.workload.axes)}", why))

    refs: dict[str, Remote] = {}  # the reference's worker, by the definition it holds now (one at a time)
    started = list(started or [])
    fresh = started[:1]  # a started worker for the reference's first start
    spare: list[Worker] = started[1:]  # started workers waiting for the next solutions (prefetch)
    held: dict[str, Remote] = {}  # the solution worker of the author whose solutions run now
    try:
        for k, pairs in enumerate(groups):
            for author in [a for a in held if a != authors[k]]:  # never shared across authors
                held.pop(author).close()
            # The last author's solutions start no spare: nobody would take it (one Python+torch start saved).
            _run_solution(pairs, opts, dataset_root, refs, rng, finish, spare, held, fresh, more=switches[k], skip=skip)
    finally:
        for remote in [*refs.values(), *held.values()]:
            remote.close()
        for worker in spare + fresh:
            worker.kill()
    return outcomes


def _reference(refs: dict, load: dict, opts: Options, fresh: list) -> Remote:
    """The reference's worker for `load`: the one already started, told to load it (one Python and torch
    start per run), or a new one (`fresh`: a worker started ahead, if any)."""
    for name in list(refs):
        remote = refs.pop(name)
        remote.load(load, opts)
        return remote
    remote = Remote(opts, load, "reference", fresh.pop() if fresh else None)
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
                  held: dict, fresh: list, more: int = 1, skip: Callable[[Pair, str], None] = lambda p, why: None) -> None:
    """Run one solution's pairs, in the worker its author's last solution left in `held` if there is one
    (and leave its worker there); `more`: fresh solution workers the later solutions will need. A solution that
    runs past the timeout on one workload is not run on the others (`skip`): a hang costs one timeout, not one per
    workload of a GPU window."""
    author = worker_owner(pairs[0].solution)
    solution: Optional[Remote] = held.pop(author, None)
    reload = solution is not None  # a worker of this author's: it loads this solution before the first pair
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
                    refs[definition] = _reference(refs, _load_message(pair, opts, True), opts, fresh)
                if reload:
                    reload, reused, solution = False, solution, None
                    reused.load(_load_message(pair, opts, False), opts)  # a failure kills it (Failed)
                    solution = reused
                if solution is None:
                    solution = Remote(opts, _load_message(pair, opts, False), "solution",
                                      spare.pop() if spare else None)
                    capture.attach(solution, opts)
                    while opts.prefetch and len(spare) < min(PREFETCH_DEPTH, more):
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
            if result["status"] == TraceStatus.TIMEOUT:
                for p in pairs[i + 1:]:
                    skip(p, f"not run: {pair.solution.name} ran past the {opts.timeout_s:g} s timeout on workload "
                            f"{pair.workload.uuid} earlier in this run")
                return
    finally:
        if solution is not None:
            held[author] = solution
