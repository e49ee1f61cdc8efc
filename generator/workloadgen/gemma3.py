"""Workloads for the Gemma-3-27B definitions (TP2 on two H100s, vLLM, bfloat16), from the steps a server runs.

Per rank: 16 query and 8 KV heads of 128, hidden 5376, MLP 10752, vocabulary shard 131104. Memory: 27.2 GB of
weights per GPU leave about 44 GB of KV cache per GPU at 0.9 utilisation; one token of context takes
62 x 2 x 8 x 128 x 2 = 253,952 bytes per GPU if every layer kept all of it (the 52 sliding-window layers need
only the last 1024 tokens, so real capacity is larger): the decode situations below hold at most 131k tokens of
context (33 GB at that rate), the prefill ones at most 24k per prompt.
- decode steps of 1 to 256 sequences, contexts log-normal around a median (core.seq_lens), paged with page size 16
  by a fragmented allocator (core.paged_kv);
- prefill steps of 128 to 8192 new tokens (vLLM's max_num_batched_tokens 8192), fresh prompts, a chunk of a long
  prompt behind its cached part, and prompts behind cached prefixes;
- token counts of the row-wise kernels and GEMM M: decode batches 1-256 and prefill chunks 512-8192.
Index inputs (page tables, indptr, positions, token ids) are seeded arrays stored as blobs.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from . import common_kernels, core
from .llama import PREFILL, TOKENS  # the same prefill steps and token counts as the Llama recipe
from .scenarios import Decode, Prefill
from .spec import Spec

MODEL = "Gemma-3-27B TP2"
SM_SCALE = 168 ** -0.5  # query_pre_attn_scalar ** -0.5
VOCAB = 262208
MAX_POSITION = 131072  # max_position_embeddings: rows of the cos/sin cache vLLM builds

DECODE = [
    Decode(1, 32768, 0.0, "one request decoding at a 32k context (long-document chat)"),
    Decode(16, 4096, 0.5, "16 requests around 4k context"),
    Decode(32, 4096, 0.5, "32 requests around 4k context"),
    Decode(64, 2048, 0.5, "64 requests around 2k context"),
    Decode(128, 1024, 0.5, "128 requests around 1k context"),
    Decode(256, 512, 0.5, "256 short chats around 512 tokens of context (a full batch)"),
]
LM_HEAD_M = TOKENS[:6]
GEMMS = ((4096, 5376, "qkv_proj"), (5376, 2048, "o_proj"), (21504, 5376, "gate_up_proj"), (5376, 10752, "down_proj"))


def i32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.int32)


def token_workloads() -> Iterator[Spec]:
    for seed, (m, what) in enumerate(TOKENS):
        about = f"{what}: {m} tokens ({MODEL})"
        yield Spec("gemma_rmsnorm_h5376", f"t{m}", {"batch_size": m}, {"hidden_states": "random", "weight": "random"},
                   seed, f"{about}; post-attention / post-feedforward norm (and layer 0's input norm)")
        yield Spec("gemma_fused_add_rmsnorm_h5376", f"t{m}", {"batch_size": m},
                   {"hidden_states": "random", "residual": "random", "weight": "random"}, seed,
                   f"{about}; residual add + norm before attention / MLP / LM head")
        for heads, which in ((16, "q"), (8, "k")):
            yield Spec("gemma_qk_rmsnorm_d128", f"t{m}_{which}", {"num_tokens": m, "num_heads": heads},
                       {"input": "random", "weight": "random"}, seed, f"{about}; {which}_norm over {heads} heads per rank")
        yield Spec("gelu_tanh_and_mul_i10752", f"t{m}", {"num_tokens": m}, {"input": "random"}, seed,
                   f"{about}; GeGLU between gate_up_proj and down_proj")
        for n, k, what_gemm in GEMMS:
            yield Spec(f"gemm_n{n}_k{k}", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed, f"{about}; {what_gemm}")
        g = core.rng(seed)
        ids = g.integers(0, VOCAB, size=m)
        rank = common_kernels.shard_rank(ids, VOCAB // 2)
        yield Spec("embedding_scaled_v131104_h5376", f"t{m}", {"num_tokens": m},
                   {"input_ids": i32(ids), "weight": "random", "vocab_start": rank * (VOCAB // 2)}, seed,
                   f"{about}; rank {rank}'s shard (vocab_start = {rank} * {VOCAB // 2}), the shard of the step's first "
                   f"token: this rank looks rows up{'' if m == 1 else ' and zeroes the tokens of the other shard'}; "
                   f"token ids g.integers(0, {VOCAB}, size={m}) with g = core.rng({seed})")
    for seed, (m, what) in enumerate(LM_HEAD_M):
        yield Spec("gemm_n131104_k5376", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed,
                   f"{what}: logits of {m} sequences ({MODEL}); lm_head, one rank's vocabulary shard")


def rope_workloads() -> Iterator[Spec]:
    seed = 0
    situations = []
    for s in (DECODE[0], DECODE[3], DECODE[5]):
        g = core.rng(seed)
        situations.append((s.key, s.lens(g) - 1, seed, f"{s.what}: positions = lens - 1 with {s.call(seed)}"))
        seed += 1
    for s in PREFILL:
        g = core.rng(seed)
        q, pre = s.lens(g)
        positions = np.concatenate([np.arange(p, p + n) for n, p in zip(q, pre)])
        situations.append((s.key, positions, seed, f"{s.what}: positions = concat(arange(prefix, prefix + q_len)) per "
                                                   f"prompt with {s.call(seed)}"))
        seed += 1
    for which in ("local", "global"):
        for key, positions, sd, what in situations:
            yield Spec(f"rope_gemma3_{which}_h16_kv8_d128", key,
                       {"num_tokens": len(positions), "max_position": MAX_POSITION},
                       {"positions": positions.astype(np.int64), "q": "random", "k": "random", "cos_sin_cache": "random"},
                       sd, f"{MODEL}, {what}; cos_sin_cache from the {which} rope configuration ({MAX_POSITION} rows, "
                           f"max_position_embeddings)")


def paged_decode_spec(name: str, s: Decode, seed: int, page_size: int, sm_scale: float, model: str) -> Spec:
    """A paged GQA decode workload: the situation's lengths drawn with core.rng(seed), paged by core.paged_kv."""
    g = core.rng(seed)
    lens = s.lens(g)
    kv = core.paged_kv(g, lens, page_size)
    return Spec(
        name, s.key,
        {"batch_size": s.batch, "num_pages": kv["num_pages"], "len_indptr": s.batch + 1,
         "num_kv_indices": len(kv["kv_indices"])},
        {"q": "random", "k_cache": "random", "v_cache": "random", "kv_indptr": i32(kv["kv_indptr"]),
         "kv_indices": i32(kv["kv_indices"]), "kv_last_page_len": i32(kv["kv_last_page_len"]), "sm_scale": sm_scale},
        seed, f"{model} decode, {s.what} ({int(lens.sum())} KV tokens): {s.call(seed)}; core.paged_kv(g, lens, "
              f"{page_size}) (pool 25% larger than used, pages in random order)")


