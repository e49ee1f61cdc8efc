"""`export_dataset`: Hub folder (Parquet + card) and the FlashInfer-Trace folder.

Every config is loaded with the real `datasets.load_dataset(DIR, CONFIG)` offline, with
pandas and with pyarrow; each row is rebuilt into a record and compared with the JSON in the
source file it names (not with the loader's view of it).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from generator.export import MARKER, export_dataset, record_from_row
from generator.export.flashinfer import op_type
from generator.export.tables import config
from generator.load import DEFAULT_DATASET, load
from generator.model.errors import KernelTraceError
from generator.validate import validate

from card_run import card_blocks, output_of, read_card, run_card_blocks
from dataset_factory import DEFINITION, TRACE, WORKLOAD, write_dataset
from results_dataset import browser_dataset

ALL_CONFIGS = ("definitions", "workloads", "solutions", "traces", "models", "einsums", "hardware")
FACTORY_COUNTS = {"definitions": 1, "workloads": 5, "solutions": 1, "traces": 1, "models": 1, "einsums": 1,
                  "hardware": 1}


# -- fixtures ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def exports(tmp_path_factory, bundled_export) -> dict[str, tuple[Path, Path]]:
    """name -> (dataset root, Hub export of it): the bundled dataset's shared export, the factory's made here."""
    base = tmp_path_factory.mktemp("exports")
    factory = write_dataset(base / "factory-ds")
    export_dataset(factory, base / "factory-hub")
    return {"bundled": (DEFAULT_DATASET, bundled_export), "factory": (factory, base / "factory-hub")}


# -- helpers -------------------------------------------------------------------------------

def source_record(root: Path, cfg: str, row: dict) -> dict:
    """The record as its source file holds it (what a row must rebuild)."""
    path = root / row["source_path"]
    if cfg == "einsums":
        parts = Path(row["source_path"]).parts
        return {"definition": path.stem, "type": parts[1], "template": path.read_text(encoding="utf-8")}
    if path.suffix == ".jsonl":
        data = json.loads(path.read_text(encoding="utf-8").splitlines()[row["source_line"] - 1])
    else:
        data = json.loads(path.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if k != "$schema"}


def source_files(root: Path, cfg: str) -> list[Path]:
    folder, suffix = {"definitions": ("definitions", ".json"), "workloads": ("workloads", ".jsonl"),
                      "solutions": ("solutions", ".json"), "traces": ("traces", ".jsonl"),
                      "models": ("models", ".json"), "einsums": ("einsums", ".yaml"),
                      "hardware": ("hardware", ".json")}[cfg]
    return sorted((root / folder).rglob(f"*{suffix}")) if (root / folder).is_dir() else []


def source_count(root: Path, cfg: str) -> int:
    files = source_files(root, cfg)
    if cfg in ("workloads", "traces"):
        return sum(1 for f in files for line in f.read_text(encoding="utf-8").splitlines() if line.strip())
    return len(files)


def shard_files(out: Path, cfg: str) -> list[Path]:
    return sorted((out / cfg).glob("*.parquet"))


def same_record(a, b) -> bool:
    """Equal, with floats equal to 9 significant digits. The Parquet files hold the exact JSON text
    (test_parquet_holds_floats_exactly), but `datasets` decodes Json columns with a parser that
    keeps about 15 decimal places (1/sqrt(128) = 0.08838834764831843 comes back as
    0.088388347648318; 0.0005794087737299244 as 0.000579408773729), so a float's last digits are
    not what this test is about."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_record(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_record(x, y) for x, y in zip(a, b))
    return a == b


