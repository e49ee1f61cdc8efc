"""Workloads for DeepSeek-V3 as its two calling records serve it: TP8 with EP8 on 8 H200
(dataset/models/deepseek-v3.json) and TP16 on 2 x 8 H100 (deepseek-v3-tp16-h100.json, 8 of the 128
heads per rank). Kernels whose shapes do not depend on the sharding (norms, the replicated q_a/kv_a
projection and router gate, the latent cache) serve both.

Token counts follow serving: decode batches of 1-256 sequences, prefill chunks of 128-8192 tokens
(8192 is a common chunked-prefill size). MLA decode contexts run from a few hundred tokens to
32k; page size 1 (SGLang's FlashInfer MLA layout) is kept to combinations whose page tables stay small
(batch x context <= ~150k tokens), page size 64 (FlashMLA) takes the long and large ones.

Routing skew: the router logits are random (the bench draws them), and e_score_correction_bias is a
seeded float32 blob from skewed_bias(): expert popularity ranks r (a random permutation of 1..256)
give bias = spread * standardised(-ln r), a Zipf-like profile on the log scale. With standard-normal
logits, spread 0.02 makes the hottest expert take ~3x the mean load, 0.05 ~8x, 0.08 ~14x (measured by
route_counts() on 2048 simulated tokens and written into each workload's description).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from . import core
from .moe import route_ids, skewed_bias
from .spec import Spec

SM_SCALE = 0.1352337788608801  # 192**-0.5 * (0.1 * ln(40) + 1)**2: yarn mscale^2 / sqrt(qk_head_dim)
MLA_SUFFIX = "h16_ckv512_kpe64"
NUM_EXPERTS, LOCAL_EXPERTS = 256, 32


# --------------------------------------------------------------------------------------------------
# How a skewed bias loads the experts (moe.skewed_bias, moe.route_ids), for the descriptions.
# --------------------------------------------------------------------------------------------------

def route_counts(bias: np.ndarray, seed: int, tokens: int = 2048) -> np.ndarray:
    """Picks per expert for `tokens` simulated standard-normal logit rows (seeded)."""
    logits = core.rng(seed).standard_normal((tokens, len(bias)))
    return np.bincount(route_ids(logits, bias.astype(np.float64)).ravel(), minlength=len(bias))


def load_text(bias: np.ndarray, seed: int, offset: int | None = None) -> str:
    counts = route_counts(bias, seed + 1_000_000)
    text = (f"simulated with 2048 standard-normal logit rows (route_counts, seed {seed + 1_000_000}): hottest expert "
            f"{counts.max() / counts.mean():.1f}x the mean load, coldest {counts.min() / counts.mean():.2f}x, "
            f"top-8 experts take {np.sort(counts)[::-1][:8].sum() / counts.sum():.0%} of the picks")
    if offset is not None:
        local = counts[offset:offset + LOCAL_EXPERTS]
        text += (f"; this rank's experts {offset}..{offset + LOCAL_EXPERTS - 1} get {local.sum() / counts.sum():.1%} of "
                 f"the picks (uniform: 12.5%), from {local.min()} to {local.max()} per expert")
    return text


# --------------------------------------------------------------------------------------------------
# Dense shapes: norms and GEMMs (M = tokens in the step).
# --------------------------------------------------------------------------------------------------

TOKENS = [(1, "decode, batch 1"), (16, "decode, batch 16"), (64, "decode, batch 64"),
          (256, "decode, batch 256 (large-batch serving)"), (2048, "prefill chunk of 2048 tokens"),
          (8192, "prefill chunk of 8192 tokens (a common chunked-prefill size)")]
NORMS = ["rmsnorm_h7168", "rmsnorm_h1536", "rmsnorm_h512"]
GEMMS = [(2112, 7168), (3072, 1536), (7168, 2048), (4608, 7168), (7168, 2304), (512, 7168), (7168, 256)]


# TP16 (2 x 8 H100): q_b_proj, o_proj and the dense MLP's two projections at 8 heads / 1152 per rank.
GEMMS_TP16 = [(1536, 1536), (7168, 1024), (2304, 7168), (7168, 1152)]
# kv_b_proj on the MHA path runs only in prefill without a cached prefix (N = heads x (128 + 128)).
KV_B_PROJ = [(4096, 512), (2048, 512)]
PREFILL_TOKENS = [(128, "a short fresh prompt of 128 tokens"), (512, "fresh prompts totalling 512 tokens"),
                  (1024, "fresh prompts totalling 1024 tokens"), (2048, "a prefill chunk of 2048 tokens"),
                  (4096, "a prefill chunk of 4096 tokens"), (8192, "a prefill chunk of 8192 tokens (chunked-prefill size)")]
# Sequences that sample in a step: the decode batch, or the prompts whose prefill completes.
LM_HEAD_ROWS = [(1, "decode, batch 1"), (16, "decode, batch 16"), (64, "decode, batch 64"),
                (256, "decode, batch 256"), (4, "prefill step completing 4 prompts")]
FP8_GEMM_INPUTS = {"A": "random", "A_scale": "random", "B": "random", "B_scale": "random"}


def dense() -> Iterator[Spec]:
    for seed, (m, what) in enumerate(TOKENS):
        for name in NORMS:
            yield Spec(name, f"t{m}", {"batch_size": m}, {"hidden_states": "random", "weight": "random"}, seed,
                       f"{what}; all inputs random")
        yield Spec("fused_add_rmsnorm_h7168", f"t{m}", {"batch_size": m},
                   {"hidden_states": "random", "residual": "random", "weight": "random"}, seed, f"{what}; all inputs random")
        for n, k in GEMMS + GEMMS_TP16:
            yield Spec(f"gemm_fp8_block128_n{n}_k{k}", f"m{m}", {"M": m}, FP8_GEMM_INPUTS, seed,
                       f"{what}: M = {m}; all inputs random")
        yield Spec("gemm_n256_k7168", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed,
                   f"{what}: M = {m} tokens through the router gate; A and B random")
    for seed, (m, what) in enumerate(PREFILL_TOKENS):
        for n, k in KV_B_PROJ:
            yield Spec(f"gemm_fp8_block128_n{n}_k{k}", f"m{m}", {"M": m}, FP8_GEMM_INPUTS, 20 + seed,
                       f"{what} on the MHA path (no cached prefix): M = {m}; all inputs random")
    for seed, (m, what) in enumerate(LM_HEAD_ROWS):
        for n in (16160, 8080):
            yield Spec(f"gemm_n{n}_k7168", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, 40 + seed,
                       f"lm_head, {what}: M = {m} sequences; A and B random")


# --------------------------------------------------------------------------------------------------
# MLA on the paged latent cache.
# --------------------------------------------------------------------------------------------------

# (batch, median context, sigma, page size, situation)
DECODE = [
    (1, 32768, 0.0, 1, "one long request at 32k context"),
    (16, 4096, 0.5, 1, "16 requests around 4k context"),
    (64, 2048, 0.5, 1, "64 requests around 2k context"),
    (128, 512, 0.6, 1, "128 chat requests around 512 tokens"),
    (256, 384, 0.5, 1, "256 short requests around 384 tokens (large-batch serving)"),
    (1, 32768, 0.0, 64, "one long request at 32k context"),
    (32, 8192, 0.5, 64, "32 requests around 8k context"),
    (64, 4096, 0.5, 64, "64 requests around 4k context"),
    (128, 2048, 0.6, 64, "128 requests around 2k context"),
    (256, 1024, 0.6, 64, "256 requests around 1k context (large-batch serving)"),
]

# (batch, median new tokens, median cached prefix (0: fresh prompts), sigma, situation)
PREFILL = [
    (1, 8192, 0, 0.0, "one fresh 8192-token prompt (a whole chunk)"),
    (1, 2048, 6144, 0.0, "chunked prefill: the last 2048-token chunk of an 8k prompt"),
    (4, 1024, 0, 0.5, "4 fresh prompts around 1k tokens"),
    (8, 512, 4096, 0.5, "8 requests extending around 4k-token cached prefixes (multi-turn chat) by ~512 tokens"),
    (16, 128, 0, 0.5, "16 short fresh prompts around 128 tokens"),
    (2, 256, 16384, 0.3, "2 requests hitting a long cached prefix (~16k, radix cache) with ~256 new tokens"),
]


def _k(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def mla(suffix: str = MLA_SUFFIX) -> Iterator[Spec]:
    """Absorbed MLA decode and prefill; suffix h16_... for TP8 (16 heads per rank), h8_... for TP16, which
    has page size 1 only (SGLang's FlashInfer MLA layout)."""
    for seed, (batch, median, sigma, ps, what) in enumerate(DECODE):
        if ps != 1 and suffix != MLA_SUFFIX:
            continue
        g = core.rng(seed)
        lens = core.seq_lens(g, batch, median, low=64, high=32768, sigma=sigma)
        layout = core.paged_kv(g, lens, ps)
        axes = {"batch_size": batch, "num_pages": layout["num_pages"], "len_indptr": batch + 1,
                "num_kv_indices": len(layout["kv_indices"])}
        inputs = {"q_nope": "random", "q_pe": "random", "ckv_cache": "random", "kpe_cache": "random",
                  "kv_indptr": layout["kv_indptr"], "kv_indices": layout["kv_indices"],
                  "kv_last_page_len": layout["kv_last_page_len"], "sm_scale": SM_SCALE}
        yield Spec(f"mla_paged_decode_{suffix}_ps{ps}", f"b{batch}_ctx{_k(median)}", axes, inputs, seed,
                   f"decode, {what}: lens = core.seq_lens(core.rng({seed}), {batch}, {median}, low=64, high=32768, "
                   f"sigma={sigma}) (total {int(lens.sum())} tokens), layout = core.paged_kv(same rng, lens, {ps}) "
                   f"(25% free pages, shuffled); sm_scale = DeepSeek-V3's 192^-0.5 * mscale^2")
    for seed, (batch, q_median, prefix_median, sigma, what) in enumerate(PREFILL):
        g = core.rng(100 + seed)
        q_lens = core.seq_lens(g, batch, q_median, low=16, high=8192, sigma=sigma)
        prefix = (core.seq_lens(g, batch, prefix_median, low=1, high=32768, sigma=sigma) if prefix_median
                  else np.zeros(batch, dtype=np.int64))
        layout = core.paged_kv(g, q_lens + prefix, 1)
        axes = {"total_q": int(q_lens.sum()), "batch_size": batch, "num_pages": layout["num_pages"],
                "len_indptr": batch + 1, "num_kv_indices": len(layout["kv_indices"])}
        inputs = {"q_nope": "random", "q_pe": "random", "ckv_cache": "random", "kpe_cache": "random",
                  "qo_indptr": core.indptr(q_lens), "kv_indptr": layout["kv_indptr"],
                  "kv_indices": layout["kv_indices"], "kv_last_page_len": layout["kv_last_page_len"],
                  "sm_scale": SM_SCALE}
        prefix_call = (f"prefix = core.seq_lens(same rng, {batch}, {prefix_median}, low=1, high=32768, sigma={sigma})"
                       if prefix_median else "no cached prefix")
        yield Spec(f"mla_paged_prefill_causal_{suffix}_ps1", f"b{batch}_q{_k(q_median)}_prefix{_k(prefix_median)}",
                   axes, inputs, 100 + seed,
                   f"prefill, {what}: q_lens = core.seq_lens(core.rng({100 + seed}), {batch}, {q_median}, low=16, "
                   f"high=8192, sigma={sigma}) (total_q {int(q_lens.sum())}), {prefix_call}; "
                   f"layout = core.paged_kv(same rng, q_lens + prefix, 1); qo_indptr = core.indptr(q_lens)")


# --------------------------------------------------------------------------------------------------
# Routing and the EP8 MoE.
# --------------------------------------------------------------------------------------------------

# (tokens, bias spread, situation)
ROUTING = [(1, 0.02, "decode, batch 1"), (16, 0.03, "decode, batch 16"), (64, 0.05, "decode, batch 64"),
           (256, 0.03, "decode, batch 256"), (2048, 0.05, "prefill chunk of 2048 tokens"),
           (8192, 0.08, "prefill chunk of 8192 tokens")]
# (tokens, bias spread, EP rank, situation)
MOE = [(1, 0.02, 0, "decode, batch 1"), (16, 0.03, 3, "decode, batch 16"), (64, 0.05, 5, "decode, batch 64"),
       (256, 0.03, 1, "decode, batch 256"), (1024, 0.05, 7, "prefill chunk of 1024 tokens"),
       (4096, 0.08, 2, "prefill chunk of 4096 tokens"), (8192, 0.05, 6, "prefill chunk of 8192 tokens")]


def routing() -> Iterator[Spec]:
    for i, (tokens, spread, what) in enumerate(ROUTING):
        seed = 200 + i
        bias = skewed_bias(core.rng(seed), NUM_EXPERTS, spread)
        yield Spec("moe_routing_grouped_topk8_e256_ng8_kg4", f"t{tokens}", {"num_tokens": tokens},
                   {"router_logits": "random", "e_score_correction_bias": bias}, seed,
                   f"{what}; router_logits random; e_score_correction_bias = skewed_bias(core.rng({seed}), 256, "
                   f"spread={spread}), {load_text(bias, seed)}")
    for i, (tokens, spread, rank, what) in enumerate(MOE):
        seed = 300 + i
        bias = skewed_bias(core.rng(seed), NUM_EXPERTS, spread)
        offset = LOCAL_EXPERTS * rank
        inputs = {"routing_logits": "random", "routing_bias": bias, "hidden_states": "random",
                  "hidden_states_scale": "random", "gemm1_weights": "random", "gemm1_weights_scale": "random",
                  "gemm2_weights": "random", "gemm2_weights_scale": "random", "local_expert_offset": offset,
                  "routed_scaling_factor": 2.5}
        yield Spec("moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048", f"t{tokens}_rank{rank}",
                   {"seq_len": tokens}, inputs, seed,
                   f"{what}, EP rank {rank} of 8 (local_expert_offset {offset}); routing_logits and all FP8 tensors "
                   f"random; routing_bias = skewed_bias(core.rng({seed}), 256, spread={spread}), "
                   f"{load_text(bias, seed, offset)}; routed_scaling_factor 2.5")


# --------------------------------------------------------------------------------------------------
# The rest of the attention side: RoPE, the absorption bmm's, the cache store, the MHA prefill path.
# --------------------------------------------------------------------------------------------------

HEADS = {8: 16, 16: 8}  # TP degree -> query heads per rank (num_attention_heads 128 / TP)
# Decode steps (batch, median context, sigma) and prefill steps (batch, median new tokens, median cached
# prefix, sigma): the token positions, slots and lengths the attention-side kernels see.
STEP_DECODE = [(1, 32768, 0.0, "one long request at 32k context"), (16, 4096, 0.5, "16 requests around 4k context"),
               (64, 2048, 0.5, "64 requests around 2k context"), (256, 384, 0.5, "256 short requests (large-batch serving)")]
STEP_PREFILL = [(1, 8192, 0, 0.0, "one fresh 8192-token prompt"),
                (8, 512, 4096, 0.5, "8 requests extending ~4k-token cached prefixes by ~512 tokens")]
# Fresh prompts only (the MHA path runs when no request of the batch extends a cached prefix).
FRESH = [(1, 8192, 0.0, "one fresh 8192-token prompt (a whole chunk)"), (2, 2048, 0.3, "2 fresh prompts around 2k tokens"),
         (4, 1024, 0.5, "4 fresh prompts around 1k tokens"), (8, 512, 0.5, "8 fresh prompts around 512 tokens"),
         (16, 128, 0.5, "16 short fresh prompts around 128 tokens")]


def _step_positions(i: int, decode: bool) -> tuple[np.ndarray, str]:
    """Positions of the step's tokens: a decode token sits at its context length - 1; a prefill token
    at prefix + 0 .. q_len - 1 of its request."""
    if decode:
        batch, median, sigma, what = STEP_DECODE[i]
        lens = core.seq_lens(core.rng(500 + i), batch, median, low=64, high=32768, sigma=sigma)
        return lens - 1, (f"decode, {what}: lens = core.seq_lens(core.rng({500 + i}), {batch}, {median}, low=64, "
                          f"high=32768, sigma={sigma}), positions = lens - 1")
    batch, q_median, prefix_median, sigma, what = STEP_PREFILL[i]
    g = core.rng(600 + i)
    q_lens = core.seq_lens(g, batch, q_median, low=16, high=8192, sigma=sigma)
    prefix = (core.seq_lens(g, batch, prefix_median, low=1, high=32768, sigma=sigma) if prefix_median
              else np.zeros(batch, dtype=np.int64))
    pos = np.concatenate([np.arange(p, p + q) for p, q in zip(prefix, q_lens)])
    return pos, (f"prefill, {what}: q_lens = core.seq_lens(core.rng({600 + i}), {batch}, {q_median}, low=16, "
                 f"high=8192, sigma={sigma}), prefix = " + (f"core.seq_lens(same rng, {batch}, {prefix_median}, low=1, "
                 f"high=32768, sigma={sigma})" if prefix_median else "0") + ", positions = prefix + arange(q_len) per request")


def _steps() -> Iterator[tuple[str, np.ndarray, str, int]]:
    """(key, positions, how they were made, seed) of the decode and prefill steps."""
    for i in range(len(STEP_DECODE)):
        pos, how = _step_positions(i, True)
        yield f"decode_b{STEP_DECODE[i][0]}_ctx{_k(STEP_DECODE[i][1])}", pos, how, 500 + i
    for i in range(len(STEP_PREFILL)):
        pos, how = _step_positions(i, False)
        yield f"prefill_b{STEP_PREFILL[i][0]}_q{_k(STEP_PREFILL[i][1])}_prefix{_k(STEP_PREFILL[i][2])}", pos, how, 600 + i


def attention_side() -> Iterator[Spec]:
    for key, pos, how, seed in _steps():
        tokens = len(pos)
        for tp, heads in HEADS.items():
            yield Spec(f"rope_deepseek_yarn_h{heads}_d64", key,
                       {"num_tokens": tokens, "max_position": int(pos.max()) + 1},
                       {"positions": pos, "q_pe": "random", "k_pe": "random", "cos_sin_cache": "random"}, seed,
                       f"{how}; {tokens} tokens; q_pe, k_pe random; cos_sin_cache made from the YaRN rope configuration "
                       f"(rope_cos_sin), {int(pos.max()) + 1} rows")
            if key.endswith("_prefix0"):
                continue  # a prefill without a cached prefix takes the MHA path: no absorption
            yield Spec(f"batch_gemm_mla_absorb_q_h{heads}_d128_c512", key, {"num_tokens": tokens},
                       {"q_nope": "random", "w_kc": "random"}, seed, f"{how}; {tokens} tokens; inputs random")
            yield Spec(f"batch_gemm_mla_absorb_v_h{heads}_c512_d128", key, {"num_tokens": tokens},
                       {"attn_latent": "random", "w_vc": "random"}, seed, f"{how}; {tokens} tokens; inputs random")
        # The step's tokens get free slots of a pool holding the batch's contexts (page size 1): a
        # fragmented allocator's random slots, distinct.
        g = core.rng(seed + 50)
        pool = max(int(np.ceil((pos.max() + 1) * 1.25)), 2 * tokens)
        loc = g.permutation(pool)[:tokens].astype(np.int64)
        yield Spec("mla_kv_cache_store_ckv512_kpe64_ps1", key, {"num_tokens": tokens, "num_pages": pool},
                   {"ckv": "random", "kpe": "random", "cache_loc": loc, "ckv_cache": "random", "kpe_cache": "random"},
                   seed, f"{how}; {tokens} tokens into a pool of {pool} slots: cache_loc = core.rng({seed + 50})."
                   f"permutation({pool})[:{tokens}] (distinct, shuffled); caches and latents random")
    for i, (batch, median, sigma, what) in enumerate(FRESH):
        seed = 700 + i
        lens = core.seq_lens(core.rng(seed), batch, median, low=16, high=8192, sigma=sigma)
        ptr = core.indptr(lens)
        total = int(lens.sum())
        for tp, heads in HEADS.items():
            yield Spec(f"mla_ragged_prefill_causal_h{heads}_qk192_vo128", f"b{batch}_q{_k(median)}",
                       {"total_q": total, "total_kv": total, "batch_size": batch, "len_indptr": batch + 1},
                       {"q": "random", "k": "random", "v": "random", "qo_indptr": ptr, "kv_indptr": ptr,
                        "sm_scale": SM_SCALE}, seed,
                       f"prefill, {what}: lens = core.seq_lens(core.rng({seed}), {batch}, {median}, low=16, high=8192, "
                       f"sigma={sigma}) (total {total}); qo_indptr = kv_indptr = core.indptr(lens) (no cached prefix); "
                       "sm_scale = DeepSeek-V3's 192^-0.5 * mscale^2; q, k, v random")
            yield Spec(f"concat_mla_k_h{heads}_nope128_rope64", f"b{batch}_q{_k(median)}", {"num_tokens": total},
                       {"k_nope": "random", "k_pe": "random"}, seed,
                       f"prefill, {what}: the {total} tokens of lens = core.seq_lens(core.rng({seed}), {batch}, {median}, "
                       f"low=16, high=8192, sigma={sigma}); k_nope, k_pe random")


def workloads() -> Iterator[Spec]:
    yield from dense()
    yield from mla()
    yield from mla("h8_ckv512_kpe64")
    yield from routing()
    yield from attention_side()
