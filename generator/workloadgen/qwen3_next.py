"""Workloads for the Qwen3-Next-80B-A3B definitions (TP4 on four H100, vLLM, bfloat16).

Per rank the bfloat16 weights take 39.93 GB of an 80 GB H100, which at 0.9 utilisation leaves about 30 GB
for the caches. Two kinds of cache:
- the 12 gated-attention layers' paged KV cache: 12 x 2 x 1 KV head x 256 x 2 bytes = 12 KiB per token, so
  the decode batches below (at most 512k context tokens in a step) take at most 6.4 GB;
- the 36 gated delta net layers' fixed state per sequence, in slots: the recurrent state 8 x 128 x 128
  float32 (512 KiB) and the conv state 2048 x 3 bfloat16 (12 KiB) per layer, 19.5 MB per sequence with
  vLLM's page padding: 5 GB at 256 sequences (vLLM's default max_num_seqs).
Serving situations:
- decode steps of 1 to 256 sequences, one token each: the GDN kernels read and write one slot per sequence
  (slot ids drawn as mamba2.slots does: distinct ids from a pool 25% larger than the batch); the attention
  reads contexts log-normal around a median from 2k to 32k (core.seq_lens), paged by core.paged_kv;
- prefill steps of 128 to 8192 new tokens (vLLM's max_num_batched_tokens), one long prompt, a chunk of a
  longer one continuing from its cached state and KV prefix, or several short prompts;
- MoE steps: every token picks 10 distinct experts of 512 with a skewed popularity (qwen.routed_counts), so
  the expert GEMMs have tokens x 10 rows in up to 512 segments;
- token counts of the GEMMs and element-wise kernels: decode batches 1-256, prefill chunks 512-8192.
Index inputs (slot ids, cu_seqlens, page tables, expert segment offsets, has_initial_state) are arrays from
seeded generators, stored as blobs; float tensors are drawn by the bench from the seed, with the
distributions the definitions name.
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from . import core
from .families import PREFILL_TEXT, i32, paged_decode, paged_prefill, rope_steps, rope_what, slots
from .moe import grouped_gemms
from .scenarios import DECODE_LONG_CONTEXT as DECODE_TP4
from .scenarios import PREFILL_STEPS_MULTITURN as PREFILL
from .spec import Spec

MODEL = "Qwen3-Next-80B-A3B TP4"
GDN_SCALE = 1.0 / math.sqrt(128)  # linear_key_head_dim ** -0.5
ATTN_SCALE = 1.0 / math.sqrt(256)  # head_dim ** -0.5
NUM_EXPERTS = 512
TOP_K = 10

DECODE_BATCHES = [(1, "one request"), (8, "8 requests"), (32, "32 requests"), (64, "64 requests"),
                  (128, "128 requests"), (256, "256 requests (vLLM's default max_num_seqs)")]
TOKENS = [(1, "decode, batch 1"), (8, "decode, batch 8"), (32, "decode, batch 32"), (64, "decode, batch 64"),
          (128, "decode, batch 128"), (256, "decode, batch 256 (a full batch)"),
          (512, "prefill chunk of 512 tokens"), (2048, "prefill chunk of 2048 tokens"),
          (8192, "prefill chunk of 8192 tokens (vLLM's max_num_batched_tokens)")]
# MoE steps: tokens in the step and the popularity skew of the layer (qwen.routed_counts).
MOE = [(1, 0.6, "decode, batch 1"), (8, 0.6, "decode, batch 8"), (64, 1.0, "decode, batch 64, a strongly "
       "imbalanced layer"), (256, 0.6, "decode, batch 256 (a full batch)"), (2048, 0.6, "prefill chunk of 2048 "
       "tokens"), (8192, 0.6, "prefill chunk of 8192 tokens (vLLM's max_num_batched_tokens)")]
GEMMS = [("gemm_n3072_k2048", "in_proj_qkvz (36 GDN layers)"), ("gemm_n16_k2048", "in_proj_ba (36 GDN layers)"),
         ("gemm_n2560_k2048", "qkv_proj with the output gate (12 attention layers)"),
         ("gemm_n512_k2048", "MoE router gate"), ("gemm_n1_k2048", "shared expert gate"),
         ("gemm_n256_k2048", "shared expert gate_up_proj"), ("gemm_n2048_k128", "shared expert down_proj")]


def gdn_decode_workloads() -> Iterator[Spec]:
    for seed, (b, what) in enumerate(DECODE_BATCHES):
        g = core.rng(seed)
        ids, pool = slots(g, b)
        about = (f"{MODEL} decode, {what}: one token each; g = core.rng({seed}); slot ids, pool = "
                 f"mamba2.slots(g, {b}) (distinct ids from a pool of {pool})")
        yield Spec("gdn_decode_qk4_v8_d128", f"decode_b{b}", {"batch_size": b, "num_slots": pool},
                   {"q": "random", "k": "random", "v": "random", "state_pool": "random", "state_indices": i32(ids),
                    "A_log": "random", "a": "random", "dt_bias": "random", "b": "random", "scale": GDN_SCALE},
                   seed, about)
        yield Spec("causal_conv1d_update_c2048_k4", f"decode_b{b}", {"batch_size": b, "num_slots": pool},
                   {"x": "random", "conv_state": "random", "weight": "random", "conv_state_indices": i32(ids)},
                   seed, about)


def gdn_prefill_workloads() -> Iterator[Spec]:
    for seed, s in enumerate(PREFILL):
        g = core.rng(seed)
        q, pre = s.lens(g)
        ids, pool = slots(g, s.batch)
        total = int(q.sum())
        continuing = pre > 0  # a sequence behind a cached prefix continues from its cached state
        about = (f"{MODEL} prefill, {s.what}: {total} new tokens; {s.call(seed)}; slot ids, pool = "
                 f"mamba2.slots(g, {s.batch}); sequences with a prefix continue from their cached state")
        indptr = i32(core.indptr(q))
        yield Spec("gdn_prefill_qk4_v8_d128", s.key,
                   {"total_tokens": total, "num_seqs": s.batch, "len_cu_seqlens": s.batch + 1},
                   {"q": "random", "k": "random", "v": "random", "g": "random", "beta": "random",
                    "initial_state": "random", "cu_seqlens": indptr, "scale": GDN_SCALE}, seed,
                   f"{about} (initial_state is random for every sequence: the kernel reads it either way, vLLM "
                   f"zeroes the rows of fresh prompts before the call)")
        yield Spec("gdn_post_conv_prep_qk4_v8_d128", s.key, {"num_tokens": total},
                   {"mixed_qkv": "random", "a": "random", "b": "random", "A_log": "random", "dt_bias": "random"},
                   seed, about)
        yield Spec("causal_conv1d_fwd_c2048_k4", s.key,
                   {"num_tokens": total, "batch_size": s.batch, "len_query_start_loc": s.batch + 1, "num_slots": pool},
                   {"x": "random", "weight": "random", "conv_states": "random", "query_start_loc": indptr,
                    "cache_indices": i32(ids), "has_initial_state": continuing}, seed, about)


def token_workloads() -> Iterator[Spec]:
    """Kernels whose only var axis is the token count."""
    for seed, (m, what) in enumerate(TOKENS):
        about = f"{MODEL}, {what}: {m} tokens"
        yield Spec("gemma_rmsnorm_h2048", f"t{m}", {"batch_size": m}, {"hidden_states": "random", "weight": "random"},
                   seed, f"{about}; zero-centred input_layernorm of decoder layer 0")
        yield Spec("gemma_fused_add_rmsnorm_h2048", f"t{m}", {"batch_size": m},
                   {"hidden_states": "random", "residual": "random", "weight": "random"}, seed,
                   f"{about}; residual add + zero-centred norm before the mixer / MoE / lm_head")
        yield Spec("rmsnorm_gated_silu_h8_d128", f"t{m}", {"num_tokens": m},
                   {"x": "random", "z": "random", "weight": "random"}, seed,
                   f"{about}; gated RMSNorm of the 8 value heads of each GDN layer")
        yield Spec("sigmoid_gate_mul_h4_d256", f"t{m}", {"num_tokens": m}, {"attn_output": "random", "gate": "random"},
                   seed, f"{about}; output gate of the 4 attention heads of each gated attention layer")
        yield Spec("shared_expert_sigmoid_gate_add_h2048", f"t{m}", {"num_tokens": m},
                   {"routed_output": "random", "shared_output": "random", "shared_gate_logit": "random"}, seed,
                   f"{about}; shared expert gate and the add to the routed experts' sum")
        yield Spec("moe_routing_softmax_topk10_e512", f"t{m}", {"num_tokens": m}, {"router_logits": "random"}, seed,
                   f"{about}; router softmax + top-10 + renormalise over 512 experts (skewed_logits)")
        for name, role in GEMMS:
            yield Spec(name, f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed, f"{about}; {role}")


def moe_workloads() -> Iterator[Spec]:
    gemms = (("grouped_gemm_e512_n256_k2048", "expert gate_up projection (a quarter of each expert)"),
             ("grouped_gemm_e512_n2048_k128", "expert down projection (a quarter of each expert)"))
    for seed, (tokens, alpha, what) in enumerate(MOE):
        yield from grouped_gemms(gemms, tokens, alpha, what, seed, NUM_EXPERTS, TOP_K, fields={"model": MODEL})


def attention_workloads() -> Iterator[Spec]:
    for seed, s in enumerate(DECODE_TP4):
        yield paged_decode("gqa_paged_decode_h4_kv1_d256_ps16", s, seed, 16, ATTN_SCALE,
                           "{model} decode, {what} ({kv_tokens} KV tokens, 12 KiB each per rank): {call}; "
                           "kv = core.paged_kv(g, lens, 16) (pool 25% larger than used, pages in random order)",
                           {"model": MODEL})
    for seed, s in enumerate(PREFILL):
        yield paged_prefill("gqa_paged_prefill_causal_h4_kv1_d256_ps16", s, seed, 16, ATTN_SCALE, PREFILL_TEXT,
                            {"model": MODEL}, q_first=True)


def rope_workloads() -> Iterator[Spec]:
    """Positions of decode steps (each sequence's new token) and prefill steps (the new tokens after any prefix)."""
    for s, positions, seed in rope_steps((DECODE_TP4[0], DECODE_TP4[2], DECODE_TP4[4]), PREFILL):
        yield rope_spec(s.key, positions, seed, rope_what(s, seed))


def rope_spec(key: str, positions: np.ndarray, seed: int, what: str) -> Spec:
    return Spec("qk_gemma_rmsnorm_partial_rope_gate_h4_kv1_d256_r64", key,
                {"num_tokens": len(positions), "max_position": int(positions.max()) + 1},
                {"q_gate": "random", "k": "random", "q_weight": "random", "k_weight": "random",
                 "cos_sin_cache": "random", "positions": positions.astype(np.int64)},
                seed, f"{MODEL} {what}; cos_sin_cache from the rope configuration (rope_cos_sin, theta 1e7, 64 "
                      f"rotary dims), max_position = the largest position + 1")


def workloads() -> Iterator[Spec]:
    yield from gdn_decode_workloads()
    yield from gdn_prefill_workloads()
    yield from token_workloads()
    yield from moe_workloads()
    yield from attention_workloads()
    yield from rope_workloads()
