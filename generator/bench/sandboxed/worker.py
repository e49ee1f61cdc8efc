"""The process that runs one solution (or the reference): `python -m generator.bench.sandboxed.worker 3 4`.

It holds nothing worth stealing: no seed of a call before that call (on the CPU; on CUDA, before its batch), no job
file, no dataset
path, no reference (unless it is the reference's worker), no expected outputs. It reads messages
from fd 3 and writes to fd 4 (protocol.py) and knows only what each message says:

    load {sources, entry_point, dps, device, warmup_ms} -> loaded | compile_error {log}
    workload {order, scalars, blobs, outs} + blobs     -> ready
    batch {calls: [{recipes}], capture}                -> done {ms, cpu, digests | outputs} [+ tensors] | error | cheat
    batch {n, capture, marks: true}, then per call:
      call {call, drawn | same} [+ tensors]           -> mark (before the call), mark (after it)
    reveal {calls, inputs}                             -> revealed + tensors (outputs; inputs of the calls in `inputs`)
    probe                                              -> probed {desc | error} (can the trusted side read our memory)
    exit

A batch is a list of calls, each with the generator seeds of its own fresh input set (secret seeds
drawn by the trusted process for this run). The worker draws each set on the device just before its
call (no later set exists while a call runs); on the CPU (marked batches) the trusted process draws it
and sends its tensors when the call before has ended (its CPU is then not the sandbox's, which the
CPU-time floor subtracts, trusted/cpufloor.py), and times the calls back to back as triton.testing.do_bench does (CUDA: the L2 flush and the start event are
queued ahead of each call, one synchronisation at the end; CPU: the host clock), turning each
result into plain tensors inside the timed interval. On CUDA (capture "ipc") it answers with a CUDA
IPC handle per output, and the trusted process copies the outputs of the calls it chose out of this
process's memory as the answer arrives (trusted/capture.py). Otherwise it commits to every call's outputs
before it answers (a digest per output, protocol.digest): the trusted process then chooses which calls
to reveal and compare, and recomputes the digests of what is revealed; where every call is compared
(capture "inline": the first batch, small outputs) there is no choice to hide, and the outputs come with
the answer. Either way work done after
"done" cannot change an answer, and the choice of checked calls is never known here before every
answer is fixed.

Nothing here is trusted: the solution can patch any of it. The trusted process (trusted/pair.py) bounds
the batch from outside: the wall clock from sending the batch to receiving the commitments, less
the same harness work measured on the reference's worker, is charged to the solution; on the CPU also
each call, from the marks sent just before and after it, which that process timestamps as they arrive.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import shutil
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, Callable, Mapping

import torch

# Imported first, before the solution, so that the clocks and checks are the originals.
from ..shared import protocol
from ..shared.inputs import SEEDLESS, TORCH_DTYPES, draw
from . import clock, handles
from .guards import check_output_types, inputs_snapshot, mutated_input, poison, watched_patched

IN_FD, OUT_FD = 3, 4
MARK = {"op": "mark"}


def load_solution(sources: list, entry_point: str, workdir: Path) -> Callable:
    """Write the sources into a fresh folder and import the entry point file as a module (under a name of
    its own: a worker may load several solutions of one author, one after the other)."""
    for src in sources:
        path = (workdir / src["path"]).resolve()
        if not str(path).startswith(str(workdir.resolve())):
            raise ValueError(f"source path {src['path']!r} leaves the solution's folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src["content"], encoding="utf-8")
    file, function = entry_point.split("::")
    sys.path.insert(0, str(workdir))
    spec = importlib.util.spec_from_file_location(f"kt_solution_{workdir.name}_{Path(file).stem}", workdir / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, function, None)
    if not callable(fn):
        raise AttributeError(f"{file} defines no function {function}()")
    return fn


def load_reference(code: str, name: str) -> Callable:
    namespace: dict = {"__name__": f"kt_reference_{name}"}
    exec(compile(code, f"<reference of {name}>", "exec"), namespace)
    return namespace["run"]


def as_outputs(result: Any, names: list[str]) -> dict:
    """The call's result as {output name: value}; plain dict, list and tuple copies, so a lazy
    container computes here (inside the timed interval), not when the outputs are read later."""
    if isinstance(result, Mapping):
        return {k: result[k] for k in list(result.keys())}
    if isinstance(result, (tuple, list)):
        values = list(result)
        if len(values) != len(names):
            raise ValueError(f"returned {len(values)} values for the {len(names)} outputs {names}")
        return dict(zip(names, values))
    if len(names) != 1:
        raise ValueError(f"returned one value for the outputs {names}")
    return {names[0]: result}


class Session:
    def __init__(self, load: dict):
        self.device = load["device"]
        self.dps = bool(load.get("dps"))
        self.reference = bool(load.get("reference"))
        self.names = list(load["output_names"])
        self.flush = clock.L2Flusher(torch.device(self.device)) if self.device.startswith("cuda") else None
        self.fn: Callable = None  # type: ignore[assignment]
        self.order: list[str] = []
        self.fixed: dict[str, Any] = {}  # scalars and blob tensors: the same in every input set
        self.outs: list[dict] = []
        self.kept: list[dict] = []  # the last batch's outputs (and inputs), until the next batch
        self.seedless: dict[str, torch.Tensor] = {}  # this workload's SEEDLESS tensors, drawn once (inputs())
        self.held: list = []  # tensors whose device memory the trusted side reads (trusted/capture.py), until the next batch
        self.make_buffers = self.dps
        self.warmup_ms = protocol.number(load, "warmup_ms") if "warmup_ms" in load else 0.0

    def workload(self, header: dict, payload: bytes) -> None:
        blobs = protocol.unpack(payload)
        self.order = list(header["order"])
        self.outs = list(header["outs"])
        self.make_buffers = self.dps or bool(header.get("buffers"))
        self.fixed = {**header["scalars"], **{k: v.to(self.device) for k, v in blobs.items()}}
        self.seedless = {}
        if self.device.startswith("cuda"):
            protocol.prepare_staging()  # before any batch, so that no batch pays for it
        self.kept = []
        protocol.send(OUT_FD, {"op": "ready"})

    def inputs(self, call: dict, drawn: Mapping[str, torch.Tensor] | None = None) -> list:
        """Call's input set: its random tensors `drawn` by the trusted process (the CPU: marked batches) or else drawn
        here from its recipes, with the fixed inputs."""
        recipes, fixed = call.get("recipes", {}), self.fixed
        rows = call.get("rows")
        if rows:  # blob-only definitions: this call's secret order of the blobs' rows (trusted/pair.py, secret_call)
            names = [n for n in rows["inputs"] if isinstance(fixed.get(n), torch.Tensor)]
            if names:
                g = torch.Generator().manual_seed(int(rows["seed"]))
                order = torch.randperm(fixed[names[0]].shape[0], generator=g).to(self.device)
                fixed = {**fixed, **{n: fixed[n].index_select(0, order) for n in names}}
        # Each random tensor from the call's own seeds: nothing of another call's inputs (no shared stream). A SEEDLESS
        # one (a rope cos/sin cache: 90 ms a call for 32k rows) is the same for every seed: drawn once, a copy each call.
        if drawn is not None:
            return [fixed[n] if n in fixed else drawn[n] for n in self.order]
        return [fixed[n] if n in fixed else self.draw_seedless(n, recipes[n]) if recipes[n]["distribution"] in SEEDLESS
                else draw(recipes[n], self.device) for n in self.order]

    def draw_seedless(self, name: str, recipe: dict) -> torch.Tensor:
        if name not in self.seedless:
            self.seedless[name] = draw(recipe, self.device)
        return self.seedless[name].clone()

    def buffers(self) -> list:
        if not self.make_buffers:
            return []
        outs = {o["name"]: torch.empty(o["shape"], dtype=TORCH_DTYPES[o["dtype"]], device=self.device)
                for o in self.outs}
        poison(outs)
        return list(outs.values())

    def batch(self, header: dict) -> None:
        t0 = clock.now()
        marked = bool(header.get("marks"))
        # Marked batches (the CPU) get each call's input set only after the call before it ended (a "call" message the
        # trusted process sends when the end mark arrives, its random tensors drawn there: drawing them here was most
        # of the harness's CPU time in the sandbox, whose noise the CPU-time floor must allow for): no later call's
        # inputs are here while a call runs.
        calls = [None] * int(header["n"]) if marked else header["calls"]
        sets, before, buffers = [], [], []
        drawn: dict = {"call": None}

        def make(i: int) -> tuple[list, list]:
            """Call i's input set, made just before the call (a sampler's untimed first batch repeats one set: made
            once)."""
            if marked:
                message, payload = protocol.recv(IN_FD, ("call",))
                calls[i] = drawn["call"] if message.get("same") and i else message["call"]
                if calls[i] is not drawn["call"]:
                    drawn["args"] = self.inputs(calls[i], protocol.unpack(payload) if message.get("drawn") else None)
                    drawn["snapshot"] = inputs_snapshot(drawn["args"])
                    drawn["call"] = calls[i]
            elif calls[i] != drawn["call"]:
                drawn["call"] = calls[i]
                drawn["args"] = self.inputs(calls[i])
                drawn["snapshot"] = inputs_snapshot(drawn["args"])
            sets.append(drawn["args"])
            before.append(drawn["snapshot"])
            buffers.append(self.buffers())  # made by the reference's worker too (same harness work)
            return drawn["args"], buffers[-1] if self.dps else []

        def mark() -> None:  # the trusted process timestamps it on arrival (trusted/pair.py's per-call bound)
            protocol.send(OUT_FD, MARK)

        threads = set(threading.enumerate())
        self.kept = []
        cpu: list[float] = []  # each call's CPU time (the CPU): the trusted side reads only the reference's
        t1 = clock.now()
        try:
            ms, results = clock.time_calls(self.fn, make, len(calls), self.device, self.flush,
                                             lambda r, outs: dict(zip(self.names, outs)) if self.dps else
                                             as_outputs(r, self.names), self.warmup_ms,
                                             mark if marked else None, cpu)
        except Exception:  # noqa: BLE001 - a solution's error is data, not our crash
            protocol.send(OUT_FD, {"op": "error", "log": traceback.format_exc(limit=-8)})
            return
        t2 = clock.now()
        try:
            problem = watched_patched() or _threads_left(threads)
            for outputs in results:
                problem = problem or check_output_types(outputs, self.device)
            problem = problem or mutated_input(sets, before)
            # The guards are for solutions; a reference's worker runs them too (the same harness work in both,
            # which the outside bound relies on) and ignores them: its outputs are compared on the CPU.
            if problem and not self.reference:
                protocol.send(OUT_FD, {"op": "cheat", "log": problem})
                return
            t3 = clock.now()
            self.kept = [{"outputs": outputs, "inputs": dict(zip(self.order, args))} for outputs, args in zip(results, sets)]
            rows = [[outputs.get(n) for n in self.names] for outputs in results]
            payload, held = b"", []
            if header.get("capture") == "ipc":  # handles to the outputs; the trusted side copies them out (trusted/capture.py)
                described = [[handles.describe(v) for v in row] for row in rows]
                answer = {"outputs": [[d for d, _ in row] for row in described]}
                held = [t for row in described for _, t in row]  # alive until the trusted side has read them
            elif header.get("capture") == "inline":  # every call is compared: the outputs come with the answer
                answer, payload = {}, self.pack(range(len(results)), ())
            else:
                answer = {"digests": protocol.digest_rows(rows)}
        except Exception:  # noqa: BLE001
            self.kept = []
            protocol.send(OUT_FD, {"op": "error", "log": traceback.format_exc(limit=-8)})
            return
        self.held = held
        # phases: this worker's own account of where the batch's time went (inputs, timed calls, guards, digests
        # or handles), in ms. Untrusted like everything here: only shown in diagnostics, never used for a number.
        t4 = clock.now()
        protocol.send(OUT_FD, {"op": "done", "ms": ms, **({"cpu": cpu} if cpu else {}), **answer,
                               "phases": [(b - a) * 1e3 for a, b in ((t0, t1), (t1, t2), (t2, t3), (t3, t4))]}, payload)

    def probe(self) -> None:
        """Whether the trusted side can read this worker's device memory (trusted/capture.py): a known pattern's handle."""
        try:
            self.held = [torch.arange(4096, dtype=torch.int32, device=self.device)]
            desc, _ = handles.describe(self.held[0])
            protocol.send(OUT_FD, {"op": "probed", "desc": desc})
        except Exception as exc:  # noqa: BLE001 - the answer is "no", with why
            protocol.send(OUT_FD, {"op": "probed", "error": f"{type(exc).__name__}: {exc}"})

    def reveal(self, header: dict) -> None:
        protocol.send(OUT_FD, {"op": "revealed"}, self.pack(header["calls"], header.get("inputs", ())))

    def pack(self, calls, inputs) -> bytes:
        """The outputs of the last batch's `calls` (and the inputs of those in `inputs`), as one payload."""
        tensors = {}
        for i in calls:
            call = self.kept[i]
            for name, value in call["outputs"].items():
                tensors[f"{i}/out/{name}"] = value
            if i in inputs:
                for name, value in call["inputs"].items():
                    if isinstance(value, torch.Tensor):
                        tensors[f"{i}/in/{name}"] = value
        return protocol.pack(tensors)


