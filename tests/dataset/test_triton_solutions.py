"""The kerneltrace Triton solutions, checked on the CPU.

Each solution under dataset/solutions/kerneltrace/ is run under Triton's CPU interpreter
(TRITON_INTERPRET=1) on small, coherent, seeded inputs and compared with its definition's reference
(read with plain json, the reference exec'd) using the tolerances of tests/tolerances.py, as test_references.py.
The interpreter must be switched on before triton is first imported, and other test modules of the same
pytest process may import triton (or torch may pull it in) without it, so the checks run in a fresh
subprocess, one for all the solutions (torch and triton imported once), each solution's part of its output
checked by its own test: this file doubles as the worker script
(`python tests/dataset/test_triton_solutions.py interp NAME...`). Every solution
dataset/solutions/kerneltrace/<type>/<definition>/<definition>_triton.json is found by its place; the
inputs it is checked on and the shapes it is compiled for are its TritonCase in tests/triton_cases/.

A second check compiles every kernel launch the solutions make at realistic serving shapes (decode and
prefill sizes, every block-size branch) ahead of time for an H100 (sm_90a) with Triton's own compiler
and ptxas, without a GPU (`... compile NAME...`): it catches code the interpreter accepts but the GPU
compiler rejects, and tile configurations that do not fit in the 227 KiB of shared memory of an SM.

A missing triton fails these tests; nothing here is skipped.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "dataset"
SOLUTIONS = DATASET / "solutions" / "kerneltrace"

# definition name -> definition type, for every kerneltrace Triton solution (found by its place; its
# test inputs and compile shapes are a TritonCase in tests/triton_cases/, found by convention too).
DEFINITIONS = {p.parent.name: p.parent.parent.name for p in sorted(SOLUTIONS.glob("*/*/*_triton.json"))
               if p.stem == f"{p.parent.name}_triton"}

SHARED_SMEM_LIMIT = 232448  # bytes of shared memory one H100 block may use (227 KiB)


def solution_path(name: str) -> Path:
    return SOLUTIONS / DEFINITIONS[name] / name / f"{name}_triton.json"


def definition_path(name: str) -> Path:
    return DATASET / "definitions" / DEFINITIONS[name] / f"{name}.json"


# ==================================================================================================
# pytest side: no torch, no triton imported here.
# ==================================================================================================

def _run_worker(mode: str, interpret: bool, timeout: int = 1800) -> dict[str, str]:
    """One worker process checks every solution in `mode` (torch and triton are imported once, not once
    per solution); returns each solution's part of its output, the lines after its '=== NAME' line."""
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, without its warning
    # One torch thread: the worker's tensors are small, and on a 2-core host shared with other jobs
    # intra-op threads mostly wait for each other (see conftest.one_torch_thread).
    env.setdefault("OMP_NUM_THREADS", "1")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), mode, *DEFINITIONS], cwd=str(ROOT), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    parts, name = {}, None
    for line in proc.stdout.splitlines(keepends=True):
        if line.startswith("=== ") and line[4:].strip() in DEFINITIONS:
            name = line[4:].strip()
            parts[name] = ""
        elif name is not None:
            parts[name] += line
    parts["(worker)"] = f"[{mode} worker: exit {proc.returncode}, {time.perf_counter() - t0:.1f} s]\n{proc.stdout[-3000:]}"
    return parts


@pytest.fixture(scope="module")
def interpreter_runs() -> dict[str, str]:
    return _run_worker("interp", interpret=True)


@pytest.fixture(scope="module")
def compile_runs() -> dict[str, str]:
    return _run_worker("compile", interpret=False)


def assert_worker_passed(runs: dict[str, str], name: str) -> None:
    assert name in runs, f"the worker stopped before {name}:\n{runs['(worker)']}"
    print(runs[name])
    assert runs[name].rstrip().endswith("ALL OK"), f"{name} failed:\n{runs[name][-6000:]}"


def _params():
    return [pytest.param(name, id=name) for name in DEFINITIONS]


