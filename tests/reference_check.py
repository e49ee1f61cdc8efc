"""What the reference checks share: definitions and code read with nothing but json and exec, a
definition's seeded input sets with their independent results (reference_cases), the siblings that share
one check, and the comparisons. tests/dataset/test_references.py runs them over every definition; the family
tests under tests/definitions/ and the library contenders' checks call them for their own planted mistakes.

The files are read with plain `json`, not with the project's loader, so that these checks do not depend
on the generator package: they check the data, not the code that reads it.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable

import torch  # the test extra installs it; a missing torch must fail, not skip

from reference_cases import CASES
from tolerances import TOLERANCE, assert_close

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

# --------------------------------------------------------------------------------------------------
# Loading definitions and code with nothing but json and exec.
# --------------------------------------------------------------------------------------------------

def load_definition(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def definition_named(name: str) -> dict:
    """The committed definition `name`, whichever type's folder holds it."""
    [path] = [p for p in DEFINITION_FILES if p.stem == name]
    return load_definition(path)


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


def all_axes(definition: dict, sizes: dict) -> dict:
    """The axes of one input set: the definition's const axes, the set's var-axis sizes and the
    const axes the set shrinks (see reference_cases.common.shrunk), and the derived var axes."""
    consts = {n: a["value"] for n, a in definition["axes"].items() if a["type"] == "const"}
    for name, value in sizes.items():
        if name in consts:  # a shrunk const axis: only ever smaller than the definition's
            assert value < consts[name], f"test sizes: {name} = {value} is not smaller than the definition's {consts[name]}"
    axes = {**consts, **sizes}
    case = CASES[definition["name"]]
    if case.derived is not None:  # var axes that follow from others, e.g. H_qo == H_kv * H_r
        for name, value in case.derived(axes).items():
            axes.setdefault(name, value)
    return axes


class InputSets:
    """One definition's seeded input sets, each built on first use with its independent result, and the
    reference's outputs on them (the solutions are compared with both). Lives as long as pytest runs
    that definition's tests (the `sets` fixture), so only one definition's tensors are alive at a time."""

    def __init__(self, definition: dict):
        self.definition = definition
        self.case = CASES[definition["name"]]
        self._sets: dict = {}
        self._reference: dict = {}

    def __getitem__(self, index: int):
        """(axes, inputs, expected) of input set `index`; expected is None for a statistical case."""
        if index not in self._sets:
            d, case = self.definition, self.case
            axes = all_axes(d, case.sizes[index])
            for constraint in d.get("constraints", []):
                assert eval(constraint, {}, dict(axes)), f"test sizes {axes} break constraint {constraint!r}"
            g = torch.Generator().manual_seed(1000 * index + 17)
            inputs = case.make_inputs(axes, g, index)
            assert list(inputs) == list(d["inputs"]), "test input maker out of step with the definition"
            expected = case.expected(axes, inputs) if case.check is None else None
            self._sets[index] = (axes, inputs, expected)
        return self._sets[index]

    @property
    def indices(self) -> range:
        """The input sets this definition's reference runs: all of them, or a sibling's first (SIBLING_OF)."""
        return range(len(self.case.sizes) if SIBLING_OF[self.definition["name"]] == self.definition["name"] else 1)

    def reference_outputs(self, index: int) -> dict:
        """The reference's outputs on input set `index`."""
        if index not in self._reference:
            d = self.definition
            axes, inputs, expected = self[index]
            run = exec_function(d["reference"], f"{d['name']}.reference")
            before = clone_inputs(inputs)
            outputs = as_output_dict(run(*inputs.values()), d)
            assert_inputs_unchanged(before, inputs, "the reference")
            self._reference[index] = outputs
        return self._reference[index]




def _hashable(value):
    try:
        hash(value)
        return value
    except TypeError:  # a captured list or dict: the same object only
        return ("object", id(value))


