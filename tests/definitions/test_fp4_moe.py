"""The FP4 MoE definitions (tests/reference_cases/fp4_moe.py) are exactly what that module renders: the NVFP4
routed MoE of DeepSeek-R1-FP4 at EP8, gpt-oss's MXFP8 activation quantiser and its MXFP4 x MXFP8 fused MoEs. Their mathematics is checked by
tests/dataset/test_references.py (CASES, planted mistakes); this proves the committed files are the rendering."""

from __future__ import annotations

from reference_cases import fp4_moe


def test_the_moe_check_keeps_the_rank_layout():
    """The shrunk sets keep 8 ranks of whole experts and whole 128x4 scale tiles of every weight."""
    for s in fp4_moe.MOE_SETS:
        assert s["num_experts"] == 8 * s["num_local_experts"]
        assert s["gemm1_out_size"] % 128 == 0 and s["hidden_size"] % 128 == 0
        assert s["hidden_sf"] % 4 == 0 and s["intermediate_sf"] % 4 == 0