def test_every_triton_solution_is_present_and_well_formed():
    for name in DEFINITIONS:
        path = solution_path(name)
        assert path.is_file(), f"missing {path.relative_to(ROOT)}"
        assert definition_path(name).is_file(), f"missing definition {definition_path(name).relative_to(ROOT)}"
        sol = json.loads(path.read_text(encoding="utf-8"))
        assert sol["name"] == path.stem and sol["definition"] == name and sol["author"] == "kerneltrace"
        spec = sol["spec"]
        # Hopper targets: the compile check below builds for sm_90a (H100 and H200 alike).
        assert spec["language"] == "triton" and "H100_SXM" in spec["target_hardware"]
        assert set(spec["target_hardware"]) <= {"H100_SXM", "H200"}, spec["target_hardware"]
        assert spec["entry_point"] == "main.py::run" and spec["destination_passing_style"] is False
        assert spec["dependencies"] == ["torch", "triton"]
        assert [s["path"] for s in sol["sources"]] == ["main.py"]


def test_every_triton_solution_has_a_case_and_every_case_a_solution():
    from triton_cases import collect  # torch-free at import (the case modules import it when called)
    cases = set(collect())
    assert not set(DEFINITIONS) - cases, (f"no TritonCase for {sorted(set(DEFINITIONS) - cases)}: add one to CASES "
                                          "in a module of tests/triton_cases/ (see its __init__ docstring)")
    assert not cases - set(DEFINITIONS), f"TritonCase without a solution: {sorted(cases - set(DEFINITIONS))}"


