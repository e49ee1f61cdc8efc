"""Does a reference compile? TorchDynamo traces it whole (fullgraph, dynamic shapes) and nothing runs.

The probe calls `torch.compile(run, fullgraph=True, dynamic=DYNAMIC)` with a backend that records the graph
and stops there (the graph is never run, so no input's values matter and no kernel is compiled): on the inputs
of three small workloads of the definition (new values of every var axis first: _three_workloads), which must
need no more graphs than they have patterns of size-1 var axes (one compile serves the definition's workloads,
but for a size-1 axis's own: TorchDynamo specialises a size of 1). Sizes that happen to be equal are not one
symbol (DUCK_SHAPE), an op whose output size depends on the data is traced (CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS) and
the const axes' dims are static (static_dims), as in the contender. Inputs are uninitialised tensors of the
workload's shapes and dtypes, blobs and scalars as the workload gives them. A reference compiles when each traces
as one graph; else the verdict is why not (the first line of TorchDynamo's reason). Tracing is a few hundred milliseconds to a few
seconds a definition on a CPU, so the whole dataset is probed in well under an hour; inductor's own failures (a
dtype its CPU backend lacks) show in the bench as the solution's compile error.
"""

from __future__ import annotations

import re
import signal
import sys
import time
import types
from typing import Iterable

from ..bench.shared.inputs import TORCH_DTYPES, input_recipes, load_blob
from ..bench.trusted.plan import call_bytes
from .compiler import CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, DUCK_SHAPE, DYNAMIC, static_call, static_dims
from .write import COMPILES, read_verdicts, reference_digest, write_verdicts

PROBE_TIMEOUT_S = 15  # per definition: TorchDynamo reasoning for minutes over an unrolled Python loop is not a trace we would time
# Counted in the probe's CPU time (ITIMER_PROF), not wall time: on a shared 2-CPU host at load 7 a trace of 4 s of CPU
# took 15 s of wall time, and the verdict must not depend on what else the host runs.
TOO_SLOW = f"tracing took over {PROBE_TIMEOUT_S} s of CPU time (TorchDynamo reasoning over a Python loop it unrolls)"


class _Traced(Exception):
    """Raised in place of running the traced graph: tracing got that far."""


class _TooSlow(Exception):
    pass


def _inputs(d, workload, root) -> list:
    import torch

    out = []
    for name, recipe in input_recipes(d.data, workload.data["workload"], seed=0).items():
        dtype = TORCH_DTYPES[d.data["inputs"][name]["dtype"]]
        if recipe["type"] == "scalar":
            out.append(recipe["value"])
        elif recipe["type"] == "safetensors":
            out.append(load_blob(root, recipe["path"], recipe["tensor_key"]).to(dtype))
        else:  # values never read: the graph is not run
            out.append(torch.empty(recipe["shape"], dtype=dtype))
    return out


def reason_of(exc: BaseException) -> str:
    """One line that groups alike failures: the exception's kind and the first line of its message, without
    file names, line numbers and addresses."""
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    text = lines[0] if lines else ""
    text = re.sub(r"(/[^\s:'\"]+)+", "<path>", text)
    text = re.sub(r"0x[0-9a-f]+", "<address>", text)
    text = re.sub(r"\bline \d+", "line N", text)
    text = re.sub(r"\b([us])\d+\b", r"\1", text)  # TorchDynamo's symbol numbers (u0, s1): alike failures group
    return f"{type(exc).__name__}: {text}"[:240]


def _three_workloads(workloads: list) -> list:
    """Three small workloads (smallest first) on which one graph must serve, but for a size-1 axis's own (0/1
    specialisation): first those that give every var axis that varies a value no earlier pick had (three workloads
    of one batch size would pass a Python loop over the batch), then the smallest of other sizes. Small, so that a
    Python loop over a var axis (unrolled by the trace) fails fast instead of unrolling thousands of trips."""
    varying = [a for a in workloads[0].axes if len({w.axes.get(a) for w in workloads}) > 1]
    picked: dict = {}
    for fresh_only in (True, False):
        for w in workloads:
            key = tuple(sorted(w.axes.items()))
            new = all(w.axes.get(a) != p.axes.get(a) for p in picked.values() for a in varying)
            if len(picked) < 3 and key not in picked and (new or not fresh_only):
                picked[key] = w
    return sorted(picked.values(), key=workloads.index)


