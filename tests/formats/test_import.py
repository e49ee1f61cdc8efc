"""`kerneltrace import`: legacy and FlashInfer-Trace files -> canonical dataset files that load cleanly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from generator.cli import main
from generator.formats.importer import run_import
from generator.load import load

DATA = Path(__file__).parent.parent / "data" / "dialects"


def _import(capsys, paths, dataset: Path, **kwargs) -> tuple[int, str]:
    code = run_import([Path(p) for p in paths], dataset, **kwargs)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text
    return code, text


def _load_clean(dataset: Path):
    """Load and require no errors and no dialect warnings: imported files are canonical."""
    ds = load(dataset)
    problems = [d.format_human() for d in ds.load_diagnostics if d.is_error or "dialect" in d.message]
    assert problems == []
    return ds


def _run_reference(code: str, *args):
    namespace: dict = {}
    exec(compile(code, "<reference>", "exec"), namespace)
    return namespace["run"](*args)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_kernel_signature_round_trip(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    dataset = tmp_path / "dataset"
    code, out = _import(capsys, [DATA / "kernel_signature"], dataset)
    assert code == 0, out
    path = dataset / "definitions/gemm/gemm_w4_n64_k32.json"
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n") and text.startswith('{\n  "name": "gemm_w4_n64_k32"')
    assert f"wrote {path}" in out
    assert (dataset / "definitions/grouped_gemm/grouped_gemm_n64_k32.json").is_file()
    # what could not be carried over is said plainly
    assert "dim_order [1, 0]" in out and "int4" in out and "status:draft" in out and "'64 / 32' evaluated to 2" in out

    ds = _load_clean(dataset)
    d = ds.definitions["gemm_w4_n64_k32"]
    assert d.type == "gemm" and "status:draft" in d.tags
    assert d.inputs["B_quantized"].dtype == "int8" and d.const_axes["N_group"] == 2
    grouped = ds.definitions["grouped_gemm_n64_k32"]
    assert grouped.inputs["A"].dtype == "bfloat16" and grouped.axes["M"].parent == "G"
    assert "def run(A, B):" in grouped.reference and "The forward of a grouped GEMM." in grouped.reference
    A, B = torch.randn(2, 3, 32, dtype=torch.bfloat16), torch.randn(2, 32, 64, dtype=torch.bfloat16)
    assert torch.equal(_run_reference(grouped.reference, A, B)["C"], torch.bmm(A, B))


def test_schema_set_round_trip_runs_wrapped_reference(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    dataset = tmp_path / "dataset"
    code, out = _import(capsys, [DATA / "schema_set"], dataset)
    assert code == 0, out
    assert (dataset / "definitions/norm/rmsnorm_h128.json").is_file()
    assert (dataset / "definitions/gqa/attention_gqa_4.json").is_file()
    assert "_run_dps" in out and "inferred from the name" in out

    ds = _load_clean(dataset)
    d = ds.definitions["rmsnorm_h128"]
    x, w = torch.randn(4, 128), torch.rand(128)
    result = _run_reference(d.reference, x, w, 1e-5)
    torch.testing.assert_close(result["output"], x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w)
    assert ds.definitions["attention_gqa_4"].constraints == ("H_qo == H_kv * H_r",)


def test_benchmark_results_without_workload_are_skipped(tmp_path, capsys):
    dataset = tmp_path / "dataset"
    code, out = _import(capsys, [DATA / "benchmark_results"], dataset)
    assert code == 1
    assert "skipped: benchmark results name no workload; rerun with --workload UUID" in out
    assert "results.json" in out
    assert not (dataset / "traces").exists()
    # the rest of the folder was imported
    ds = _load_clean(dataset)
    assert set(ds.definitions) == {"gemm_n64_k32"} and set(ds.solutions) == {"flashinfer_gemm_n64_k32"}
    assert [w.uuid for w in ds.workloads] == ["gemm_n64_k32_m16"]


def test_benchmark_results_with_workload(tmp_path, capsys):
    dataset = tmp_path / "dataset"
    code, out = _import(capsys, [DATA / "benchmark_results"], dataset, workload_uuid="gemm_n64_k32_m16")
    assert code == 0, out
    path = dataset / "traces/flashinfer/gemm/gemm_n64_k32.jsonl"
    passed, failed = _lines(path)
    assert passed["workload"] == {"uuid": "gemm_n64_k32_m16", "axes": {"M": 16},
                                  "inputs": {"A": {"type": "random"}, "B": {"type": "random"}}}
    assert passed["evaluation"]["performance"]["reference_latency_ms"] == 0.5
    assert failed["evaluation"]["status"] == "COMPILE_ERROR"
    assert "milliseconds" in out and "max_relative_error" in out and "1970-01-01T00:00:00Z" in out
    ds = _load_clean(dataset)
    assert sorted(t.status for t in ds.traces) == ["COMPILE_ERROR", "PASSED"]
    assert {t.hardware for t in ds.traces} == {"NVIDIA A100-SXM4-80GB"}

    # importing again adds nothing: identical files and lines are skipped
    code, out = _import(capsys, [DATA / "benchmark_results"], dataset, workload_uuid="gemm_n64_k32_m16")
    assert code == 0 and "unchanged" in out
    assert len(_lines(path)) == 2


def test_benchmark_results_with_unknown_workload(tmp_path, capsys):
    dataset = tmp_path / "dataset"
    code, out = _import(capsys, [DATA / "benchmark_results"], dataset, workload_uuid="nowhere")
    assert code == 0, out
    lines = _lines(dataset / "traces/flashinfer/gemm/gemm_n64_k32.jsonl")
    assert {t["workload"]["uuid"] for t in lines} == {"nowhere"}
    assert "'nowhere' is not a workload" in out


def test_flashinfer_trace_folder_round_trip(tmp_path, capsys):
    dataset = tmp_path / "dataset"
    code, out = _import(capsys, [DATA / "flashinfer_trace"], dataset)
    assert code == 0, out
    definition = json.loads((dataset / "definitions/gemm/gemm_fp8_n64_k32.json").read_text())
    assert definition["type"] == "gemm" and "op_type" not in definition
    assert definition["inputs"]["A"]["dtype"] == "float8_e4m3" and definition["inputs"]["scale"]["shape"] == []
    solution = json.loads((dataset / "solutions/fib-agent/gemm/gemm_fp8_n64_k32/torch_fp8_gemm.json").read_text())
    assert solution["spec"]["destination_passing_style"] is True
    traces = _lines(dataset / "traces/fib-agent/gemm/gemm_fp8_n64_k32.jsonl")
    assert [t["evaluation"]["environment"]["hardware"] for t in traces] == ["NVIDIA H100 80GB HBM3"] * 2
    assert traces[1]["evaluation"]["log"] == "log file: logs/torch_fp8_gemm/fp8-m8.log"
    assert all(t["evaluation"]["timestamp"].endswith("Z") for t in traces)
    assert "log_file" in out and "time zone" in out and "destination_passing_style" in out

    ds = _load_clean(dataset)
    assert set(ds.definitions) == {"gemm_fp8_n64_k32"} and set(ds.solutions) == {"torch_fp8_gemm"}
    assert [w.uuid for w in ds.workloads] == ["fp8-m8"] and len(ds.traces) == 2
    assert ds.solutions["torch_fp8_gemm"].destination_passing_style


def _dialect_dataset(root: Path) -> Path:
    """The dialect fixture files placed at their canonical dataset paths, not imported."""
    fi = DATA / "flashinfer_trace"
    for src, dst in [
        (fi / "definitions/gemm/gemm_fp8_n64_k32.json", "definitions/gemm/gemm_fp8_n64_k32.json"),
        (DATA / "kernel_signature/gemm_w4_n64_k32.json", "definitions/gemm/gemm_w4_n64_k32.json"),
        (DATA / "schema_set/rmsnorm_h128.json", "definitions/norm/rmsnorm_h128.json"),
        (fi / "workloads/gemm/gemm_fp8_n64_k32.jsonl", "workloads/gemm/gemm_fp8_n64_k32.jsonl"),
        (fi / "traces/gemm/gemm_fp8_n64_k32.jsonl", "traces/fib-agent/gemm/gemm_fp8_n64_k32.jsonl"),
    ]:
        (root / dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, root / dst)
    return root


def test_loader_reads_dialects_directly_with_a_warning(tmp_path):
    ds = load(_dialect_dataset(tmp_path / "dataset"))
    assert [d.format_human() for d in ds.load_diagnostics if d.is_error] == []
    warnings = {d.file: d.message for d in ds.load_diagnostics if not d.is_error}
    assert "FlashInfer-Trace" in warnings["definitions/gemm/gemm_fp8_n64_k32.json"]
    ks = warnings["definitions/gemm/gemm_w4_n64_k32.json"]
    assert "Kernel Signature (seed 001)" in ks and "dim_order" in ks and "int4" in ks
    assert "schema set (seed 002)" in warnings["definitions/norm/rmsnorm_h128.json"]
    assert "log_file" in warnings["traces/fib-agent/gemm/gemm_fp8_n64_k32.jsonl"]
    assert set(ds.definitions) == {"gemm_fp8_n64_k32", "gemm_w4_n64_k32", "rmsnorm_h128"}
    assert ds.definitions["gemm_fp8_n64_k32"].inputs["scale"].shape == ()
    assert len(ds.traces) == 2 and len(ds.workloads) == 1


def test_import_in_place_rewrites_dialect_files(tmp_path, capsys):
    dataset = _dialect_dataset(tmp_path / "dataset")
    code, out = _import(capsys, [dataset / "definitions", dataset / "traces", dataset / "workloads"], dataset)
    assert code == 0, out
    ds = _load_clean(dataset)
    assert len(ds.definitions) == 3 and len(ds.traces) == 2 and len(ds.workloads) == 1
    code, out = _import(capsys, [dataset / "definitions"], dataset)
    assert code == 0 and "wrote" not in out


def test_refuses_to_overwrite_a_different_file(tmp_path, capsys):
    dataset = tmp_path / "dataset"
    target = dataset / "definitions/gemm/gemm_w4_n64_k32.json"
    target.parent.mkdir(parents=True)
    target.write_text('{"name": "something else"}\n')
    code, out = _import(capsys, [DATA / "kernel_signature"], dataset)
    assert code == 1
    assert f"refusing to overwrite {target}" in out
    assert target.read_text() == '{"name": "something else"}\n'
    assert (dataset / "definitions/grouped_gemm/grouped_gemm_n64_k32.json").is_file()  # the other one went in


def test_refuses_to_change_a_workload(tmp_path, capsys):
    dataset = tmp_path / "dataset"
    assert _import(capsys, [DATA / "flashinfer_trace"], dataset)[0] == 0
    changed = tmp_path / "changed.jsonl"
    line = json.loads((DATA / "flashinfer_trace/workloads/gemm/gemm_fp8_n64_k32.jsonl").read_text())
    line["workload"]["axes"]["M"] = 9
    changed.write_text(json.dumps(line) + "\n")
    code, out = _import(capsys, [changed], dataset)
    assert code == 1 and "workload 'fp8-m8' exists there with different content" in out
    assert len(_lines(dataset / "workloads/gemm/gemm_fp8_n64_k32.jsonl")) == 1


def test_dry_run_writes_nothing(tmp_path, capsys):
    dataset = tmp_path / "dataset"
    code, out = _import(capsys, [DATA / "flashinfer_trace"], dataset, dry_run=True)
    assert code == 0 and "would write" in out
    assert not dataset.exists()


def test_garbage_gives_messages_not_tracebacks(tmp_path, capsys):
    dataset = tmp_path / "dataset"
    code, out = _import(capsys, [DATA / "garbage", tmp_path / "missing.json"], dataset)
    assert code == 1
    garbage = DATA / "garbage"
    assert f"{garbage / 'broken.json'}:3: error: invalid JSON" in out
    assert f"{garbage / 'lines.jsonl'}:2: error: invalid JSON" in out
    assert f"{garbage / 'lines.jsonl'}:3: error: not a record" in out
    assert f"{garbage / 'binary.json'}: error: not UTF-8" in out
    assert f"{garbage / 'number.json'}: error: not a record" in out
    assert "missing.json: error: no such file" in out
    assert not (dataset / "definitions").exists()


def test_schema_errors_after_normalising_are_reported(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    raw = json.loads((DATA / "flashinfer_trace/definitions/gemm/gemm_fp8_n64_k32.json").read_text())
    raw["op_type"] = "paged_attention"
    bad.write_text(json.dumps(raw))
    code, out = _import(capsys, [bad], tmp_path / "dataset")
    assert code == 1
    assert "'paged_attention' is not an allowed value" in out and "not imported" in out
    assert "closest canonical type: 'mha' or 'gqa' or 'mla' or 'dsa'" in out


def test_cli_import(tmp_path, capsys):
    dataset = tmp_path / "dataset"
    assert main(["import", str(DATA / "benchmark_results"), "--dataset", str(dataset),
                 "--workload", "gemm_n64_k32_m16"]) == 0
    assert main(["import", str(DATA / "garbage"), "--dataset", str(dataset)]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_benchmark_result_lines_and_calling_records(tmp_path, capsys):
    dataset = tmp_path / "dataset"
    assert _import(capsys, [DATA / "benchmark_results"], dataset, workload_uuid="gemm_n64_k32_m16")[0] == 0
    results = json.loads((DATA / "benchmark_results/results.json").read_text())
    more = dict(results[0], time=0.125, speedup=4.0)
    (tmp_path / "more.jsonl").write_text(json.dumps(more) + "\n")
    (tmp_path / "llama.json").write_text(json.dumps(
        {"model": "meta-llama/Llama-3.1-8B", "framework": "SGLang", "kernels": [{"id": "gemm_n64_k32", "count": 4}]}))
    code, out = _import(capsys, [tmp_path / "more.jsonl", tmp_path / "llama.json"], dataset,
                        workload_uuid="gemm_n64_k32_m16")
    assert code == 0, out
    assert len(_lines(dataset / "traces/flashinfer/gemm/gemm_n64_k32.jsonl")) == 3
    ds = _load_clean(dataset)
    assert ds.models["llama"].kernels[0].count == 4


def test_imported_dataset_passes_validate(tmp_path, capsys):
    validate = pytest.importorskip("generator.validate")
    dataset = tmp_path / "dataset"
    for folder in ("kernel_signature", "schema_set", "flashinfer_trace"):
        assert _import(capsys, [DATA / folder], dataset)[0] == 0
    assert _import(capsys, [DATA / "benchmark_results"], dataset, workload_uuid="gemm_n64_k32_m16")[0] == 0
    errors = [d.format_human() for d in validate.validate_path(dataset) if d.is_error]
    assert errors == []
