"""Spec builders for DeepSeek-V3-style multi-head latent attention and its biased-sigmoid MoE routing, written
once: absorbed MLA decode and prefill on the paged latent cache, the attention side of a step (RoPE, the
absorption bmm's, the latent cache store, the MHA prefill path of fresh prompts), and the noaux_tc routing
with a skewed e_score_correction_bias (alone, and inside the fused FP8 MoE of one EP rank).

Draws: a decode step (scenarios.Decode's batch, median, sigma, what) takes lens = core.seq_lens(core.rng(seed),
batch, median, low=64, high=32768, sigma); a prefill step (scenarios.Prefill) q_lens (low=16, high=8192) then
cached prefixes (low=1, high=32768) from the same rng. Each builder writes its description.

Routing skew: the router logits are random (the bench draws them), and e_score_correction_bias is a seeded
float32 blob from moe.skewed_bias; load_text measures the load it makes (route_counts on 2048 simulated
standard-normal logit rows) and writes it into the description.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import core
from .dsa import k_label
from .moe import route_ids, skewed_bias
from .scenarios import Decode, Prefill
from .spec import Spec

SM_SCALE_TEXT = "sm_scale = DeepSeek-V3's 192^-0.5 * mscale^2"


def route_counts(bias: np.ndarray, seed: int, tokens: int = 2048) -> np.ndarray:
    """Picks per expert for `tokens` simulated standard-normal logit rows (seeded)."""
    logits = core.rng(seed).standard_normal((tokens, len(bias)))
    return np.bincount(route_ids(logits, bias.astype(np.float64)).ravel(), minlength=len(bias))


def load_text(bias: np.ndarray, seed: int, offset: Optional[int] = None, local_experts: int = 32) -> str:
    counts = route_counts(bias, seed + 1_000_000)
    text = (f"simulated with 2048 standard-normal logit rows (route_counts, seed {seed + 1_000_000}): hottest expert "
            f"{counts.max() / counts.mean():.1f}x the mean load, coldest {counts.min() / counts.mean():.2f}x, "
            f"top-8 experts take {np.sort(counts)[::-1][:8].sum() / counts.sum():.0%} of the picks")
    if offset is not None:
        local = counts[offset:offset + local_experts]
        text += (f"; this rank's experts {offset}..{offset + local_experts - 1} get {local.sum() / counts.sum():.1%} "
                 f"of the picks (uniform: 12.5%), from {local.min()} to {local.max()} per expert")
    return text


def step_key(s) -> str:
    if isinstance(s, Decode):
        return f"b{s.batch}_ctx{k_label(s.median)}"
    return f"b{s.batch}_q{k_label(s.median)}_prefix{k_label(s.prefix)}"


def prefill_lens(s: Prefill, seed: int):
    """(rng, q_lens, prefix, the prefix draw as descriptions write it)."""
    g = core.rng(seed)
    q_lens = core.seq_lens(g, s.batch, s.median, low=16, high=8192, sigma=s.sigma)
    prefix = (core.seq_lens(g, s.batch, s.prefix, low=1, high=32768, sigma=s.sigma) if s.prefix
              else np.zeros(s.batch, dtype=np.int64))
    return g, q_lens, prefix


def paged(name: str, s, seed: int, page: int, sm_scale: float, lead: str = "", scale_text: str = SM_SCALE_TEXT,
          raw_keys: bool = False, extra: Optional[dict] = None) -> Spec:
    """Absorbed MLA on the paged latent cache: a decode batch, or a prefill (causal) behind cached prefixes.
    lead: words before the step's stage in the description (e.g. the model); scale_text: how sm_scale was made;
    raw_keys: the key writes the median context as a number (b16_ctx8192, not b16_ctx8k); extra: more inputs of
    the definition (an FP8 cache's k_scale), named with their values at the end of the description."""
    latent = {"q_nope": "random", "q_pe": "random", "ckv_cache": "random", "kpe_cache": "random", **(extra or {})}
    if extra:
        scale_text += "; " + ", ".join(f"{k} = {v!r}" for k, v in extra.items())
    if isinstance(s, Decode):
        g = core.rng(seed)
        lens = core.seq_lens(g, s.batch, s.median, low=64, high=32768, sigma=s.sigma)
        layout = core.paged_kv(g, lens, page)
        key = f"b{s.batch}_ctx{s.median}" if raw_keys else step_key(s)
        return Spec(name, key, {"batch_size": s.batch, "num_pages": layout["num_pages"],
                                        "len_indptr": s.batch + 1, "num_kv_indices": len(layout["kv_indices"])},
                    {**latent, "kv_indptr": layout["kv_indptr"], "kv_indices": layout["kv_indices"],
                     "kv_last_page_len": layout["kv_last_page_len"], "sm_scale": sm_scale}, seed,
                    f"{lead}decode, {s.what}: lens = core.seq_lens(core.rng({seed}), {s.batch}, {s.median}, low=64, "
                    f"high=32768, sigma={s.sigma}) (total {int(lens.sum())} tokens), layout = core.paged_kv(same rng, "
                    f"lens, {page}) (25% free pages, shuffled); {scale_text}", stage="decode", num_tokens=s.batch)
    g, q_lens, prefix = prefill_lens(s, seed)
    layout = core.paged_kv(g, q_lens + prefix, page)
    total = int(q_lens.sum())
    pre = (f"prefix = core.seq_lens(same rng, {s.batch}, {s.prefix}, low=1, high=32768, sigma={s.sigma})"
           if s.prefix else "no cached prefix")
    return Spec(name, step_key(s), {"total_q": total, "batch_size": s.batch, "num_pages": layout["num_pages"],
                                    "len_indptr": s.batch + 1, "num_kv_indices": len(layout["kv_indices"])},
                {**latent, "qo_indptr": core.indptr(q_lens), "kv_indptr": layout["kv_indptr"],
                 "kv_indices": layout["kv_indices"], "kv_last_page_len": layout["kv_last_page_len"],
                 "sm_scale": sm_scale}, seed,
                f"prefill, {s.what}: q_lens = core.seq_lens(core.rng({seed}), {s.batch}, {s.median}, low=16, "
                f"high=8192, sigma={s.sigma}) (total_q {total}), {pre}; layout = core.paged_kv(same rng, q_lens + "
                f"prefix, {page}); qo_indptr = core.indptr(q_lens)", stage="prefill", num_tokens=total)


def positions(s, seed: int) -> tuple[np.ndarray, str, str]:
    """(positions of the step's tokens, how they were made, key): a decode token sits at its context length - 1;
    a prefill token at prefix + 0 .. q_len - 1 of its request."""
    if isinstance(s, Decode):
        lens = core.seq_lens(core.rng(seed), s.batch, s.median, low=64, high=32768, sigma=s.sigma)
        return lens - 1, (f"decode, {s.what}: lens = core.seq_lens(core.rng({seed}), {s.batch}, {s.median}, low=64, "
                          f"high=32768, sigma={s.sigma}), positions = lens - 1"), f"decode_{step_key(s)}"
    _, q_lens, prefix = prefill_lens(s, seed)
    pos = np.concatenate([np.arange(p, p + q) for p, q in zip(prefix, q_lens)])
    return pos, (f"prefill, {s.what}: q_lens = core.seq_lens(core.rng({seed}), {s.batch}, {s.median}, low=16, "
                 f"high=8192, sigma={s.sigma}), prefix = " + (f"core.seq_lens(same rng, {s.batch}, {s.prefix}, low=1, "
                 f"high=32768, sigma={s.sigma})" if s.prefix else "0") +
                 ", positions = prefix + arange(q_len) per request"), f"prefill_{step_key(s)}"


def _stage(s) -> str:
    return "decode" if isinstance(s, Decode) else "prefill"


def rope(name: str, s, seed: int) -> Spec:
    """DeepSeek's YaRN RoPE at the step's positions; max_position the largest + 1."""
    pos, how, key = positions(s, seed)
    rows = int(pos.max()) + 1
    return Spec(name, key, {"num_tokens": len(pos), "max_position": rows},
                {"positions": pos, "q_pe": "random", "k_pe": "random", "cos_sin_cache": "random"}, seed,
                f"{how}; {len(pos)} tokens; q_pe, k_pe random; cos_sin_cache made from the YaRN rope configuration "
                f"(rope_cos_sin), {rows} rows", stage=_stage(s), num_tokens=len(pos))


def rope_compact(name: str, s, seed: int, lead: str = "", owner: str = "the model", prefix_high: int = 16384) -> Spec:
    """YaRN RoPE at the step's positions, described compactly (the draws' sigma left out): decode lens with
    low=64, high=32768; prefill q_lens with low=16, high=8192, then prefixes (when s.prefix) with low=1,
    high=prefix_high, sigma 0.5. Key b<batch>_decode<median> or b<batch>_prefill<median>; owner: whose rope
    configuration the cos/sin cache is made from."""
    g = core.rng(seed)
    if isinstance(s, Decode):  # a decode token sits at its context length - 1
        lens = core.seq_lens(g, s.batch, s.median, low=64, high=32768, sigma=s.sigma)
        pos = lens - 1
        call = (f"lens = core.seq_lens(core.rng({seed}), {s.batch}, {s.median}, low=64, high=32768); "
                f"positions = lens - 1")
    else:  # a prefill token at prefix + 0 .. q_len - 1 of its request
        q = core.seq_lens(g, s.batch, s.median, low=16, high=8192, sigma=s.sigma)
        pre = (core.seq_lens(g, s.batch, s.prefix, low=1, high=prefix_high, sigma=0.5) if s.prefix
               else np.zeros(s.batch, dtype=np.int64))
        pos = np.concatenate([np.arange(p, p + n) for p, n in zip(pre, q)])
        # "{batch}" stays unformatted: the committed descriptions were written so
        call = (f"q_lens = core.seq_lens(core.rng({seed}), {s.batch}, {s.median}, low=16, high=8192), prefix = "
                + (f"core.seq_lens(same rng, {{batch}}, {s.prefix}, low=1, high={prefix_high})" if s.prefix else "0")
                + "; positions = prefix + arange(q_len) per request")
    rows = int(pos.max()) + 1
    return Spec(name, f"b{s.batch}_{_stage(s)}{s.median}", {"num_tokens": len(pos), "max_position": rows},
                {"positions": pos, "q_pe": "random", "k_pe": "random", "cos_sin_cache": "random"}, seed,
                f"{lead}{s.what}: {call}; {len(pos)} tokens; q_pe, k_pe random; cos_sin_cache made from {owner}'s "
                f"YaRN rope configuration (rope_cos_sin), {rows} rows", stage=_stage(s), num_tokens=len(pos))


def per_token(name: str, s, seed: int, inputs: dict) -> Spec:
    """A kernel over the step's tokens with random inputs (the absorption bmm's)."""
    pos, how, key = positions(s, seed)
    return Spec(name, key, {"num_tokens": len(pos)}, inputs, seed, f"{how}; {len(pos)} tokens; inputs random",
                stage=_stage(s), num_tokens=len(pos))


def cache_store(name: str, s, seed: int) -> Spec:
    """The step's latents stored at free slots of a page-size-1 pool holding the batch's contexts: a fragmented
    allocator's random slots, distinct, drawn with core.rng(seed + 50)."""
    pos, how, key = positions(s, seed)
    tokens = len(pos)
    g = core.rng(seed + 50)
    pool = max(int(np.ceil((pos.max() + 1) * 1.25)), 2 * tokens)
    loc = g.permutation(pool)[:tokens].astype(np.int64)
    return Spec(name, key, {"num_tokens": tokens, "num_pages": pool},
                {"ckv": "random", "kpe": "random", "cache_loc": loc, "ckv_cache": "random", "kpe_cache": "random"},
                seed, f"{how}; {tokens} tokens into a pool of {pool} slots: cache_loc = core.rng({seed + 50})."
                f"permutation({pool})[:{tokens}] (distinct, shuffled); caches and latents random",
                stage=_stage(s), num_tokens=tokens)


def _fresh(s: Prefill, seed: int, raw_keys: bool = False):
    lens = core.seq_lens(core.rng(seed), s.batch, s.median, low=16, high=8192, sigma=s.sigma)
    return lens, (f"lens = core.seq_lens(core.rng({seed}), {s.batch}, {s.median}, low=16, high=8192, "
                  f"sigma={s.sigma})"), f"b{s.batch}_q{s.median if raw_keys else k_label(s.median)}"


def ragged_prefill(name: str, s: Prefill, seed: int, sm_scale: float, lead: str = "",
                   scale_text: str = SM_SCALE_TEXT, raw_keys: bool = False) -> Spec:
    """The MHA path of fresh prompts (no cached prefix): qo_indptr = kv_indptr. lead, scale_text, raw_keys: as paged's."""
    lens, call, key = _fresh(s, seed, raw_keys)
    ptr, total = core.indptr(lens), int(lens.sum())
    return Spec(name, key, {"total_q": total, "total_kv": total, "batch_size": s.batch, "len_indptr": s.batch + 1},
                {"q": "random", "k": "random", "v": "random", "qo_indptr": ptr, "kv_indptr": ptr, "sm_scale": sm_scale},
                seed, f"{lead}prefill, {s.what}: {call} (total {total}); qo_indptr = kv_indptr = core.indptr(lens) (no "
                f"cached prefix); {scale_text}; q, k, v random", stage="prefill", num_tokens=total)


def concat_k(name: str, s: Prefill, seed: int, lead: str = "", raw_keys: bool = False) -> Spec:
    """k_nope and k_pe joined for the MHA path of fresh prompts."""
    lens, call, key = _fresh(s, seed, raw_keys)
    total = int(lens.sum())
    return Spec(name, key, {"num_tokens": total}, {"k_nope": "random", "k_pe": "random"}, seed,
                f"{lead}prefill, {s.what}: the {total} tokens of {call}; k_nope, k_pe random", stage="prefill",
                num_tokens=total)


def biased_routing(name: str, step: dict, seed: int, num_experts: int) -> Spec:
    """noaux_tc routing of `tokens` tokens with a skewed selection bias (spread)."""
    tokens, spread = int(step["tokens"]), float(step["spread"])
    bias = skewed_bias(core.rng(seed), num_experts, spread)
    return Spec(name, f"t{tokens}", {"num_tokens": tokens}, {"router_logits": "random", "e_score_correction_bias": bias},
                seed, f"{step['what']}; router_logits random; e_score_correction_bias = skewed_bias(core.rng({seed}), "
                f"{num_experts}, spread={spread}), {load_text(bias, seed)}", stage=step["stage"], num_tokens=tokens)


def fp8_moe_rank(name: str, step: dict, seed: int, num_experts: int, local_experts: int, ep: int,
                 scaling: float) -> Spec:
    """The fused FP8 block-scale MoE of one EP rank (local_expert_offset = local_experts * rank) with biased routing."""
    tokens, spread, rank = int(step["tokens"]), float(step["spread"]), int(step["rank"])
    bias = skewed_bias(core.rng(seed), num_experts, spread)
    offset = local_experts * rank
    inputs = {"routing_logits": "random", "routing_bias": bias, "hidden_states": "random",
              "hidden_states_scale": "random", "gemm1_weights": "random", "gemm1_weights_scale": "random",
              "gemm2_weights": "random", "gemm2_weights_scale": "random", "local_expert_offset": offset,
              "routed_scaling_factor": scaling}
    return Spec(name, f"t{tokens}_rank{rank}", {"seq_len": tokens}, inputs, seed,
                f"{step['what']}, EP rank {rank} of {ep} (local_expert_offset {offset}); routing_logits and all FP8 "
                f"tensors random; routing_bias = skewed_bias(core.rng({seed}), {num_experts}, spread={spread}), "
                f"{load_text(bias, seed, offset, local_experts)}; routed_scaling_factor {scaling}",
                stage=step["stage"], num_tokens=tokens)
