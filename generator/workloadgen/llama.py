"""Workloads for the Llama-3.1-8B definitions (TP1, bfloat16), from the steps a server runs.

Serving situations, each written once and shared by every kernel it drives:
- decode steps: `batch` sequences decode one token each; their context lengths are log-normal around a
  median (core.seq_lens), from short chats (a few hundred tokens) to long documents (32k, the largest
  context here), with the KV cache paged by a fragmented allocator (core.paged_kv);
- prefill steps: chunks of 128 to 8192 new tokens (vLLM's default max_num_batched_tokens is 8192),
  for one long prompt (chunked prefill behind a prefix already in the cache) or several short prompts,
  some with prefix-cache hits;
- GEMM M and the token count of the elementwise kernels: decode batches 1-256, prefill chunks
  512-8192 tokens.
Index inputs (page tables, indptr, positions, per-row sampling parameters) are arrays from seeded
generators, stored as blobs; float tensors are "random" (the bench draws them from the seed, as the
definition's distribution says: peaked next-token probs, the RoPE cache from the llama3 configuration)
except top_p, whose values decide the work. One generator is added here: per_request (sampling settings per
request, drawn from a menu of common client choices).
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from . import core
from .spec import Spec
from .scenarios import Decode, Prefill

MODEL = "Llama-3.1-8B TP1"
SM_SCALE = 1.0 / math.sqrt(128)  # 1 / sqrt(head_dim)
VOCAB = 128256


# --------------------------------------------------------------------------------------------------
# Serving situations
# --------------------------------------------------------------------------------------------------



DECODE = [
    Decode(1, 32768, 0.0, "one request decoding at a 32k context (long-document chat)"),
    Decode(16, 4096, 0.5, "16 requests around 4k context"),
    Decode(64, 1024, 0.5, "64 requests around 1k context"),
    Decode(128, 512, 0.5, "128 short chats around 512 tokens of context"),
    Decode(256, 300, 0.5, "256 short chats around 300 tokens of context (a full batch)"),
]
DECODE_PS16 = [
    Decode(1, 32768, 0.0, "one request decoding at a 32k context (long-document chat)"),
    Decode(16, 8192, 0.5, "16 requests around 8k context"),
    # 20 x ~16k: 343,440 KV tokens x 128 KiB = 45 GB + 16 GB of weights fit 0.9 x 80 GB (32 x 16k: 89 GB did not).
    Decode(20, 16384, 0.5, "20 long-context requests around 16k"),
    Decode(64, 4096, 0.5, "64 requests around 4k context"),
    Decode(128, 2048, 0.5, "128 requests around 2k context"),
    Decode(256, 1024, 0.5, "256 requests around 1k context (a full batch)"),
]
PREFILL = [
    Prefill(1, 128, 0, 0.0, "one short prompt of 128 tokens"),
    Prefill(1, 2048, 0, 0.0, "one 2048-token prompt"),
    Prefill(1, 8192, 0, 0.0, "the first 8192-token chunk of a long prompt"),
    Prefill(1, 8192, 16384, 0.0, "the third 8192-token chunk of a 24k prompt (chunked prefill, 16k already cached)"),
    Prefill(4, 512, 1024, 0.5, "4 prompts of ~512 new tokens behind ~1k-token cached prefixes (prefix-cache hits)"),
    Prefill(16, 256, 0, 0.5, "a burst of 16 short prompts of ~256 tokens"),
]

# SGLang's ragged prefill attends the new tokens of prompts without a cached prefix to each other.
RAGGED = [
    Prefill(1, 128, 0, 0.0, "one short prompt of 128 tokens"),
    Prefill(1, 1024, 0, 0.0, "one 1024-token prompt"),
    Prefill(1, 8192, 0, 0.0, "one 8192-token prompt (a full extend batch)"),
    Prefill(4, 1024, 0, 0.5, "4 prompts of ~1k tokens"),
    Prefill(16, 256, 0, 0.5, "a burst of 16 short prompts of ~256 tokens"),
    Prefill(32, 128, 0, 0.5, "32 very short prompts of ~128 tokens"),
]

# Token counts (GEMM M, rows of the elementwise kernels): decode batches and prefill chunks.
TOKENS = [(1, "decode, batch 1"), (8, "decode, batch 8"), (32, "decode, batch 32"), (64, "decode, batch 64"),
          (128, "decode, batch 128"), (256, "decode, batch 256 (a full batch)"),
          (512, "prefill chunk of 512 tokens"), (2048, "prefill chunk of 2048 tokens"),
          (8192, "prefill chunk of 8192 tokens (vLLM's max_num_batched_tokens)")]


# LM head M: sequences that sample in the step (logits only at each request's last token).
LM_HEAD_M = [(1, "decode, batch 1"), (8, "decode, batch 8"), (32, "decode, batch 32"), (64, "decode, batch 64"),
             (128, "decode, batch 128"), (256, "decode, batch 256 (a full batch)")]

# Sampling: per-request settings clients commonly send, with how often a request carries each.
# vocab_size for top_k and 1.0 for top_p mean "not set" (the row is not filtered).
TOP_K_MENU = ((VOCAB, 0.4), (50, 0.2), (40, 0.15), (20, 0.15), (100, 0.1))
TOP_P_MENU = ((1.0, 0.3), (0.95, 0.25), (0.9, 0.25), (0.8, 0.1), (0.7, 0.1))
SAMPLING_BATCHES = [1, 8, 32, 64, 128, 256]


def i32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.int32)


def per_request(g: np.random.Generator, batch: int, menu) -> np.ndarray:
    """One setting per request, drawn from `menu` ((value, frequency), ...): a batch mixes requests
    whose clients chose different sampling parameters."""
    values = np.array([v for v, _ in menu])
    weights = np.array([w for _, w in menu], dtype=np.float64)
    return values[g.choice(len(values), size=batch, p=weights / weights.sum())]


def menu_text(menu) -> str:
    return "(" + ", ".join(f"({v}, {w})" for v, w in menu) + ")"


# --------------------------------------------------------------------------------------------------
# Per-kernel workloads
# --------------------------------------------------------------------------------------------------

def token_workloads() -> Iterator[Spec]:
    """Kernels whose only var axis is the token count."""
    for seed, (m, what) in enumerate(TOKENS):
        about = f"{what}: {m} tokens ({MODEL})"
        yield Spec("rmsnorm_h4096", f"t{m}", {"batch_size": m}, {"hidden_states": "random", "weight": "random"},
                   seed, f"{about}; input_layernorm of decoder layer 0")
        yield Spec("fused_add_rmsnorm_h4096", f"t{m}", {"batch_size": m},
                   {"hidden_states": "random", "residual": "random", "weight": "random"}, seed,
                   f"{about}; residual add + norm before attention / MLP / LM head")
        yield Spec("silu_and_mul_i14336", f"t{m}", {"num_tokens": m}, {"input": "random"}, seed,
                   f"{about}; SwiGLU between gate_up_proj and down_proj")
        for n, k, what_gemm in ((6144, 4096, "qkv_proj"), (4096, 4096, "o_proj"), (28672, 4096, "gate_up_proj"),
                                (4096, 14336, "down_proj")):
            yield Spec(f"gemm_n{n}_k{k}", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed,
                       f"{about}; {what_gemm}")
    for seed, (m, what) in enumerate(LM_HEAD_M):
        yield Spec("gemm_n128256_k4096", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed,
                   f"{what}: logits of {m} sequences ({MODEL}); lm_head")


def rope_workloads() -> Iterator[Spec]:
    seed = 0
    for s in [DECODE[0], DECODE[2], DECODE[4]]:
        g = core.rng(seed)
        positions = s.lens(g) - 1  # the new token's position
        yield rope_spec(s.key, positions, seed, f"{s.what}: positions = lens - 1 with {s.call(seed)}")
        seed += 1
    for s in PREFILL:
        g = core.rng(seed)
        q, pre = s.lens(g)
        positions = np.concatenate([np.arange(p, p + n) for n, p in zip(q, pre)])
        yield rope_spec(s.key, positions, seed, f"{s.what}: positions = concat(arange(prefix, prefix + q_len)) "
                                                f"per prompt with {s.call(seed)}")
        seed += 1


def rope_spec(key: str, positions: np.ndarray, seed: int, what: str) -> Spec:
    max_position = int(-(-(int(positions.max()) + 1) // 4096) * 4096)  # rounded up to a multiple of 4096
    return Spec("rope_llama3_h32_kv8_d128", key, {"num_tokens": len(positions), "max_position": max_position},
                {"positions": positions.astype(np.int64), "q": "random", "k": "random", "cos_sin_cache": "random"},
                seed, f"{MODEL}, {what}; cos_sin_cache: {max_position} rows (the largest position rounded up to a "
                      f"multiple of 4096) computed from the llama3 rope configuration (the definition's rope_cos_sin)")


def decode_workloads() -> Iterator[Spec]:
    for ps, situations in ((1, DECODE), (16, DECODE_PS16)):
        for seed, s in enumerate(situations):
            g = core.rng(seed)
            lens = s.lens(g)
            kv = core.paged_kv(g, lens, ps)
            yield Spec(
                f"gqa_paged_decode_h32_kv8_d128_ps{ps}", s.key,
                {"batch_size": s.batch, "num_pages": kv["num_pages"], "len_indptr": s.batch + 1,
                 "num_kv_indices": len(kv["kv_indices"])},
                {"q": "random", "k_cache": "random", "v_cache": "random", "kv_indptr": i32(kv["kv_indptr"]),
                 "kv_indices": i32(kv["kv_indices"]), "kv_last_page_len": i32(kv["kv_last_page_len"]),
                 "sm_scale": SM_SCALE},
                seed, f"{MODEL} decode, {s.what} ({int(lens.sum())} KV tokens): {s.call(seed)}; "
                      f"core.paged_kv(g, lens, {ps}) (pool 25% larger than used, pages in random order)")


def paged_prefill_workloads() -> Iterator[Spec]:
    for seed, s in enumerate(PREFILL):
        g = core.rng(seed)
        q, pre = s.lens(g)
        kv = core.paged_kv(g, q + pre, 16)
        yield Spec(
            "gqa_paged_prefill_causal_h32_kv8_d128_ps16", s.key,
            {"batch_size": s.batch, "total_q": int(q.sum()), "num_pages": kv["num_pages"], "len_indptr": s.batch + 1,
             "num_kv_indices": len(kv["kv_indices"])},
            {"q": "random", "k_cache": "random", "v_cache": "random", "qo_indptr": i32(core.indptr(q)),
             "kv_indptr": i32(kv["kv_indptr"]), "kv_indices": i32(kv["kv_indices"]),
             "kv_last_page_len": i32(kv["kv_last_page_len"]), "sm_scale": SM_SCALE},
            seed, f"{MODEL} chunked prefill (vLLM), {s.what}: {int(q.sum())} query tokens over {int((q + pre).sum())} "
                  f"KV tokens; {s.call(seed)}; qo_indptr = core.indptr(q_lens); core.paged_kv(g, prefix_lens + q_lens, "
                  f"16) (pool 25% larger than used, pages in random order)")


def ragged_prefill_workloads() -> Iterator[Spec]:
    for seed, s in enumerate(RAGGED):
        g = core.rng(seed)
        q, _ = s.lens(g)
        indptr = i32(core.indptr(q))
        total = int(q.sum())
        yield Spec(
            "gqa_ragged_prefill_causal_h32_kv8_d128", s.key,
            {"batch_size": s.batch, "total_q": total, "total_kv": total, "len_indptr": s.batch + 1},
            {"q": "random", "k": "random", "v": "random", "qo_indptr": indptr, "kv_indptr": indptr, "sm_scale": SM_SCALE},
            seed, f"{MODEL} extend (SGLang, FlashInfer backend), {s.what} with no cached prefix: the new tokens attend "
                  f"to each other, so kv_indptr == qo_indptr ({total} tokens); {s.call(seed)}; "
                  f"qo_indptr = kv_indptr = core.indptr(q_lens)")


def sampling_workloads() -> Iterator[Spec]:
    for seed, b in enumerate(SAMPLING_BATCHES):
        g = core.rng(seed)
        top_k = per_request(g, b, TOP_K_MENU).astype(np.int32)
        top_p = per_request(g, b, TOP_P_MENU).astype(np.float32)
        what = (f"{MODEL}, one token for each of {b} sequences (decode batch {b}); probs drawn by the bench as peaked "
                f"next-token distributions (the definition's power_law_probs); g = core.rng({seed})")
        k_call = f"top_k = per_request(g, {b}, {menu_text(TOP_K_MENU)}) (value, frequency; {VOCAB} = not set)"
        p_call = f"top_p = per_request(g, {b}, {menu_text(TOP_P_MENU)}) (value, frequency; 1.0 = not set)"
        axes = {"batch_size": b}
        yield Spec("top_k_sampling_from_probs_v128256", f"b{b}", axes, {"probs": "random", "top_k": top_k}, seed,
                   f"{what}; {k_call}")
        yield Spec("top_p_sampling_from_probs_v128256", f"b{b}", axes, {"probs": "random", "top_p": top_p}, seed,
                   f"{what}; {k_call} (drawn, unused: keeps the same top_p as the other samplers); {p_call}")
        yield Spec("top_k_top_p_sampling_from_probs_v128256", f"b{b}", axes,
                   {"probs": "random", "top_k": top_k, "top_p": top_p}, seed, f"{what}; {k_call}; {p_call}")


def workloads() -> Iterator[Spec]:
    yield from token_workloads()
    yield from rope_workloads()
    yield from decode_workloads()
    yield from paged_prefill_workloads()
    yield from ragged_prefill_workloads()
    yield from sampling_workloads()
