"""The process that runs one solution: `python -m generator.bench.worker JOB RESULTS`.

The parent (runner.py) starts one worker per solution, with a timeout, and reads RESULTS: one JSON
line per workload, {"event": "start", "uuid"} before the work and {"event": "result", ...} after.
Whatever the solution prints goes to the log file the parent gave as stdout/stderr. A worker that
crashes or hangs takes only itself down: the parent records the workload it was on and starts a new
worker for the rest.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable, Mapping

# Imported first, before the solution, so that the clocks and checks are the originals.
from . import timing  # noqa: I001
from .guards import CheatDetected, Guard, check_output_types, poison, poison_allocator
from .check import Verdict, compare, compare_samples
from .inputs import TORCH_DTYPES, make_inputs, shape_of

import torch

CORRECTNESS_SETS = 3
SAMPLING_DRAWS = 64


def load_solution(solution: Mapping[str, Any], workdir: Path) -> Callable:
    """Write the sources into a fresh folder and import the entry point file as a module."""
    for src in solution["sources"]:
        path = workdir / src["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src["content"], encoding="utf-8")
    file, function = solution["spec"]["entry_point"].split("::")
    sys.path.insert(0, str(workdir))
    spec = importlib.util.spec_from_file_location(f"kt_solution_{Path(file).stem}", workdir / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, function, None)
    if not callable(fn):
        raise AttributeError(f"{file} defines no function {function}()")
    return fn


def load_reference(definition: Mapping[str, Any]) -> Callable:
    namespace: dict = {"__name__": f"kt_reference_{definition['name']}"}
    exec(compile(definition["reference"], f"<reference of {definition['name']}>", "exec"), namespace)
    return namespace["run"]


def as_outputs(result: Any, definition: Mapping[str, Any]) -> dict:
    names = list(definition["outputs"])
    if isinstance(result, Mapping):
        return dict(result)
    if isinstance(result, (tuple, list)):
        if len(result) != len(names):
            raise ValueError(f"returned {len(result)} values for the {len(names)} outputs {names}")
        return dict(zip(names, result))
    if len(names) != 1:
        raise ValueError(f"returned one value for the outputs {names}")
    return {names[0]: result}


class Runner:
    def __init__(self, job: Mapping[str, Any]):
        self.job = job
        self.definition = job["definition"]
        self.solution = job["solution"]
        self.device = job["device"]
        self.root = Path(job["dataset_root"])
        self.cfg = timing.TimingConfig(**job.get("timing", {}))
        self.guard = Guard(self.root, self.device)
        self.reference = self.guard.wrap_reference(load_reference(self.definition))
        self.dps = bool(self.solution["spec"].get("destination_passing_style", False))
        self.sampling = self.definition["type"] == "sampling"
        self.fn: Callable | None = None

    def axes(self, workload) -> dict:
        axes = {n: a["value"] for n, a in self.definition["axes"].items() if a["type"] == "const"}
        axes.update(workload["axes"])
        return axes

    def inputs(self, workload, index: int) -> dict:
        return make_inputs(self.definition, workload, self.root, index, self.device)

    def reference_outputs(self, inputs: dict) -> dict:
        with torch.no_grad():
            return as_outputs(self.reference(*inputs.values()), self.definition)

    def out_buffers(self, workload) -> dict:
        axes = self.axes(workload)
        return {n: torch.empty(shape_of(s, axes), dtype=TORCH_DTYPES[s["dtype"]], device=self.device)
                for n, s in self.definition["outputs"].items()}

    def call_checked(self, workload, inputs: dict) -> dict:
        args = list(inputs.values())
        if self.dps:
            outs = self.out_buffers(workload)
            poison(outs)
            self.guard.call(self.fn, args, outputs=list(outs.values()))
            return outs
        poison_allocator(self.device, sum(b.numel() * b.element_size() for b in self.out_buffers(workload).values()))
        outputs = as_outputs(self.guard.call(self.fn, args), self.definition)
        problem = check_output_types(outputs, self.device)
        if problem:
            raise CheatDetected(problem)
        return outputs

    def timed_callable(self, fn: Callable, workload, inputs: dict) -> Callable:
        args = list(inputs.values())
        if self.dps and fn is not self.reference:
            outs = list(self.out_buffers(workload).values())
            return lambda: fn(*args, *outs)
        return lambda: fn(*args)

    def correctness(self, workload) -> tuple[Verdict, int]:
        axes = self.axes(workload)
        if self.sampling:  # one input set, many draws from both
            inputs = self.inputs(workload, 0)
            sol = [self.call_checked(workload, inputs) for _ in range(SAMPLING_DRAWS)]
            ref = [self.reference_outputs(inputs) for _ in range(SAMPLING_DRAWS)]
            for outs in sol[:1]:
                v = compare(self.definition, outs, ref[0], axes)
                if v.status in ("INCORRECT_SHAPE", "INCORRECT_DTYPE", "REWARD_HACK"):
                    return v, 1
            return compare_samples(self.definition, sol, ref, inputs.get("probs")), 1
        worst = Verdict("PASSED")
        kept = []  # every checked set stays alive, so no two sets share an address a cache could key on
        for index in range(CORRECTNESS_SETS):
            inputs = self.inputs(workload, index)
            kept.append(inputs)
            expected = self.reference_outputs(inputs)
            v = compare(self.definition, self.call_checked(workload, inputs), expected, axes)
            if not v.ok:
                return v, index + 1
            worst.max_absolute_error = max(worst.max_absolute_error, v.max_absolute_error)
            worst.max_relative_error = max(worst.max_relative_error, v.max_relative_error)
            worst.matched_ratio = min(worst.matched_ratio, v.matched_ratio)
            worst.atol, worst.rtol = v.atol, v.rtol
        return worst, CORRECTNESS_SETS

    def stale_result_check(self, workload, inputs: dict) -> None:
        """After timing: change the timed inputs in place (same storage, new values) and check once
        more; a solution that caches results by input identity returns the old answer."""
        fresh = self.inputs(workload, CORRECTNESS_SETS + 1)
        for name, value in inputs.items():
            if isinstance(value, torch.Tensor) and workload["inputs"][name]["type"] == "random":
                value.copy_(fresh[name])
        if self.sampling:
            return
        v = compare(self.definition, self.call_checked(workload, inputs), self.reference_outputs(inputs),
                    self.axes(workload))
        if not v.ok:
            raise CheatDetected("wrong answer after the timed inputs were changed in place: the solution "
                                f"reuses an earlier result instead of computing ({v.message})")

    def run_workload(self, workload, reference_latency: float | None) -> dict:
        # One unchecked call first: libraries start their thread pools and compile on first use.
        self.fn(*self.inputs(workload, 0).values(), *(self.out_buffers(workload).values() if self.dps else ()))
        verdict, sets = self.correctness(workload)
        result: dict[str, Any] = {"status": verdict.status, "log": verdict.message or None}
        correctness = {"max_absolute_error": verdict.max_absolute_error,
                       "max_relative_error": verdict.max_relative_error,
                       "matched_ratio": verdict.matched_ratio, "input_sets": sets}
        if verdict.atol is not None:
            correctness.update(atol=verdict.atol, rtol=verdict.rtol)
        if verdict.status in ("PASSED", "INCORRECT_NUMERICAL"):
            result["correctness"] = correctness
        if not verdict.ok or self.job.get("correctness_only"):
            return result
        timed_inputs = self.inputs(workload, CORRECTNESS_SETS)  # differs from every checked set
        if reference_latency is None:
            reference_latency = timing.measure(self.timed_callable(self.reference, workload, timed_inputs),
                                               self.cfg, self.device)["latency_ms"]
        stats = timing.measure(self.timed_callable(self.fn, workload, timed_inputs), self.cfg, self.device)
        changed = self.guard.patched()
        if changed:
            raise CheatDetected(f"the solution replaced {', '.join(changed)} during timing")
        self.stale_result_check(workload, timed_inputs)
        stats["reference_latency_ms"] = reference_latency
        stats["speedup_factor"] = reference_latency / stats["latency_ms"]
        result["performance"] = stats
        return result


def emit(out, record: dict) -> None:
    out.write(json.dumps(record) + "\n")
    out.flush()


def main(argv: list[str]) -> int:
    job_path, results_path = Path(argv[0]), Path(argv[1])
    job = json.loads(job_path.read_text(encoding="utf-8"))
    torch.manual_seed(0)
    with open(results_path, "a", encoding="utf-8") as out:
        runner = Runner(job)
        with tempfile.TemporaryDirectory(prefix="kt-solution-") as workdir:
            try:
                runner.fn = load_solution(runner.solution, Path(workdir))
            except BaseException:  # noqa: BLE001 - any failure to build is the solution's compile error
                emit(out, {"event": "compile_error", "log": traceback.format_exc(limit=-8)})
                return 0
            for workload in job["workloads"]:
                uuid = workload["uuid"]
                emit(out, {"event": "start", "uuid": uuid})
                try:
                    result = runner.run_workload(workload, job.get("reference_latency", {}).get(uuid))
                except CheatDetected as exc:
                    result = {"status": "REWARD_HACK", "log": str(exc)}
                except torch.cuda.OutOfMemoryError:
                    result = {"status": "RUNTIME_ERROR", "log": "CUDA out of memory\n" + traceback.format_exc(limit=-4)}
                    torch.cuda.empty_cache()
                except Exception:  # noqa: BLE001 - a solution's error is data, not our crash
                    result = {"status": "RUNTIME_ERROR", "log": traceback.format_exc(limit=-8)}
                emit(out, {"event": "result", "uuid": uuid, **result})
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main(sys.argv[1:]))
