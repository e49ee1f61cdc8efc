"""Workloads for the Qwen3-30B-A3B definitions (TP1, plus the attention at TP4; bfloat16).

Serving situations, each written once and shared by every kernel it drives:
- decode steps: `batch` sequences decode one token each, contexts log-normal around a median
  (core.seq_lens), from short chats to 32k-token documents, KV cache paged by a fragmented allocator
  (core.paged_kv). At TP1 the bfloat16 weights take 61.06 GB of the 0.9 x 80 GB vLLM may use, leaving
  room for about 111k KV tokens (48 layers x 4 KV heads x 128 x 2 x 2 bytes = 96 KiB per token), so
  the TP1 batches keep batch x context below that (validate checks it); at TP4 each rank holds one KV head and a quarter of the
  weights, so longer contexts at large batches fit;
- prefill steps: chunks of 128 to 8192 new tokens (vLLM's default max_num_batched_tokens), for one long
  prompt (chunked prefill behind a cached prefix) or several short prompts, some with prefix-cache hits;
- MoE steps: every token picks 8 distinct experts of 128 with a skewed popularity (moe.routed_counts),
  tokens sorted by expert, segment offsets m_indptr; the rows of the expert GEMMs are tokens x 8;
- GEMM M and the token count of the elementwise kernels: decode batches 1-256, prefill chunks 512-8192.
Index inputs (page tables, indptr, positions, expert segment offsets) are arrays from seeded generators,
stored as blobs; float tensors are "random" (the bench draws them from the seed as the definition says:
router logits skewed like a trained router's, the RoPE cos/sin cache from rope_theta).
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from . import core
from .families import PREFILL_TEXT, i32, paged_decode, paged_prefill, rope_steps, rope_what
from .moe import grouped_gemms
from .scenarios import DECODE_LONG_CONTEXT as DECODE_TP4
from .scenarios import LM_HEAD_ROWS as LM_HEAD
from .scenarios import MOE_STEPS as MOE
from .scenarios import PREFILL_STEPS_MULTITURN as PREFILL
from .scenarios import Decode, Prefill
from .spec import Spec

MODEL = "Qwen3-30B-A3B"
SM_SCALE = 1.0 / math.sqrt(128)  # 1 / sqrt(head_dim)
MAX_POSITION = 40960  # rows of the cos/sin cache serving allocates (max_position_embeddings)
NUM_EXPERTS = 128
TOP_K = 8


# --------------------------------------------------------------------------------------------------
# Serving situations
# --------------------------------------------------------------------------------------------------



DECODE_PS16 = [
    Decode(1, 32768, 0.0, "one request decoding at a 32k context (long-document chat)"),
    Decode(4, 16384, 0.5, "4 long-context requests around 16k"),
    Decode(16, 4096, 0.5, "16 requests around 4k context"),
    Decode(64, 1024, 0.5, "64 requests around 1k context"),
    Decode(128, 512, 0.5, "128 short chats around 512 tokens of context"),
    Decode(256, 300, 0.5, "256 short chats around 300 tokens of context (a full batch)"),
]
DECODE_PS1 = [
    Decode(1, 8192, 0.0, "one request decoding at an 8k context"),
    Decode(8, 2048, 0.5, "8 requests around 2k context"),
    Decode(32, 1024, 0.5, "32 requests around 1k context"),
    Decode(64, 512, 0.5, "64 chats around 512 tokens of context"),
    Decode(256, 300, 0.5, "256 short chats around 300 tokens of context (a full batch)"),
]
# Ragged prefill attends over the new tokens' own keys/values only (SGLang runs the cached prefix with the
# paged kernel and merges the two by lse), so its workloads are fresh prompts: qo_len == kv_len.
RAGGED = [
    Prefill(1, 128, 0, 0.0, "one short prompt of 128 tokens"),
    Prefill(1, 2048, 0, 0.0, "one 2048-token prompt"),
    Prefill(1, 8192, 0, 0.0, "the first 8192-token chunk of a long prompt"),
    Prefill(4, 1024, 0, 0.5, "4 prompts of ~1k tokens"),
    Prefill(16, 256, 0, 0.5, "a burst of 16 short prompts of ~256 tokens"),
    Prefill(64, 64, 0, 0.5, "64 very short prompts of ~64 tokens (many small sequences)"),
]

# Token counts (GEMM M, rows of the elementwise kernels): decode batches and prefill chunks.
TOKENS = [(1, "decode, batch 1"), (8, "decode, batch 8"), (32, "decode, batch 32"), (64, "decode, batch 64"),
          (128, "decode, batch 128"), (256, "decode, batch 256 (a full batch)"),
          (512, "prefill chunk of 512 tokens"), (2048, "prefill chunk of 2048 tokens"),
          (8192, "prefill chunk of 8192 tokens (vLLM's max_num_batched_tokens)")]


# --------------------------------------------------------------------------------------------------
# Per-kernel workloads
# --------------------------------------------------------------------------------------------------

def token_workloads() -> Iterator[Spec]:
    """Kernels whose only var axis is the token count."""
    for seed, (m, what) in enumerate(TOKENS):
        about = f"{MODEL} TP1, {what}: {m} tokens"
        yield Spec("rmsnorm_h2048", f"t{m}", {"batch_size": m}, {"hidden_states": "random", "weight": "random"},
                   seed, f"{about}; input_layernorm of decoder layer 0")
        yield Spec("fused_add_rmsnorm_h2048", f"t{m}", {"batch_size": m},
                   {"hidden_states": "random", "residual": "random", "weight": "random"}, seed,
                   f"{about}; residual add + norm before attention / MoE / lm_head")
        yield Spec("gemm_n5120_k2048", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed, f"{about}; qkv_proj")
        yield Spec("gemm_n2048_k4096", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed, f"{about}; o_proj")
        yield Spec("gemm_n128_k2048", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed,
                   f"{about}; MoE router gate")
        yield Spec("moe_routing_softmax_topk8_e128", f"t{m}", {"num_tokens": m}, {"router_logits": "random"}, seed,
                   f"{about}; router softmax + top-8 + renormalise. The logits are skewed like a trained router's "
                   f"(the definition's skewed_logits, alpha 0.6: the popularity model of the grouped-GEMM workloads)")
        yield Spec("silu_and_mul_i768", f"t{m * TOP_K}", {"num_tokens": m * TOP_K}, {"input": "random"}, seed,
                   f"{about} x 8 routed experts = {m * TOP_K} rows; SwiGLU between the expert gate_up and down GEMMs")
    for seed, (m, what) in enumerate(LM_HEAD):
        yield Spec("gemm_n151936_k2048", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed,
                   f"{MODEL} TP1 lm_head, {what}: {m} rows")


QK_NORM = [(1, 32, "decode batch 1, q_norm (32 heads, TP1)"), (1, 4, "decode batch 1, k_norm (4 heads, TP1)"),
           (64, 32, "decode batch 64, q_norm"), (64, 4, "decode batch 64, k_norm"),
           (256, 32, "decode batch 256, q_norm"), (256, 4, "decode batch 256, k_norm"),
           (2048, 32, "prefill chunk of 2048 tokens, q_norm"), (2048, 4, "prefill chunk of 2048 tokens, k_norm"),
           (8192, 32, "prefill chunk of 8192 tokens, q_norm"), (8192, 4, "prefill chunk of 8192 tokens, k_norm"),
           (256, 8, "decode batch 256 at TP4, q_norm (8 heads per rank)"),
           (8192, 1, "prefill chunk of 8192 tokens at TP4, k_norm (1 head per rank)")]


def qk_norm_workloads() -> Iterator[Spec]:
    for seed, (t, h, what) in enumerate(QK_NORM):
        yield Spec("qk_rmsnorm_d128", f"t{t}_h{h}", {"num_tokens": t, "num_heads": h},
                   {"input": "random", "weight": "random"}, seed, f"{MODEL}, {what}")


def moe_workloads() -> Iterator[Spec]:
    gemms = (("grouped_gemm_e128_n1536_k2048", "expert gate_up projection"),
             ("grouped_gemm_e128_n2048_k768", "expert down projection"))
    for seed, (tokens, alpha, what) in enumerate(MOE):
        yield from grouped_gemms(gemms, tokens, alpha, what, seed, NUM_EXPERTS, TOP_K, fields={"model": f"{MODEL} TP1"})


def rope_workloads() -> Iterator[Spec]:
    for s, positions, seed in rope_steps([DECODE_PS16[0], DECODE_PS16[3], DECODE_PS16[5]], PREFILL):
        yield rope_spec(s.key, positions, seed, rope_what(s, seed))


def rope_spec(key: str, positions: np.ndarray, seed: int, what: str) -> Spec:
    return Spec("rope_neox_h32_kv4_d128", key, {"num_tokens": len(positions), "max_position": MAX_POSITION},
                {"positions": positions.astype(np.int64), "q": "random", "k": "random", "cos_sin_cache": "random"},
                seed, f"{MODEL} TP1 {what}; cos_sin_cache: {MAX_POSITION} rows (max_position_embeddings) computed "
                      f"from rope_theta 1e6 (the definition's rope_cos_sin)")


def decode_workloads() -> Iterator[Spec]:
    for name, ps, situations, tp in (("gqa_paged_decode_h32_kv4_d128_ps16", 16, DECODE_PS16, "TP1"),
                                     ("gqa_paged_decode_h32_kv4_d128_ps1", 1, DECODE_PS1, "TP1"),
                                     ("gqa_paged_decode_h8_kv1_d128_ps16", 16, DECODE_TP4, "TP4")):
        for seed, s in enumerate(situations):
            yield paged_decode(name, s, seed, ps, SM_SCALE, "{model} {tp} decode, {what} ({kv_tokens} KV tokens): "
                               "{call}; kv = core.paged_kv(g, lens, {page_size}) (pool 25% larger than used, pages in "
                               "random order)", {"model": MODEL, "tp": tp})


def paged_prefill_workloads() -> Iterator[Spec]:
    for name, tp in (("gqa_paged_prefill_causal_h32_kv4_d128_ps16", "TP1"),
                     ("gqa_paged_prefill_causal_h8_kv1_d128_ps16", "TP4")):
        for seed, s in enumerate(PREFILL):
            yield paged_prefill(name, s, seed, 16, SM_SCALE, PREFILL_TEXT, {"model": f"{MODEL} {tp}"}, q_first=True)


def ragged_workloads() -> Iterator[Spec]:
    for seed, s in enumerate(RAGGED):
        g = core.rng(seed)
        q, _ = s.lens(g)
        indptr = i32(core.indptr(q))
        total = int(q.sum())
        yield Spec(
            "gqa_ragged_prefill_causal_h32_kv4_d128", s.key,
            {"total_q": total, "total_kv": total, "batch_size": s.batch, "len_indptr": s.batch + 1},
            {"q": "random", "k": "random", "v": "random", "qo_indptr": indptr, "kv_indptr": indptr,
             "sm_scale": SM_SCALE},
            seed, f"{MODEL} TP1 prefill of fresh prompts (keys/values of the new tokens only, as SGLang's ragged "
                  f"path), {s.what} ({total} tokens): {s.call(seed)}; qo_indptr = kv_indptr = core.indptr(q_lens)")


def workloads() -> Iterator[Spec]:
    yield from token_workloads()
    yield from qk_norm_workloads()
    yield from moe_workloads()
    yield from rope_workloads()
    yield from decode_workloads()
    yield from paged_prefill_workloads()
    yield from ragged_workloads()
