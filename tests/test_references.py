"""Every definition's reference, and every baseline solution, checked on the CPU.

The references are the mathematical specification of the dataset, so they are checked here against
an *independent* formulation of the same mathematics (a different algorithm, float64, library calls
the references are not allowed to use), on several seeded input sets at small sizes of the var axes.
The baseline solutions are checked the same way and against the reference.

The files are read with plain `json`, not with the project's loader, so that this test does not depend
on the generator package: it checks the data, not the code that reads it.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from pathlib import Path
from typing import Callable

import pytest

import torch  # the test extra installs it; a missing torch must fail, not skip

from reference_cases import CASES

DATASET = Path(__file__).resolve().parent.parent / "dataset"
DEFINITION_FILES = sorted((DATASET / "definitions").glob("*/*.json"))
SOLUTION_FILES = sorted((DATASET / "solutions").glob("*/*/*/*.json"))
WORKLOAD_FILES = sorted((DATASET / "workloads").glob("*/*.jsonl"))

TORCH_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float8_e4m3": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2,
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "bool": torch.bool,
}

# Tolerances for comparing an output with the float64 independent result, by the output's dtype:
# (rtol, atol as a fraction of the largest |expected| value).
# - float16: 10 mantissa bits; one rounding of the exact value is off by at most half an ulp,
#   2**-11 ~ 4.9e-4 relative, and two independently rounded results (reference vs. solution) by at most
#   one ulp, 2**-10 ~ 9.8e-4; rtol 1e-3 covers both. float32 accumulation over K = 4096 adds about
#   sqrt(K) * 2**-24 ~ 4e-6 of the output scale, covered by atol 1e-4 * scale (near-zero outputs).
# - bfloat16: 7 mantissa bits; one ulp is at most 2**-7 ~ 7.8e-3 relative, so rtol 1e-2; atol as for
#   float16 but a little looser, 1e-3 * scale, for the few outputs that cancel to near zero.
# - float32 (the GQA lse): computed in float32 from float16 inputs; errors are a few float32 ulps of
#   values of order 1-10, so rtol 1e-5 and atol 1e-5 * scale.
TOLERANCE = {"float16": (1e-3, 1e-4), "bfloat16": (1e-2, 1e-3), "float32": (1e-5, 1e-5)}


def assert_close(actual, expected, dtype: str, what: str) -> None:
    if dtype.startswith(("int", "uint", "bool")):  # ids, indices, masks: exact
        mismatch = (actual.to(torch.int64) != expected.to(torch.int64)).sum().item()
        assert mismatch == 0, f"{what}: {mismatch} element(s) differ (integer outputs must match exactly)"
        return
    rtol, atol_rel = TOLERANCE[dtype]
    expected = expected.to(torch.float64)
    actual64 = actual.to(torch.float64)
    assert torch.isfinite(actual64).all(), f"{what}: non-finite values"
    scale = expected.abs().max().item() or 1.0
    atol = atol_rel * scale
    excess = (actual64 - expected).abs() - (atol + rtol * expected.abs())
    worst = excess.max().item()
    assert worst <= 0, (f"{what}: exceeds rtol={rtol} atol={atol:.3g} by {worst:.3g} "
                        f"(max abs err {(actual64 - expected).abs().max().item():.3g}, scale {scale:.3g})")


# --------------------------------------------------------------------------------------------------
# Loading definitions and code with nothing but json and exec.
# --------------------------------------------------------------------------------------------------

def load_definition(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def exec_function(code: str, filename: str, name: str = "run") -> Callable:
    namespace: dict = {"__name__": f"kerneltrace_test_{Path(filename).stem}"}
    exec(compile(code, filename, "exec"), namespace)
    assert callable(namespace.get(name)), f"{filename} defines no top-level function {name}()"
    return namespace[name]


def as_output_dict(result, definition: dict) -> dict:
    names = list(definition["outputs"])
    if isinstance(result, dict):
        return result
    if isinstance(result, (tuple, list)):
        assert len(result) == len(names), f"returned {len(result)} values for outputs {names}"
        return dict(zip(names, result))
    assert len(names) == 1, f"returned one value for outputs {names}"
    return {names[0]: result}


def clone_inputs(inputs: dict) -> dict:
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def assert_inputs_unchanged(before: dict, after: dict, who: str) -> None:
    for name, value in before.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(value.view(torch.uint8) if value.dtype == torch.float8_e4m3fn else value,
                               after[name].view(torch.uint8) if value.dtype == torch.float8_e4m3fn
                               else after[name]), f"{who} modified its input {name!r}"


def all_axes(definition: dict, var_sizes: dict) -> dict:
    axes = {n: a["value"] for n, a in definition["axes"].items() if a["type"] == "const"}
    axes.update(var_sizes)
    case = CASES[definition["name"]]
    if case.derived is not None:  # var axes that follow from others, e.g. H_qo == H_kv * H_r
        for name, value in case.derived(axes).items():
            axes.setdefault(name, value)
    return axes


_CACHE: dict = {}


def input_set(definition: dict, index: int):
    """(axes, inputs, expected) of one seeded input set; cached so solutions reuse the references' sets."""
    key = (definition["name"], index)
    if key not in _CACHE:
        case = CASES[definition["name"]]
        axes = all_axes(definition, case.sizes[index])
        for constraint in definition.get("constraints", []):
            assert eval(constraint, {}, dict(axes)), f"test sizes {axes} break constraint {constraint!r}"
        g = torch.Generator().manual_seed(1000 * index + 17)
        inputs = case.make_inputs(axes, g, index)
        assert list(inputs) == list(definition["inputs"]), "test input maker out of step with the definition"
        expected = case.expected(axes, inputs) if case.check is None else None
        _CACHE[key] = (axes, inputs, expected)
    return _CACHE[key]