def paged_prefill_spec(name: str, s: Prefill, seed: int, page_size: int, sm_scale: float, model: str) -> Spec:
    """A paged causal GQA prefill workload: new tokens behind cached prefixes, both paged by core.paged_kv."""
    g = core.rng(seed)
    q, pre = s.lens(g)
    kv = core.paged_kv(g, q + pre, page_size)
    return Spec(
        name, s.key,
        {"batch_size": s.batch, "total_q": int(q.sum()), "num_pages": kv["num_pages"], "len_indptr": s.batch + 1,
         "num_kv_indices": len(kv["kv_indices"])},
        {"q": "random", "k_cache": "random", "v_cache": "random", "qo_indptr": i32(core.indptr(q)),
         "kv_indptr": i32(kv["kv_indptr"]), "kv_indices": i32(kv["kv_indices"]),
         "kv_last_page_len": i32(kv["kv_last_page_len"]), "sm_scale": sm_scale},
        seed, f"{model} chunked prefill, {s.what}: {int(q.sum())} query tokens over {int((q + pre).sum())} KV tokens; "
              f"{s.call(seed)}; qo_indptr = core.indptr(q_lens); core.paged_kv(g, prefix_lens + q_lens, {page_size})")


def attention_workloads() -> Iterator[Spec]:
    for swa in ("", "swa1024_"):
        for seed, s in enumerate(DECODE):
            yield paged_decode_spec(f"gqa_paged_decode_{swa}h16_kv8_d128_ps16", s, seed, 16, SM_SCALE, MODEL)
        for seed, s in enumerate(PREFILL):
            yield paged_prefill_spec(f"gqa_paged_prefill_causal_{swa}h16_kv8_d128_ps16", s, seed, 16, SM_SCALE, MODEL)


def workloads() -> Iterator[Spec]:
    yield from token_workloads()
    yield from rope_workloads()
    yield from attention_workloads()
