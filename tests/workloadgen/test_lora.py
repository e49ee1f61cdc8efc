"""The multi-LoRA kernels: their workloads' adapter slots and segments, and the shrink and expand together.

tests/dataset/test_references.py checks each reference against tests/reference_cases/lora.py (and the planted mistakes);
here: every LoRA workload's index inputs are what an engine hands the kernels (slots in range, -1 for no LoRA, at
least one request with an adapter, segments that tile the tokens), the family's redraw, and the shrink and the
expand of one layer chained give the whole LoRA update, y + scaling * (x @ A.T) @ B.T per slice, in float64.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

from generator.workloadgen import core, lora

DATASET = Path(__file__).resolve().parents[2] / "dataset"
DEFINITIONS = sorted((DATASET / "definitions" / "grouped_gemm").glob("lora_*.json"))


def _definition(name: str) -> dict:
    return json.loads((DATASET / "definitions" / "grouped_gemm" / f"{name}.json").read_text())


def _workloads(path: Path):
    d = json.loads(path.read_text())
    lines = (DATASET / "workloads" / "grouped_gemm" / f"{d['name']}.jsonl").read_text().splitlines()
    return d, [json.loads(line)["workload"] for line in lines if line.strip()]


def test_the_lora_definitions():
    assert [p.stem for p in DEFINITIONS] == [
        "lora_bgmv_expand_s2_l4_r64_n28672", "lora_bgmv_expand_s3_l4_r16_n1280", "lora_bgmv_expand_s3_l4_r16_n2560",
        "lora_bgmv_expand_s3_l4_r16_n4096", "lora_bgmv_expand_s3_l4_r16_n4608", "lora_bgmv_expand_s3_l4_r16_n5120",
        "lora_bgmv_expand_s3_l4_r16_n6144", "lora_bgmv_expand_s3_l4_r16_n7168", "lora_bgmv_shrink_s1_l4_r64_k14336",
        "lora_bgmv_shrink_s3_l4_r16_k3072", "lora_bgmv_shrink_s3_l4_r16_k3584", "lora_bgmv_shrink_s3_l4_r16_k4096",
        "lora_bgmv_shrink_s3_l4_r16_k5120", "lora_bgmv_shrink_s3_l4_r16_k5376", "lora_bgmv_shrink_s3_l4_r16_k8192",
        "lora_sgmv_expand_s3_l4_r16_n6144", "lora_sgmv_shrink_s3_l4_r16_k4096"]  # the qkv BGMV pairs of the other
    # dense models, one rank's shapes at their records' TP (k3584 / n4608 Qwen2.5-7B, k3072 / n5120 Llama-3.2-3B,
    # k5120 / n7168 Qwen3-14B, k5120 / n2560 Qwen3-32B TP4, k8192 / n2560 and n1280 Llama-3.3-70B TP4 and TP8,
    # k5376 / n4096 Gemma-3-27B TP2): tests/reference_cases/lora_variants.py


@pytest.mark.parametrize("path", DEFINITIONS, ids=lambda p: p.stem)
def test_workload_slots_and_segments_are_an_engines(path):
    d, workloads = _workloads(path)
    slots_max = d["axes"]["max_loras"]["value"]
    assert len(workloads) >= 5
    for w in workloads:
        blobs = {k: load_file(str(DATASET / v["path"]))[v["tensor_key"]] for k, v in w["inputs"].items()
                 if v["type"] == "safetensors"}
        slots = blobs.get("token_lora_indices", blobs.get("seg_lora_indices"))
        assert slots.dtype == np.int32 and ((slots >= -1) & (slots < slots_max)).all(), w["uuid"]
        assert (slots >= 0).any(), f"{w['uuid']}: no request with an adapter (the engines skip such a step)"
        assert w["num_tokens"] == w["axes"]["num_tokens"]
        if "seg_indptr" in blobs:
            indptr = blobs["seg_indptr"].astype(np.int64)
            assert indptr[0] == 0 and indptr[-1] == w["axes"]["num_tokens"] and (np.diff(indptr) > 0).all()
            assert len(slots) == w["axes"]["num_segments"] == len(indptr) - 1
            assert w["stage"] == "prefill"
        else:
            assert len(slots) == w["axes"]["num_tokens"] and w["stage"] == "decode"
        if "scaling" in w["inputs"]:
            assert w["inputs"]["scaling"] == {"type": "scalar", "value": 2.0}
    # Some workload has tokens without a LoRA next to tokens with one.
    assert any(-1 in load_file(str(DATASET / v["path"]))[v["tensor_key"]]
               for w in workloads for k, v in w["inputs"].items() if k.endswith("lora_indices"))


def test_a_step_with_no_adapter_is_drawn_again():
    menu = [[-1, 0.9], [0, 0.1]]
    slots, attempts = lora.request_slots(core.rng(3), 2, menu)
    assert (slots >= 0).any() and attempts == 8  # two requests of a 90% base-model menu: seed 3 takes 8 draws
    with pytest.raises(ValueError, match="no request"):
        lora.request_slots(core.rng(0), 4, [[-1, 1.0]])


def _run(name: str, inputs: dict) -> dict:
    ns: dict = {}
    exec(compile(_definition(name)["reference"], name, "exec"), ns)
    return ns["run"](**inputs)


@pytest.mark.parametrize("shrink, expand, sizes", [
    ("lora_bgmv_shrink_s3_l4_r16_k4096", "lora_bgmv_expand_s3_l4_r16_n6144", (4096, 1024, 1024)),
    ("lora_sgmv_shrink_s3_l4_r16_k4096", "lora_sgmv_expand_s3_l4_r16_n6144", (4096, 1024, 1024))])
def test_shrink_then_expand_is_the_whole_lora_update(shrink, expand, sizes):
    """qkv_proj's shrink and expand chained: y + scaling * x @ A[l, s].T @ B[l, slice s].T for each slice s, the
    rows of tokens without a LoRA untouched (float64, per token, with the slices cut out of B by their sizes)."""
    g = torch.Generator().manual_seed(5)
    T, K, R, L = 6, 4096, 16, 4
    x = torch.randn(T, K, generator=g).bfloat16()
    a = (torch.randn(L, 3, R, K, generator=g) / 64).bfloat16()
    b = (torch.randn(L, sum(sizes), R, generator=g) / 4).bfloat16()
    y = torch.randn(T, sum(sizes), generator=g).bfloat16()
    token_slots = torch.tensor([1, -1, 3, 3, 0, -1], dtype=torch.int32)
    scaling = torch.tensor(2.0)
    if "bgmv" in shrink:
        index = {"token_lora_indices": token_slots}
    else:  # the same slots as segments [0, 1), [1, 2), [2, 4), [4, 5), [5, 6)
        index = {"seg_indptr": torch.tensor([0, 1, 2, 4, 5, 6], dtype=torch.int32),
                 "seg_lora_indices": torch.tensor([1, -1, 3, 0, -1], dtype=torch.int32)}
    buffer = _run(shrink, {"x": x, "lora_a": a, **index, "scaling": scaling})["buffer"]
    y_out = _run(expand, {"y": y, "buffer": buffer, "lora_b": b, **index})["y_out"]
    expected = y.double().clone()
    for t, slot in enumerate(token_slots.tolist()):
        if slot < 0:
            continue
        for s, part in enumerate(torch.split(b[slot].double(), list(sizes))):
            lo = sum(sizes[:s])
            expected[t, lo:lo + sizes[s]] += 2.0 * (x[t].double() @ a[slot, s].double().T) @ part.T
    assert torch.equal(y_out[token_slots < 0], y[token_slots < 0])
    err = (y_out.double() - expected).abs().max().item()
    assert err <= 0.02 * expected.abs().max().item(), err  # bfloat16 rounding of the buffer, the update and the sum