_REFERENCE_OUTPUTS: dict = {}


def reference_outputs(definition: dict, index: int) -> dict:
    """The reference's outputs on one input set (cached: the solutions are compared with them too)."""
    key = (definition["name"], index)
    if key not in _REFERENCE_OUTPUTS:
        axes, inputs, expected = input_set(definition, index)
        run = exec_function(definition["reference"], f"{definition['name']}.reference")
        before = clone_inputs(inputs)
        outputs = as_output_dict(run(*inputs.values()), definition)
        assert_inputs_unchanged(before, inputs, "the reference")
        _REFERENCE_OUTPUTS[key] = outputs
    return _REFERENCE_OUTPUTS[key]


def check_signature(outputs: dict, definition: dict, axes: dict, who: str) -> None:
    assert set(outputs) == set(definition["outputs"]), f"{who} returned {sorted(outputs)}"
    for name, spec in definition["outputs"].items():
        value = outputs[name]
        assert isinstance(value, torch.Tensor), f"{who}: output {name} is {type(value).__name__}"
        assert tuple(value.shape) == tuple(axes[a] for a in spec["shape"]), f"{who}: {name} has shape {value.shape}"
        assert value.dtype == TORCH_DTYPES[spec["dtype"]], f"{who}: {name} has dtype {value.dtype}"


def check_outputs(outputs: dict, definition: dict, axes: dict, expected: dict, who: str, reference=None) -> None:
    check_signature(outputs, definition, axes, who)
    for name, spec in definition["outputs"].items():
        value = outputs[name]
        assert_close(value, expected[name], spec["dtype"], f"{who}: {name} vs independent")
        if reference is not None:
            assert_close(value, reference[name], spec["dtype"], f"{who}: {name} vs reference")


# --------------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------------

def test_dataset_has_definitions():
    assert DEFINITION_FILES, f"no definitions under {DATASET / 'definitions'}"


@pytest.mark.parametrize("path", DEFINITION_FILES, ids=lambda p: p.stem)
def test_reference_is_plain_step_by_step_pytorch(path):
    d = load_definition(path)
    assert d["name"] == path.stem and d["type"] == path.parent.name
    ref = d["reference"]
    assert "torch.nn.functional" not in ref and not re.search(r"\bF\.", ref), "the reference must not use F.*"
    run = exec_function(ref, f"{d['name']}.reference")
    assert list(inspect.signature(run).parameters) == list(d["inputs"]), \
        "run() must take the inputs in the order of 'inputs'"