def _threads_left(before: set) -> str | None:
    alive = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    return f"the solution left thread {alive[0].name!r} running after it returned" if alive else None


def forget_solutions(root: Path) -> None:
    """Drop what earlier solutions loaded from their folders under `root` (their modules, their sys.path
    entries, their device memory), so the next one imports its own files: two solutions of one author
    may both have a helper.py."""
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if isinstance(where, str) and where.startswith(str(root)):
            del sys.modules[name]
    sys.path[:] = [p for p in sys.path if not (isinstance(p, str) and p.startswith(str(root)))]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        gc.collect()  # ~80 ms: only where device memory held in cycles is worth returning before the next solution
        torch.cuda.empty_cache()
        handles.forget()  # freed allocations: a new one at the same address gets a new handle


def start(header: dict, workdir: Path, loads: int = 0) -> Session | None:
    """A session for a load message, or None after telling the trusted side why it did not build.
    A solution gets a fresh folder of its own (the `loads`-th under `workdir`)."""
    session = Session(header)
    try:
        if header.get("reference"):
            session.fn = load_reference(header["reference"], header.get("name", "definition"))
        else:
            forget_solutions(workdir)
            for earlier in workdir.glob("s*"):  # the earlier solution's sources: nothing of it left for this one
                shutil.rmtree(earlier, ignore_errors=True)
            torch.manual_seed(0)
            folder = workdir / f"s{loads}"
            folder.mkdir(parents=True)
            session.fn = load_solution(header["sources"], header["entry_point"], folder)
    except BaseException:  # noqa: BLE001 - any failure to build is the solution's compile error
        protocol.send(OUT_FD, {"op": "compile_error", "log": traceback.format_exc(limit=-8)})
        return None
    protocol.send(OUT_FD, {"op": "loaded"})
    return session


