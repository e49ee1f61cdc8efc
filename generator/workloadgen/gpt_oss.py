"""Workloads for the gpt-oss-120b definitions (vLLM on one H100 80GB, TP1; bfloat16 activations, MXFP4 experts).

The serving configuration (dataset/models/gpt-oss-120b.json): the checkpoint's weights take ~65.3 GB of the GPU
(MXFP4 experts 61.0 GB, the bfloat16 rest 4.3 GB), and vLLM's default gpu_memory_utilization of 0.9 leaves about
6.7 GB of the 80 GB for the KV cache and activations. KV per token of context: the 18 full-attention layers hold
every token, 18 x 2 (K, V) x 8 KV heads x 64 x 2 bytes = 36 KiB; the 18 sliding-window layers hold at most the
last 128 tokens (+ one page) of each request. So the decode batches keep batch x context near or below ~130k
tokens (4.8 GB), from one 32k-token request to 256 short chats.

Serving situations, each written once and shared by every kernel it drives:
- decode steps: `batch` sequences decode one token each (scenarios.Decode: log-normal contexts, KV cache paged by
  a fragmented allocator, page size 16 as vLLM's default block size). The same page tables serve the
  full-attention and the sliding-window kernels (vLLM keeps one block table per request; the sliding layers'
  out-of-window slots point at a null page that the kernel never reads);
- prefill steps: chunks of 128 to 8192 new tokens (vLLM's default max_num_batched_tokens), one long prompt
  (chunked prefill behind a cached prefix) or several short prompts, some with prefix-cache hits;
- MoE steps: every token picks 4 distinct experts of 128 with a skewed popularity (routed_picks), the
  (token, expert) rows sorted by expert (segment offsets m_indptr, and row_token, the token of each sorted row,
  as vLLM's make_routing_data builds them for matmul_ogs);
- GEMM M and the token count of the elementwise kernels: decode batches 1-256, prefill chunks 512-8192.
Index inputs (page tables, indptr, positions, expert segments, row tokens) are arrays from seeded generators,
stored as blobs; float tensors are drawn by the bench from the distribution each definition names (the RoPE
cos/sin cache is the YaRN cache computed from the rope configuration; router logits are trained-router-like).
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from . import core
from .families import i32, ids_call, rope_steps, rope_what, menu_text, per_request, slots_of, token_ids
from .families import kv_append as append_spec
from .scenarios import LM_HEAD_ROWS as LM_HEAD
from .scenarios import PREFILL_STEPS_MULTITURN as PREFILL
from .scenarios import SAMPLING_BATCHES as BATCHES
from .scenarios import TEMPERATURE_MENU, TOKEN_COUNTS, Decode
from .spec import Spec

MODEL = "gpt-oss-120b"
SM_SCALE = 1.0 / math.sqrt(64)  # 1 / sqrt(head_dim)
MAX_POSITION = 131072  # rows of vLLM's YaRN cos/sin cache: original_max_position_embeddings 4096 * factor 32
NUM_EXPERTS = 128
TOP_K = 4
PAGE_SIZE = 16
ATTENTION = ("gqa_paged_{stage}_sink_h64_kv8_d64_ps16", "full-attention layers"), \
    ("gqa_paged_{stage}_sink_swa128_h64_kv8_d64_ps16", "sliding-window layers")


# --------------------------------------------------------------------------------------------------
# Routing: which 4 experts each token picks, and the expert-sorted rows matmul_ogs walks.
# --------------------------------------------------------------------------------------------------

def routed_picks(g: np.random.Generator, num_tokens: int, num_experts: int, top_k: int, *,
                 alpha: float = 0.6) -> np.ndarray:
    """[num_tokens, top_k] DISTINCT experts per token, popular experts more often: expert popularity is
    Zipf-like (rank r has weight r**-alpha, ranks shuffled over the experts) and each token draws its top_k
    experts without replacement in proportion to it (Gumbel top-k). alpha 0.6 is a load-balanced router on a
    skewed batch (the hottest expert gets several times the mean load), 1.0 a strongly imbalanced layer."""
    weights = np.arange(1, num_experts + 1, dtype=np.float64) ** -alpha
    weights = weights[g.permutation(num_experts)]
    keys = np.log(weights / weights.sum())[None, :] + g.gumbel(size=(num_tokens, num_experts))
    return np.argpartition(-keys, top_k - 1, axis=1)[:, :top_k]


def sorted_rows(picks: np.ndarray, num_experts: int) -> tuple[np.ndarray, np.ndarray]:
    """(m_indptr [num_experts + 1], row_token [tokens * top_k]) of the rows sorted by expert, stable in
    (token, slot) order within an expert: row r of segment e is a (token, e) pair and row_token[r] its token."""
    flat = picks.reshape(-1)  # index token * top_k + slot
    order = np.argsort(flat, kind="stable")
    counts = np.bincount(flat, minlength=num_experts)
    return core.indptr(counts), order // picks.shape[1]


def routed_call(seed: int, tokens: int, alpha: float) -> str:
    return (f"g = core.rng({seed}); picks = gpt_oss.routed_picks(g, {tokens}, {NUM_EXPERTS}, {TOP_K}, "
            f"alpha={alpha}); m_indptr, row_token = gpt_oss.sorted_rows(picks, {NUM_EXPERTS})")


# --------------------------------------------------------------------------------------------------
# Serving situations
# --------------------------------------------------------------------------------------------------

DECODE = [
    Decode(1, 32768, 0.0, "one request decoding at a 32k context (long-document chat)"),
    Decode(4, 16384, 0.5, "4 long-context requests around 16k"),
    Decode(16, 4096, 0.5, "16 requests around 4k context"),
    Decode(64, 1024, 0.5, "64 requests around 1k context"),
    Decode(128, 512, 0.5, "128 requests around 512 tokens of context"),
    Decode(256, 300, 0.5, "256 short chats around 300 tokens of context (a full batch)"),
]
# Prefill chunks, token counts and lm_head rows: Qwen3-30B-A3B's on the same H100 with the same vLLM defaults
# (max_num_batched_tokens 8192), imported from qwen.py.
# MoE steps: tokens in the step and the popularity skew of the layer.
MOE = [(1, 0.6, "decode, batch 1"), (8, 0.6, "decode, batch 8"), (32, 0.6, "decode, batch 32"),
       (64, 1.0, "decode, batch 64, a strongly imbalanced layer"), (256, 0.6, "decode, batch 256 (a full batch)"),
       (512, 0.6, "prefill chunk of 512 tokens"),
       (2048, 1.0, "prefill chunk of 2048 tokens, a strongly imbalanced layer"),
       (8192, 0.6, "prefill chunk of 8192 tokens (vLLM's max_num_batched_tokens)")]


# --------------------------------------------------------------------------------------------------
# Per-kernel workloads
# --------------------------------------------------------------------------------------------------

def token_workloads() -> Iterator[Spec]:
    """Kernels whose only var axis is the token count."""
    gemm = {"A": "random", "B": "random"}
    for seed, (m, what, _) in enumerate(TOKEN_COUNTS):
        about = f"{MODEL} TP1, {what}: {m} tokens"
        yield Spec("rmsnorm_h2880", f"t{m}", {"batch_size": m}, {"hidden_states": "random", "weight": "random"},
                   seed, f"{about}; input_layernorm of decoder layer 0")
        yield Spec("fused_add_rmsnorm_h2880", f"t{m}", {"batch_size": m},
                   {"hidden_states": "random", "residual": "random", "weight": "random"}, seed,
                   f"{about}; residual add + norm before attention / MoE, and the final norm")
        yield Spec("gemm_bias_n5120_k2880", f"m{m}", {"M": m}, {**gemm, "bias": "random"}, seed, f"{about}; qkv_proj")
        yield Spec("gemm_bias_n2880_k4096", f"m{m}", {"M": m}, {**gemm, "bias": "random"}, seed, f"{about}; o_proj")
        yield Spec("gemm_bias_n128_k2880", f"m{m}", {"M": m}, {**gemm, "bias": "random"}, seed,
                   f"{about}; MoE router")
        yield Spec("moe_routing_softmax_topk4_e128", f"t{m}", {"num_tokens": m}, {"router_logits": "random"}, seed,
                   f"{about}; top-4 of the router logits + softmax of the 4 (logits drawn trained-router-like: "
                   f"skewed_logits)")
        yield Spec("swiglu_oai_and_mul_i2880", f"t{m * TOP_K}", {"num_tokens": m * TOP_K}, {"input": "random"},
                   seed, f"{about} x 4 routed experts = {m * TOP_K} rows; clamped SwiGLU between the expert GEMMs "
                         f"(as a separate kernel: vLLM's non-fused MXFP4 MoE paths)",
                   num_tokens=m)  # the step's tokens, not its routed rows
    for seed, (m, what) in enumerate(LM_HEAD):
        yield Spec("gemm_n201088_k2880", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed,
                   f"{MODEL} TP1 lm_head, {what}: {m} rows")


def moe_workloads() -> Iterator[Spec]:
    weights = {"w_blocks": "random", "w_scales": "random", "bias": "random"}
    for seed, (tokens, alpha, what) in enumerate(MOE):
        g = core.rng(seed)
        picks = routed_picks(g, tokens, NUM_EXPERTS, TOP_K, alpha=alpha)
        m_indptr, row_token = sorted_rows(picks, NUM_EXPERTS)
        counts = np.diff(m_indptr)
        rows = tokens * TOP_K
        axes = {"num_tokens": tokens, "total_rows": rows, "len_m_indptr": NUM_EXPERTS + 1}
        about = (f"{MODEL} TP1 MoE, {what}: {tokens} tokens x 4 experts = {rows} rows over {int((counts > 0).sum())} "
                 f"of 128 experts (largest segment {int(counts.max())} rows): {routed_call(seed, tokens, alpha)}")
        index = {"m_indptr": i32(m_indptr), "row_token": i32(row_token)}
        yield Spec("moe_routing_metadata_e128_topk4", f"t{tokens}_a{alpha}",
                   {"num_tokens": tokens, "total_rows": rows, "len_m_indptr": NUM_EXPERTS + 1},
                   {"topk_ids": i32(picks), "topk_weights": "random"}, seed,
                   f"{about}; the rows of picks sorted by expert (make_routing_data's metadata)")
        yield Spec("grouped_gemm_mxfp4_swiglu_e128_n5760_k2880", f"t{tokens}_a{alpha}", axes,
                   {"hidden_states": "random", **weights, **index}, seed,
                   f"{about}; gather + gate_up MXFP4 GEMM + bias + clamped SwiGLU (matmul_ogs #1)")
        yield Spec("grouped_gemm_mxfp4_scatter_e128_n2880_k2880", f"t{tokens}_a{alpha}", axes,
                   {"act": "random", **weights, **index, "row_weight": "random"}, seed,
                   f"{about}; down MXFP4 GEMM + bias, weighted by the routing weights and summed per token "
                   f"(matmul_ogs #2)")


def rope_workloads() -> Iterator[Spec]:
    for s, positions, seed in rope_steps([DECODE[0], DECODE[3], DECODE[5]], PREFILL):
        yield rope_spec(s.key, positions, seed, rope_what(s, seed))


def rope_spec(key: str, positions: np.ndarray, seed: int, what: str) -> Spec:
    return Spec("rope_yarn_h64_kv8_d64", key, {"num_tokens": len(positions), "max_position": MAX_POSITION},
                {"positions": positions.astype(np.int64), "q": "random", "k": "random", "cos_sin_cache": "random"},
                seed, f"{MODEL} TP1 {what}; cos_sin_cache: the YaRN cache of the rope configuration with "
                      f"{MAX_POSITION} rows (vLLM: original_max_position_embeddings 4096 * factor 32)")


def attention_inputs(kv: dict) -> dict:
    return {"q": "random", "k_cache": "random", "v_cache": "random", "kv_indptr": i32(kv["kv_indptr"]),
            "kv_indices": i32(kv["kv_indices"]), "kv_last_page_len": i32(kv["kv_last_page_len"])}


def decode_workloads() -> Iterator[Spec]:
    for pattern, layers in ATTENTION:
        for seed, s in enumerate(DECODE):
            g = core.rng(seed)
            lens = s.lens(g)
            kv = core.paged_kv(g, lens, PAGE_SIZE)
            yield Spec(
                pattern.format(stage="decode"), s.key,
                {"batch_size": s.batch, "num_pages": kv["num_pages"], "len_indptr": s.batch + 1,
                 "num_kv_indices": len(kv["kv_indices"])},
                {**attention_inputs(kv), "sinks": "random", "sm_scale": SM_SCALE},
                seed, f"{MODEL} TP1 decode ({layers}), {s.what} ({int(lens.sum())} KV tokens): {s.call(seed)}; "
                      f"kv = core.paged_kv(g, lens, {PAGE_SIZE}) (pool 25% larger than used, pages in random order)")


def prefill_workloads() -> Iterator[Spec]:
    for pattern, layers in ATTENTION:
        for seed, s in enumerate(PREFILL):
            g = core.rng(seed)
            q, pre = s.lens(g)
            kv = core.paged_kv(g, q + pre, PAGE_SIZE)  # the new tokens' K/V are already in the cache after the prefix
            yield Spec(
                pattern.format(stage="prefill_causal"), s.key,
                {"total_q": int(q.sum()), "batch_size": s.batch, "num_pages": kv["num_pages"],
                 "len_indptr": s.batch + 1, "num_kv_indices": len(kv["kv_indices"])},
                {**attention_inputs(kv), "qo_indptr": i32(core.indptr(q)), "sinks": "random", "sm_scale": SM_SCALE},
                seed, f"{MODEL} TP1 prefill ({layers}), {s.what} ({int(q.sum())} new tokens, {int((q + pre).sum())} "
                      f"KV tokens): {s.call(seed)}; qo_indptr = core.indptr(q_lens); kv = core.paged_kv(g, q_lens + "
                      f"prefix_lens, {PAGE_SIZE}) (pool 25% larger than used, pages in random order)")


def common_workloads() -> Iterator[Spec]:
    """The kernels every model runs, at gpt-oss-120b's shapes, made as common_kernels.py makes them for the others:
    the embedding lookup, the paged KV append (the step's new tokens of the decode and prefill situations above),
    the temperature softmax over the vocabulary."""
    vocab = 201088
    for seed, (n, what, _) in enumerate(TOKEN_COUNTS):
        g = core.rng(seed)
        yield Spec("embedding_v201088_h2880", f"t{n}", {"num_tokens": n},
                   {"input_ids": token_ids(g, n, vocab).astype(np.int32), "weight": "random"}, seed,
                   f"{MODEL} TP1, {what}: {n} tokens; {ids_call(seed, n, vocab)}")
    for seed, s in enumerate(DECODE):
        g = core.rng(seed)
        lens = s.lens(g)
        kv = core.paged_kv(g, lens, PAGE_SIZE)
        yield append_spec("paged_kv_append_kv8_d64_ps16", s.key, slots_of(kv, lens, np.ones_like(lens), PAGE_SIZE),
                          kv["num_pages"], seed,
                          f"{MODEL} TP1 decode, {s.what}: {s.call(seed)}; kv = core.paged_kv(g, lens, {PAGE_SIZE}); "
                          f"slot_mapping = the slot of each sequence's newest token")
    for seed, s in enumerate(PREFILL, start=len(DECODE)):
        g = core.rng(seed)
        q, pre = s.lens(g)
        kv = core.paged_kv(g, q + pre, PAGE_SIZE)
        yield append_spec("paged_kv_append_kv8_d64_ps16", s.key, slots_of(kv, q + pre, q, PAGE_SIZE), kv["num_pages"],
                          seed, f"{MODEL} TP1 prefill, {s.what}: {s.call(seed)}; kv = core.paged_kv(g, prefix_lens + "
                                f"q_lens, {PAGE_SIZE}); slot_mapping = the slots of each prompt's q_len new tokens")
    for seed, b in enumerate(BATCHES):
        g = core.rng(seed)
        temp = per_request(g, b, TEMPERATURE_MENU).astype(np.float32)
        yield Spec("softmax_temperature_v201088", f"b{b}", {"batch_size": b}, {"logits": "random", "temperature": temp},
                   seed, f"{MODEL}, logits of {b} sequences (decode batch {b}, or prompts finishing their prefill); "
                         f"logits random (skewed_logits, the definition's draw); g = core.rng({seed}); temperature = "
                         f"per_request(g, {b}, {menu_text(TEMPERATURE_MENU)}) (value, share of requests)")


def workloads() -> Iterator[Spec]:
    yield from token_workloads()
    yield from common_workloads()
    yield from moe_workloads()
    yield from rope_workloads()
    yield from decode_workloads()
    yield from prefill_workloads()
