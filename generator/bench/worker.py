"""The process that runs one solution (or the reference): `python -m generator.bench.worker 3 4`.

It holds nothing worth stealing: no seed, no job file, no dataset path, no reference (unless it is
the reference's worker), no expected outputs. It reads messages from fd 3 and writes to fd 4
(protocol.py) and knows only what each message says:

    load {sources, entry_point, dps, device}      -> loaded | compile_error {log}
    call {order, scalars, outs} + input tensors   -> ready          (inputs built, cache flushed)
    go                                            -> done {ms} | error {log}
    keep | drop                                   -> outputs + tensors | dropped | cheat {log} | error {log}
    ping                                          -> pong

Every call is the same call: the same code path, fresh inputs from the trusted process, fresh
NaN-poisoned output buffers for destination-passing solutions; whether its outputs are copied out
is decided by the trusted process after the call returned. The timer and synchronisation were bound
(timing.py) before the solution was imported; the trusted side also bounds the reported time from
below with its own wall clock, so patching them here gains nothing.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, Callable, Mapping

# Imported first, before the solution, so that the clocks and checks are the originals.
from . import timing  # noqa: I001
from . import protocol
from .guards import check_output_types, inputs_snapshot, mutated_input, poison, watched_patched
from .inputs import TORCH_DTYPES

import torch

IN_FD, OUT_FD = 3, 4


def load_solution(sources: list, entry_point: str, workdir: Path) -> Callable:
    """Write the sources into a fresh folder and import the entry point file as a module."""
    for src in sources:
        path = (workdir / src["path"]).resolve()
        if not str(path).startswith(str(workdir.resolve())):
            raise ValueError(f"source path {src['path']!r} leaves the solution's folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src["content"], encoding="utf-8")
    file, function = entry_point.split("::")
    sys.path.insert(0, str(workdir))
    spec = importlib.util.spec_from_file_location(f"kt_solution_{Path(file).stem}", workdir / file)
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
    if isinstance(result, Mapping):
        return dict(result)
    if isinstance(result, (tuple, list)):
        if len(result) != len(names):
            raise ValueError(f"returned {len(result)} values for the {len(names)} outputs {names}")
        return dict(zip(names, result))
    if len(names) != 1:
        raise ValueError(f"returned one value for the outputs {names}")
    return {names[0]: result}


class Session:
    def __init__(self, load: dict):
        self.device = load["device"]
        self.dps = bool(load.get("dps"))
        self.names = list(load["output_names"])
        self.flush = timing.L2Flusher(torch.device(self.device)) if self.device.startswith("cuda") else None
        self.fn: Callable = None  # type: ignore[assignment]

    def call(self, header: dict, payload: bytes) -> None:
        tensors = protocol.unpack(payload)
        args = [header["scalars"][n] if n in header["scalars"] else tensors[n].to(self.device) for n in header["order"]]
        outs = {}
        if self.dps:
            outs = {o["name"]: torch.empty(o["shape"], dtype=TORCH_DTYPES[o["dtype"]], device=self.device)
                    for o in header["outs"]}
            poison(outs)
        before = inputs_snapshot(args)
        if self.flush is not None:
            self.flush()
            timing.synchronize()
        threads = set(threading.enumerate())
        protocol.send(OUT_FD, {"op": "ready"})
        protocol.recv(IN_FD, ("go",))
        try:
            ms, result = timing.timed_call(self.fn, args, list(outs.values()), self.device)
        except Exception:  # noqa: BLE001 - a solution's error is data, not our crash
            protocol.send(OUT_FD, {"op": "error", "log": traceback.format_exc(limit=-8)})
            return
        protocol.send(OUT_FD, {"op": "done", "ms": ms})  # first, so the outside clock stops with ours
        outputs = outs if self.dps else None
        problem = None
        try:
            if outputs is None:
                outputs = as_outputs(result, self.names)
            problem = (watched_patched() or check_output_types(outputs, self.device)
                       or mutated_input(args, before) or _threads_left(threads))
        except Exception:  # noqa: BLE001
            problem = traceback.format_exc(limit=-8)
            header, _ = protocol.recv(IN_FD, ("keep", "drop"))
            protocol.send(OUT_FD, {"op": "error", "log": problem})
            return
        header, _ = protocol.recv(IN_FD, ("keep", "drop"))
        if problem:
            protocol.send(OUT_FD, {"op": "cheat", "log": problem})
        elif header["op"] == "keep":
            protocol.send(OUT_FD, {"op": "outputs"}, protocol.pack(outputs))
        else:
            protocol.send(OUT_FD, {"op": "dropped"})


def _threads_left(before: set) -> str | None:
    alive = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    return f"the solution left thread {alive[0].name!r} running after it returned" if alive else None


def main(argv: list[str]) -> int:
    global IN_FD, OUT_FD
    IN_FD, OUT_FD = int(argv[0]), int(argv[1])
    torch.manual_seed(0)
    protocol.send(OUT_FD, {"op": "hello"})
    header, _ = protocol.recv(IN_FD, ("load",))
    session = Session(header)
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / "solution"
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        if header.get("reference"):
            session.fn = load_reference(header["reference"], header.get("name", "definition"))
        else:
            session.fn = load_solution(header["sources"], header["entry_point"], workdir)
    except BaseException:  # noqa: BLE001 - any failure to build is the solution's compile error
        protocol.send(OUT_FD, {"op": "compile_error", "log": traceback.format_exc(limit=-8)})
        return 0
    protocol.send(OUT_FD, {"op": "loaded"})
    while True:
        try:
            header, payload = protocol.recv(IN_FD, ("call", "ping", "exit"))
        except protocol.Closed:
            return 0
        if header["op"] == "exit":
            return 0
        if header["op"] == "ping":
            protocol.send(OUT_FD, {"op": "pong"})
            continue
        try:
            with torch.no_grad():
                session.call(header, payload)
        except protocol.Closed:
            return 0
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            protocol.send(OUT_FD, {"op": "error", "log": "CUDA out of memory\n" + traceback.format_exc(limit=-4)})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
