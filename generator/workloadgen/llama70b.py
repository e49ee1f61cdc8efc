"""Workloads for the Llama-3.3-70B definitions at TP4 and TP8 (bfloat16, vLLM), from the steps a server runs.

The same serving situations as Llama-3.1-8B (llama.py), sized for the 70B on 4 or 8 H100 80GB: at TP4 a
GPU holds 35.3 GB of weights and 80 KiB of KV per token of context (80 layers x 2 x 2 KV heads x 128 x 2
bytes), so 0.9 x 80 GB leaves room for roughly 450k tokens; at TP8 (17.6 GB, 40 KiB per token) about 1.3M.
The decode batches below stay within the TP4 budget (at most 256 x 1k to 64 x 4k tokens of context).
- GEMM M and the token count of the norms, SiLU-and-mul and RoPE: decode batches 1-256, prefill chunks of
  512-8192 tokens (vLLM's default max_num_batched_tokens); lm_head M: the sequences sampling a token;
- attention: decode over a fragmented paged cache (core.paged_kv), chunked prefill behind cached prefixes.
The TP8 attention shape (8 query heads, 1 KV head) is Qwen3-30B-A3B TP4's (qwen.py writes its workloads)
and the sampler at vocabulary 128256 is Llama-3.1-8B's (llama.py).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from . import core
from .llama import PREFILL, SM_SCALE, TOKENS, i32  # Llama-3.1-8B's prefill situations and token counts
from .scenarios import Decode
from .spec import Spec

LM_HEAD_M = [1, 8, 32, 64, 128, 256]
GEMMS = {4: ((2560, 8192, "qkv_proj"), (8192, 2048, "o_proj"), (14336, 8192, "gate_up_proj"), (8192, 7168, "down_proj")),
         8: ((1280, 8192, "qkv_proj"), (8192, 1024, "o_proj"), (7168, 8192, "gate_up_proj"), (8192, 3584, "down_proj"))}
LM_HEAD = {4: 32064, 8: 16032}
SILU = {4: 7168, 8: 3584}
ROPE = {4: "rope_llama3_h16_kv2_d128", 8: "rope_llama3_h8_kv1_d128"}

DECODE = [
    Decode(1, 32768, 0.0, "one request decoding at a 32k context (long-document chat)"),
    Decode(16, 8192, 0.5, "16 requests around 8k context"),
    Decode(64, 4096, 0.5, "64 requests around 4k context"),
    Decode(128, 2048, 0.5, "128 requests around 2k context"),
    Decode(256, 1024, 0.5, "256 requests around 1k context (a full batch)"),
]
ROPE_DECODE = [DECODE[0], DECODE[2], DECODE[4]]


def token_workloads() -> Iterator[Spec]:
    """Kernels whose only var axis is the token count."""
    for seed, (m, what) in enumerate(TOKENS):
        about = f"Llama-3.3-70B, {what}: {m} tokens"
        yield Spec("rmsnorm_h8192", f"t{m}", {"batch_size": m}, {"hidden_states": "random", "weight": "random"},
                   seed, f"{about} (TP4 and TP8, replicated); input_layernorm of decoder layer 0")
        yield Spec("fused_add_rmsnorm_h8192", f"t{m}", {"batch_size": m},
                   {"hidden_states": "random", "residual": "random", "weight": "random"}, seed,
                   f"{about} (TP4 and TP8, replicated); residual add + norm before attention / MLP / lm_head")
        for tp in (4, 8):
            i = SILU[tp]
            yield Spec(f"silu_and_mul_i{i}", f"t{m}", {"num_tokens": m}, {"input": "random"}, seed,
                       f"{about} at TP{tp}; SwiGLU on the rank's {i} intermediate columns")
            for n, k, role in GEMMS[tp]:
                yield Spec(f"gemm_n{n}_k{k}", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed,
                           f"{about} at TP{tp}; {role} shard")
    for seed, m in enumerate(LM_HEAD_M):
        for tp in (4, 8):
            yield Spec(f"gemm_n{LM_HEAD[tp]}_k8192", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed,
                       f"Llama-3.3-70B at TP{tp}, logits of {m} sequences (decode batch {m}); lm_head shard")


def rope_spec(name: str, key: str, positions: np.ndarray, seed: int, what: str) -> Spec:
    max_position = int(-(-(int(positions.max()) + 1) // 4096) * 4096)  # rounded up to a multiple of 4096
    return Spec(name, key, {"num_tokens": len(positions), "max_position": max_position},
                {"positions": positions.astype(np.int64), "q": "random", "k": "random", "cos_sin_cache": "random"},
                seed, f"{what}; cos_sin_cache: {max_position} rows (the largest position rounded up to a multiple of "
                      f"4096) of the llama3-scaled cache (the definition's rope_cos_sin draw)")


def rope_workloads() -> Iterator[Spec]:
    for tp in (4, 8):
        seed = 0
        for s in ROPE_DECODE:
            g = core.rng(seed)
            positions = s.lens(g) - 1  # the new token's position
            yield rope_spec(ROPE[tp], s.key, positions, seed,
                            f"Llama-3.3-70B TP{tp} decode, {s.what}: positions = lens - 1 with {s.call(seed)}")
            seed += 1
        for s in PREFILL:
            g = core.rng(seed)
            q, pre = s.lens(g)
            positions = np.concatenate([np.arange(p, p + n) for n, p in zip(q, pre)])
            yield rope_spec(ROPE[tp], s.key, positions, seed,
                            f"Llama-3.3-70B TP{tp} prefill, {s.what}: positions = concat(arange(prefix, prefix + q_len)) "
                            f"per prompt with {s.call(seed)}")
            seed += 1


def attention_workloads() -> Iterator[Spec]:
    for seed, s in enumerate(DECODE):
        g = core.rng(seed)
        lens = s.lens(g)
        kv = core.paged_kv(g, lens, 16)
        yield Spec(
            "gqa_paged_decode_h16_kv2_d128_ps16", s.key,
            {"batch_size": s.batch, "num_pages": kv["num_pages"], "len_indptr": s.batch + 1,
             "num_kv_indices": len(kv["kv_indices"])},
            {"q": "random", "k_cache": "random", "v_cache": "random", "kv_indptr": i32(kv["kv_indptr"]),
             "kv_indices": i32(kv["kv_indices"]), "kv_last_page_len": i32(kv["kv_last_page_len"]), "sm_scale": SM_SCALE},
            seed, f"Llama-3.3-70B TP4 decode, {s.what} ({int(lens.sum())} KV tokens): {s.call(seed)}; "
                  f"kv = core.paged_kv(g, lens, 16) (pool 25% larger than used, pages in random order)")
    for seed, s in enumerate(PREFILL):
        g = core.rng(seed)
        q, pre = s.lens(g)
        kv = core.paged_kv(g, q + pre, 16)  # the new tokens' K/V are already in the cache after the prefix
        yield Spec(
            "gqa_paged_prefill_causal_h16_kv2_d128_ps16", s.key,
            {"batch_size": s.batch, "total_q": int(q.sum()), "num_pages": kv["num_pages"], "len_indptr": s.batch + 1,
             "num_kv_indices": len(kv["kv_indices"])},
            {"q": "random", "k_cache": "random", "v_cache": "random", "qo_indptr": i32(core.indptr(q)),
             "kv_indptr": i32(kv["kv_indptr"]), "kv_indices": i32(kv["kv_indices"]),
             "kv_last_page_len": i32(kv["kv_last_page_len"]), "sm_scale": SM_SCALE},
            seed, f"Llama-3.3-70B TP4 chunked prefill (vLLM), {s.what}: {int(q.sum())} query tokens over "
                  f"{int((q + pre).sum())} KV tokens; {s.call(seed)}; qo_indptr = core.indptr(q_lens); "
                  f"kv = core.paged_kv(g, prefix_lens + q_lens, 16) (pool 25% larger than used, pages in random order)")


def workloads() -> Iterator[Spec]:
    yield from token_workloads()
    yield from rope_workloads()
    yield from attention_workloads()