def _reference_module(d) -> types.ModuleType:
    """The reference as a module in sys.modules (TorchDynamo inlines its run into static_call's, as it does the
    contender's main.py, which the bench imports as a module)."""
    module = types.ModuleType(f"kt_probe_{d.name}")
    exec(compile(d.data["reference"], f"<reference of {d.name}>", "exec"), module.__dict__)
    sys.modules[module.__name__] = module
    return module


def probe_one(ds, d) -> str:
    """COMPILES, or why the definition's reference does not trace as one graph serving its workloads."""
    import torch

    workloads = sorted(ds.workloads_by_definition.get(d.name, []), key=lambda w: (call_bytes(d, w), w.uuid))
    if not workloads:
        return "no workload to trace it on"
    graphs = []

    def backend(gm, example_inputs):  # noqa: ARG001
        graphs.append(gm)

        def stop(*args):  # noqa: ARG001
            raise _Traced()
        return stop

    torch._dynamo.reset()
    module = _reference_module(d)
    fn = torch.compile(static_call(module.run, static_dims(d.data)), backend=backend, fullgraph=True, dynamic=DYNAMIC)
    order = _three_workloads(workloads)
    counts = []
    started = time.process_time()
    with torch.fx.experimental._config.patch(use_duck_shape=DUCK_SHAPE), \
            torch._dynamo.config.patch(capture_dynamic_output_shape_ops=CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS):
        for w in order:
            try:
                fn(*_inputs(d, w, ds.root))
                return "the traced graph ran: tracing did not reach the backend"
            except _Traced:
                counts.append(len(graphs))
            except _TooSlow:
                return TOO_SLOW
            except Exception as exc:  # noqa: BLE001 - the reason is the verdict
                if time.process_time() - started >= PROBE_TIMEOUT_S - 1:  # the alarm, wrapped by TorchDynamo
                    return TOO_SLOW
                return reason_of(exc)
    # One graph per pattern of size-1 var axes among them, at most.
    size_one = {frozenset(axis for axis, size in w.axes.items() if size == 1) for w in order}
    if counts and counts[-1] > len(size_one):
        return ("recompiles per workload: the trace specialises on a var axis (e.g. a Python loop over it), so "
                "each workload size needs a graph of its own")
    return COMPILES


def _alarm(signum, frame):  # noqa: ARG001
    raise _TooSlow()


def _save(root, data: dict) -> None:
    import torch

    data["about"] = ("Written by `kerneltrace contenders --probe`: whether each definition's reference traces as one "
                     "graph with dynamic shapes (TorchDynamo, fullgraph), for the digest of the reference it traced. "
                     "`kerneltrace contenders` writes a torch.compile contender where the verdict is 'compiles'.")
    data["torch"] = torch.__version__.split("+")[0]
    write_verdicts(root, data)


def probe(ds, definitions: Iterable[str] = (), progress: bool = True) -> dict:
    """Probe the definitions (all where none are named), update the probe file; return {definition: verdict}."""
    wanted = sorted(set(definitions) or ds.definitions)
    data = read_verdicts(ds.root)
    verdicts = data["verdicts"]
    found: dict[str, str] = {}
    previous = signal.signal(signal.SIGPROF, _alarm)
    started = time.monotonic()
    try:
        for k, name in enumerate(wanted):
            d = ds.definitions[name]
            # Again every second after the first: TorchDynamo can catch the first alarm's exception and trace on
            # (gqa_cascade_decode_h24_kv8_d128_ps16 held the probe for minutes with a one-shot alarm).
            signal.setitimer(signal.ITIMER_PROF, PROBE_TIMEOUT_S, 1.0)
            try:
                found[name] = probe_one(ds, d)
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
                sys.modules.pop(f"kt_probe_{name}", None)  # _reference_module's
            verdicts[name] = {"reference": reference_digest(d.data["reference"]), "verdict": found[name]}
            if (k + 1) % 25 == 0:  # kept as it goes: an interrupted probe loses at most 25 definitions' work
                _save(ds.root, data)
            if progress:
                print(f"[{k + 1}/{len(wanted)} {time.monotonic() - started:.0f} s] {name}: {found[name]}",
                      file=sys.stderr)
    finally:
        signal.signal(signal.SIGPROF, previous)
    _save(ds.root, data)
    return found