def main(argv: list[str]) -> int:
    global IN_FD, OUT_FD
    IN_FD, OUT_FD = int(argv[0]), int(argv[1])
    torch.manual_seed(0)
    protocol.send(OUT_FD, {"op": "hello"})
    header, _ = protocol.recv(IN_FD, ("load",))
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / "solution"
    workdir.mkdir(parents=True, exist_ok=True)
    loads = 0
    session = start(header, workdir, loads)
    if session is None:
        return 0
    # A reference's worker (trusted code only) is reused for the next definition's reference, and a solution's
    # for the next solution of the same author (the trusted side decides: trusted/runner.py): one Python and torch
    # start per author instead of one per solution. What one solution leaves here can only reach another of
    # its author's, code that author could have written into it.
    ops = ("workload", "batch", "reveal", "probe", "load", "exit")
    handlers = {"workload": lambda h, p: session.workload(h, p), "batch": lambda h, p: session.batch(h),
                "reveal": lambda h, p: session.reveal(h), "probe": lambda h, p: session.probe()}
    while True:
        try:
            header, payload = protocol.recv(IN_FD, ops)
        except protocol.Closed:
            return 0
        if header["op"] == "exit":
            return 0
        try:
            with torch.no_grad():
                if header["op"] == "load":
                    loads += 1
                    session = start(header, workdir, loads) or session
                else:
                    handlers[header["op"]](header, payload)
        except protocol.Closed:
            return 0
        except torch.cuda.OutOfMemoryError:
            session.kept, session.held = [], []
            torch.cuda.empty_cache()
            handles.forget()  # freed allocations: a new one at the same address gets a new handle
            protocol.send(OUT_FD, {"op": "error", "log": "CUDA out of memory\n" + traceback.format_exc(limit=-4)})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
