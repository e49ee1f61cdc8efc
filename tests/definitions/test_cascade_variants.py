"""Cascade attention at the other vLLM-served GQA models' heads (tests/reference_cases/cascade_variants.py): the
committed siblings are exactly what the table renders (the templates' reference, einsum and baseline, other
constants), and every cascade workload is a step that vLLM's use_cascade_attention runs as cascade at its heads."""

from __future__ import annotations

import json

from reference_cases import cascade_variants as cv


def test_committed_siblings_are_what_the_table_renders():
    stale = [rel for rel, text in cv.files().items()
             if not (cv.DATASET / rel).is_file() or (cv.DATASET / rel).read_text(encoding="utf-8") != text]
    assert not stale, (f"{len(stale)} cascade sibling files differ from their rendering, e.g. {stale[:3]}: run "
                       "`cd tests && python -m reference_cases.cascade_variants` and commit the result")


def test_a_sibling_is_its_template_with_other_constants():
    for name, (kind, template, d) in cv.rendered().items():
        t = json.loads((cv.DATASET / "definitions" / kind / f"{template}.json").read_text(encoding="utf-8"))
        assert d["reference"] == t["reference"] and d.get("constraints") == t.get("constraints"), name
        assert {n: s["shape"] for n, s in d["inputs"].items()} == {n: s["shape"] for n, s in t["inputs"].items()}
        assert {a: s["type"] for a, s in d["axes"].items()} == {a: s["type"] for a, s in t["axes"].items()}, name
        consts = {a: s["value"] for a, s in d["axes"].items() if s["type"] == "const"}
        heads = consts.get("num_qo_heads", consts.get("num_heads"))
        assert f"_h{heads}_" in name and all(t.startswith("model-alt:") for t in d["tags"] if "model" in t), name
        if "num_kv_heads" in consts:
            assert heads % consts["num_kv_heads"] == 0 and f"_kv{consts['num_kv_heads']}_" in name, name


def test_the_rule_as_written_here():
    # vLLM's thresholds and its performance model against FlashDecoding (132 SMs): Llama-3.1-8B's heads need
    # more than 16 requests, one KV head per rank more than 132.
    assert not cv.use_cascade(64, 255, 32, 8) and not cv.use_cascade(7, 4096, 32, 8)
    assert not cv.use_cascade(16, 1024, 32, 8) and cv.use_cascade(17, 1024, 32, 8)
    assert not cv.use_cascade(132, 1024, 8, 1) and cv.use_cascade(133, 1024, 8, 1)
    assert cv.use_cascade(8, 256, 8, 8)  # no grouped queries: no FlashDecoding, cascade from the thresholds on


def test_every_sibling_workload_is_a_step_vllm_runs_as_cascade():
    for s in cv.SIBLINGS:
        path = cv.DATASET / "workloads" / "gqa" / f"{s.cascade_name}.jsonl"
        rows = [json.loads(line)["workload"] for line in path.read_text(encoding="utf-8").splitlines()]
        assert rows, s.cascade_name
        for w in rows:
            ax = w["axes"]
            assert cv.use_cascade(ax["batch_size"], ax["num_shared_pages"] * 16, s.qo, s.kv), (s.cascade_name, ax)
    for s in cv.MERGE_SIBLINGS:
        assert (cv.DATASET / "workloads" / "reduction" / f"{s.merge_name}.jsonl").is_file(), s.merge_name
