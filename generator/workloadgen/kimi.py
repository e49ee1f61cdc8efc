"""Workloads for the Kimi-K2 definitions: the model served at TP16 on two nodes of 8 H200 by SGLang,
experts TP-sharded (moe_intermediate_size 2048 / 16 = 128 per rank, all 384 experts on every rank).

Token counts: decode batches of 1-256 and prefill chunks of 1024-8192 tokens, as for DeepSeek-V3.
Routing: standard-normal router logits plus a skewed e_score_correction_bias (deepseek.skewed_bias over
384 experts) give each token its 8 experts (deepseek.route_ids with n_group 1, topk_group 1, the
definition's selection); align_block_size (moe_pipeline) sorts them with BLOCK_SIZE_M 16 up to 512
tokens and 64 from 1024 (SGLang's tuned FP8 block-128 MoE configs on H200). Float inputs are "random";
index inputs are blobs.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from . import core, moe
from .moe import align_block_size, block_m
from .spec import Spec

EXPERTS = 384
TOP_K = 8  # moonshotai/Kimi-K2-Instruct config.json: num_experts_per_tok
# (tokens, bias spread, situation)
STEPS = [(1, 0.02, "decode, batch 1"), (16, 0.03, "decode, batch 16"), (64, 0.05, "decode, batch 64"),
         (256, 0.03, "decode, batch 256 (large-batch serving)"), (1024, 0.05, "prefill chunk of 1024 tokens"),
         (4096, 0.08, "prefill chunk of 4096 tokens")]
TOKENS = [(1, "decode, batch 1"), (16, "decode, batch 16"), (64, "decode, batch 64"), (256, "decode, batch 256"),
          (2048, "prefill chunk of 2048 tokens"), (8192, "prefill chunk of 8192 tokens")]


def route(logits: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return moe.route_ids(logits, bias, n_group=1, topk_group=1, top_k=TOP_K)


def moe_workloads() -> Iterator[Spec]:
    for i, (tokens, spread, what) in enumerate(STEPS):
        seed = 600 + i
        g = core.rng(seed)
        bias = moe.skewed_bias(g, EXPERTS, spread)
        ids = route(g.standard_normal((tokens, EXPERTS)), bias.astype(np.float64))
        bm = block_m(tokens)
        aligned = align_block_size(ids, EXPERTS, bm)
        counts = np.bincount(ids.ravel(), minlength=EXPERTS)
        text = (f"Kimi-K2 TP16, {what}: g = core.rng({seed}); bias = deepseek.skewed_bias(g, 384, {spread}); "
                f"ids = kimi.route(g.standard_normal(({tokens}, 384)), bias): {int((counts > 0).sum())} of 384 experts "
                f"used, the hottest takes {counts.max()} of {tokens * TOP_K} picks; "
                f"moe_pipeline.align_block_size(ids, 384, {bm}) gives {aligned['num_tokens_post_padded']} sorted rows")
        axes = {"num_tokens": tokens, **aligned["axes"]}
        index = {"sorted_token_ids": aligned["sorted_token_ids"], "expert_ids": aligned["expert_ids"],
                 "num_tokens_post_padded": aligned["num_tokens_post_padded"], "block_size": bm}
        key = f"t{tokens}"
        yield Spec("moe_routing_grouped_topk8_e384_ng1_kg1", key, {"num_tokens": tokens},
                   {"router_logits": "random", "e_score_correction_bias": bias}, seed,
                   f"Kimi-K2, {what}; router_logits random; e_score_correction_bias = deepseek.skewed_bias("
                   f"core.rng({seed}), 384, {spread})")
        yield Spec("moe_align_block_size_e384_topk8", key, axes, {"topk_ids": ids, "block_size": bm}, seed, text)
        gemm_axes = {**axes, "num_pairs": tokens * TOP_K}
        yield Spec("grouped_gemm_fp8_block128_sorted_e384_n256_k7168", key, gemm_axes,
                   {"A": "random", "A_scale": "random", "B": "random", "B_scale": "random", **index}, seed,
                   f"{text}; A, scales and weights random")
        yield Spec("grouped_gemm_fp8_block128_sorted_weighted_e384_n7168_k128", key, gemm_axes,
                   {"A": "random", "A_scale": "random", "B": "random", "B_scale": "random", "topk_weights": "random",
                    **index}, seed, f"{text}; A, scales, weights and topk_weights random")
        yield Spec("silu_and_mul_i128", f"pairs{tokens * TOP_K}", {"num_tokens": tokens * TOP_K}, {"input": "random"},
                   seed, f"Kimi-K2 routed experts, {what}: {tokens} tokens x 8 pairs; input random")
        yield Spec("quantize_fp8_per_token_group128_h128", f"pairs{tokens * TOP_K}", {"num_tokens": tokens * TOP_K},
                   {"input": "random"}, seed,
                   f"Kimi-K2 routed experts' SiLU-and-mul output, {what}: {tokens} tokens x 8 pairs; input random")


def token_workloads() -> Iterator[Spec]:
    for i, (m, what) in enumerate(TOKENS):
        seed = 620 + i
        for k in (512, 1152):
            yield Spec(f"quantize_fp8_per_token_group128_h{k}", f"t{m}", {"num_tokens": m}, {"input": "random"}, seed,
                       f"Kimi-K2 TP16, {what}: {m} rows; input random")
        if m <= 256:  # the shared expert's rows (one per token): decode batches
            yield Spec("silu_and_mul_i128", f"t{m}", {"num_tokens": m}, {"input": "random"}, seed,
                       f"Kimi-K2 shared expert, {what}: {m} rows; input random")
            yield Spec("quantize_fp8_per_token_group128_h128", f"t{m}", {"num_tokens": m}, {"input": "random"}, seed,
                       f"Kimi-K2 shared expert's SiLU-and-mul output, {what}: {m} rows; input random")


GEMMS = [(768, 1536), (7168, 512), (256, 7168), (7168, 128)]
PREFILL_TOKENS = [(128, "prefill of 128 fresh tokens"), (512, "prefill chunk of 512 tokens"), (2048, "prefill chunk of 2048 tokens"),
                  (4096, "prefill chunk of 4096 tokens"), (8192, "prefill chunk of 8192 tokens")]
SM_SCALE = 0.13086079996295005  # 192**-0.5 * (0.1 * ln(32) + 1)**2: yarn mscale^2 / sqrt(qk_head_dim), factor 32
# (batch, median context, sigma, situation): TP16 leaves ~61 GB of each H200 for the replicated latent cache
# (0.9 x 141 GB - 65.5 GB of weights), ~870k tokens at 70,272 bytes per token; page size 1 tables stay small.
DECODE = [(1, 32768, 0.0, "one long request at 32k context"), (16, 8192, 0.5, "16 requests around 8k context"),
          (64, 4096, 0.5, "64 requests around 4k context"), (128, 2048, 0.6, "128 requests around 2k context"),
          (256, 1024, 0.6, "256 requests around 1k context (large-batch serving)")]


def gemm_workloads() -> Iterator[Spec]:
    for i, (m, what) in enumerate(TOKENS):
        for n, k in GEMMS:
            yield Spec(f"gemm_fp8_block128_n{n}_k{k}", f"m{m}", {"M": m},
                       {"A": "random", "A_scale": "random", "B": "random", "B_scale": "random"}, 640 + i,
                       f"Kimi-K2 TP16 (and DeepSeek-V3 TP16 for the shared expert), {what}: M = {m}; all inputs random")
    for i, (m, what) in enumerate(PREFILL_TOKENS):
        yield Spec("gemm_fp8_block128_n1024_k512", f"m{m}", {"M": m},
                   {"A": "random", "A_scale": "random", "B": "random", "B_scale": "random"}, 650 + i,
                   f"Kimi-K2 TP16 kv_b_proj on the MHA prefill path, {what}: M = {m}; all inputs random")


def mla_workloads() -> Iterator[Spec]:
    for i, (batch, median, sigma, what) in enumerate(DECODE):
        seed = 660 + i
        g = core.rng(seed)
        lens = core.seq_lens(g, batch, median, low=64, high=32768, sigma=sigma)
        layout = core.paged_kv(g, lens, 1)
        axes = {"batch_size": batch, "num_pages": layout["num_pages"], "len_indptr": batch + 1,
                "num_kv_indices": len(layout["kv_indices"])}
        inputs = {"q_nope": "random", "q_pe": "random", "ckv_cache": "random", "kpe_cache": "random",
                  "kv_indptr": layout["kv_indptr"], "kv_indices": layout["kv_indices"],
                  "kv_last_page_len": layout["kv_last_page_len"], "sm_scale": SM_SCALE}
        yield Spec("mla_paged_decode_h4_ckv512_kpe64_ps1", f"b{batch}_ctx{median}", axes, inputs, seed,
                   f"Kimi-K2 TP16 decode, {what}: lens = core.seq_lens(core.rng({seed}), {batch}, {median}, low=64, "
                   f"high=32768, sigma={sigma}) (total {int(lens.sum())} tokens), layout = core.paged_kv(same rng, lens, 1) "
                   f"(25% free pages, shuffled); sm_scale = 192^-0.5 * (0.1 ln 32 + 1)^2")


# Fresh prompts (SGLang's MHA prefill path runs when no request of the batch extends a cached prefix).
FRESH = [(1, 8192, 0.0, "one fresh 8192-token prompt (a whole chunk)"), (2, 2048, 0.3, "2 fresh prompts around 2k tokens"),
         (4, 1024, 0.5, "4 fresh prompts around 1k tokens"), (8, 512, 0.5, "8 fresh prompts around 512 tokens"),
         (16, 128, 0.5, "16 short fresh prompts around 128 tokens")]
# lm_head rows: one per sequence that samples.
LM_HEAD = [(1, "decode batch 1, or one prompt finishing its prefill"), (4, "4 prompts finishing their prefill"),
           (16, "decode batch 16"), (64, "decode batch 64"), (256, "decode batch 256")]


def mha_prefill_workloads() -> Iterator[Spec]:
    for i, (batch, median, sigma, what) in enumerate(FRESH):
        seed = 680 + i
        lens = core.seq_lens(core.rng(seed), batch, median, low=16, high=8192, sigma=sigma)
        ptr = core.indptr(lens)
        total = int(lens.sum())
        call = f"lens = core.seq_lens(core.rng({seed}), {batch}, {median}, low=16, high=8192, sigma={sigma})"
        yield Spec("mla_ragged_prefill_causal_h4_qk192_vo128", f"b{batch}_q{median}",
                   {"total_q": total, "total_kv": total, "batch_size": batch, "len_indptr": batch + 1},
                   {"q": "random", "k": "random", "v": "random", "qo_indptr": ptr, "kv_indptr": ptr, "sm_scale": SM_SCALE},
                   seed, f"Kimi-K2 TP16 prefill, {what}: {call} (total {total}); qo_indptr = kv_indptr = "
                         f"core.indptr(lens) (no cached prefix); sm_scale = 192^-0.5 * (0.1 ln 32 + 1)^2; q, k, v random")
        yield Spec("concat_mla_k_h4_nope128_rope64", f"b{batch}_q{median}", {"num_tokens": total},
                   {"k_nope": "random", "k_pe": "random"}, seed,
                   f"Kimi-K2 TP16 prefill, {what}: the {total} tokens of {call}; k_nope, k_pe random")


def absorb_and_head_workloads() -> Iterator[Spec]:
    for i, (m, what) in enumerate(TOKENS):
        seed = 690 + i
        if m <= 256:  # the absorbed path: decode steps (a fresh prefill takes the MHA path)
            yield Spec("batch_gemm_mla_absorb_q_h4_d128_c512", f"t{m}", {"num_tokens": m},
                       {"q_nope": "random", "w_kc": "random"}, seed, f"Kimi-K2 TP16, {what}: {m} tokens; inputs random")
            yield Spec("batch_gemm_mla_absorb_v_h4_c512_d128", f"t{m}", {"num_tokens": m},
                       {"attn_latent": "random", "w_vc": "random"}, seed, f"Kimi-K2 TP16, {what}: {m} tokens; inputs random")
        yield Spec("gemm_n384_k7168", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed,
                   f"Kimi-K2 router gate, {what}: M = {m}; inputs random")
    for i, (m, what) in enumerate(LM_HEAD):
        yield Spec("gemm_n10240_k7168", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, 700 + i,
                   f"Kimi-K2 TP16 lm_head shard, {what}: M = {m}; inputs random")


ROPE_STEPS = [(1, 32768, 0, "decode, one request at 32k context"), (64, 4096, 0, "decode, 64 requests around 4k context"),
              (256, 1024, 0, "decode, 256 requests around 1k context"), (1, 8192, 1, "prefill, one fresh 8192-token prompt"),
              (8, 512, 1, "prefill, 8 requests extending ~4k-token cached prefixes by ~512 tokens")]


def rope_workloads() -> Iterator[Spec]:
    for i, (batch, median, prefill, what) in enumerate(ROPE_STEPS):
        seed = 710 + i
        g = core.rng(seed)
        if not prefill:  # a decode token sits at its context length - 1
            lens = core.seq_lens(g, batch, median, low=64, high=32768, sigma=0.0 if batch == 1 else 0.5)
            pos, call = lens - 1, f"lens = core.seq_lens(core.rng({seed}), {batch}, {median}, low=64, high=32768); positions = lens - 1"
        else:  # a prefill token at prefix + 0 .. q_len - 1 of its request
            q = core.seq_lens(g, batch, median, low=16, high=8192, sigma=0.0 if batch == 1 else 0.5)
            pre = (core.seq_lens(g, batch, 4096, low=1, high=16384, sigma=0.5) if batch > 1 else np.zeros(batch, dtype=np.int64))
            pos = np.concatenate([np.arange(p, p + n) for p, n in zip(pre, q)])
            call = (f"q_lens = core.seq_lens(core.rng({seed}), {batch}, {median}, low=16, high=8192), prefix = "
                    + ("core.seq_lens(same rng, {batch}, 4096, low=1, high=16384)" if batch > 1 else "0")
                    + "; positions = prefix + arange(q_len) per request")
        yield Spec("rope_deepseek_yarn_h4_d64", f"b{batch}_{'prefill' if prefill else 'decode'}{median}",
                   {"num_tokens": len(pos), "max_position": int(pos.max()) + 1},
                   {"positions": pos, "q_pe": "random", "k_pe": "random", "cos_sin_cache": "random"}, seed,
                   f"Kimi-K2 TP16, {what}: {call}; {len(pos)} tokens; q_pe, k_pe random; cos_sin_cache made from Kimi-K2's "
                   f"YaRN rope configuration (rope_cos_sin), {int(pos.max()) + 1} rows")


def workloads() -> Iterator[Spec]:
    yield from rope_workloads()
    yield from moe_workloads()
    yield from token_workloads()
    yield from gemm_workloads()
    yield from mla_workloads()
    yield from mha_prefill_workloads()
    yield from absorb_and_head_workloads()
