"""Workloads for the Mamba-2 definitions of NVIDIA-Nemotron-Nano-9B-v2 (TP1 on one H100, vLLM, bfloat16).

The mixer's kernels keep per-sequence state in a cache of slots (the SSM state, 128 x 80 x 128 values, and
the conv state, 12288 x 3 inputs, per Mamba layer), not per-token pages: a decode step reads and writes one
slot per sequence, a prefill step starts each sequence from its slot (zeros for a fresh prompt) and writes
the final state back. Serving situations:
- decode steps of 1 to 256 sequences (vLLM's default max_num_seqs is 256; the 27 layers' state takes
  27 x (128 * 80 * 128 + 12288 * 3) * 2 bytes = 72.8 MB per sequence, 18.6 GB at 256, beside 17.8 GB of
  weights on an 80 GB H100 at 0.9 utilisation);
- prefill steps of 128 to 8192 new tokens (vLLM's max_num_batched_tokens 8192), one long prompt, a chunk of
  a longer one continuing from its cached state, or several short prompts.
Slot ids are distinct ids drawn from a pool 25% larger than the batch (slots(g, batch)), the way a cache
that has served many requests hands them out; lengths come from the shared scenarios' seeded draws.
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from . import core
from .families import PAGED_DECODE_TEXT, PAGED_PREFILL_TEXT, i32, paged_decode, paged_prefill, slots, slots_of
from .families import kv_append as append_spec
from .scenarios import PREFILL_STEPS as PREFILL  # state continues behind a prefix
from .scenarios import Decode
from .spec import Spec

MODEL = "NVIDIA-Nemotron-Nano-9B-v2 TP1"
SM_SCALE = 1.0 / math.sqrt(128)  # 1 / sqrt(head_dim)
DECODE_BATCHES = [(1, "one request"), (8, "8 requests"), (32, "32 requests"), (64, "64 requests"),
                  (128, "128 requests"), (256, "256 requests (vLLM's default max_num_seqs)")]
TOKENS = [(m, f"decode batch {m}") for m, _ in DECODE_BATCHES] + \
         [(512, "prefill chunk of 512 tokens"), (2048, "prefill chunk of 2048 tokens"),
          (8192, "prefill chunk of 8192 tokens (max_num_batched_tokens)")]


def decode_workloads() -> Iterator[Spec]:
    for seed, (b, what) in enumerate(DECODE_BATCHES):
        g = core.rng(seed)
        ids, pool = slots(g, b)
        about = (f"{MODEL} decode, {what}: one token each; g = core.rng({seed}); slot ids, pool = slots(g, {b}) "
                 f"(distinct ids from a pool of {pool})")
        yield Spec("mamba_selective_state_update_h128_d80_s128_ng8", f"decode_b{b}", {"batch_size": b, "num_slots": pool},
                   {"state": "random", "x": "random", "dt": "random", "A": "random", "B": "random", "C": "random",
                    "D": "random", "dt_bias": "random", "state_batch_indices": i32(ids)}, seed, about)
        yield Spec("causal_conv1d_update_c12288_k4", f"decode_b{b}", {"batch_size": b, "num_slots": pool},
                   {"x": "random", "conv_state": "random", "weight": "random", "bias": "random",
                    "conv_state_indices": i32(ids)}, seed, about)


def prefill_workloads() -> Iterator[Spec]:
    for seed, s in enumerate(PREFILL):
        g = core.rng(seed)
        q, pre = s.lens(g)
        ids, pool = slots(g, s.batch)
        total = int(q.sum())
        continuing = pre > 0  # a sequence behind a cached prefix continues from its cached state
        about = (f"{MODEL} prefill, {s.what}: {total} new tokens; {s.call(seed)}; slot ids, pool = slots(g, {s.batch}); "
                 f"sequences with a prefix continue from their cached state")
        indptr = i32(core.indptr(q))
        yield Spec("mamba_ssd_chunk_scan_h128_d80_s128_ng8", s.key,
                   {"num_tokens": total, "batch_size": s.batch, "len_cu_seqlens": s.batch + 1},
                   {"x": "random", "dt": "random", "A": "random", "B": "random", "C": "random", "D": "random",
                    "dt_bias": "random", "cu_seqlens": indptr, "initial_states": "random"}, seed,
                   about + " (initial_states random: the bench draws them; a fresh prompt's would be zeros, "
                           "the same work)")
        yield Spec("causal_conv1d_fwd_c12288_k4", s.key,
                   {"num_tokens": total, "batch_size": s.batch, "len_query_start_loc": s.batch + 1, "num_slots": pool},
                   {"x": "random", "weight": "random", "bias": "random", "conv_states": "random",
                    "query_start_loc": indptr, "cache_indices": i32(ids),
                    "has_initial_state": continuing.astype(np.bool_)}, seed, about)


GEMMS = ((22656, 4480, "Mamba-2 in_proj"), (4480, 10240, "Mamba-2 out_proj"), (15680, 4480, "MLP up_proj"),
         (4480, 15680, "MLP down_proj"), (7168, 4480, "attention qkv_proj"), (4480, 5120, "attention o_proj"))


def token_workloads() -> Iterator[Spec]:
    for seed, (m, what) in enumerate(TOKENS):
        about = f"{what}: {m} tokens ({MODEL})"
        yield Spec("mamba_gated_rmsnorm_h10240_ng8", f"t{m}", {"num_tokens": m},
                   {"x": "random", "z": "random", "weight": "random"}, seed,
                   f"{about}; the gated norm after the scan of each Mamba-2 layer")
        yield Spec("rmsnorm_h4480", f"t{m}", {"batch_size": m}, {"hidden_states": "random", "weight": "random"}, seed,
                   f"{about}; the norm of block 0")
        yield Spec("fused_add_rmsnorm_h4480", f"t{m}", {"batch_size": m},
                   {"hidden_states": "random", "residual": "random", "weight": "random"}, seed,
                   f"{about}; residual add + norm before every other block and the final norm")
        yield Spec("relu2_i15680", f"t{m}", {"num_tokens": m}, {"input": "random"}, seed,
                   f"{about}; squared ReLU between up_proj and down_proj")
        for n, k, what_gemm in GEMMS:
            yield Spec(f"gemm_n{n}_k{k}", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed, f"{about}; {what_gemm}")
    for seed, (b, what) in enumerate(DECODE_BATCHES):
        yield Spec("gemm_n131072_k4480", f"m{b}", {"M": b}, {"A": "random", "B": "random"}, seed,
                   f"{what}: logits of {b} sequences ({MODEL}); lm_head")


# Attention (4 layers): vLLM's hybrid page of 672 tokens; decode contexts like Llama's, the KV of 4 layers is small
# (16 KiB per token) beside the Mamba state, so these fit the H100 with room.
ATTN_DECODE = [
    Decode(1, 32768, 0.0, "one request decoding at a 32k context (long-document chat)"),
    Decode(16, 8192, 0.5, "16 requests around 8k context"),
    Decode(64, 4096, 0.5, "64 requests around 4k context"),
    Decode(128, 2048, 0.5, "128 requests around 2k context"),
    Decode(256, 1024, 0.5, "256 requests around 1k context (a full batch)"),
]
PAGE = 672


def attention_workloads() -> Iterator[Spec]:
    for seed, s in enumerate(ATTN_DECODE):
        g = core.rng(seed)
        lens = s.lens(g)
        kv = core.paged_kv(g, lens, PAGE)  # the same draw as paged_decode_spec's
        yield append_spec("paged_kv_append_kv8_d128_ps672", s.key, slots_of(kv, lens, np.ones_like(lens), PAGE),
                          kv["num_pages"], seed, f"{MODEL} decode, {s.what}: the new token of each sequence; {s.call(seed)}; "
                          f"kv = core.paged_kv(g, lens, {PAGE}); slot_mapping = common_kernels.slots_of(kv, lens, 1, {PAGE})")
        yield paged_decode("gqa_paged_decode_h40_kv8_d128_ps672", s, seed, PAGE, SM_SCALE, PAGED_DECODE_TEXT,
                           {"model": MODEL})
    for seed, s in enumerate(PREFILL):
        g = core.rng(seed)
        q, pre = s.lens(g)
        kv = core.paged_kv(g, q + pre, PAGE)  # the same draw as paged_prefill_spec's
        yield append_spec("paged_kv_append_kv8_d128_ps672", s.key, slots_of(kv, q + pre, q, PAGE), kv["num_pages"], seed,
                          f"{MODEL} prefill, {s.what}: the new tokens of each prompt; {s.call(seed)}; kv = core.paged_kv(g, "
                          f"prefix_lens + q_lens, {PAGE}); slot_mapping = common_kernels.slots_of(kv, lens, q_lens, {PAGE})")
        yield paged_prefill("gqa_paged_prefill_causal_h40_kv8_d128_ps672", s, seed, PAGE, SM_SCALE,
                            PAGED_PREFILL_TEXT, {"model": MODEL})


def workloads() -> Iterator[Spec]:
    yield from decode_workloads()
    yield from attention_workloads()
    yield from prefill_workloads()
    yield from token_workloads()
