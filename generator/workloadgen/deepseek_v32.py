"""Workloads for DeepSeek-V3.2 (DeepSeek Sparse Attention) served with SGLang at TP8 on 8 H200.

The NSA backend of SGLang runs the lightning indexer on a paged FP8 key cache of page size 64 (DeepGEMM
requires it) and sparse MLA over the 2048 tokens the indexer selects (index_topk in
deepseek-ai/DeepSeek-V3.2-Exp inference/config_671B_v3.2.json). Token counts follow serving: decode
batches of 1-128 sequences at 2k-32k context, prefill chunks of up to 8192 tokens with and without a
cached prefix (every prefill here has a context above 2048: at or below it SGLang skips the indexer's
logits and runs dense MHA instead).

Selections (sparse_indices) come from topk_positions(): for a query that sees n tokens, all n when
n <= 2048 (SGLang's top-k returns 0..n-1 then -1 padding), otherwise the 4 first tokens, the 512 most
recent and 1532 drawn uniformly from the rest, ascending; then mapped through the sequence's page
table to cache slots (page * 64 + offset). They are 8 KB per query token, so the sparse-attention
workloads keep to at most 64 query tokens (decode batches up to 64, prefill extends of 64 and 2 x 16
tokens): the blobs ship with the repository.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from . import core
from .spec import Spec

PAGE = 64  # DeepGEMM's paged MQA logits kernel and SGLang's NSA backend require page size 64
TOPK = 2048  # index_topk
SM_SCALE = 0.1352337788608801  # 192**-0.5 * (0.1 * ln(40) + 1)**2, as DeepSeek-V3 (same yarn rope_scaling)
SINK, RECENT = 4, 512

# (batch, median context, sigma, situation)
DECODE = [
    (1, 32768, 0.0, "one long request at 32k context"),
    (8, 16384, 0.4, "8 requests around 16k context"),
    (32, 8192, 0.5, "32 requests around 8k context"),
    (64, 4096, 0.5, "64 requests around 4k context"),
    # 128 x 4k would not fit: with 86 GB of weights an H200 holds ~520k tokens of KV at 0.9 utilisation.
    (128, 2048, 0.7, "128 requests around 2k context, about half at or below 2048 (all tokens selected)"),
]
# (batch, median new tokens, median cached prefix, sigma, situation)
PREFILL = [
    (1, 8192, 0, 0.0, "one fresh 8192-token prompt (a whole chunk)"),
    (1, 4096, 4096, 0.0, "the second 4096-token chunk of an 8k prompt"),
    (1, 2048, 14336, 0.0, "the last 2048-token chunk of a 16k prompt"),
    (2, 1024, 3072, 0.3, "2 requests extending ~3k-token cached prefixes by ~1k tokens"),
    (4, 512, 6144, 0.5, "4 multi-turn requests extending ~6k-token cached prefixes by ~512 tokens"),
]
# Sparse-attention prefill: few query tokens (their selections are blobs), long contexts.
SPARSE_PREFILL = [
    (1, 64, 16384, 0.0, "one request extending a 16k cached prefix by 64 tokens"),
    (2, 16, 8192, 0.3, "2 requests extending ~8k cached prefixes by ~16 tokens"),
]
SPARSE_DECODE = DECODE[:4]  # batch 128 would add 1 MB of selections


def _k(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def topk_positions(g: np.random.Generator, n: int, k: int = TOPK) -> np.ndarray:
    """Positions (ascending) a query that sees n tokens attends to: all of them when n <= k, else the
    SINK first, the RECENT last and k - SINK - RECENT drawn without replacement from the rest."""
    if n <= k:
        return np.arange(n, dtype=np.int64)
    middle = np.arange(SINK, n - RECENT, dtype=np.int64)
    picked = g.choice(middle, size=k - SINK - RECENT, replace=False)
    return np.sort(np.concatenate([np.arange(SINK), picked, np.arange(n - RECENT, n)]))


def block_table(layout: dict, lens: np.ndarray) -> np.ndarray:
    """[batch, max pages] page ids per sequence from a paged_kv layout; unused entries 0 (never read)."""
    pages = (lens + PAGE - 1) // PAGE
    table = np.zeros((len(lens), int(pages.max())), dtype=np.int64)
    for b, start in enumerate(layout["kv_indptr"][:-1]):
        table[b, :pages[b]] = layout["kv_indices"][start:start + pages[b]]
    return table


def slots(table_row: np.ndarray, positions: np.ndarray) -> np.ndarray:
    return table_row[positions // PAGE] * PAGE + positions % PAGE


def _decode_batch(seed: int, batch: int, median: int, sigma: float):
    g = core.rng(seed)
    lens = core.seq_lens(g, batch, median, low=256, high=65536, sigma=sigma)
    layout = core.paged_kv(g, lens, PAGE)
    return g, lens, layout, block_table(layout, lens)


def _decode_text(seed, batch, median, sigma, lens):
    return (f"lens = core.seq_lens(core.rng({seed}), {batch}, {median}, low=256, high=65536, sigma={sigma}) "
            f"(total {int(lens.sum())} tokens, longest {int(lens.max())}), layout = core.paged_kv(same rng, lens, "
            f"{PAGE}) (25% free pages, shuffled), block_table from it (unused entries 0)")


def _ragged(q_lens, prefix):
    """ks / ke of every query row when the batch's keys sit one sequence after another."""
    total = q_lens + prefix
    k_off = core.indptr(total)[:-1]
    ks = np.concatenate([np.full(q, k_off[b]) for b, q in enumerate(q_lens)])
    ke = np.concatenate([k_off[b] + prefix[b] + np.arange(1, q + 1) for b, q in enumerate(q_lens)])
    return ks, ke, int(total.sum())