def test_triton_is_importable():
    """The solutions need triton; a missing triton must fail, not skip."""
    proc = subprocess.run([sys.executable, "-c", "import triton, triton.language; print(triton.__version__)"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"triton is not importable:\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("name", _params())
def test_triton_solution_matches_reference_under_interpreter(name, interpreter_runs):
    assert_worker_passed(interpreter_runs, name)


@pytest.mark.parametrize("name", _params())
def test_triton_solution_compiles_for_h100(name, compile_runs):
    assert_worker_passed(compile_runs, name)


# ==================================================================================================
# Worker side (a subprocess): imports torch and triton.
# ==================================================================================================

def load_solution_module(name: str):
    """Write the solution's sources to a folder and import its entry file (triton.jit reads the source)."""
    sol = json.loads(solution_path(name).read_text(encoding="utf-8"))
    file, function = sol["spec"]["entry_point"].split("::")
    folder = Path(tempfile.mkdtemp(prefix=f"kt_{name}_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for src in sol["sources"]:
        target = folder / src["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(src["content"], encoding="utf-8")
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(f"kt_triton_{name}", folder / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert callable(getattr(module, function, None)), f"{file} defines no {function}()"
    return module, getattr(module, function)


def reference_function(definition: dict):
    namespace: dict = {"__name__": f"kt_reference_{definition['name']}"}
    exec(compile(definition["reference"], f"{definition['name']}.reference", "exec"), namespace)
    return namespace["run"]


def clone_inputs(inputs: dict) -> dict:
    import torch
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def assert_unchanged(before: dict, after: dict, what: str) -> None:
    import torch
    for k, v in before.items():
        if isinstance(v, torch.Tensor):
            assert torch.equal(v, after[k]), f"{what} modified its input {k}"


def triton_case(name: str):
    """The solution's TritonCase (worker side: the case modules import torch when called)."""
    from triton_cases import collect
    case = collect().get(name)
    assert case is not None, (f"no TritonCase for {name}: add it to CASES in a module of tests/triton_cases/ "
                              "(see its __init__ docstring for what a case gives)")
    return case


def worker_interp(name: str) -> None:
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    import torch
    import triton  # noqa: F401  (a missing triton fails here)

    from triton_cases.common import check_against

    case = triton_case(name)

    d = json.loads(definition_path(name).read_text(encoding="utf-8"))
    reference = reference_function(d)
    module, run = load_solution_module(name)
    g = torch.Generator().manual_seed(sum(map(ord, name)))
    total = 0.0
    for index, (label, axes, inputs) in enumerate(case.inputs(d, g)):
        before = clone_inputs(inputs)
        t0 = time.perf_counter()
        outputs = run(*inputs.values())
        elapsed = time.perf_counter() - t0
        total += elapsed
        assert_unchanged(before, inputs, "the solution")
        expected = reference(*inputs.values())
        check_against(outputs, expected, d, axes, f"{name} [{label}]")
        print(f"  {label}: interpreter {elapsed:.2f} s, matches the reference")
        if case.extra is not None:
            total += case.extra(module, index, label, axes, inputs, outputs, expected, d)
    print(f"{name}: interpreter time {total:.2f} s in all")
    print("ALL OK")


# ---------------------------------------------------------------------------------- compile check

def ptxas_usage(ptx: str, kernel_name: str):
    """(registers per thread, spill-store bytes) that Triton's bundled ptxas reports for sm_90a."""
    import re

    from triton.backends.nvidia.compiler import get_ptxas
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx, encoding="utf-8")
        proc = subprocess.run([get_ptxas(90).path, "-arch=sm_90a", "-v", str(src), "-o", str(Path(tmp) / "k.o")],
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"ptxas failed on {kernel_name}:\n{proc.stderr[-3000:]}"
    regs = re.search(r"Used (\d+) registers", proc.stderr)
    spills = re.search(r"(\d+) bytes spill stores", proc.stderr)
    return (int(regs.group(1)) if regs else None), (int(spills.group(1)) if spills else 0)


def worker_compile(name: str) -> None:
    assert os.environ.get("TRITON_INTERPRET", "0") != "1", "the compile check needs the real compiler"
    import triton
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    launches = []

    def record(self, *args, grid, warmup, **kwargs):
        names = [p.name for p in self.params]
        bound = dict(zip(names, args))
        options = {}
        for k, v in kwargs.items():
            if k in names:
                bound[k] = v
            else:
                options[k] = v
        launches.append((self, bound, options))

    case = triton_case(name)
    JITFunction.run = record  # launches are recorded, never executed (there is no GPU here)
    d = json.loads(definition_path(name).read_text(encoding="utf-8"))
    _, run = load_solution_module(name)
    for args in case.compile_shapes(d):
        run(*args)
    assert launches, "the solution launched no kernel"

    target = GPUTarget("cuda", 90, 32)
    seen = set()
    for fn, bound, options in launches:
        signature, constexprs, attrs = {}, {}, {}
        for i, p in enumerate(fn.params):
            value = bound[p.name]
            if p.is_constexpr:
                signature[p.name] = "constexpr"
                constexprs[(i,)] = value
                continue
            # Triton's own argument specialisation (as its launcher does on a GPU): integers equal to 1
            # become constants, 16-divisible integers and 16-byte aligned pointers get tt.divisibility.
            kind, attr = native_specialize_impl(CUDABackend, value, False, not p.do_not_specialize,
                                                not p.do_not_specialize_on_alignment)
            signature[p.name] = kind
            if kind == "constexpr":
                constexprs[(i,)] = attr
            elif isinstance(attr, str):
                attrs[(i,)] = CUDABackend.parse_attr(attr)
        key = (fn.__name__, tuple(sorted(signature.items())), tuple(sorted(constexprs.items())),
               tuple(sorted(attrs)), tuple(sorted(options.items())))
        if key in seen:
            continue
        seen.add(key)
        t0 = time.perf_counter()
        kernel = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options)
        shared = kernel.metadata.shared
        regs, spills = ptxas_usage(kernel.asm["ptx"], kernel.metadata.name)
        consts = ", ".join(f"{fn.params[k[0]].name}={v}" for k, v in constexprs.items()
                           if fn.params[k[0]].is_constexpr)
        print(f"  {fn.__name__}({consts}) {options}: sm_90a cubin {len(kernel.asm['cubin'])} B, "
              f"shared memory {shared} B, {regs} registers/thread, {spills} B spilled, "
              f"{time.perf_counter() - t0:.1f} s")
        assert shared <= SHARED_SMEM_LIMIT, f"{fn.__name__} needs {shared} B of shared memory"
    print("ALL OK")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the helper modules (triton_cases)
    mode, names = sys.argv[1], sys.argv[2:]
    check = {"interp": worker_interp, "compile": worker_compile}[mode]
    for which in names:  # each solution's failure is reported in its own part; the others still run
        print(f"=== {which}", flush=True)
        try:
            check(which)
        except Exception:  # noqa: BLE001 - reported to the pytest side, which fails the test
            traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()
