"""Property-based fuzzing: random or mutated input never produces a traceback.

Whatever is written into a dataset folder, `load` + `validate` return a list of diagnostics and
`kerneltrace validate` exits 0 or 1 with printable output. The strategies here (JSON values,
mutations of the good records) are also used by test_fastschema.py.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import tempfile
from pathlib import Path
from typing import Any, Iterator

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.cli import main
from generator.model.diagnostics import Diagnostic
from generator.model.schemas import RECORD_KINDS, load_schema
from generator.validate import validate_path
from generator.validate.einsums import render_einsum

from dataset_factory import (
    AGENT_TRACE,
    BLOB_WORKLOAD,
    DEFINITION,
    EINSUM,
    HARDWARE,
    MODEL,
    SOLUTION,
    TRACE,
    WORKLOAD,
    write_dataset,
)

# 100 examples per property (each writes and validates a dataset: 200 took 37 s of the suite's CPU), drawn
# from a fixed seed (derandomize) so that every run, local or CI, checks the same examples and a failure
# reproduces.
FUZZ = settings(max_examples=100, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# -- vocabulary: strings the schemas care about, so random values often hit real branches ---------
def _schema_words(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "properties" and isinstance(v, dict):
                yield from v
            if k in ("enum", "const"):
                yield from (x for x in (v if isinstance(v, list) else [v]) if isinstance(x, str))
            yield from _schema_words(v)
    elif isinstance(node, list):
        for v in node:
            yield from _schema_words(v)


VOCAB = sorted(set(w for kind in RECORD_KINDS + ("common",) for w in _schema_words(load_schema(kind))) | {
    "rmsnorm_h128", "rmsnorm_h128_torch", "baseline", "wl-0001", "wl-0002", "batch_size", "hidden_size", "input",
    "weight", "eps", "output", "main.py", "main.py::run", "kernel.cu::run", "2026-11-21T10:00:00Z",
    "status:verified", "model:x", "fused", "test_cpu", "blob/workloads/norm/rmsnorm_h128/wl-0002.safetensors",
    "../x", "/abs", "", "self", "{{ batch_size }}", "{{ 1/0 }}", "{% if %}", "\ud800", "def run(:"})

scalars = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.sampled_from([0, 1, -1, 128, 2**63, 0.5])
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12) | st.sampled_from(VOCAB))
json_values = st.recursive(
    scalars,
    lambda children: (st.lists(children, max_size=4)
                      | st.dictionaries(st.sampled_from(VOCAB) | st.text(max_size=8), children, max_size=4)),
    max_leaves=12)


# -- mutations of the good records -----------------------------------------------------------------
def _rendered_einsum() -> dict:
    return yaml.safe_load(render_einsum(EINSUM, {"batch_size": 4, "hidden_size": 128}))


GOOD = {
    "definition": DEFINITION, "workload": WORKLOAD, "workload_blob": BLOB_WORKLOAD, "solution": SOLUTION,
    "trace": TRACE, "model": MODEL, "hardware": HARDWARE, "agent_trace": AGENT_TRACE,
    "agent_trace_list": [{"type": "llm_request", "model": "m", "conversation": [], "response": {}},
                         {"type": "tool_call", "tool_name": "t", "arguments": {}, "result": ""}],
    "einsum": _rendered_einsum(),
}
KIND_OF = {name: name.split("_blob")[0].replace("agent_trace_list", "agent_trace") for name in GOOD}


def _paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, path + (i,))


def _get(value: Any, path: tuple) -> Any:
    for p in path:
        value = value[p]
    return value


def _retyped(v: Any) -> list:
    out = [None, True, False, 0, -1, 1.5, 1.0, "", "x", [], {}, [v], {"value": v}, str(v)[:20]]
    if isinstance(v, bool):
        out += [int(v)]
    elif isinstance(v, (int, float)):
        out += [-v, float(v), v * 1000000, str(v)]
    elif isinstance(v, str):
        out += [v.upper(), v + "s", v[:-1], " " + v, v.replace("_", "-")]
    return out


@st.composite
def mutated(draw, record: Any) -> Any:
    """`record` with 1-3 random edits: replace, delete, rename, insert, retype, duplicate."""
    data = copy.deepcopy(record)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(data))))
        op = draw(st.sampled_from(["replace", "delete", "rename", "insert", "retype", "duplicate"]))
        target = _get(data, path)
        parent, key = (_get(data, path[:-1]), path[-1]) if path else (None, None)
        if op == "replace" or (op in ("delete", "rename") and not path):
            new = draw(json_values)
        elif op == "retype":
            new = draw(st.sampled_from(_retyped(target)))
        elif op == "delete":
            del parent[key]
            continue
        elif op == "rename":
            if isinstance(parent, dict):
                name = draw(st.sampled_from(VOCAB) | st.sampled_from([key + "s", key[:-1], key.upper()]))
                items = [(name if k == key else k, v) for k, v in parent.items()]
                parent.clear()
                parent.update(items)
            continue
        elif op == "insert":
            if isinstance(target, dict):
                target[draw(st.sampled_from(VOCAB))] = draw(json_values)
            elif isinstance(target, list):
                target.insert(draw(st.integers(0, len(target))), draw(json_values))
            continue
        else:  # duplicate an item of a list (names, sources, kernels ...)
            if isinstance(target, list) and target:
                target.append(copy.deepcopy(draw(st.sampled_from(target))))
            continue
        if path:
            parent[key] = new
        else:
            data = new
    return data


mutated_records = st.sampled_from(sorted(GOOD)).flatmap(lambda name: st.tuples(st.just(name), mutated(GOOD[name])))


# -- running the validator --------------------------------------------------------------------------
FILES = {
    "definition": "definitions/norm/rmsnorm_h128.json",
    "workload": "workloads/norm/rmsnorm_h128.jsonl",
    "solution": "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json",
    "trace": "traces/baseline/norm/rmsnorm_h128.jsonl",
    "model": "models/test-model.json",
    "hardware": "hardware/test_cpu.json",
    "agent_trace": "agent_traces/baseline/rmsnorm_h128_torch.json",
    "einsum": "einsums/norm/rmsnorm_h128.yaml",
    "blob": "blob/workloads/norm/rmsnorm_h128/wl-0002.safetensors",
}


def check_never_raises(root: Path, run_cli: bool = False) -> list[Diagnostic]:
    diags = validate_path(root)
    assert isinstance(diags, list) and all(isinstance(d, Diagnostic) for d in diags)
    for d in diags:
        assert d.severity in ("error", "warning") and isinstance(d.line, int) and d.line >= 0
        assert d.message and d.hint, d
    if run_cli:
        for fmt in ("human", "json", "github"):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["validate", "--dataset", str(root), "--format", fmt])
            assert code == (1 if any(d.is_error for d in diags) else 0)
            out.getvalue().encode("utf-8")  # printable on a UTF-8 terminal (no lone surrogates)
            if fmt == "json":
                assert len(json.loads(out.getvalue() or "[]")) == len(diags)
    return diags


@contextlib.contextmanager
def dataset(**overrides) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield write_dataset(Path(tmp) / "ds", **overrides)


def _write(path: Path, content: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))


# (a) random JSON values as each kind of file ---------------------------------------------------
@FUZZ
@given(kind=st.sampled_from(sorted(FILES)), values=st.lists(json_values, min_size=1, max_size=3),
       run_cli=st.booleans())
def test_random_json_as_any_file(kind: str, values: list, run_cli: bool) -> None:
    with dataset() as root:
        rel = FILES[kind]
        if rel.endswith(".jsonl"):
            text = "".join(json.dumps(v) + "\n" for v in values)
        else:  # for the Einsum cascade too: JSON is YAML, and jinja sees its strings
            text = json.dumps(values[0], indent=2)
        _write(root / rel, text)
        check_never_raises(root, run_cli)


# (b) mutations of the good records --------------------------------------------------------------
OVERRIDE_OF = {"definition": "definition", "solution": "solution", "model": "model", "hardware": "hardware",
               "agent_trace": "agent_trace", "agent_trace_list": "agent_trace"}


@FUZZ
@given(named=mutated_records, run_cli=st.booleans())
def test_mutated_records(named: tuple, run_cli: bool) -> None:
    name, data = named
    if name in OVERRIDE_OF:
        overrides = {OVERRIDE_OF[name]: data}
    elif name == "workload":
        overrides = {"workloads": [data, BLOB_WORKLOAD]}
    elif name == "workload_blob":
        overrides = {"workloads": [WORKLOAD, data]}
    elif name == "trace":
        overrides = {"traces": [data, TRACE]}
    else:  # einsum: the mutated cascade as YAML text (strings may hold jinja)
        overrides = {"einsum": yaml.safe_dump(data)}
    with dataset(**overrides) as root:
        check_never_raises(root, run_cli)


@FUZZ
@given(first=mutated_records, second=mutated_records)
def test_two_mutations_in_different_files(first: tuple, second: tuple) -> None:
    """Broken references between records (a bad definition and a bad trace ...) never raise."""
    overrides: dict = {}
    for name, data in (first, second):
        if name in OVERRIDE_OF:
            overrides[OVERRIDE_OF[name]] = data
        elif name.startswith("workload"):
            overrides["workloads"] = [data]
        elif name == "trace":
            overrides["traces"] = [data]
    with dataset(**overrides) as root:
        check_never_raises(root)


# (c) bytes that are not JSON ---------------------------------------------------------------------
@FUZZ
@given(kind=st.sampled_from(sorted(FILES)), data=st.binary(max_size=200))
def test_random_bytes_as_any_file(kind: str, data: bytes) -> None:
    with dataset() as root:
        _write(root / FILES[kind], data)
        check_never_raises(root)


@FUZZ
@given(kind=st.sampled_from(sorted(FILES)), cut=st.floats(0, 1), tail=st.sampled_from([b"", b"\xff", b"\x00", b"\xc3"]))
def test_truncated_files(kind: str, cut: float, tail: bytes) -> None:
    with dataset() as root:
        path = root / FILES[kind]
        raw = path.read_bytes()
        path.write_bytes(raw[: int(len(raw) * cut)] + tail)
        check_never_raises(root)


@FUZZ
@given(text=st.text(max_size=60) | st.sampled_from(VOCAB), where=st.sampled_from(["reference", "constraint", "source"]))
def test_random_python_text(text: str, where: str) -> None:
    """References, constraints and solution sources are parsed as Python: any text is reported, not raised."""
    d, s = copy.deepcopy(DEFINITION), copy.deepcopy(SOLUTION)
    if where == "reference":
        d["reference"] = text or "x"
    elif where == "constraint":
        d["constraints"] = [text or "x"]
    else:
        s["sources"][0]["content"] = text
    with dataset(definition=d, solution=s) as root:
        check_never_raises(root)


# -- fixed nasty inputs: cases a random search rarely reaches -----------------------------------------
DEEP = "[" * 600 + "]" * 600
NASTY = [
    ("definitions/norm/rmsnorm_h128.json", "[" * 100000),
    ("definitions/norm/rmsnorm_h128.json", json.dumps({**DEFINITION, "tags": ["x"]})[:-1] + ', "deep": ' + DEEP + "}"),
    ("definitions/norm/rmsnorm_h128.json",
     json.dumps(DEFINITION).replace('"tags": [', '"tags": [' + DEEP + ", " + DEEP + ", ")),
    ("definitions/norm/rmsnorm_h128.json", json.dumps({**DEFINITION, "reference": "x = (" + "a+" * 100000 + "a)"})),
    ("definitions/norm/rmsnorm_h128.json", json.dumps({**DEFINITION, "constraints": ["a" + "+a" * 100000]})),
    ("definitions/norm/rmsnorm_h128.json", json.dumps({**DEFINITION, "constraints": ["batch_size\x00"]})),
    ("definitions/norm/rmsnorm_h128.json", json.dumps({**DEFINITION, "reference": "def run(\x00"})),
    ("definitions/norm/rmsnorm_h128.json", json.dumps({**DEFINITION, "constraints": ["\ud800"], "reference": "\ud800"})),
    ("solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json",
     json.dumps({**SOLUTION, "sources": [{"path": "main.py", "content": "\ud800"}]})),
    ("definitions/norm/rmsnorm_h128.json", '{"name": NaN, "value": Infinity}'),
    ("definitions/norm/rmsnorm_h128.json", '{"\\ud800": 1, "name": "\\udcff"}'),
    ("workloads/norm/rmsnorm_h128.jsonl", json.dumps({**BLOB_WORKLOAD, "workload": {
        **BLOB_WORKLOAD["workload"], "inputs": {**BLOB_WORKLOAD["workload"]["inputs"],
                                                 "input": {"type": "safetensors", "path": "blob/x\x00y", "tensor_key": "k"}}}})),
    ("workloads/norm/rmsnorm_h128.jsonl", json.dumps({**BLOB_WORKLOAD, "workload": {
        **BLOB_WORKLOAD["workload"], "inputs": {**BLOB_WORKLOAD["workload"]["inputs"],
                                                 "input": {"type": "safetensors", "path": "blob", "tensor_key": "k"}}}})),
    ("blob/workloads/norm/rmsnorm_h128/wl-0002.safetensors",
     len(b'{"input": {"dtype": [1], "shape": [2]}}').to_bytes(8, "little") + b'{"input": {"dtype": [1], "shape": [2]}}'),
    ("blob/workloads/norm/rmsnorm_h128/wl-0002.safetensors",
     len(b'{"input": {"dtype": "F16", "shape": 5}}').to_bytes(8, "little") + b'{"input": {"dtype": "F16", "shape": 5}}'),
    ("blob/workloads/norm/rmsnorm_h128/wl-0002.safetensors", (2**63).to_bytes(8, "little") + b"{}"),
    ("blob/workloads/norm/rmsnorm_h128/wl-0002.safetensors", b"\x02\x00\x00\x00\x00\x00\x00\x00\xff\xfe"),
    ("einsums/norm/rmsnorm_h128.yaml", "workload: {{ 1/0 }}\n"),
    ("einsums/norm/rmsnorm_h128.yaml", "{{ ''.__class__.__mro__[1].__subclasses__() }}\n"),
    ("einsums/norm/rmsnorm_h128.yaml", "{{ batch_size.bit_length(1, 2) }}\n"),
    ("einsums/norm/rmsnorm_h128.yaml", "workload: 2024-13-45\n"),
    ("einsums/norm/rmsnorm_h128.yaml", "workload:\n  einsums: !!python/object:os.system {}\n"),
    ("einsums/norm/rmsnorm_h128.yaml", "? [a, b]\n: 1\n"),
    ("einsums/norm/rmsnorm_h128.yaml", "workload: {1: 2, null: 3, 2024-01-01: x}\n"),
    ("einsums/norm/rmsnorm_h128.yaml", "a: &a [*a]\n"),
    ("einsums/norm/rmsnorm_h128.yaml", "workload: &w {einsums: [{name: x, tensor_accesses: [*w]}]}\n"),
    ("einsums/norm/rmsnorm_h128.yaml", "workload:\n  einsums: [{name: x, tensor_accesses: [{name: y, projection: .nan}]}]\n"),
    ("einsums/norm/rmsnorm_h128.yaml", "[" * 5000),
    ("models/\udcffbad.json", "{}"),
    ("agent_traces/baseline/rmsnorm_h128_torch.json", "[]"),
    ("agent_traces/baseline/rmsnorm_h128_torch.json", '[{"type": "llm_request"}, 1, null]'),
    ("traces/baseline/norm/rmsnorm_h128.jsonl", json.dumps({**TRACE, "evaluation": {
        **TRACE["evaluation"], "performance": {"latency_ms": 1e-320, "reference_latency_ms": 1e308,
                                               "speedup_factor": 1e308}}})),
]


def test_nasty_inputs_never_raise(tmp_path: Path) -> None:
    for i, (rel, content) in enumerate(NASTY):
        root = write_dataset(tmp_path / str(i))
        _write(root / rel, content)  # a name with '\udcff' is written as the byte 0xff
        diags = check_never_raises(root, run_cli=True)
        assert any(d.is_error for d in diags) or rel.startswith("traces"), (rel, diags)


def test_axis_named_self_renders(tmp_path: Path) -> None:
    """Axis names are passed to jinja as data: 'self' is a valid axis name, not a clash with render(self)."""
    d = json.loads(json.dumps(DEFINITION).replace("batch_size", "self"))
    w = json.loads(json.dumps(WORKLOAD).replace("batch_size", "self"))
    ws = [{**w, "workload": {**w["workload"], "uuid": f"wl-{i:04d}"}} for i in range(1, 6)]  # the verified minimum
    t = json.loads(json.dumps(TRACE).replace("batch_size", "self"))
    # (jinja reserves the name 'self' inside templates, so this cascade does not use the axis)
    root = write_dataset(tmp_path / "ds", definition=d, workloads=ws, traces=[t],
                         einsum=EINSUM.replace("{{ batch_size }}", "4"))
    assert check_never_raises(root) == []


def test_einsum_template_is_sandboxed(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "ds", einsum="x: {{ ''.__class__.__mro__[1].__subclasses__() }}\n")
    [d] = check_never_raises(root)
    assert d.file == FILES["einsum"] and "template fails to render" in d.message and "unsafe" in d.message


def test_blob_header_is_read_again_after_the_file_changes(tmp_path: Path) -> None:
    from dataset_factory import safetensors_bytes

    root = write_dataset(tmp_path / "ds")
    assert validate_path(root) == []
    (root / FILES["blob"]).write_bytes(safetensors_bytes({"input": ("F32", [2, 128])}))
    assert [d.message for d in validate_path(root)] == [
        "blob tensor 'input' has dtype float32, but input 'input' is float16"]