@pytest.mark.parametrize("index", range(3))
@pytest.mark.parametrize("path", DEFINITION_FILES, ids=lambda p: p.stem)
def test_reference_matches_independent_formulation(path, index):
    d = load_definition(path)
    # Every definition must be checked: a definition without an independent formulation fails.
    assert d["name"] in CASES, f"no independent check for {d['name']}: add one to CASES in {Path(__file__).name}"
    axes, inputs, expected = input_set(d, index)
    case = CASES[d["name"]]
    if case.check is not None:  # sampling: statistical check on repeated calls
        run = exec_function(d["reference"], f"{d['name']}.reference")
        check_statistically(run, d, axes, inputs, case, "reference")
        return
    check_outputs(reference_outputs(d, index), d, axes, expected, "reference")


def check_statistically(run, d: dict, axes: dict, inputs: dict, case, who: str) -> None:
    def call():
        before = clone_inputs(inputs)
        outputs = as_output_dict(run(*inputs.values()), d)
        assert_inputs_unchanged(before, inputs, who)
        check_signature(outputs, d, axes, who)
        return outputs
    case.check(call, axes, inputs, who)


def _solutions():
    for path in SOLUTION_FILES:
        sol = json.loads(path.read_text(encoding="utf-8"))
        if sol["spec"]["language"] == "python":
            yield pytest.param(path, id=path.stem)


@pytest.mark.parametrize("path", list(_solutions()))
def test_python_solution_matches_reference(path):
    sol = json.loads(path.read_text(encoding="utf-8"))
    def_path = DATASET / "definitions" / path.parent.parent.name / f"{sol['definition']}.json"
    assert def_path.is_file(), f"solution names definition {sol['definition']!r}, not found at {def_path}"
    d = load_definition(def_path)
    assert d["name"] in CASES, f"no independent check for {d['name']}: add one to CASES in {Path(__file__).name}"
    assert not sol["spec"].get("destination_passing_style", False), "only value-returning solutions are run here"
    file, function = sol["spec"]["entry_point"].split("::")
    sources = {s["path"]: s["content"] for s in sol["sources"]}
    assert file in sources, f"entry point file {file} is not among the sources"
    run = exec_function(sources[file], f"{sol['name']}/{file}", function)
    case = CASES[d["name"]]
    for index in range(len(case.sizes)):
        axes, inputs, expected = input_set(d, index)
        if case.check is not None:
            check_statistically(run, d, axes, inputs, case, f"{sol['name']} (set {index})")
            continue
        before = clone_inputs(inputs)
        outputs = as_output_dict(run(*inputs.values()), d)
        assert_inputs_unchanged(before, inputs, sol["name"])
        check_outputs(outputs, d, axes, expected, f"{sol['name']} (set {index})", reference_outputs(d, index))


@pytest.mark.parametrize("path", WORKLOAD_FILES, ids=lambda p: p.stem)
def test_workloads_fit_their_definition(path):
    d = load_definition(DATASET / "definitions" / path.parent.name / f"{path.stem}.json")
    var_axes = {n for n, a in d["axes"].items() if a["type"] == "var"}
    consts = {n: a["value"] for n, a in d["axes"].items() if a["type"] == "const"}
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    # Seed 000's examples came with three or four shapes; every definition added since has five or more.
    assert len(lines) >= (3 if "status:draft" in d.get("tags", []) else 5), f"only {len(lines)} workloads"
    for record in lines:
        w = record["workload"]
        assert record["definition"] == d["name"]
        assert set(w["axes"]) == var_axes and all(isinstance(v, int) and v > 0 for v in w["axes"].values())
        assert list(w["inputs"]) == list(d["inputs"])
        for name, spec in w["inputs"].items():
            if not d["inputs"][name]["shape"]:
                assert spec["type"] == "scalar", f"{w['uuid']}: scalar input {name} must be given as a value"
            elif d["inputs"][name]["dtype"].startswith(("int", "uint", "bool")):
                # Index inputs must be coherent (monotone indptr, unique page ids...): uniform random
                # integers are not, so they come from a blob written by generator/workloadgen.
                assert spec["type"] == "safetensors", f"{w['uuid']}: integer input {name} must be a blob"
            else:
                assert spec["type"] in ("random", "safetensors"), name
        for constraint in d.get("constraints", []):
            assert eval(constraint, {}, {**consts, **w["axes"]}), f"{w['uuid']} breaks {constraint!r}"
