"""FlashInfer-Trace datasets, written by flashinfer-bench 0.1.2's own models in each layout and
vocabulary (tests/flashinfer_trace_folder.py): read in place without false alarms, imported
whole, real faults reported with file and field, and exported back so that flashinfer-bench
loads the same counts."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from flashinfer_bench.data import TraceSet

from generator.analyse.leaderboard import definition_leaderboards
from generator.cli import main
from generator.export import export_dataset
from generator.formats import dialects
from generator.formats.importer import run_import
from generator.load import load
from generator.model.schemas import DEFINITION_TYPE_ALIASES, DEFINITION_TYPES
from generator.site.schema_doc import vocabulary
from generator.validate import validate, validate_path

import flashinfer_trace_folder as fi

CASES = [(layout, vocabulary) for layout in fi.LAYOUTS for vocabulary in fi.VOCABULARIES]
# What the public dataset's op_types become (the mapping of common.json's definition_type_alias).
EXPECTED_TYPES = {"gemm_n8_k16": "gemm", "gqa_paged_decode_h4_kv2_d8_ps1": "gqa", "gqa_ragged_prefill_h4_kv2_d8": "gqa",
                  "rmsnorm_h16": "norm", "gdn_decode_h2_d8": "gdn", "mla_paged_decode_h4_ckv16_kpe8_ps1": "mla",
                  "mla_ragged_prefill_h4_d8": "mla", "dsa_sparse_attention_h4_ckv16_kpe8_topk2_ps1": "dsa",
                  "mamba_ssu_decode_h2_d4_s8": "mamba", "moe_topk2_e4_h8_i16": "moe", "top_k_sampling_v32": "sampling"}
GQA = "gqa_paged_decode_h4_kv2_d8_ps1"
MLA = "mla_paged_decode_h4_ckv16_kpe8_ps1"


def _counts(ds) -> dict[str, int]:
    return {"definitions": len(ds.definitions), "workloads": len(ds.workloads), "solutions": len(ds.solutions),
            "traces": len(ds.traces)}


def _fib_counts(root: Path) -> dict[str, int]:
    ts = TraceSet.from_path(str(root))
    return {"definitions": len(ts.definitions), "workloads": sum(map(len, ts.workloads.values())),
            "solutions": sum(map(len, ts.solutions.values())), "traces": sum(map(len, ts.traces.values()))}


def _import(paths: list[Path], dataset: Path) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = run_import(paths, dataset)
    return code, out.getvalue()


def _expected_warning(message: str) -> bool:
    return ("laid out as FlashInfer-Trace's" in message or "FlashInfer-Trace dialect" in message
            or "is stored in the folder" in message  # an agent's folder named apart from its author
            or "has no baseline solution" in message  # true of such a dataset: ranked by recorded speedups
            or "names no hardware spec" in message)  # true too: flashinfer-bench has no hardware specs


@pytest.mark.parametrize("layout,vocab", CASES)
def test_read_in_place_without_false_alarm(tmp_path, layout, vocab):
    root = tmp_path / "fi"
    counts = fi.write(root, layout, vocab)
    if vocab == "op_type":
        assert _fib_counts(root) == counts  # the folder is one flashinfer-bench reads itself
    else:
        with pytest.raises(Exception, match="op_type"):
            TraceSet.from_path(str(root))  # 0.1.2 stops at the first definition without op_type
    ds = load(root)
    diags = validate(ds)
    # by_author: an agent run's folder (gpt-5.2_n/) named apart from its author is an error now (issue 38): the bench runs
    # and ranks a solution as its folder's, so it refuses these; `kerneltrace import` places them under their author.
    claimed = [d for d in diags if d.is_error and "is stored in the folder" in d.message]
    assert len(claimed) == (len(list((root / "solutions").rglob("*.json"))) if layout == "by_author" else 0)
    assert [d.format_human() for d in diags if d.is_error and d not in claimed] == []
    assert [d.format_human() for d in diags if not _expected_warning(d.message) and d not in claimed] == []
    assert _counts(ds) == counts
    assert {n: d.type for n, d in ds.definitions.items()} == EXPECTED_TYPES
    gqa = ds.definitions[GQA]
    assert "op_type:gqa_paged" in gqa.tags and "fi_api:flashinfer.decode.BatchDecodeWithPagedKVCacheWrapper" in gqa.tags
    assert "layout:NHD" in gqa.tags  # tags outside KernelTrace's namespaces are kept as written
    assert ds.definitions["rmsnorm_h16"].axes["hidden_size"].is_const
    layout_warnings = [d for d in diags if "laid out as" in d.message]
    # one warning per folder in a layout other than ours, none per file
    assert len(layout_warnings) == {"by_author": 0, "by_op_type": 2, "flat": 4}[layout]
    assert all("kerneltrace import" in d.hint for d in layout_warnings)


def test_cli_reads_a_folder_in_place(tmp_path, capsys):
    fi.write(tmp_path / "fi", "flat")
    assert main(["validate", "--dataset", str(tmp_path / "fi")]) == 0
    out = capsys.readouterr()
    assert "laid out as FlashInfer-Trace's definitions/<definition>.json (11 file(s))" in out.out + out.err


@pytest.mark.parametrize("layout,vocab", CASES)
def test_imported_whole_and_exported_back_for_flashinfer_bench(tmp_path, layout, vocab):
    root, dataset = tmp_path / "fi", tmp_path / "dataset"
    counts = fi.write(root, layout, vocab)
    code, out = _import([root], dataset)
    assert code == 0, out
    ds = load(dataset)
    # canonical now: no warning but the dataset's own gap (no baseline solutions)
    assert [d.format_human() for d in validate(ds) if not _expected_warning(d.message)] == []
    assert not any("FlashInfer-Trace" in d.message for d in validate(ds))
    assert _counts(ds) == counts
    assert {n: d.type for n, d in ds.definitions.items()} == EXPECTED_TYPES
    assert (dataset / f"definitions/gqa/{GQA}.json").is_file()
    assert (dataset / f"solutions/{fi.AUTHOR}/norm/rmsnorm_h16/rmsnorm_h16_agent.json").is_file()
    blobs = sorted(p.relative_to(dataset).as_posix() for p in (dataset / "blob").rglob("*.safetensors"))
    assert len(blobs) == 8 and all(p.startswith(("blob/workloads/gqa/", "blob/workloads/mla/")) for p in blobs)
    assert ds.solutions["rmsnorm_h16_agent"].destination_passing_style  # flashinfer-bench's default, kept

    summary = export_dataset(dataset, tmp_path / "out", "flashinfer-trace")
    assert summary.skipped == ()
    assert _fib_counts(tmp_path / "out") == counts
    ts = TraceSet.from_path(str(tmp_path / "out"))
    assert ts.definitions[GQA].op_type == "gqa_paged"  # the op_type it came with, not only the family
    assert "op_type:gqa_paged" not in ts.definitions[GQA].tags
    assert (tmp_path / "out" / f"definitions/gqa_paged/{GQA}.json").is_file()
    blob = ts.workloads[GQA][0].workload.inputs["kv_indices"].path
    assert ts.get_workload_blob_tensor(blob)["kv_indices"].tolist() == [0, 1]


def test_export_straight_from_a_folder_read_in_place(tmp_path):
    counts = fi.write(tmp_path / "fi", "flat", "older")  # a folder flashinfer-bench 0.1.2 cannot read
    export_dataset(tmp_path / "fi", tmp_path / "out", "flashinfer-trace")
    assert _fib_counts(tmp_path / "out") == counts


def workload_blob(root: Path) -> str:
    """The blob of the second workload of MLA (the one _plant_faults removes)."""
    workload = json.loads((root / f"workloads/mla_paged/{MLA}.jsonl").read_text().splitlines()[1])
    return workload["workload"]["inputs"]["kv_indices"]["path"]


def _plant_faults(root: Path) -> None:
    """Three real faults: a reference taking its inputs in another order than declared, a workload
    with num_pages = 0 but two kv indices, and a missing blob."""
    path = root / f"definitions/gqa_paged/{GQA}.json"
    doc = json.loads(path.read_text())
    doc["reference"] = doc["reference"].replace("def run(q, k_cache, v_cache,", "def run(k_cache, q, v_cache,")
    path.write_text(json.dumps(doc, indent=2))
    path = root / f"workloads/gqa_paged/{GQA}.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["workload"]["axes"]["num_kv_indices"] == 2
    lines[0]["workload"]["axes"]["num_pages"] = 0
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (root / workload_blob(root)).unlink()


def test_real_faults_reported_with_file_and_field(tmp_path):
    root = tmp_path / "fi"
    fi.write(root, "by_op_type")
    _plant_faults(root)
    diags = validate_path(root)
    errors = {(d.file, d.line, d.pointer) for d in diags if d.is_error}
    messages = " | ".join(d.message for d in diags if d.is_error)
    assert errors == {
        (f"definitions/gqa_paged/{GQA}.json", 1, "/reference"),
        (f"workloads/gqa_paged/{GQA}.jsonl", 1, "/workload/axes/num_pages"),
        (f"workloads/mla_paged/{MLA}.jsonl", 2, "/workload/inputs/kv_indices/path"),
        (f"workloads/mla_paged/{MLA}.jsonl", 2, "/workload/inputs/kv_indptr/path"),  # the same file holds both
    }, messages
    assert "run(k_cache, q, v_cache, kv_indptr, kv_indices, sm_scale) does not take the inputs in order" in messages
    assert "axis 'num_pages' is 0" in messages and "does not exist" in messages
    # the rest is read and checked as before: every definition is there
    assert len(load(root).definitions) == 11

    code, out = _import([root], tmp_path / "dataset")  # import is total and says what it could not carry
    assert code == 0, out
    assert f"blob missing: {workload_blob(root)}" in out
    imported = validate_path(tmp_path / "dataset")
    text = (tmp_path / "dataset" / f"definitions/gqa/{GQA}.json").read_text()
    reference_line = text[:text.index('"reference"')].count("\n") + 1
    assert {(d.file, d.line, d.pointer) for d in imported if d.is_error} == {
        (f"definitions/gqa/{GQA}.json", reference_line, "/reference"),  # canonical JSON now: the field's line
        (f"workloads/gqa/{GQA}.jsonl", 1, "/workload/axes/num_pages"),
        (f"workloads/mla/{MLA}.jsonl", 2, "/workload/inputs/kv_indices/path"),
        (f"workloads/mla/{MLA}.jsonl", 2, "/workload/inputs/kv_indptr/path")}


def test_one_rule_for_a_dataset_with_errors(tmp_path, capsys):
    """validate reports them; build and export refuse the same data and list the errors."""
    root = tmp_path / "fi"
    fi.write(root, "by_op_type")
    _plant_faults(root)
    assert main(["validate", "--dataset", str(root)]) == 1
    for command in (["build", "--dataset", str(root), "--out", str(tmp_path / "site")],
                    ["export", "--dataset", str(root), "--out", str(tmp_path / "out")]):
        assert main(command) != 0, command
        err = capsys.readouterr().err
        assert "4 error(s)" in err and f"definitions/gqa_paged/{GQA}.json" in err and "Traceback" not in err
    assert not (tmp_path / "site").exists() and not (tmp_path / "out").exists()


def test_recorded_speedups_are_used_where_they_are_all_there_is(tmp_path):
    root = tmp_path / "fi"
    fi.write(root, "by_op_type")
    (board,) = definition_leaderboards(load(root), "gemm_n8_k16")
    (entry,) = board.entries
    assert entry.geomean_speedup == pytest.approx(3.0) and entry.fast_1 == 1.0
    assert entry.recorded_speedups == 2  # marked: measured against flashinfer-bench's reference, not a baseline
    # flashinfer-bench's defaults (0) mean "not measured": no speedup from them
    path = root / "traces/gemm/gemm_n8_k16.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        line["evaluation"]["performance"].update(reference_latency_ms=0.0, speedup_factor=0.0)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ds = load(root)
    assert not [d for d in ds.load_diagnostics if d.is_error]
    (board,) = definition_leaderboards(ds, "gemm_n8_k16")
    assert board.entries[0].geomean_speedup is None and board.entries[0].recorded_speedups == 0


def test_vocabulary_covers_the_dataset_op_types_and_is_documented():
    public = ("gqa_paged", "gqa_ragged", "rmsnorm", "gdn", "mla_paged", "dsa_paged", "mamba_ssu", "mla_ragged",
              "gemm", "moe", "sampling", "nsa_paged", "softmax", "silu", "rope", "embedding", "multinomial", "topk")
    raw = json.loads((Path(fi.__file__).parent / "data/dialects/flashinfer_trace/definitions/gemm/"
                      "gemm_fp8_n64_k32.json").read_text())
    for op_type in public:
        norm = dialects.normalise_definition({**raw, "op_type": op_type}, "x")
        assert norm.data["type"] in DEFINITION_TYPES, op_type
        assert norm.data["type"] == DEFINITION_TYPE_ALIASES.get(op_type, op_type)
    assert {"gdn", "dsa", "mamba"} <= set(DEFINITION_TYPES)
    (doc,) = [v for v in vocabulary() if v.name == "definition_type_alias"]
    assert "gqa_paged → gqa" in doc.allowed[0].values and "mamba_ssu → mamba" in doc.allowed[0].values


def test_trace_provenance_round_trips_and_imports_read_as_recorded(tmp_path):
    """A measured trace's environment.provenance survives the FlashInfer-Trace export, flashinfer-bench's own
    loading, and the import back (the export puts the correctness beyond the two errors in correctness.extra, so the
    import reads it through the dialect); a trace from a FlashInfer-Trace folder reads as recorded."""
    import copy

    from generator.bench.trusted.environment import provenance
    from generator.model.records import PROVENANCES

    from dataset_factory import BLOB_WORKLOAD, TRACE, write_dataset

    made = provenance({"GITHUB_REPOSITORY": "org/kerneltrace", "GITHUB_RUN_ID": "42", "GITHUB_RUN_ATTEMPT": "1"})
    assert made["kind"] == "measured" and made["tool"] == "kerneltrace bench" and made["version"] and made["run_id"]
    assert made["ci"] == {"repository": "org/kerneltrace", "run_id": "42", "run_attempt": "1"}
    trace = copy.deepcopy(TRACE)
    trace["evaluation"]["correctness"]["matched_ratio"] = 1.0  # goes to correctness.extra in the export
    trace["evaluation"]["environment"]["provenance"] = made
    unknown = copy.deepcopy(TRACE)
    unknown["workload"] = BLOB_WORKLOAD["workload"]
    root = write_dataset(tmp_path / "ds", traces=[trace, unknown])
    ds = load(root)
    assert [d.format_human() for d in validate(ds) if d.is_error] == []
    assert [t.provenance for t in ds.traces] == ["measured", "unknown"] and set(PROVENANCES) == {
        "measured", "recorded", "unknown"}

    export_dataset(root, tmp_path / "out", "flashinfer-trace")
    [line] = [json.loads(x) for x in next((tmp_path / "out/traces").rglob("rmsnorm_h128.jsonl")).read_text().splitlines()
              if "provenance" in x]
    assert "extra" in line["evaluation"]["correctness"] and line["evaluation"]["environment"]["provenance"] == made
    assert _fib_counts(tmp_path / "out")["traces"] == 2  # flashinfer-bench ignores the field and loads the trace
    code, out = _import([tmp_path / "out"], tmp_path / "back")
    assert code == 0, out
    back = {t.workload_uuid: t for t in load(tmp_path / "back").traces}
    assert back[TRACE["workload"]["uuid"]].provenance_record == made
    assert back["wl-0002"].provenance == "unknown"  # an old trace of ours stays unknown through the round trip

    fi_root = tmp_path / "fi"  # flashinfer-bench's own traces: read through the dialect, measured elsewhere
    fi.write(fi_root, "by_author", "op_type")
    assert {t.provenance for t in load(fi_root).traces} == {"recorded"}
