"""Independent formulations for the gpt-oss-20b definitions of its own (TP1 on one H100; the 32-expert MoE layer).

gpt-oss-20b shares every other kernel with gpt-oss-120b (openai/gpt-oss-20b config.json differs only in
num_hidden_layers 24 and num_local_experts 32), so these are gpt_oss.py's checks at 32 experts: the router as a
softmax over all experts, a sort by (probability, expert id), top-4 and renormalisation; the routing metadata as a
sort of (expert, flat index) pairs; the MXFP4 expert GEMMs through a lookup table of the e2m1 values and
torch.ldexp, row by row with F.linear, the scatter as a per-token loop; the router GEMM with F.linear.
"""

from __future__ import annotations

import torch

from . import gpt_oss
from .common import Case, shrunk

NUM_EXPERTS, TOP_K = 32, 4  # num_local_experts, num_experts_per_tok of openai/gpt-oss-20b


def metadata_inputs(ax, g, i):
    popularity = torch.rand(NUM_EXPERTS, generator=g) ** 4 + 1e-3
    ids = torch.stack([torch.multinomial(popularity, TOP_K, replacement=False, generator=g)
                       for _ in range(ax["num_tokens"])])
    return {"topk_ids": ids.int(), "topk_weights": torch.rand(ax["num_tokens"], TOP_K, generator=g).bfloat16()}


def metadata_expected(ax, x):
    pairs = sorted((int(e), t * TOP_K + k) for t, row in enumerate(x["topk_ids"].tolist()) for k, e in enumerate(row))
    counts = torch.bincount(torch.tensor([e for e, _ in pairs]), minlength=NUM_EXPERTS)
    flat_weights = x["topk_weights"].double().flatten()
    return {"m_indptr": torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)]),
            "row_token": torch.tensor([i // TOP_K for _, i in pairs]),
            "row_weight": torch.stack([flat_weights[i] for _, i in pairs])}


def metadata_derived(ax):
    return {"total_rows": ax["num_tokens"] * TOP_K, "len_m_indptr": NUM_EXPERTS + 1}


CASES = {
    "gemm_bias_n32_k2880": gpt_oss.gemm_case(True),
    "moe_routing_softmax_topk4_e32": Case([{"num_tokens": 1}, {"num_tokens": 16}, {"num_tokens": 33}],
                                          gpt_oss.routing_inputs, gpt_oss.routing_expected),
    "moe_routing_metadata_e32_topk4": Case([{"num_tokens": 1}, {"num_tokens": 9}, {"num_tokens": 40}], metadata_inputs,
                                           metadata_expected, derived=metadata_derived),
    # N and K shrunk to a few blocks of 32, as gpt_oss.py does (each output is the same dot product at any size);
    # the 32 experts' segments, the block scales along K and the nibble order are all exercised.
    "grouped_gemm_mxfp4_swiglu_e32_n5760_k2880": Case(
        [shrunk({"tokens": t}, N=96, I=48, **gpt_oss.MOE_SHRINK) for t in (1, 3, 10)], gpt_oss.gate_up_inputs,
        gpt_oss.gate_up_expected, derived=gpt_oss.moe_derived),
    "grouped_gemm_mxfp4_scatter_e32_n2880_k2880": Case(
        [shrunk({"tokens": t}, N=80, **gpt_oss.MOE_SHRINK) for t in (1, 4, 12)], gpt_oss.down_inputs,
        gpt_oss.down_expected, derived=gpt_oss.moe_derived),
}

