"""Run a plan: one worker process per solution, a timeout per workload, one trace appended per pair.

The parent never imports a solution. It starts `python -m generator.bench.worker` with a job file,
follows the worker's result file, and turns every outcome into a trace: a result line as it is, a
compile failure into COMPILE_ERROR for each workload, a crash into RUNTIME_ERROR for the workload the
worker was on (with the tail of its log), a workload that runs past the timeout into TIMEOUT (the
worker's process group is killed). After a crash or a timeout a new worker takes the remaining
workloads, so one bad pair never costs the others.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .plan import Pair, Plan
from .store import append_line, trace_path

LOG_TAIL = 4000


@dataclass
class Options:
    device: str = "cpu"
    out: Path = Path("dataset")
    timeout_s: float = 300.0  # per workload, and for building the solution
    correctness_only: bool = False
    timing: dict = field(default_factory=dict)


@dataclass
class Outcome:
    pair: Pair
    status: str
    record: Optional[dict]  # the trace written, None in correctness-only runs


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()[-LOG_TAIL:]
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace").strip()


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


class WorkerSession:
    """One worker process for some workloads of one solution."""

    def __init__(self, pairs: list[Pair], opts: Options, dataset_root: Path, tmp: Path,
                 reference_latency: dict[str, float]):
        self.pairs = pairs
        self.tmp = tmp
        first = pairs[0]
        job = {"definition": dict(first.definition.data), "solution": dict(first.solution.data),
               "workloads": [dict(p.workload.data["workload"]) for p in pairs], "device": opts.device,
               "dataset_root": str(dataset_root.resolve()), "correctness_only": opts.correctness_only,
               "timing": opts.timing,
               "reference_latency": {p.workload.uuid: reference_latency[p.workload.uuid]
                                     for p in pairs if p.workload.uuid in reference_latency}}
        stamp = f"{os.getpid()}-{time.monotonic_ns()}"
        self.job_path = tmp / f"job-{stamp}.json"
        self.results_path = tmp / f"results-{stamp}.jsonl"
        self.log_path = tmp / f"log-{stamp}.txt"
        self.job_path.write_text(json.dumps(job), encoding="utf-8")
        self.results_path.touch()
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        # The worker must import this very generator package, wherever it was loaded from.
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "generator.bench.worker", str(self.job_path),
                                          str(self.results_path)], stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self.offset = 0
        self.started = time.monotonic()

    def read_events(self) -> list[dict]:
        with open(self.results_path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # only whole lines; a partial one is read next time
        self.offset += end
        return [json.loads(line) for line in data[:end].splitlines() if line.strip()]

    def has_unread_lines(self) -> bool:
        """Whether the result file holds whole lines not read yet (the worker may exit right after
        writing its last result); a torn last line from a killed worker does not count."""
        with open(self.results_path, "rb") as f:
            f.seek(self.offset)
            return b"\n" in f.read()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()


def run_plan(plan: Plan, opts: Options, dataset_root: Path, environment: dict,
             on_outcome: Callable[[Outcome], None] = lambda o: None) -> list[Outcome]:
    """Run every pair of the plan; return the outcomes in the order they finished."""
    by_solution: dict[str, list[Pair]] = {}
    for pair in plan.pairs:
        by_solution.setdefault(pair.solution.name, []).append(pair)
    outcomes: list[Outcome] = []
    reference_latency: dict[str, float] = {}  # workload uuid -> ms, timed once per run

    def finish(pair: Pair, result: dict) -> None:
        record = None
        if not opts.correctness_only:
            record = make_trace(pair, result, environment)
            s = pair.solution
            append_line(trace_path(opts.out, s.author, pair.definition.type, pair.definition.name), record)
        perf = result.get("performance") or {}
        if "reference_latency_ms" in perf:
            reference_latency.setdefault(pair.workload.uuid, perf["reference_latency_ms"])
        outcome = Outcome(pair, result["status"], record)
        outcomes.append(outcome)
        on_outcome(outcome)

    with tempfile.TemporaryDirectory(prefix="kt-bench-") as tmpdir:
        tmp = Path(tmpdir)
        for name, pairs in by_solution.items():
            remaining = list(pairs)
            while remaining:
                remaining = _run_session(remaining, opts, dataset_root, tmp, reference_latency, finish)
    return outcomes


def _run_session(pairs: list[Pair], opts: Options, dataset_root: Path, tmp: Path,
                 reference_latency: dict, finish: Callable[[Pair, dict], None]) -> list[Pair]:
    """Run pairs in one worker until it finishes, crashes or times out; return the pairs left."""
    session = WorkerSession(pairs, opts, dataset_root, tmp, reference_latency)
    by_uuid = {p.workload.uuid: p for p in pairs}
    pending = list(pairs)
    current: Optional[str] = None
    clock = time.monotonic()
    while True:
        events = session.read_events()
        for event in events:
            kind = event.get("event")
            if kind == "compile_error":
                for p in pending:
                    finish(p, {"status": "COMPILE_ERROR", "log": event.get("log")})
                session.kill()
                return []
            if kind == "start":
                current, clock = event["uuid"], time.monotonic()
            elif kind == "result":
                pair = by_uuid[event["uuid"]]
                finish(pair, {k: v for k, v in event.items() if k not in ("event", "uuid")})
                pending.remove(pair)
                current, clock = None, time.monotonic()
        if not pending:
            session.proc.wait()
            return []
        exited = session.proc.poll() is not None
        if exited and not session.has_unread_lines():
            # Crashed (segfault, os._exit, out of memory) on `current`, or before starting anything.
            code = session.proc.returncode
            how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
            pair = by_uuid[current] if current else pending[0]
            finish(pair, {"status": "RUNTIME_ERROR",
                          "log": f"the solution's process ended ({how}) during this workload\n{_tail(session.log_path)}"})
            pending.remove(pair)
            return pending
        if time.monotonic() - clock > opts.timeout_s:
            session.kill()
            pair = by_uuid[current] if current else pending[0]
            what = "this workload" if current else "building the solution"
            finish(pair, {"status": "TIMEOUT",
                          "log": f"{what} ran past the {opts.timeout_s:g} s limit\n{_tail(session.log_path)}"})
            pending.remove(pair)
            return pending
        time.sleep(0.05)