def _prefill_batch(seed, batch, q_median, prefix_median, sigma):
    g = core.rng(seed)
    q_lens = core.seq_lens(g, batch, q_median, low=16, high=8192, sigma=sigma)
    prefix = (core.seq_lens(g, batch, prefix_median, low=1, high=65536, sigma=sigma) if prefix_median
              else np.zeros(batch, dtype=np.int64))
    return g, q_lens, prefix


def _prefill_text(seed, batch, q_median, prefix_median, sigma, q_lens, prefix):
    pre = (f"prefix = core.seq_lens(same rng, {batch}, {prefix_median}, low=1, high=65536, sigma={sigma})"
           if prefix_median else "no cached prefix")
    return (f"q_lens = core.seq_lens(core.rng({seed}), {batch}, {q_median}, low=16, high=8192, sigma={sigma}) "
            f"(total {int(q_lens.sum())}), {pre} (contexts {(q_lens + prefix).tolist()})")


def indexer() -> Iterator[Spec]:
    """Lightning-indexer logits (paged decode, ragged prefill) and the top-2048 selection over them."""
    for i, (batch, median, sigma, what) in enumerate(DECODE):
        seed = 500 + i
        _, lens, layout, table = _decode_batch(seed, batch, median, sigma)
        max_pages = table.shape[1]
        axes = {"batch_size": batch, "num_pages": layout["num_pages"], "max_num_pages": max_pages,
                "max_context": max_pages * PAGE}
        text = f"decode, {what}: {_decode_text(seed, batch, median, sigma, lens)}"
        yield Spec("dsa_indexer_logits_paged_decode_h64_d128_ps64", f"b{batch}_ctx{_k(median)}", axes,
                   {"q_fp8": "random", "k_cache_fp8": "random", "k_cache_scale": "random", "weights": "random",
                    "seq_lens": lens, "block_table": table}, seed,
                   text + "; q, keys, key scales and head weights random")
        yield Spec("dsa_topk_k2048", f"decode_b{batch}_ctx{_k(median)}",
                   {"num_rows": batch, "num_cols": max_pages * PAGE},
                   {"logits": "random", "row_starts": np.zeros(batch, dtype=np.int64), "row_ends": lens}, seed,
                   f"decode, {what}: one row per sequence over the paged logits [batch, max_context], row_starts 0, "
                   f"row_ends = lens = core.seq_lens(core.rng({seed}), {batch}, {median}, low=256, high=65536, "
                   f"sigma={sigma}); logits random")
    for i, (batch, q_median, prefix_median, sigma, what) in enumerate(PREFILL):
        seed = 600 + i
        _, q_lens, prefix = _prefill_batch(seed, batch, q_median, prefix_median, sigma)
        ks, ke, num_k = _ragged(q_lens, prefix)
        num_q = int(q_lens.sum())
        key = f"b{batch}_q{_k(q_median)}_prefix{_k(prefix_median)}"
        text = (f"prefill, {what}: {_prefill_text(seed, batch, q_median, prefix_median, sigma, q_lens, prefix)}; "
                f"the batch's keys one sequence after another, query j of sequence b sees ks = its sequence's "
                f"first key to ke = ks + prefix[b] + j + 1 (causal)")
        yield Spec("dsa_indexer_logits_ragged_prefill_h64_d128", key, {"num_q": num_q, "num_k": num_k},
                   {"q_fp8": "random", "k_fp8": "random", "k_scale": "random", "weights": "random",
                    "ks": ks, "ke": ke}, seed, text + "; q, keys, key scales and head weights random")
        yield Spec("dsa_topk_k2048", f"prefill_{key}", {"num_rows": num_q, "num_cols": num_k},
                   {"logits": "random", "row_starts": ks, "row_ends": ke}, seed, text + "; logits random")


