"""Known-good inputs validate clean, and records and fields are located on the right line."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from generator.load import load
from generator.model.jsonpos import line_of_pointer
from generator.validate import validate, validate_path

from dataset_factory import DEFINITION, HARDWARE, MODEL, SOLUTION, TRACE, WORKLOAD, write_dataset

DEF = "definitions/norm/rmsnorm_h128.json"
SOL = "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json"


def test_good_dataset_is_clean(good_dataset: Path) -> None:
    assert validate_path(good_dataset) == []


def test_good_dataset_loads_every_kind(good_dataset: Path) -> None:
    ds = load(good_dataset)
    assert ds.load_diagnostics == []
    assert list(ds.definitions) == ["rmsnorm_h128"]
    assert [w.uuid for w in ds.workloads] == ["wl-0001", "wl-0002", "wl-0003", "wl-0004", "wl-0005"]
    assert list(ds.solutions) == ["rmsnorm_h128_torch"]
    assert len(ds.traces) == 1 and ds.traces[0].is_passed
    assert list(ds.models) == ["test-model"]
    assert list(ds.hardware) == ["test_cpu"]
    assert [a.solution for a in ds.agent_traces] == ["rmsnorm_h128_torch"]
    assert list(ds.einsums) == ["rmsnorm_h128"]
    assert validate(ds) == []


def _trace(**evaluation):
    t = copy.deepcopy(TRACE)
    t["evaluation"].update(evaluation)
    return t


def _variant_definition():
    d = copy.deepcopy(DEFINITION)
    d.pop("tags")
    d.pop("constraints")
    d["axes"]["batch_size"]["parent"] = None
    return d


DPS_SOURCE = ("import torch\n\n"
              "def run(input, weight, eps, output):\n"
              "    x = input.float()\n"
              "    output.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float())\n")

GOOD_VARIANTS = {
    "no-tags-no-constraints": dict(definition=_variant_definition()),
    "dps-solution": dict(solution={**SOLUTION, "spec": {**SOLUTION["spec"], "destination_passing_style": True},
                                   "sources": [{"path": "main.py", "content": DPS_SOURCE}]}),
    "cuda-solution": dict(solution={**SOLUTION, "spec": {**SOLUTION["spec"], "language": "cuda",
                                                         "entry_point": "kernel.cu::rmsnorm", "binding": "torch"},
                                    "sources": [{"path": "kernel.cu", "content": "void rmsnorm(float* x) {}\n"},
                                                {"path": "kernels/util.h", "content": ""}]}),
    "varargs-solution": dict(solution={**SOLUTION, "sources": [{"path": "main.py",
                                                               "content": "def run(*args):\n    return args[0]\n"}]}),
    "incorrect-numerical-trace": dict(traces=[_trace(status="INCORRECT_NUMERICAL", performance=None)]),
    "runtime-error-trace": dict(traces=[_trace(status="RUNTIME_ERROR", performance=None, correctness=None,
                                               log="Traceback ...")]),
    "trace-without-optional-parts": dict(traces=[{**TRACE, "evaluation": {
        "status": "TIMEOUT", "environment": {"hardware": "test_cpu"}, "timestamp": "2026-11-21T10:00:00.5+01:00"}}]),
    "agent-trace-list-form": dict(agent_trace=[
        {"type": "llm_request", "model": "some-llm", "conversation": [{"role": "user", "content": "hi"}],
         "response": {"content": "def run(...)"}},
        {"type": "tool_call", "tool_name": "bench", "arguments": {"n": 1}, "result": "ok"},
        {"type": "mcp"}]),
    "model-with-stages": dict(model={**MODEL, "kernels": [{"id": "rmsnorm_h128", "count": 2, "stage": "decode"},
                                                          {"id": "rmsnorm_h128", "count": 1, "stage": "prefill"}]}),
    "hardware-with-extras": dict(hardware={**HARDWARE, "aliases": ["Test CPU"], "l2_cache_bytes": 0,
                                           "compute_capability": "9.0", "peak_tflops": {"float32": 1.0, "bfloat16": 2}}),
    "workload-bool-scalar": dict(
        definition={**DEFINITION, "inputs": {**DEFINITION["inputs"], "eps": {"shape": [], "dtype": "bool"}}},
        workloads=[{**WORKLOAD, "workload": {**WORKLOAD["workload"], "uuid": f"wl-{i:04d}",
                                             "inputs": {**WORKLOAD["workload"]["inputs"],
                                                        "eps": {"type": "scalar", "value": True}}}}
                   for i in range(1, 6)]),  # five: the verified definition's minimum
    "einsum-object-projection": dict(einsum=(
        "workload:\n"
        "  rank_sizes: {B: {{ batch_size }}, H: {{ hidden_size }}}\n"
        "  bits_per_value: {input: 16}\n"
        "  einsums:\n"
        "  - name: Square\n"
        "    tensor_accesses:\n"
        "    - {name: input, projection: {B: b, H: h}}\n"
        "    - {name: output, projection: [b, h], output: true}\n"
        "    - {name: weight, projection: {H: h}}\n"
        "    - {name: eps, projection: {}}\n"
        "    renames: {input: Inputs - weight - eps}\n")),
}


@pytest.mark.parametrize("overrides", list(GOOD_VARIANTS.values()), ids=list(GOOD_VARIANTS))
def test_good_variants_are_clean(tmp_path: Path, overrides: dict) -> None:
    root = write_dataset(tmp_path / "ds", **overrides)
    diags = validate_path(root)
    assert diags == [], "\n".join(d.format_human() for d in diags)


# -- locations ---------------------------------------------------------------------------------
def _line_of_text(text: str, *needles: str) -> int:
    pos = -1
    for needle in needles:
        pos = text.index(needle, pos + 1)
    return text.count("\n", 0, pos) + 1


@pytest.mark.parametrize("pointer, needles", [
    ("", ("{",)),
    ("/name", ('"name"',)),
    ("/tags/2", ('"stage:decode"',)),
    ("/axes/hidden_size", ('"hidden_size": {',)),
    ("/axes/hidden_size/value", ('"value"',)),
    ("/inputs/weight/shape/0", ('"weight"', '"hidden_size"')),
    ("/inputs/eps/dtype", ('"eps"', '"dtype"')),
    ("/outputs/output/shape/1", ('"outputs"', '"hidden_size"')),
    ("/constraints/0", ('"batch_size >= 1"',)),
    ("/reference", ('"reference"',)),
    # Missing members: the deepest existing ancestor.
    ("/axes/hidden_size/parent", ('"hidden_size": {',)),
    ("/inputs/missing/dtype", ('"inputs"',)),
])
def test_definition_fields_are_located_on_the_line_of_their_key(good_dataset: Path, pointer: str, needles) -> None:
    d = load(good_dataset).definitions["rmsnorm_h128"]
    text = (good_dataset / DEF).read_text(encoding="utf-8")
    assert d.source.path == DEF and d.source.line == 1
    assert d.source.line_of(pointer) == _line_of_text(text, *needles)


def test_solution_fields_are_located(good_dataset: Path) -> None:
    s = load(good_dataset).solutions["rmsnorm_h128_torch"]
    text = (good_dataset / SOL).read_text(encoding="utf-8")
    assert s.source.line_of("/spec/entry_point") == _line_of_text(text, '"entry_point"')
    assert s.source.line_of("/sources/0/content") == _line_of_text(text, '"content"')
    assert s.source.line_of("/sources/0") == _line_of_text(text, '"sources"', "{")


def test_jsonl_records_keep_their_line_numbers(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "ds")
    path = root / "workloads/norm/rmsnorm_h128.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n" + lines[0] + "\n\n   \n" + "\n".join(lines[1:]) + "\n", encoding="utf-8")  # blank lines count
    ds = load(root)
    assert [(w.uuid, w.source.line) for w in ds.workloads] == [("wl-0001", 2), ("wl-0002", 5), ("wl-0003", 6),
                                                           ("wl-0004", 7), ("wl-0005", 8)]
    assert ds.workloads[1].source.line_of("/workload/axes") == 5
    assert validate(ds) == []


def test_diagnostic_in_pretty_printed_file_points_at_the_key(tmp_path: Path) -> None:
    d = copy.deepcopy(DEFINITION)
    d["inputs"]["weight"]["shape"] = ["hidden_size", "hiden"]
    root = write_dataset(tmp_path / "ds", definition=d)
    text = (root / DEF).read_text(encoding="utf-8")
    [diag] = validate_path(root)
    assert (diag.file, diag.pointer) == (DEF, "/inputs/weight/shape/1")
    assert diag.line == _line_of_text(text, '"hiden"')


@pytest.mark.parametrize("text, pointer, line", [
    ('{"a": 1,\n "b": {"c": [1,\n 2,\n {"d": 3}]}}', "/b/c/2/d", 4),
    ('{"a": 1,\n "b": {"c": [1,\n 2,\n {"d": 3}]}}', "/b/c/1", 3),
    ('{"s": "\\"b\\": 1",\n "b": 2}', "/b", 2),  # the key inside a string value is not the key
    ('{"a/b": {"x~y": 1},\n "z": {\n "a/b": 2}}', "/z/a~1b", 3),
    ('{"a": {"x~y": 1},\n "x~y": 2}', "/x~0y", 2),
    ('{"a": 1}', "/missing/deeper", 1),
    ('\n\n  {"a": [\n]}', "/a/0", 3),
    ('{"a": [1, 2', "/a/5", 1),  # malformed text never raises
])
def test_line_of_pointer(text: str, pointer: str, line: int) -> None:
    assert line_of_pointer(text, pointer) == line


def test_line_of_pointer_offsets_by_base_line() -> None:
    assert line_of_pointer('{"a": 1, "b": 2}', "/b", base_line=7) == 7
    assert line_of_pointer(json.dumps({"a": {"b": 1}}, indent=2), "/a/b", base_line=10) == 12
