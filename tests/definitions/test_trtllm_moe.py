"""The TRT-LLM fused MoE definitions (tests/reference_cases/trtllm_moe_variants.py) are named for their constants
(families in dataset/families/), and the packed routing of their workloads round-trips. The mathematics of each is checked against
reference_cases/trtllm_moe.py's independent formulation by tests/dataset/test_references.py."""

from __future__ import annotations

import numpy as np

from generator.workloadgen import core, packed_routing

from reference_cases import trtllm_moe_variants as variants
from reference_check import definition_named


def test_the_thirteen_public_names():
    names = {v.name for v in variants.VARIANTS}
    assert len(names) == 13
    for v in variants.VARIANTS:
        d = definition_named(v.name)
        consts = {a: s["value"] for a, s in d["axes"].items() if s["type"] == "const"}
        assert f"_topk{v.m.top_k}_e{consts['num_experts']}_h{consts['hidden_size']}_i{consts['intermediate_size']}" \
            in v.name
        assert "gpu:sm100" in d["tags"]


def test_packed_routing_round_trips():
    for routing, k in (("renormalize", 8), ("llama4", 1)):
        packed = packed_routing.packed_topk(core.rng(3), 50, 64, k, 0.6, routing).astype(np.int64)
        ids, bits = packed >> 16, packed & 0xFFFF
        assert ids.min() >= 0 and ids.max() < 64
        assert all(len(set(row)) == k for row in ids.tolist())  # distinct picks
        w = (bits.astype(np.uint32) << 16).view(np.float32)
        assert (w > 0).all() and (w <= 1).all()
        if routing == "renormalize":  # bfloat16 weights of a softmax: sum to 1 within their rounding
            assert np.allclose(w.sum(axis=1), 1.0, atol=k * 2 ** -8)