def k_cache_store() -> Iterator[Spec]:
    """The step's new indexer keys, and its new latents, written into the paged caches (decode: one per
    sequence)."""
    for i, (batch, median, sigma, what) in enumerate(DECODE):
        seed = 500 + i
        _, lens, layout, table = _decode_batch(seed, batch, median, sigma)
        last = lens - 1
        loc = np.array([slots(table[b], np.array([last[b]]))[0] for b in range(batch)], dtype=np.int64)
        yield Spec("dsa_indexer_k_cache_store_d128_ps64", f"decode_b{batch}_ctx{_k(median)}",
                   {"num_tokens": batch, "num_pages": layout["num_pages"]},
                   {"k_fp8": "random", "k_scale": "random", "slot_mapping": loc, "index_k_cache": "random",
                    "index_k_scale_cache": "random"}, seed,
                   f"decode, {what}: {_decode_text(seed, batch, median, sigma, lens)}; slot_mapping = the slot of "
                   f"each sequence's newest token (position lens - 1)")
        yield Spec("mla_kv_cache_store_ckv512_kpe64_ps64", f"decode_b{batch}_ctx{_k(median)}",
                   {"num_tokens": batch, "num_pages": layout["num_pages"]},
                   {"ckv": "random", "kpe": "random", "cache_loc": loc, "ckv_cache": "random", "kpe_cache": "random"},
                   seed, f"decode, {what}: {_decode_text(seed, batch, median, sigma, lens)}; cache_loc = the slot of "
                   f"each sequence's newest token (position lens - 1)")
    for i, (batch, q_median, prefix_median, sigma, what) in enumerate(PREFILL[:3]):
        seed = 600 + i
        g, q_lens, prefix = _prefill_batch(seed, batch, q_median, prefix_median, sigma)
        lens = q_lens + prefix
        layout = core.paged_kv(g, lens, PAGE)
        table = block_table(layout, lens)
        loc = np.concatenate([slots(table[b], np.arange(prefix[b], lens[b])) for b in range(batch)])
        yield Spec("dsa_indexer_k_cache_store_d128_ps64", f"prefill_b{batch}_q{_k(q_median)}_prefix{_k(prefix_median)}",
                   {"num_tokens": int(q_lens.sum()), "num_pages": layout["num_pages"]},
                   {"k_fp8": "random", "k_scale": "random", "slot_mapping": loc, "index_k_cache": "random",
                    "index_k_scale_cache": "random"}, seed,
                   f"prefill, {what}: {_prefill_text(seed, batch, q_median, prefix_median, sigma, q_lens, prefix)}; "
                   f"layout = core.paged_kv(same rng, q_lens + prefix, {PAGE}); slot_mapping = the slots of "
                   f"positions prefix[b] .. prefix[b] + q_lens[b] - 1")
        yield Spec("mla_kv_cache_store_ckv512_kpe64_ps64", f"prefill_b{batch}_q{_k(q_median)}_prefix{_k(prefix_median)}",
                   {"num_tokens": int(q_lens.sum()), "num_pages": layout["num_pages"]},
                   {"ckv": "random", "kpe": "random", "cache_loc": loc, "ckv_cache": "random", "kpe_cache": "random"},
                   seed, f"prefill, {what}: {_prefill_text(seed, batch, q_median, prefix_median, sigma, q_lens, prefix)}; "
                   f"layout = core.paged_kv(same rng, q_lens + prefix, {PAGE}); cache_loc = the slots of positions "
                   f"prefix[b] .. prefix[b] + q_lens[b] - 1")


