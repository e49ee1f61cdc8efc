"""dialects.normalise_*: FlashInfer-Trace, Kernel Signature (seed 001) and schema set (seed 002) -> canonical."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from generator.formats import dialects
from generator.model.records import Source
from generator.model.schema_check import schema_diagnostics

DATA = Path(__file__).parent.parent / "data" / "dialects"


def _json(rel: str):
    return json.loads((DATA / rel).read_text(encoding="utf-8"))


def _run_reference(code: str, *args):
    namespace: dict = {}
    exec(compile(code, "<reference>", "exec"), namespace)
    return namespace["run"](*args)


def _schema_errors(kind: str, data) -> list[str]:
    return [d.message for d in schema_diagnostics(kind, data, Source("x.json"))]


CANONICAL_DEFINITION = {
    "name": "rmsnorm_d128", "type": "norm", "tags": ["status:draft"],
    "axes": {"batch_size": {"type": "var"}, "hidden_size": {"type": "const", "value": 128}},
    "inputs": {"input": {"shape": ["batch_size", "hidden_size"], "dtype": "float16"},
               "eps": {"shape": [], "dtype": "float32"}},
    "outputs": {"output": {"shape": ["batch_size", "hidden_size"], "dtype": "float16"}},
    "reference": "import torch\n\ndef run(input, eps):\n    return {'output': input}\n",
}
CANONICAL_TRACE = {
    "definition": "rmsnorm_d128",
    "workload": {"uuid": "w1", "axes": {"batch_size": 4}, "inputs": {"input": {"type": "random"}}},
    "solution": "s1",
    "evaluation": {"status": "PASSED", "log": "",
                   "correctness": {"max_absolute_error": 0.0, "max_relative_error": 0.0},
                   "performance": {"latency_ms": 1.0, "reference_latency_ms": 2.0, "speedup_factor": 2.0},
                   "environment": {"hardware": "H100_SXM", "libs": {"torch": "2.13.0"}},
                   "timestamp": "2026-01-02T03:04:05+01:00"},
}
CANONICAL_SOLUTION = {
    "name": "s1", "definition": "rmsnorm_d128", "author": "me",
    "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run"},
    "sources": [{"path": "main.py", "content": "def run(input, eps):\n    return {'output': input}\n"}],
}
CANONICAL_WORKLOAD = {"definition": "rmsnorm_d128", "workload": CANONICAL_TRACE["workload"],
                      "solution": None, "evaluation": None}


# -- canonical input passes through ----------------------------------------------------------

@pytest.mark.parametrize("fn, data", [
    (lambda d: dialects.normalise_definition(d, "rmsnorm_d128"), CANONICAL_DEFINITION),
    (dialects.normalise_trace, CANONICAL_TRACE),
    (dialects.normalise_solution, CANONICAL_SOLUTION),
    (dialects.normalise_workload, CANONICAL_WORKLOAD),
])
def test_canonical_passes_through_unchanged(fn, data):
    before = copy.deepcopy(data)
    norm = fn(data)
    assert norm.data is data
    assert norm.dialect is None and norm.notes == []
    assert data == before


def test_canonical_z_timestamp_is_not_a_dialect():
    trace = copy.deepcopy(CANONICAL_TRACE)
    trace["evaluation"]["timestamp"] = "2026-01-02T03:04:05.5Z"
    assert dialects.normalise_trace(trace).dialect is None


# -- malformed input never raises --------------------------------------------------------------

GARBAGE = [
    None, 1, 2.5, "text", [], [1, {"op": "gemm"}], {}, {"op": 1}, {"op": "gemm", "input": [1], "output": "x"},
    {"op_type": "gemm", "inputs": [1], "axes": "M"}, {"op_type": None, "inputs": {"a": 1}, "outputs": {"b": None}},
    {"inputs": {"a": {"shape": None, "dtype": 5}}, "outputs": {}},
    {"op": "gemm", "axes": {"N": {"type": "const", "value": "__import__('os').system('x')"}}},
    {"op": "gemm", "axes": {"N": {"type": "const", "value": "2 ** 10000"}}, "code": 5},
    {"op": "gemm", "code": "def forward(:\n"}, {"op": "gemm", "code": "def forward(x):\n\treturn x\n  \tpass"},
    {"id": 7, "inputs": {"x": {"shape": "M"}}, "outputs": {"y": {"shape": ["M"], "dtype": None}},
     "reference_code": "def run(x, y): pass", "assumptions": 3},
    {"id": "a", "inputs": {"x": {"shape": ["M"]}}, "outputs": {"y": {"shape": ["M"]}}, "axes": [],
     "reference_code": "def run(x, y): pass"},
    {"evaluation": {"environment": 3, "log_file": None, "correctness": [], "performance": "fast"}},
    {"evaluation": {"environment": {"device": None}, "timestamp": 5}},
    {"evaluation": {"timestamp": "2025-01-01T00:00:00"}},
    {"kernel_id": 1, "device": "x", "compiled": "yes", "time": "fast"}, {"kernel_id": "k", "device": [1], "time": -1},
    {"spec": None, "sources": 1, "description": None}, {"spec": {"language": "tilelang"}, "sources": []},
    {"workload": {"description": None}}, {"workload": 3},
]


@pytest.mark.parametrize("value", GARBAGE, ids=range(len(GARBAGE)))
def test_malformed_input_never_raises(value):
    before = copy.deepcopy(value)
    for norm in (dialects.normalise_definition(value, "stem"), dialects.normalise_trace(value),
                 dialects.normalise_solution(value), dialects.normalise_workload(value),
                 dialects.normalise_trace(value, workload_uuid="w")):
        assert isinstance(norm, dialects.Normalised)
        assert all(isinstance(n, str) for n in norm.notes)
    assert value == before  # the input is never modified


def test_fuzzed_input_never_raises():
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")
    keys = st.sampled_from(["op", "op_type", "id", "name", "type", "axes", "inputs", "outputs", "input", "output",
                            "shape", "dtype", "dim_order", "code", "reference_code", "reference", "value", "const",
                            "evaluation", "environment", "device", "log_file", "correctness", "extra", "timestamp",
                            "kernel_id", "compiled", "time", "speedup", "max_diff", "spec", "sources", "workload",
                            "assumptions", "description"])
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                       st.sampled_from(["fp16", "int4", "float8_e4m3fn", "const", "var", "4096 / 32", "M",
                                        "def forward(A):\n    return A\n", "def run(x, y):\n    y.copy_(x)\n",
                                        "2025-01-01T00:00:00"]))
    values = st.recursive(leaves, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(keys, kids, max_size=5),
                          max_leaves=25)

    @hypothesis.settings(max_examples=300, deadline=None, database=None)
    @hypothesis.given(values)
    def check(value):
        dialects.normalise_definition(value, "stem")
        dialects.normalise_trace(value)
        dialects.normalise_trace(value, "w")
        dialects.normalise_solution(value, flashinfer=True)
        dialects.normalise_workload(value)

    check()


# -- FlashInfer-Trace ----------------------------------------------------------------------------

def test_flashinfer_definition():
    raw = _json("flashinfer_trace/definitions/gemm/gemm_fp8_n64_k32.json")
    norm = dialects.normalise_definition(raw, "gemm_fp8_n64_k32")
    assert norm.dialect == "FlashInfer-Trace"
    d = norm.data
    assert d["type"] == "gemm" and "op_type" not in d
    assert d["inputs"]["A"]["dtype"] == "float8_e4m3"
    assert d["inputs"]["scale"] == {"shape": [], "dtype": "float32"}
    assert "description" not in d and "description" not in d["axes"]["M"]
    assert _schema_errors("definition", d) == []
    assert norm.notes == []  # nothing lost
    assert raw["op_type"] == "gemm"  # the input is not modified


def test_type_with_flashinfer_spellings_is_flashinfer():
    d = copy.deepcopy(CANONICAL_DEFINITION)
    d["inputs"]["eps"]["shape"] = None
    norm = dialects.normalise_definition(d, "x")
    assert norm.dialect == "FlashInfer-Trace" and norm.data["inputs"]["eps"]["shape"] == []


@pytest.mark.parametrize("spelling, canonical", [
    ("fp16", "float16"), ("bf16", "bfloat16"), ("fp32", "float32"), ("fp8_e4m3", "float8_e4m3"),
    ("fp8_e5m2", "float8_e5m2"), ("fp4_e2m1", "float4_e2m1"), ("float8_e4m3fn", "float8_e4m3"),
    ("float8_e5m2", "float8_e5m2"), ("int8", "int8"), ("torch.bfloat16", "bfloat16"),
])
def test_dtype_spellings(spelling, canonical):
    raw = {"op": "gemm", "axes": {"M": {"type": "var"}}, "input": {"A": {"shape": ["M"], "dtype": spelling}},
           "output": {"C": {"shape": ["M"], "dtype": spelling}}, "code": "def run(A):\n    return {'C': A}\n"}
    norm = dialects.normalise_definition(raw, "g")
    assert norm.data["inputs"]["A"]["dtype"] == canonical
    assert not any("dtype" in n for n in norm.notes)


@pytest.mark.parametrize("spelling, canonical", [("float8_e4m3fnuz", "float8_e4m3"), ("float8_e5m2fnuz", "float8_e5m2"),
                                                 ("float4_e2m1fn_x2", "float4_e2m1")])
def test_lossy_dtype_spellings_get_a_note(spelling, canonical):
    d = copy.deepcopy(CANONICAL_DEFINITION)
    d["inputs"]["input"]["dtype"] = spelling
    norm = dialects.normalise_definition(d, "x")
    assert norm.data["inputs"]["input"]["dtype"] == canonical
    assert any(spelling in n for n in norm.notes)


def test_flashinfer_op_types_map_to_canonical_types_and_keep_their_name_as_a_tag():
    raw = _json("flashinfer_trace/definitions/gemm/gemm_fp8_n64_k32.json")
    raw["op_type"] = "gqa_paged"
    norm = dialects.normalise_definition(raw, "x")
    assert norm.data["type"] == "gqa"
    assert "op_type:gqa_paged" in norm.data["tags"]
    assert any("'gqa_paged' is written as the canonical type 'gqa'" in n for n in norm.notes)
    assert not _schema_errors("definition", norm.data)


def test_unknown_type_is_kept_with_a_note_naming_the_closest_types():
    raw = _json("flashinfer_trace/definitions/gemm/gemm_fp8_n64_k32.json")
    raw["op_type"] = "attention"
    norm = dialects.normalise_definition(raw, "x")
    assert norm.data["type"] == "attention"
    assert any("'attention' is not in the canonical list" in n and "'gqa'" in n and "activation" not in
               n.split("pick one of")[0] for n in norm.notes)
    errors = [d for d in schema_diagnostics("definition", norm.data, Source("x.json"))]
    assert any("attention" in d.message and "'mha' or 'gqa' or 'mla' or 'dsa'" in d.hint for d in errors)
    raw["op_type"] = "rmsnorm_fused"
    assert any("closest canonical type: 'norm'" in n for n in dialects.normalise_definition(raw, "x").notes)


def test_flashinfer_trace_new_and_old_fields():
    lines = (DATA / "flashinfer_trace/traces/gemm/gemm_fp8_n64_k32.jsonl").read_text().splitlines()
    new, old = (dialects.normalise_trace(json.loads(line)) for line in lines)
    assert new.dialect == old.dialect == "FlashInfer-Trace"
    assert new.data["evaluation"]["timestamp"] == "2025-09-30T11:02:03.456789Z"
    assert "extra" not in new.data["evaluation"]["correctness"]
    assert any("time zone" in n for n in new.notes)
    ev = old.data["evaluation"]
    assert ev["environment"] == {"hardware": "NVIDIA H100 80GB HBM3", "libs": {"torch": "2.6.0"},
                                 "provenance": {"kind": "recorded", "tool": "FlashInfer-Trace"}}  # not measured here
    assert ev["log"] == "log file: logs/torch_fp8_gemm/fp8-m8.log" and "log_file" not in ev
    assert any("log_file" in n and "content is not carried over" in n for n in old.notes)
    for n in (new, old):
        assert _schema_errors("trace", n.data) == []


def test_flashinfer_trace_unknown_fields_dropped_with_notes():
    trace = copy.deepcopy(CANONICAL_TRACE)
    trace["evaluation"]["environment"] = {"device": "A100", "gpu_clock": 1410}
    trace["evaluation"]["correctness"]["extra"] = {"matched_ratio": 0.99, "cosine": 0.9}
    trace["run_id"] = 7
    norm = dialects.normalise_trace(trace)
    assert norm.data["evaluation"]["environment"] == {"hardware": "A100",
                                                      "provenance": {"kind": "recorded", "tool": "FlashInfer-Trace"}}
    assert norm.data["evaluation"]["correctness"]["matched_ratio"] == 0.99
    assert "run_id" not in norm.data
    text = " ".join(norm.notes)
    assert "gpu_clock" in text and "cosine" in text and "run_id" in text
    assert _schema_errors("trace", norm.data) == []


def test_flashinfer_solution_dps_default():
    raw = _json("flashinfer_trace/solutions/gemm/gemm_fp8_n64_k32/torch_fp8_gemm.json")
    assert dialects.normalise_solution(raw).dialect is None  # nothing in the record says FlashInfer-Trace
    norm = dialects.normalise_solution(raw, flashinfer=True)
    assert norm.data["spec"]["destination_passing_style"] is True
    assert any("destination_passing_style" in n for n in norm.notes)
    marked = dict(raw, description=None)
    assert dialects.normalise_solution(marked).data["spec"]["destination_passing_style"] is True


# -- Kernel Signature (seed 001) -----------------------------------------------------------------

def test_kernel_signature_definition():
    torch = pytest.importorskip("torch")
    norm = dialects.normalise_definition(_json("kernel_signature/gemm_w4_n64_k32.json"), "gemm_w4_n64_k32")
    assert norm.dialect == "Kernel Signature (seed 001)"
    d = norm.data
    assert d["name"] == "gemm_w4_n64_k32" and d["type"] == "gemm"
    assert d["axes"]["N_group"] == {"type": "const", "value": 2}
    assert d["inputs"]["A"]["dtype"] == "float16" and d["outputs"]["C"]["dtype"] == "float16"  # default fp16
    assert d["inputs"]["B_quantized"]["dtype"] == "int8" and "status:draft" in d["tags"]
    assert all("dim_order" not in t for t in {**d["inputs"], **d["outputs"]}.values())
    text = "\n".join(norm.notes)
    assert "dim_order [1, 0]" in text and "'B_quantized'" in text
    assert "dim_order [0, 1]" not in text  # the identity order loses nothing
    assert "int4" in text and "int8" in text and "status:draft" in text
    assert "'64 / 32' evaluated to 2" in text
    assert _schema_errors("definition", d) == []
    # forward returns a tensor: the reference's run returns {"C": ...}
    A = torch.randn(3, 32, dtype=torch.float16)
    Bq = torch.randint(-8, 8, (64, 32), dtype=torch.int8)
    scale = torch.rand(2, 32)
    out = _run_reference(d["reference"], A, Bq, scale)
    expected = (A.float() @ (Bq.float() * scale.repeat_interleave(32, 0)).T).half()
    assert set(out) == {"C"} and torch.equal(out["C"], expected)


def test_forward_renamed_with_tokens_not_text():
    code = ('import torch\n\n\ndef forward(A, B):\n    """forward of the kernel; see forward()."""\n'
            '    # forward pass\n    helper = Obj()\n    helper.forward = 1\n    return {"C": A + B}\n\n\n'
            'class Obj:\n    def forward(self):\n        return "forward"\n\n\nALIAS = forward\n')
    raw = {"op": "gemm", "axes": {"M": {"type": "var"}}, "input": {"A": {"shape": ["M"]}, "B": {"shape": ["M"]}},
           "output": {"C": {"shape": ["M"]}}, "code": code}
    ref = dialects.normalise_definition(raw, "add").data["reference"]
    assert "def run(A, B):" in ref and "ALIAS = run" in ref
    assert '"""forward of the kernel; see forward()."""' in ref and "# forward pass" in ref
    assert "helper.forward = 1" in ref and "    def forward(self):" in ref and 'return "forward"' in ref
    assert _run_reference(ref, 1, 2) == {"C": 3}


@pytest.mark.parametrize("text, value", [("4096 / 32", 128), ("2 * 64 + 1", 129), ("(8 - 2) // 4", 1), ("2 ** 7", 128),
                                         ("512", 512)])
def test_axis_arithmetic(text, value):
    raw = {"op": "gemm", "axes": {"N": {"type": "const", "value": text}}, "input": {}, "output": {}, "code": ""}
    norm = dialects.normalise_definition(raw, "g")
    assert norm.data["axes"]["N"]["value"] == value
    assert any(f"'{text}' evaluated to {value}" in n for n in norm.notes)


@pytest.mark.parametrize("text", ["4096 / 3", "__import__('os').getcwd()", "1.5 * 2", "N * 2", "9 ** 99999", ""])
def test_axis_arithmetic_refuses_everything_else(text):
    raw = {"op": "gemm", "axes": {"N": {"type": "const", "value": text}}, "input": {}, "output": {}, "code": ""}
    norm = dialects.normalise_definition(raw, "g")
    assert norm.data["axes"]["N"]["value"] == text
    assert any("not integer arithmetic" in n for n in norm.notes)


# -- schema set (seed 002) -------------------------------------------------------------------------

def test_schema_set_definition_dps_wrapped_and_runs():
    torch = pytest.importorskip("torch")
    norm = dialects.normalise_definition(_json("schema_set/rmsnorm_h128.json"), "rmsnorm_h128")
    assert norm.dialect == "schema set (seed 002)"
    d = norm.data
    assert d["name"] == "rmsnorm_h128" and d["type"] == "norm" and "reference_code" not in d
    assert "def _run_dps(x, weight, eps, result):" in d["reference"]
    assert _schema_errors("definition", d) == []
    x, w = torch.randn(5, 128), torch.randn(128)
    out = _run_reference(d["reference"], x, w, 1e-6)
    expected = x * torch.rsqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + 1e-6) * w
    assert set(out) == {"output"} and out["output"].shape == (5, 128) and out["output"].dtype == torch.float32
    torch.testing.assert_close(out["output"], expected)


def test_schema_set_name_code_assumptions():
    torch = pytest.importorskip("torch")
    norm = dialects.normalise_definition(_json("schema_set/attention_gqa4.json"), "attention_gqa4")
    d = norm.data
    assert d["name"] == "attention_gqa_4" and d["type"] == "gqa"
    assert d["constraints"] == ["H_qo == H_kv * H_r"]
    assert d["inputs"]["q"]["dtype"] == "float16"  # the schema set's default
    assert _schema_errors("definition", d) == []
    q, k, v = (torch.randn(2, 3, 8, 16, dtype=torch.float16), torch.randn(2, 5, 2, 16, dtype=torch.float16),
               torch.randn(2, 5, 2, 16, dtype=torch.float16))
    out = _run_reference(d["reference"], q, k, v)
    assert out["out"].shape == (2, 3, 8, 16) and out["out"].dtype == torch.float16
    assert out["lse"].shape == (2, 3, 8) and out["lse"].dtype == torch.float32
    text = " ".join(norm.notes)
    assert "inferred from the name" in text and "renamed to 'attention_gqa_4'" in text


def test_schema_set_output_axis_not_derivable():
    raw = {"id": "gemm_x", "axes": {"M": {"type": "var"}, "N": {"type": "var"}, "K": {"type": "const", "value": 4}},
           "inputs": {"A": {"shape": ["M", "K"]}}, "outputs": {"C": {"shape": ["M", "N"]}},
           "reference_code": "import torch\n\ndef run(A, C):\n    C.zero_()\n"}
    norm = dialects.normalise_definition(raw, "gemm_x")
    assert any("axis 'N' of output 'C'" in n for n in norm.notes)
    with pytest.raises(NotImplementedError, match="axis 'N'"):
        _run_reference(norm.data["reference"], None)


def test_schema_set_value_returning_run_left_alone():
    code = "def run(A):\n    return {'C': A}\n"
    raw = {"id": "gemm_y", "axes": {"M": {"type": "var"}}, "inputs": {"A": {"shape": ["M"]}},
           "outputs": {"C": {"shape": ["M"]}}, "reference_code": code}
    assert dialects.normalise_definition(raw, "gemm_y").data["reference"] == code


def test_type_hint_from_folder():
    raw = {"id": "my_kernel", "axes": {"M": {"type": "var"}}, "inputs": {"A": {"shape": ["M"]}},
           "outputs": {"C": {"shape": ["M"]}}, "reference_code": "def run(A):\n    return {'C': A}\n"}
    assert dialects.normalise_definition(raw, "my_kernel", type_hint="activation").data["type"] == "activation"
    norm = dialects.normalise_definition(raw, "my_kernel")
    assert "type" not in norm.data and any("add 'type'" in n for n in norm.notes)


# -- benchmark results (seed 002) ------------------------------------------------------------------

def test_benchmark_result_passed():
    ok, failed = _json("benchmark_results/results.json")
    norm = dialects.normalise_trace(ok, workload_uuid="gemm_n64_k32_m16")
    assert norm.dialect == "benchmark result (seed 002)"
    t = norm.data
    assert t["definition"] == "gemm_n64_k32" and t["solution"] == "flashinfer_gemm_n64_k32"
    assert t["workload"] == {"uuid": "gemm_n64_k32_m16", "axes": {}, "inputs": {}}
    ev = t["evaluation"]
    assert ev["status"] == "PASSED" and ev["environment"] == {"hardware": "NVIDIA A100-SXM4-80GB",
                                                  "provenance": {"kind": "recorded", "tool": "benchmark-result records"}}
    assert ev["performance"] == {"latency_ms": 0.25, "reference_latency_ms": 0.5, "speedup_factor": 2.0}
    assert ev["timestamp"] == "1970-01-01T00:00:00Z"
    # only max_diff was recorded: the relative error is left out, not invented, and the log says so
    assert ev["correctness"] == {"max_absolute_error": 1e-6}
    assert "max_relative_error was not recorded" in ev["log"]
    text = " ".join(norm.notes)
    for word in ("milliseconds", "max_relative_error", "workload missing", "1970-01-01T00:00:00Z"):
        assert word in text
    assert _schema_errors("trace", t) == []


def test_benchmark_result_names_made_usable():
    raw = {"device": {"name": "A100"}, "kernel_id": "attention(gqa-4)", "source": "my kernel", "compiled": False}
    norm = dialects.normalise_trace(raw)
    assert norm.data["definition"] == "attention_gqa_4" and norm.data["solution"] == "my_kernel"
    # the same name the schema-set definition gets
    assert dialects.normalise_definition(_json("schema_set/attention_gqa4.json"), "x").data["name"] == "attention_gqa_4"


def test_benchmark_result_compile_error():
    _, failed = _json("benchmark_results/results.json")
    norm = dialects.normalise_trace(failed)
    ev = norm.data["evaluation"]
    assert ev["status"] == "COMPILE_ERROR" and "__nv_fp8" in ev["log"]
    assert "performance" not in ev and "correctness" not in ev and ev["environment"]["hardware"]
    assert norm.data["workload"]["uuid"] == "unknown"
    assert _schema_errors("trace", norm.data) == []
