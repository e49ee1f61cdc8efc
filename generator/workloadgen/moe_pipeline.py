"""Workloads for the kernels of the Triton fused-MoE path (also at TP16/EP16 on H100) (moe_align_block_size, the two grouped FP8
GEMMs over sorted pairs, silu_and_mul, the per-token-group FP8 quantisation, moe_sum) as DeepSeek-V3
runs them at TP8 / EP8 on H200 in SGLang, and the align / sum pieces of Qwen3-30B-A3B at TP1 in vLLM.

One routed step drives every kernel of a layer: seeded router logits (standard normal) and a skewed
e_score_correction_bias (deepseek.skewed_bias) give each token its 8 global experts (deepseek.route_ids,
the definitions' selection); an EP rank keeps the picks on its 32 experts as local ids and marks the
others -1; align_block_size (numpy, SGLang's convention) sorts them into blocks of BLOCK_SIZE_M rows.
BLOCK_SIZE_M follows SGLang's tuned config for these FP8 block-128 MoE shapes on H200
(configs/triton_3_3_1/E=257,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128].json):
16 up to 512 tokens, 64 from 1024. Qwen's picks are Gumbel top-k draws from a Zipf-like popularity
(qwen.routed_counts, which this module's routed_ids extends to return the ids).
Float inputs are "random" (the bench draws them from the seed); index inputs are blobs.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from . import core, moe
from .moe import align_block_size, block_m
from .spec import Spec

TOP_K = 8
DS_EXPERTS, DS_LOCAL = 256, 32

# (tokens, bias spread, EP rank, situation): decode batches and prefill chunks of DeepSeek-V3 at TP8.
DS_STEPS = [(1, 0.02, 0, "decode, batch 1"), (16, 0.03, 3, "decode, batch 16"), (64, 0.05, 5, "decode, batch 64"),
            (256, 0.03, 1, "decode, batch 256 (large-batch serving)"), (1024, 0.05, 7, "prefill chunk of 1024 tokens"),
            (4096, 0.08, 2, "prefill chunk of 4096 tokens")]
# Token counts of the dense kernels (quantisation of a token's activations, moe_sum).
TOKENS = [(1, "decode, batch 1"), (16, "decode, batch 16"), (64, "decode, batch 64"),
          (256, "decode, batch 256"), (2048, "prefill chunk of 2048 tokens"), (8192, "prefill chunk of 8192 tokens")]


def ds_step(i: int, ep: int = 8) -> tuple[dict, str]:
    """Local ids of DeepSeek-V3 step i of DS_STEPS on its EP rank (EP8: 32 local experts; EP16: 16, rank
    2 * rank + 1), aligned, and how they were made."""
    tokens, spread, rank, what = DS_STEPS[i]
    local_n = DS_EXPERTS // ep
    rank = rank if ep == 8 else 2 * rank + 1
    seed = 400 + i if ep == 8 else 450 + i
    g = core.rng(seed)
    bias = moe.skewed_bias(g, DS_EXPERTS, spread)
    ids = moe.route_ids(g.standard_normal((tokens, DS_EXPERTS)), bias.astype(np.float64))
    moved = ""
    if not ((ids >= local_n * rank) & (ids < local_n * (rank + 1))).any():
        # A rank that holds none of the step's picks only writes zeros (nothing to check): record the rank of
        # token 0's first pick instead, which has work.
        moved = f" (rank {rank} holds none of the step's picks: the rank of token 0's first pick)"
        rank = int(ids[0, 0]) // local_n
    local = ids - local_n * rank
    local = np.where((local >= 0) & (local < local_n), local, -1)
    assert (local >= 0).any() and (local < 0).any(), "the rank needs local picks and picks of other ranks (zero rows)"
    aligned = align_block_size(local, local_n, block_m(tokens))
    share = float((local >= 0).mean())
    text = (f"DeepSeek-V3 TP{ep}/EP{ep}, {what}, EP rank {rank}{moved} (experts {local_n * rank}.."
            f"{local_n * rank + local_n - 1}): "
            f"g = core.rng({seed}); bias = deepseek.skewed_bias(g, 256, {spread}); ids = deepseek.route_ids("
            f"g.standard_normal(({tokens}, 256)), bias); local ids (others -1); {share:.1%} of the {tokens * TOP_K} picks "
            f"are local (uniform: {1 / ep:.2%}); moe_pipeline.align_block_size(local, {local_n}, {block_m(tokens)}) gives "
            f"{aligned['num_tokens_post_padded']} sorted rows")
    return {"local": local, "seed": seed, "rank": rank, **aligned}, text


def ds_workloads() -> Iterator[Spec]:
    for ep, suffix in ((8, "e32"), (16, "e16")):
        for i in range(len(DS_STEPS)):
            yield from ds_layer(i, ep, suffix)


def ds_layer(i: int, ep: int, suffix: str) -> Iterator[Spec]:
    tokens = DS_STEPS[i][0]
    step, text = ds_step(i, ep)
    key, seed = f"t{tokens}_rank{step['rank']}", step["seed"]
    axes = {"num_tokens": tokens, **step["axes"]}
    index = {"sorted_token_ids": step["sorted_token_ids"], "expert_ids": step["expert_ids"],
             "num_tokens_post_padded": step["num_tokens_post_padded"], "block_size": step["block_size"]}
    yield Spec(f"moe_align_block_size_{suffix}_topk8", key, axes,
               {"topk_ids": step["local"], "block_size": step["block_size"]}, seed, text)
    gemm_axes = {**axes, "num_pairs": tokens * TOP_K}
    yield Spec(f"grouped_gemm_fp8_block128_sorted_{suffix}_n4096_k7168", key, gemm_axes,
               {"A": "random", "A_scale": "random", "B": "random", "B_scale": "random", **index}, seed,
               f"{text}; A, scales and weights random")
    yield Spec(f"grouped_gemm_fp8_block128_sorted_weighted_{suffix}_n7168_k2048", key, gemm_axes,
               {"A": "random", "A_scale": "random", "B": "random", "B_scale": "random", "topk_weights": "random",
                **index}, seed, f"{text}; A, scales, weights and topk_weights random")
    if ep == 8:  # the same rows at EP16
        yield Spec("silu_and_mul_i2048", f"t{tokens}", {"num_tokens": tokens * TOP_K}, {"input": "random"}, seed,
                   f"DeepSeek-V3 routed experts, {DS_STEPS[i][3]}: {tokens} tokens x 8 pairs; input random")


def workloads() -> Iterator[Spec]:
    yield from ds_workloads()