def sparse_mla() -> Iterator[Spec]:
    """Sparse MLA over the selected tokens: decode rows and a few prefill (extend) rows."""
    name = "dsa_sparse_mla_h16_ckv512_kpe64_topk2048_ps64"
    inputs = {"q_nope": "random", "q_pe": "random", "ckv_cache": "random", "kpe_cache": "random"}
    for i, (batch, median, sigma, what) in enumerate(SPARSE_DECODE):
        seed = 500 + i
        g, lens, layout, table = _decode_batch(seed, batch, median, sigma)
        sel = np.full((batch, TOPK), -1, dtype=np.int64)
        for b in range(batch):
            s = slots(table[b], topk_positions(g, int(lens[b])))
            sel[b, :len(s)] = s
        yield Spec(name, f"decode_b{batch}_ctx{_k(median)}", {"num_tokens": batch, "num_pages": layout["num_pages"]},
                   {**inputs, "sparse_indices": sel, "sm_scale": SM_SCALE}, seed,
                   f"decode, {what}: {_decode_text(seed, batch, median, sigma, lens)}; then per sequence "
                   f"topk_positions(same rng, lens[b]) mapped to slots; sm_scale = 192^-0.5 * mscale^2")
    for i, (batch, q_median, prefix_median, sigma, what) in enumerate(SPARSE_PREFILL):
        seed = 700 + i
        g, q_lens, prefix = _prefill_batch(seed, batch, q_median, prefix_median, sigma)
        lens = q_lens + prefix
        layout = core.paged_kv(g, lens, PAGE)
        table = block_table(layout, lens)
        rows = []
        for b in range(batch):
            for j in range(int(q_lens[b])):
                s = slots(table[b], topk_positions(g, int(prefix[b]) + j + 1))
                rows.append(np.concatenate([s, np.full(TOPK - len(s), -1)]))
        yield Spec(name, f"prefill_b{batch}_q{q_median}_prefix{_k(prefix_median)}",
                   {"num_tokens": int(q_lens.sum()), "num_pages": layout["num_pages"]},
                   {**inputs, "sparse_indices": np.stack(rows), "sm_scale": SM_SCALE}, seed,
                   f"prefill, {what}: {_prefill_text(seed, batch, q_median, prefix_median, sigma, q_lens, prefix)}; "
                   f"layout = core.paged_kv(same rng, q_lens + prefix, {PAGE}); query j of sequence b selects "
                   f"topk_positions(same rng, prefix[b] + j + 1) mapped to slots; sm_scale = 192^-0.5 * mscale^2")


