"""Cascade attention at the other vLLM-served GQA models' heads (dataset/families/cascade_variants_*.json, checked by
tests/reference_cases/cascade_variants.py): every sibling is its template with other constants, and every cascade
workload is a step that vLLM's use_cascade_attention runs as cascade at its heads."""

from __future__ import annotations

import json

from reference_cases import cascade_variants as cv


def definition(name: str) -> dict:
    kind = "gqa" if name.startswith("gqa_") else "reduction"
    return json.loads((cv.DATASET / "definitions" / kind / f"{name}.json").read_text(encoding="utf-8"))


def test_a_sibling_is_its_template_with_other_constants():
    for family in cv.FAMILIES:
        t = definition(family["template"])
        for s in family["siblings"]:
            d = definition(s["name"])
            assert d["reference"] == t["reference"] and d.get("constraints") == t.get("constraints"), s["name"]
            assert {n: x["shape"] for n, x in d["inputs"].items()} == {n: x["shape"] for n, x in t["inputs"].items()}
            consts = {a: x["value"] for a, x in d["axes"].items() if x["type"] == "const"}
            heads = consts.get("num_qo_heads", consts.get("num_heads"))
            assert f"_h{heads}_" in s["name"], s["name"]
            assert all(tag.startswith("model-alt:") for tag in d["tags"] if "model" in tag), s["name"]
            if "num_kv_heads" in consts:
                assert heads % consts["num_kv_heads"] == 0 and f"_kv{consts['num_kv_heads']}_" in s["name"], s["name"]


def test_the_rule_as_written_here():
    # vLLM's thresholds and its performance model against FlashDecoding (132 SMs): Llama-3.1-8B's heads need
    # more than 16 requests, one KV head per rank more than 132.
    assert not cv.use_cascade(64, 255, 32, 8) and not cv.use_cascade(7, 4096, 32, 8)
    assert not cv.use_cascade(16, 1024, 32, 8) and cv.use_cascade(17, 1024, 32, 8)
    assert not cv.use_cascade(132, 1024, 8, 1) and cv.use_cascade(133, 1024, 8, 1)
    assert cv.use_cascade(8, 256, 8, 8)  # no grouped queries: no FlashDecoding, cascade from the thresholds on


def test_every_sibling_workload_is_a_step_vllm_runs_as_cascade():
    cascades = cv.sibling_names("gqa_cascade_decode_")
    assert len(cascades) == 7
    for name in cascades:
        axes = definition(name)["axes"]
        qo, kv = axes["num_qo_heads"]["value"], axes["num_kv_heads"]["value"]
        rows = [json.loads(line)["workload"] for line in
                (cv.DATASET / "workloads" / "gqa" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
        assert rows, name
        for w in rows:
            ax = w["axes"]
            assert cv.use_cascade(ax["batch_size"], ax["num_shared_pages"] * 16, qo, kv), (name, ax)
    for name in cv.sibling_names("merge_state_"):
        assert (cv.DATASET / "workloads" / "reduction" / f"{name}.jsonl").is_file(), name