def all_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- the Hub export ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["bundled", "factory"])
def test_every_config_loads_with_datasets_and_rebuilds_its_records(exports, load_offline, name):
    root, out = exports[name]
    loaded = 0
    for cfg in ALL_CONFIGS:
        expected = source_count(root, cfg)
        if name == "factory":
            assert expected == FACTORY_COUNTS[cfg]
        if expected == 0:
            assert not (out / cfg).exists()  # `datasets` cannot load an empty split; the card says so
            with pytest.raises(ValueError, match=f"BuilderConfig '{cfg}' not found"):
                load_offline(out, cfg)
            continue
        rows = load_offline(out, cfg)
        assert rows.num_rows == expected, cfg
        for row in rows:
            rebuilt, source = record_from_row(cfg, row), source_record(root, cfg, row)
            assert same_record(rebuilt, source), (cfg, row["source_path"], rebuilt, source)
        assert len({(row["source_path"], row.get("source_line")) for row in rows}) == expected
        for col in config(cfg).columns:
            if col.is_json:
                assert type(rows.features[col.name]).__name__ == "Json", (cfg, col.name)
        loaded += 1
    assert loaded == sum(1 for cfg in ALL_CONFIGS if source_count(root, cfg)) >= 3


def test_parquet_holds_floats_exactly(exports):
    import json
    import math

    import pyarrow.parquet as pq

    _, out = exports["bundled"]
    rows = [r for f in sorted((out / "workloads").rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    decode = [json.loads(r["inputs"]) if isinstance(r["inputs"], str) else r["inputs"] for r in rows]
    scales = [i["sm_scale"]["value"] for i in decode if i.get("sm_scale", {}).get("type") == "scalar"]
    assert 1 / math.sqrt(128) in scales  # all 17 digits, as in the JSONL


def test_json_columns_keep_each_rows_own_shape(exports, load_offline):
    root, out = exports["bundled"]
    defs = load_offline(out, "definitions")
    ds = load(root)
    for row in defs:
        d = ds.definitions[row["name"]]
        assert row["axes"] == d.data["axes"]
        assert list(row["inputs"]) == list(d.inputs)  # call order kept
        assert row["type"] == d.type and row["stages"] == list(d.stages)
        assert row["models"] == sorted(d.models) == list(ds.callers.get(d.name, ()))  # the tags say what records do
    workloads = load_offline(out, "workloads")
    assert len({tuple(r["axes"]) for r in workloads}) > 1  # each row keeps its own axis names


def test_convenience_columns_of_traces(exports, load_offline):
    root, out = exports["factory"]
    (row,) = load_offline(out, "traces")
    assert (row["definition"], row["solution"], row["author"], row["hardware"], row["status"]) == (
        "rmsnorm_h128", "rmsnorm_h128_torch", "baseline", "test_cpu", "PASSED")
    assert (row["latency_ms"], row["reference_latency_ms"], row["speedup_factor"]) == (0.02, 0.05, 2.5)
    assert row["workload_uuid"] == "wl-0001" and row["type"] == "norm"
    assert row["evaluation"] == TRACE["evaluation"] and row["workload"] == TRACE["workload"]
    (model,) = load_offline(out, "models")
    assert model["kernel_ids"] == ["rmsnorm_h128"]
    assert model["kernels"] == [{"id": "rmsnorm_h128", "count": 3, "stage": None, "note": None}]  # a struct
    (solution,) = load_offline(out, "solutions")
    assert solution["language"] == "python" and solution["destination_passing_style"] is False
    assert solution["sources"][0]["path"] == "main.py"


def test_traces_count_their_samples_in_integers_and_say_their_provenance(exports, load_offline):
    """One failed trace (no timing) made `samples` a float column in pandas; the provenance column says how each
    result was produced, as the site marks it."""
    root, out = exports["bundled"]
    frame = load_offline(out, "traces").to_pandas()
    assert (frame["status"] != "PASSED").any()  # the case that made it float
    assert frame["samples"].dtype == "int64" and (frame.loc[frame["status"] != "PASSED", "samples"] == 0).all()
    traces = {(t.source.path, t.source.line): t for t in load(root).traces}
    assert [traces[(p, n)].provenance for p, n in zip(frame["source_path"], frame["source_line"])] == \
        frame["provenance"].tolist()
    assert set(frame["provenance"]) <= {"measured", "recorded", "unknown"}


def test_the_models_column_names_only_rows_of_the_models_config(tmp_path, load_offline):
    """A folder read in place may tag model:<name> without any calling record (flashinfer-bench's tags): the
    definitions' `models` column names calling records, the models config's rows, never a bare tag."""
    root = write_dataset(tmp_path / "ds")
    (root / "models/test-model.json").unlink()
    export_dataset(root, tmp_path / "hub")
    (row,) = load_offline(tmp_path / "hub", "definitions")
    assert "model:test-model" in row["tags"] and row["models"] == []


@pytest.mark.parametrize("name", ["bundled", "factory"])
def test_pandas_and_pyarrow_read_every_shard(exports, name):
    root, out = exports[name]
    for cfg in ALL_CONFIGS:  # the record configs (roofline is derived: tests/export/test_export_roofline.py)
        if not source_count(root, cfg):
            continue
        (shard,) = shard_files(out, cfg)
        table = pq.read_table(shard)
        assert table.schema == config(cfg).schema
        for col in config(cfg).columns:
            if col.is_json:
                assert table.schema.field(col.name).type == pa.json_()
        frame = pd.read_parquet(shard)
        assert len(frame) == table.num_rows == source_count(root, cfg)
        for row in frame.to_dict("records"):  # JSON columns are text here
            assert record_from_row(cfg, row) == source_record(root, cfg, row)
        for row in table.to_pylist():
            assert record_from_row(cfg, row) == source_record(root, cfg, row)
    assert pq.read_table(out / "definitions").num_rows == source_count(root, "definitions")


def test_card_front_matter_lists_every_config_with_existing_files(exports):
    for name, (root, out) in exports.items():
        meta, body = read_card(out)
        assert meta["license"] == "cc-by-4.0"
        assert set(meta["tags"]) >= {"gpu", "kernels", "cuda", "triton", "llm-inference", "benchmark"}
        # Hugging Face's size category of the rows of every config together (the bundled export's
        # roofline config alone has workloads x 5 hardware specs rows), by the Hub's bounds.
        rows = sum(pq.read_table(f).num_rows for f in out.rglob("*.parquet"))
        bounds = {"n<1K": (0, 1_000), "1K<n<10K": (1_000, 10_000), "10K<n<100K": (10_000, 100_000),
                  "100K<n<1M": (100_000, 1_000_000)}
        assert meta["task_categories"] == ["other"] and len(meta["size_categories"]) == 1
        low, high = bounds[meta["size_categories"][0]]
        assert low <= rows < high, (meta["size_categories"], rows)
        assert (rows >= 1_000) == (name == "bundled")
        listed = [c["config_name"] for c in meta["configs"]]
        with_rows = [c for c in ALL_CONFIGS if source_count(root, c)]
        assert listed == with_rows + ["roofline"]  # the derived config follows the record kinds
        assert [c["config_name"] for c in meta["configs"] if c.get("default")] == ["definitions"]
        for entry in meta["configs"]:
            (split,) = entry["data_files"]
            assert split["split"] == "train"
            assert split["path"] and all((out / p).is_file() for p in split["path"])
            shards = shard_files(out, entry["config_name"])
            assert sorted(split["path"]) == [p.relative_to(out).as_posix() for p in shards]
        for cfg in ALL_CONFIGS:  # every config is documented, with its columns
            assert f"### `{cfg}` ({source_count(root, cfg)} row" in body
            for col in config(cfg).columns:
                assert f"| `{col.name}` |" in body
        assert 'load_dataset("kerneltrace/kerneltrace", "definitions", split="train")' in body
        for section in ("## Loading", "## Schema", "## Contributing", "## Citation", "@misc{kerneltrace"):
            assert section in body
        assert "None" not in body and "TODO" not in body
        from huggingface_hub import DatasetCard  # the Hub's own parser of the card

        card = DatasetCard((out / "README.md").read_text(encoding="utf-8"))
        assert card.data.license == "cc-by-4.0" and [c["config_name"] for c in card.data.configs] == listed


def test_card_counts_come_from_the_dataset(exports, tmp_path):
    root, out = exports["bundled"]
    _, body = read_card(out)
    ds = load(root)
    assert f"This release holds {len(ds.definitions)} definitions" in body
    assert f"{len(ds.workloads)} workloads" in body and f"{len(ds.solutions)} solutions" in body
    _, body = read_card(exports["factory"][1])
    assert "1 benchmark trace on 1 machine" in body and "| test_cpu | 1 |" in body
    assert "hf_hub_download" in body  # there is a blob to download

    small = write_dataset(tmp_path / "ds")
    for folder in ("traces", "models", "einsums", "hardware", "agent_traces", "blob"):
        shutil.rmtree(small / folder)
    (small / "workloads/norm/rmsnorm_h128.jsonl").write_text(json.dumps(WORKLOAD) + "\n", encoding="utf-8")
    export_dataset(small, tmp_path / "out")
    meta, body = read_card(tmp_path / "out")
    assert [c["config_name"] for c in meta["configs"]] == ["definitions", "workloads", "solutions"]
    assert "no benchmark traces yet" in body and "hf_hub_download" not in body
    assert "`traces`, `models`, `einsums`, `hardware` and `roofline` have no rows in this release" in body


def test_repo_id_is_used_in_the_card_and_checked(tmp_path, good_dataset):
    export_dataset(good_dataset, tmp_path / "out", repo_id="acme/kernels")
    _, body = read_card(tmp_path / "out")
    assert 'load_dataset("acme/kernels", "traces", split="train")' in body
    assert 'load_dataset("acme/kernels", "definitions", split="train")' in body
    assert "kerneltrace/kerneltrace" not in body
    with pytest.raises(KernelTraceError, match="ORG/NAME"):
        export_dataset(good_dataset, tmp_path / "bad", repo_id="no-slash\nhere")
    assert not (tmp_path / "bad").exists()


def test_the_readme_shows_the_export_and_loading_it_from_disk(exports, load_offline, monkeypatch, capsys):
    """A consumer reading the repository's README finds `kerneltrace export` and the local-folder `load_dataset`
    route, and its snippet runs against an export (the bundled dataset's), printing the columns it names."""
    import re

    import datasets

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Using the data", 1)[1].split("\n## ", 1)[0]
    assert "kerneltrace export --out kerneltrace-export" in section
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    _, out = exports["bundled"]
    monkeypatch.setattr(datasets, "load_dataset", lambda repo, cfg, split: load_offline(Path(repo), cfg))
    capsys.readouterr()
    exec(compile(block.replace('"kerneltrace-export"', repr(str(out))), "<README>", "exec"), {})
    printed = capsys.readouterr().out
    assert all(word in printed for word in ("latency_ms", "samples", "provenance", "unknown")), printed


def test_the_cards_contributing_section_follows_the_guide(exports):
    """Workloads are written by `kerneltrace workloads` from a recipe, never by hand (site_src/contributing.md)."""
    _, text = read_card(exports["factory"][1])
    section = text.split("## Contributing", 1)[1].split("\n## ", 1)[0]
    assert "kerneltrace workloads" in section and "never written by hand" in section and "recipes/<model>.yaml" in section


@pytest.mark.parametrize("name", ["bundled", "factory"])
def test_the_cards_python_examples_run(exports, load_offline, monkeypatch, bundled_card, name):
    _, out = exports[name]
    blocks = card_blocks(out)
    printed = bundled_card if name == "bundled" else run_card_blocks(out, load_offline, monkeypatch)
    # loading, filtering, blobs, inputs (from the Hub, from a folder), best solution, per-step estimate, speed of
    # light, SOL%
    assert len(printed) == len(blocks) == 9
    shown = printed[0][1].split()[0]
    assert shown in {r["name"] for r in load_offline(out, "definitions")}
    # the loading example is a kernel with results (not whichever definition sorts first)
    assert shown in {r["definition"] for r in load_offline(out, "traces")}
    if name == "factory":
        assert "rmsnorm_h128_torch" in output_of(printed, '"geomean_speedup"')  # the best-solution table


def test_blobs_are_exported_at_the_paths_rows_name(exports, load_offline):
    root, out = exports["factory"]
    rows = load_offline(out, "workloads")
    blob_rows = [r for r in rows if r["blob_paths"]]
    assert [r["uuid"] for r in blob_rows] == ["wl-0002"]
    (path,) = blob_rows[0]["blob_paths"]
    assert blob_rows[0]["inputs"]["input"] == {"type": "safetensors", "path": path, "tensor_key": "input"}
    assert (out / path).read_bytes() == (root / path).read_bytes()


def test_same_dataset_gives_byte_identical_output(tmp_path, good_dataset):
    first = export_dataset(good_dataset, tmp_path / "a")
    export_dataset(good_dataset, tmp_path / "b")
    a, b = all_files(tmp_path / "a"), all_files(tmp_path / "b")
    assert a == b and set(a) == set(first.files)
    export_dataset(good_dataset, tmp_path / "a")  # replacing an earlier export
    assert all_files(tmp_path / "a") == b
    assert sorted(os.listdir(tmp_path)) == ["a", "b", "ds"]  # no staging folders left


def test_an_export_is_reproducible(tmp_path):
    # A dataset with definitions, workloads, solutions, traces and models of several kinds (the browser tests'),
    # exported twice: timestamps, temporary paths or random ids would differ whatever its size (a second export
    # of the bundled dataset cost 12 s here).
    root = browser_dataset(tmp_path / "ds")
    export_dataset(root, tmp_path / "first")
    export_dataset(root, tmp_path / "again")
    assert all_files(tmp_path / "again") == all_files(tmp_path / "first")


def test_large_tables_are_sharded_and_load_whole(tmp_path, load_offline):
    root = write_dataset(tmp_path / "ds", workloads=[
        {**WORKLOAD, "workload": {**WORKLOAD["workload"], "uuid": f"wl-{i:04d}", "seed": i}} for i in range(40)])
    summary = export_dataset(root, tmp_path / "out", shard_bytes=2_000)
    shards = shard_files(tmp_path / "out", "workloads")
    assert len(shards) > 1 and shards[0].name == f"train-00000-of-{len(shards):05d}.parquet"
    meta, _ = read_card(tmp_path / "out")
    (entry,) = [c for c in meta["configs"] if c["config_name"] == "workloads"]
    assert entry["data_files"][0]["path"] == [s.relative_to(tmp_path / "out").as_posix() for s in shards]
    rows = load_offline(tmp_path / "out", "workloads")
    assert [r["uuid"] for r in rows] == [f"wl-{i:04d}" for i in range(40)] and summary.counts["workloads"] == 40


# -- refusing ------------------------------------------------------------------------------

def test_dataset_with_errors_is_refused_and_nothing_is_written(tmp_path):
    broken = {k: v for k, v in DEFINITION.items() if k != "reference"}
    root = write_dataset(tmp_path / "ds", definition=broken)
    assert any(d.is_error for d in validate(load(root)))
    with pytest.raises(KernelTraceError, match="kerneltrace validate"):
        export_dataset(root, tmp_path / "out")
    assert sorted(os.listdir(tmp_path)) == ["ds"]


def test_refused_export_keeps_the_previous_one(tmp_path, good_dataset):
    export_dataset(good_dataset, tmp_path / "out")
    before = all_files(tmp_path / "out")
    (good_dataset / "definitions/norm/rmsnorm_h128.json").write_text("{", encoding="utf-8")
    with pytest.raises(KernelTraceError, match="error"):
        export_dataset(good_dataset, tmp_path / "out")
    assert all_files(tmp_path / "out") == before


def test_a_failure_while_writing_leaves_the_previous_export(tmp_path, good_dataset, monkeypatch):
    import generator.export as export

    export_dataset(good_dataset, tmp_path / "out")
    before = all_files(tmp_path / "out")

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(export, "render_card", boom)
    with pytest.raises(KernelTraceError, match="cannot write the export to .*No space left on device"):
        export_dataset(good_dataset, tmp_path / "out")
    assert all_files(tmp_path / "out") == before
    assert sorted(os.listdir(tmp_path)) == ["ds", "out"]


def test_refuses_to_replace_a_folder_that_is_not_an_export(tmp_path, good_dataset):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(KernelTraceError, match="not empty"):
        export_dataset(good_dataset, out)
    assert all_files(out) == {"notes.txt": b"mine"}
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(KernelTraceError, match="not a folder"):
        export_dataset(good_dataset, tmp_path / "file")
    with pytest.raises(KernelTraceError, match="overlaps the dataset"):
        export_dataset(good_dataset, good_dataset / "export")
    with pytest.raises(KernelTraceError, match="overlaps the dataset"):
        export_dataset(good_dataset, tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    export_dataset(good_dataset, empty)  # an empty folder is fine
    assert (empty / MARKER).is_file() and (empty / "README.md").is_file()


def test_a_stale_file_of_an_earlier_export_is_gone(tmp_path, good_dataset):
    out = tmp_path / "out"
    export_dataset(good_dataset, out)
    (out / "traces/train-00001-of-00002.parquet").write_bytes(b"stale")
    export_dataset(good_dataset, out)
    assert not (out / "traces/train-00001-of-00002.parquet").exists()


def test_unknown_format_is_refused(tmp_path, good_dataset):
    with pytest.raises(KernelTraceError, match="flashinfer-trace"):
        export_dataset(good_dataset, tmp_path / "out", fmt="csv")
    assert not (tmp_path / "out").exists()


# -- FlashInfer-Trace ----------------------------------------------------------------------

def unnamed_in_flashinfer(ds) -> set:
    """Definitions with an input or output dtype flashinfer-bench has no name for."""
    from generator.export.flashinfer import DTYPES
    return {d.name for d in ds.definitions.values()
            if any(spec["dtype"] not in DTYPES for side in ("inputs", "outputs") for spec in d.data[side].values())}


@pytest.fixture(scope="module")
def flashinfer_exports(exports, tmp_path_factory):
    """name -> (export summary, folder) of the dataset's FlashInfer-Trace export, made on first use and
    once for the module: the two tests below read the same export (the bundled one takes 6 s to write)."""
    made = {}

    def get(name: str):
        if name not in made:
            folder = tmp_path_factory.mktemp(f"fi-{name}") / "fi"
            made[name] = (export_dataset(exports[name][0], folder, fmt="flashinfer-trace"), folder)
        return made[name]
    return get


@pytest.mark.parametrize("name", ["bundled", "factory"])
def test_flashinfer_trace_export_loads_in_flashinfer_bench(name, exports, flashinfer_exports):
    import flashinfer_bench as fib  # the test extra installs it
    root = exports[name][0]
    summary, folder = flashinfer_exports(name)
    ts = fib.TraceSet.from_path(str(folder))
    ds = load(root)
    # Left out, and said so: exactly the definitions with a dtype flashinfer-bench has no name for
    # (gpt-oss's MXFP4 uint8 codes), with their solutions, workloads and traces.
    gone = unnamed_in_flashinfer(ds)
    assert all(any(n in line for n in gone) for line in summary.skipped), summary.skipped
    assert bool(gone) == bool(summary.skipped) and (name != "factory" or not gone)
    assert set(ts.definitions) == set(ds.definitions) - gone
    assert {s.name for ss in ts.solutions.values() for s in ss} == {s.name for s in ds.solutions.values()
                                                                     if s.definition not in gone}
    assert sorted(w.workload.uuid for ws in ts.workloads.values() for w in ws) == sorted(
        w.uuid for w in ds.workloads if w.definition not in gone)
    assert sum(len(t) for t in ts.traces.values()) == len([t for t in ds.traces if t.definition not in gone])
    for d in ds.definitions.values():
        if d.name in gone:
            continue
        fd = ts.definitions[d.name]
        assert fd.op_type == op_type(d)  # the type, or the FlashInfer name it was imported under
        for n, spec in d.inputs.items():
            assert fd.inputs[n].shape == (list(spec.shape) or None)
    for s in ds.solutions.values():
        if s.definition in gone:
            continue
        assert ts.get_solution(s.name).spec.destination_passing_style is s.destination_passing_style
    for w in ds.workloads:
        for spec in w.inputs.values():
            if spec["type"] == "safetensors":
                assert ts.get_workload_blob_tensor(spec["path"])


@pytest.mark.parametrize("name", ["bundled", "factory"])
def test_flashinfer_trace_export_reads_back_as_the_same_records(name, exports, flashinfer_exports):
    root = exports[name][0]
    _, folder = flashinfer_exports(name)
    back, source = load(folder), load(root)
    gone = unnamed_in_flashinfer(source)  # left out of the export (see the test above)
    assert [d for d in validate(back) if d.is_error] == []
    assert {n: d.data for n, d in back.definitions.items()} == {n: d.data for n, d in source.definitions.items()
                                                                if n not in gone}
    assert {n: s.data for n, s in back.solutions.items()} == {n: s.data for n, s in source.solutions.items()
                                                              if s.definition not in gone}
    assert sorted(json.dumps(w.data, sort_keys=True) for w in back.workloads) == \
        sorted(json.dumps(w.data, sort_keys=True) for w in source.workloads if w.definition not in gone)
    # Traces: everything the peer's schema has a place for (it drops the environment's sandbox field and
    # the performance's unstable mark) reads back; compared by the fields a leaderboard uses.
    def key(t):
        ev = t.data["evaluation"]
        return (t.data["definition"], t.data["solution"], t.data["workload"]["uuid"], ev["status"],
                (ev.get("performance") or {}).get("latency_ms"), (ev.get("environment") or {}).get("hardware"),
                json.dumps(ev.get("correctness"), sort_keys=True), ev.get("timestamp"))
    assert sorted(map(key, back.traces)) == sorted(key(t) for t in source.traces if t.definition not in gone)
    for d in source.definitions.values():
        if d.name in gone:
            continue
        doc = json.loads((folder / f"definitions/{op_type(d)}/{d.name}.json").read_text(encoding="utf-8"))
        assert doc["op_type"] == op_type(d) and "type" not in doc
        assert [t["shape"] for t in doc["inputs"].values()] == [list(t.shape) or None for t in d.inputs.values()]


def test_flashinfer_trace_dialect_and_what_it_leaves_out(tmp_path):
    fp8 = {**DEFINITION, "inputs": {**DEFINITION["inputs"], "weight": {"shape": ["hidden_size"],
                                                                       "dtype": "float8_e4m3"}}}
    ev = {**TRACE["evaluation"], "log": None,
          "correctness": {**TRACE["evaluation"]["correctness"], "matched_ratio": 1.0, "input_sets": 3},
          "environment": {"hardware": "test_cpu", "libs": {"torch": "2.13.0", "triton": None}}}
    hack = {**TRACE, "evaluation": {"status": "REWARD_HACK", "log": "output reused across calls",
                                    "environment": {"hardware": "test_cpu"}, "timestamp": "2026-11-21T11:00:00Z"}}
    root = write_dataset(tmp_path / "ds", definition=fp8, traces=[{**TRACE, "evaluation": ev}, hack])
    assert [d.format_human() for d in validate(load(root)) if d.is_error] == []
    summary = export_dataset(root, tmp_path / "fi", fmt="flashinfer-trace")
    assert summary.counts["traces"] == 1 and len(summary.skipped) == 1
    assert "traces/baseline/norm/rmsnorm_h128.jsonl:2" in summary.skipped[0] and "REWARD_HACK" in summary.skipped[0]
    definition = json.loads((tmp_path / "fi/definitions/norm/rmsnorm_h128.json").read_text(encoding="utf-8"))
    assert definition["inputs"]["weight"]["dtype"] == "float8_e4m3fn" and "type" not in definition
    (line,) = (tmp_path / "fi/traces/baseline/norm/rmsnorm_h128.jsonl").read_text(encoding="utf-8").splitlines()
    trace = json.loads(line)["evaluation"]
    assert "log" not in trace and trace["environment"]["libs"] == {"torch": "2.13.0"}
    assert trace["correctness"]["extra"] == {"matched_ratio": 1.0, "input_sets": 3}
    solution = json.loads((tmp_path / "fi/solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json")
                          .read_text(encoding="utf-8"))
    assert solution["spec"]["destination_passing_style"] is False  # flashinfer-bench defaults to true
    import flashinfer_bench as fib
    ts = fib.TraceSet.from_path(str(tmp_path / "fi"))
    assert ts.definitions["rmsnorm_h128"].inputs["weight"].dtype.value == "float8_e4m3fn"
    assert ts.traces["rmsnorm_h128"][0].evaluation.correctness.extra == {"matched_ratio": 1.0, "input_sets": 3}