# Dense shapes the indexer adds to the DeepSeek-V3 layer (M = tokens in the step).
TOKENS = [(1, "decode, batch 1"), (16, "decode, batch 16"), (64, "decode, batch 64"), (128, "decode, batch 128"),
          (2048, "prefill chunk of 2048 tokens"), (8192, "prefill chunk of 8192 tokens")]


def dense() -> Iterator[Spec]:
    for seed, (m, what) in enumerate(TOKENS):
        seed += 800
        yield Spec("layernorm_h128", f"t{m}", {"batch_size": m},
                   {"hidden_states": "random", "weight": "random", "bias": "random"}, seed,
                   f"{what}: the indexer key of every token; all inputs random")
        for n, k in ((8192, 1536), (128, 7168)):
            yield Spec(f"gemm_fp8_block128_n{n}_k{k}", f"m{m}", {"M": m},
                       {"A": "random", "A_scale": "random", "B": "random", "B_scale": "random"}, seed,
                       f"{what}: M = {m}; all inputs random")
        yield Spec("gemm_n64_k7168", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed,
                   f"{what}: M = {m}; all inputs random")


def indexer_prologue() -> Iterator[Spec]:
    """The indexer's RoPE (positions of the step's tokens) and Hadamard transforms (its act_quant
    workloads are moe_pipeline.py's, with the other per-token-group quantisations)."""
    for seed, (m, what) in enumerate(TOKENS):
        seed += 800
        yield Spec("hadamard_transform_d128", f"keys_t{m}", {"num_rows": m}, {"x": "random"}, seed,
                   f"{what}: the index key of each of the {m} tokens; x random")
        yield Spec("hadamard_transform_d128", f"queries_t{m}", {"num_rows": 64 * m}, {"x": "random"}, seed,
                   f"{what}: the 64 index-query heads of each of the {m} tokens ({64 * m} rows); x random")
    for i, (batch, median, sigma, what) in enumerate(DECODE):
        seed = 500 + i
        _, lens, _, _ = _decode_batch(seed, batch, median, sigma)
        pos = lens - 1  # each sequence's newest token
        yield Spec("rope_deepseek_yarn_neox_h64_d64", f"decode_b{batch}_ctx{_k(median)}",
                   {"num_tokens": batch, "max_position": int(pos.max()) + 1},
                   {"positions": pos, "q_pe": "random", "k_pe": "random", "cos_sin_cache": "random"}, seed,
                   f"decode, {what}: positions = lens - 1 with {_decode_text(seed, batch, median, sigma, lens)}; "
                   f"q_pe, k_pe random; cos_sin_cache made from the YaRN rope configuration, {int(pos.max()) + 1} rows")
    for i, (batch, q_median, prefix_median, sigma, what) in enumerate(PREFILL):
        seed = 600 + i
        _, q_lens, prefix = _prefill_batch(seed, batch, q_median, prefix_median, sigma)
        pos = np.concatenate([np.arange(prefix[b], prefix[b] + q_lens[b]) for b in range(batch)])
        yield Spec("rope_deepseek_yarn_neox_h64_d64", f"prefill_b{batch}_q{_k(q_median)}_prefix{_k(prefix_median)}",
                   {"num_tokens": len(pos), "max_position": int(pos.max()) + 1},
                   {"positions": pos, "q_pe": "random", "k_pe": "random", "cos_sin_cache": "random"}, seed,
                   f"prefill, {what}: positions prefix[b] .. prefix[b] + q_lens[b] - 1 with "
                   f"{_prefill_text(seed, batch, q_median, prefix_median, sigma, q_lens, prefix)}; q_pe, k_pe random; "
                   f"cos_sin_cache made from the YaRN rope configuration, {int(pos.max()) + 1} rows")


def workloads() -> Iterator[Spec]:
    yield from indexer()
    yield from k_cache_store()
    yield from sparse_mla()
    yield from dense()
    yield from indexer_prologue()
