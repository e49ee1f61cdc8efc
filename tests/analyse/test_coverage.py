"""Model coverage from kernel calling records, and the README's table staying true."""

from __future__ import annotations

from pathlib import Path

from generator.analyse.coverage import coverage_table, engine_releases, model_coverage, serving_summary
from generator.load import load

from dataset_factory import write_dataset

ROOT = Path(__file__).resolve().parents[2]


def test_coverage_counts_kernels_and_calls_per_step(tmp_path):
    model = {"model": "org/m", "framework": "SGLang", "description": "two layers",
             "kernels": [{"id": "rmsnorm_h128", "count": 5},  # both steps
                         {"id": "attention_decode", "count": 2, "stage": "decode"},  # no definition
                         {"id": "rmsnorm_h128", "count": 1, "stage": "prefill", "note": "final norm"}]}
    ds = load(write_dataset(tmp_path, model=model))
    [m] = model_coverage(ds)
    d, p = m.stages["decode"], m.stages["prefill"]
    assert (d.kernels, d.covered, d.calls, d.covered_calls) == (2, 1, 7, 5)
    assert (p.kernels, p.covered, p.calls, p.covered_calls) == (1, 1, 6, 6)
    assert m.missing == ("attention_decode",) and m.kernels[2].note == "final norm"
    assert "| org/m | SGLang |  | 1 of 2 | 5 of 7 (71%) | 1 of 1 | 6 of 6 (100%) |" in coverage_table([m])
    [release] = engine_releases([m])  # a record naming no release is listed under its framework alone
    assert (release.engine, release.records, release.checked) == ("SGLang", (m.name,), "")


def test_every_bundled_record_names_its_engine_release():
    coverage = model_coverage(load(ROOT / "dataset"))
    unpinned = [m.name for m in coverage if not (m.engine_version and m.engine_checked)]
    assert not unpinned, f"records without engine_version / engine_checked: {unpinned}"
    releases = {r.engine: r for r in engine_releases(coverage)}
    assert sum(len(r.records) for r in releases.values()) == len(coverage)
    assert all(r.engine.split()[0] in ("SGLang", "vLLM") and len(r.engine.split()) == 2 for r in releases.values())


def test_serving_summary_names_parallelism_and_machines():
    assert serving_summary({"hardware": "H200", "gpus": 8, "tensor_parallel": 8, "expert_parallel": 8}) == "TP8 EP8, 8x H200"
    assert (serving_summary({"hardware": "H100_SXM", "gpus": 16, "nodes": 2, "tensor_parallel": 16})
            == "TP16, 2 nodes x 8 H100_SXM")
    assert serving_summary({}) == ""


def test_readme_lists_the_models_and_their_coverage():
    # The README's table is the one this function prints for the bundled dataset: regenerate it with
    # python -c "from generator.load import load; from generator.analyse.coverage import *;
    #            print(coverage_table(model_coverage(load('dataset'))))"
    table = coverage_table(model_coverage(load(ROOT / "dataset")))
    assert table in (ROOT / "README.md").read_text(encoding="utf-8"), "README.md's coverage table is out of date"