def _code_key(f: Callable | None) -> tuple | None:
    """What a Case function computes: its code, defaults and captured values."""
    if f is None:
        return None
    return (f.__code__, _hashable(f.__defaults__), _hashable(repr(f.__kwdefaults__)),
            tuple(_hashable(c.cell_contents) for c in f.__closure__ or ()))


def sibling_key(d: dict) -> tuple:
    """Everything a definition's checks run but its const-axis values."""
    case = CASES.get(d["name"])
    if case is None:
        return (d["name"],)
    specs = json.dumps([{n: (t["shape"], t["dtype"]) for n, t in d[k].items()} for k in ("inputs", "outputs")])
    return (d["reference"], specs, tuple((n, a["type"]) for n, a in d["axes"].items()), repr(d.get("constraints")),
            tuple(_code_key(f) for f in (case.make_inputs, case.expected, case.derived, case.check)),
            repr(case.sizes), repr(case.extra))


def _siblings() -> dict[str, str]:
    """Definition name -> the sibling that runs every input set: the one with the smallest const axes."""
    groups: dict[tuple, list] = {}
    for path in DEFINITION_FILES:
        d = load_definition(path)
        consts = [a["value"] for a in d["axes"].values() if a["type"] == "const"]
        groups.setdefault(sibling_key(d), []).append((math.prod(consts), d["name"]))
    return {name: min(group)[1] for group in groups.values() for _, name in group}


SIBLING_OF = _siblings()


def is_representative(name: str) -> bool:
    return SIBLING_OF.get(name) == name



def check_signature(outputs: dict, definition: dict, axes: dict, who: str) -> None:
    assert set(outputs) == set(definition["outputs"]), f"{who} returned {sorted(outputs)}"
    for name, spec in definition["outputs"].items():
        value = outputs[name]
        assert isinstance(value, torch.Tensor), f"{who}: output {name} is {type(value).__name__}"
        assert tuple(value.shape) == tuple(axes[a] for a in spec["shape"]), f"{who}: {name} has shape {value.shape}"
        assert value.dtype == TORCH_DTYPES[spec["dtype"]], f"{who}: {name} has dtype {value.dtype}"


def check_outputs(outputs: dict, definition: dict, axes: dict, expected: dict, who: str, reference=None,
                  tolerance: dict = TOLERANCE) -> None:
    check_signature(outputs, definition, axes, who)
    for name, spec in definition["outputs"].items():
        value = outputs[name]
        assert_close(value, expected[name], spec["dtype"], f"{who}: {name} vs independent", tolerance)
        if reference is not None:
            assert_close(value, reference[name], spec["dtype"], f"{who}: {name} vs reference", tolerance)




def check_statistically(run, d: dict, axes: dict, inputs: dict, case, who: str) -> None:
    def call():
        before = clone_inputs(inputs)
        outputs = as_output_dict(run(*inputs.values()), d)
        assert_inputs_unchanged(before, inputs, who)
        check_signature(outputs, d, axes, who)
        return outputs
    case.check(call, axes, inputs, who)




def assert_planted_mistake_fails(name: str, right: str, wrong: str, failing: list) -> None:
    """`right` replaced by `wrong` in the definition's reference fails its independent check on exactly the input sets
    `failing` (the other test files' planted lists call this too)."""
    [path] = [p for p in DEFINITION_FILES if p.stem == name]
    d = load_definition(path)
    assert d["reference"].count(right) == 1, f"{name}: the planted mistake no longer applies; plant another"
    planted = InputSets({**d, "reference": d["reference"].replace(right, wrong)})
    caught = []
    for index in range(len(planted.case.sizes)):
        axes, inputs, expected = planted[index]
        try:
            if planted.case.check is not None:
                run = exec_function(planted.definition["reference"], f"{name}.planted")
                check_statistically(run, planted.definition, axes, inputs, planted.case, "planted reference")
            else:
                check_outputs(planted.reference_outputs(index), planted.definition, axes, expected, "planted reference")
        except AssertionError:
            caught.append(index)
    assert caught == failing, f"{name} with {wrong!r}: the check fails on sets {caught}, expected {failing}"
