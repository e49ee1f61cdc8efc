"""Spec builders for DeepSeek Sparse Attention (DeepSeek-V3.2 served by SGLang's NSA backend), written once:
the lightning indexer's logits (paged decode, ragged prefill), the top-k selection over them (and both in one
decode kernel, indexer_topk), the paged cache stores of the step's new keys / latents, sparse MLA over the
selected tokens, and the indexer's RoPE.

The caches are paged with page size `page` (DeepGEMM requires 64). A decode step (scenarios.Decode's batch,
median, sigma, what) draws lens = core.seq_lens(core.rng(seed), batch, median, low=256, high=65536, sigma)
and its page table with the same rng; a prefill step (scenarios.Prefill) draws q_lens (low=16, high=8192)
then cached prefixes (low=1, high=65536). Selections come from topk_positions: for a query that sees n
tokens, all n when n <= topk (SGLang's top-k returns 0..n-1 then -1 padding), otherwise the `sink` first
tokens, the `recent` most recent and the rest drawn uniformly, ascending; then mapped through the
sequence's page table to cache slots (page * page_size + offset). Each builder writes its description.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import core
from .scenarios import Decode, Prefill
from .spec import Spec


class DSA(NamedTuple):
    """The sparse-attention configuration: page size, index_topk, sink and recent tokens always selected."""

    page: int
    topk: int
    sink: int
    recent: int


def k_label(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def step_key(s) -> str:
    if isinstance(s, Decode):
        return f"b{s.batch}_ctx{k_label(s.median)}"
    return f"b{s.batch}_q{k_label(s.median)}_prefix{k_label(s.prefix)}"


def topk_positions(g: np.random.Generator, n: int, c: DSA) -> np.ndarray:
    """Positions (ascending) a query that sees n tokens attends to: all of them when n <= topk, else the
    sink first, the recent last and topk - sink - recent drawn without replacement from the rest."""
    if n <= c.topk:
        return np.arange(n, dtype=np.int64)
    middle = np.arange(c.sink, n - c.recent, dtype=np.int64)
    picked = g.choice(middle, size=c.topk - c.sink - c.recent, replace=False)
    return np.sort(np.concatenate([np.arange(c.sink), picked, np.arange(n - c.recent, n)]))


def block_table(layout: dict, lens: np.ndarray, page: int) -> np.ndarray:
    """[batch, max pages] page ids per sequence from a paged_kv layout; unused entries 0 (never read)."""
    pages = (lens + page - 1) // page
    table = np.zeros((len(lens), int(pages.max())), dtype=np.int64)
    for b, start in enumerate(layout["kv_indptr"][:-1]):
        table[b, :pages[b]] = layout["kv_indices"][start:start + pages[b]]
    return table


def slots(table_row: np.ndarray, positions: np.ndarray, page: int) -> np.ndarray:
    return table_row[positions // page] * page + positions % page


def decode_batch(s: Decode, seed: int, page: int):
    """(rng, lens, layout, block table, the draw as descriptions write it)."""
    g = core.rng(seed)
    lens = core.seq_lens(g, s.batch, s.median, low=256, high=65536, sigma=s.sigma)
    layout = core.paged_kv(g, lens, page)
    text = (f"lens = core.seq_lens(core.rng({seed}), {s.batch}, {s.median}, low=256, high=65536, sigma={s.sigma}) "
            f"(total {int(lens.sum())} tokens, longest {int(lens.max())}), layout = core.paged_kv(same rng, lens, "
            f"{page}) (25% free pages, shuffled), block_table from it (unused entries 0)")
    return g, lens, layout, block_table(layout, lens, page), text


def prefill_batch(s: Prefill, seed: int):
    """(rng, q_lens, prefix, the draw as descriptions write it)."""
    g = core.rng(seed)
    q_lens = core.seq_lens(g, s.batch, s.median, low=16, high=8192, sigma=s.sigma)
    prefix = (core.seq_lens(g, s.batch, s.prefix, low=1, high=65536, sigma=s.sigma) if s.prefix
              else np.zeros(s.batch, dtype=np.int64))
    pre = (f"prefix = core.seq_lens(same rng, {s.batch}, {s.prefix}, low=1, high=65536, sigma={s.sigma})"
           if s.prefix else "no cached prefix")
    text = (f"q_lens = core.seq_lens(core.rng({seed}), {s.batch}, {s.median}, low=16, high=8192, sigma={s.sigma}) "
            f"(total {int(q_lens.sum())}), {pre} (contexts {(q_lens + prefix).tolist()})")
    return g, q_lens, prefix, text


def _ragged(q_lens, prefix):
    """ks / ke of every query row when the batch's keys sit one sequence after another."""
    total = q_lens + prefix
    k_off = core.indptr(total)[:-1]
    ks = np.concatenate([np.full(q, k_off[b]) for b, q in enumerate(q_lens)])
    ke = np.concatenate([k_off[b] + prefix[b] + np.arange(1, q + 1) for b, q in enumerate(q_lens)])
    return ks, ke, int(total.sum())


_RAGGED_TEXT = ("; the batch's keys one sequence after another, query j of sequence b sees ks = its sequence's "
                "first key to ke = ks + prefix[b] + j + 1 (causal)")


def indexer_logits(name: str, s, seed: int, c: DSA) -> Spec:
    """Lightning-indexer logits: paged over the block table (decode) or ragged over the batch's keys (prefill)."""
    if isinstance(s, Decode):
        _, lens, layout, table, how = decode_batch(s, seed, c.page)
        max_pages = table.shape[1]
        return Spec(name, step_key(s), {"batch_size": s.batch, "num_pages": layout["num_pages"],
                                        "max_num_pages": max_pages, "max_context": max_pages * c.page},
                    {"q_fp8": "random", "k_cache_fp8": "random", "k_cache_scale": "random", "weights": "random",
                     "seq_lens": lens, "block_table": table}, seed,
                    f"decode, {s.what}: {how}; q, keys, key scales and head weights random",
                    stage="decode", num_tokens=s.batch)
    _, q_lens, prefix, how = prefill_batch(s, seed)
    ks, ke, num_k = _ragged(q_lens, prefix)
    num_q = int(q_lens.sum())
    return Spec(name, step_key(s), {"num_q": num_q, "num_k": num_k},
                {"q_fp8": "random", "k_fp8": "random", "k_scale": "random", "weights": "random", "ks": ks, "ke": ke},
                seed, f"prefill, {s.what}: {how}{_RAGGED_TEXT}; q, keys, key scales and head weights random",
                stage="prefill", num_tokens=num_q)


def topk(name: str, s, seed: int, c: DSA) -> Spec:
    """The top-k selection over the indexer's logits: one row per sequence (decode) or per query token."""
    if isinstance(s, Decode):
        _, lens, _, table, _ = decode_batch(s, seed, c.page)
        return Spec(name, f"decode_{step_key(s)}", {"num_rows": s.batch, "num_cols": table.shape[1] * c.page},
                    {"logits": "random", "row_starts": np.zeros(s.batch, dtype=np.int64), "row_ends": lens}, seed,
                    f"decode, {s.what}: one row per sequence over the paged logits [batch, max_context], row_starts 0, "
                    f"row_ends = lens = core.seq_lens(core.rng({seed}), {s.batch}, {s.median}, low=256, high=65536, "
                    f"sigma={s.sigma}); logits random", stage="decode", num_tokens=s.batch)
    _, q_lens, prefix, how = prefill_batch(s, seed)
    ks, ke, num_k = _ragged(q_lens, prefix)
    num_q = int(q_lens.sum())
    return Spec(name, f"prefill_{step_key(s)}", {"num_rows": num_q, "num_cols": num_k},
                {"logits": "random", "row_starts": ks, "row_ends": ke}, seed,
                f"prefill, {s.what}: {how}{_RAGGED_TEXT}; logits random", stage="prefill", num_tokens=num_q)


def cache_store(name: str, s, seed: int, c: DSA, inputs: dict, slot_input: str) -> Spec:
    """The step's new keys / latents written into a paged cache at the slots of their positions (decode: each
    sequence's newest token); `inputs` besides the slots, which go to `slot_input`."""
    if isinstance(s, Decode):
        _, lens, layout, table, how = decode_batch(s, seed, c.page)
        last = lens - 1
        loc = np.array([slots(table[b], np.array([last[b]]), c.page)[0] for b in range(s.batch)], dtype=np.int64)
        text = f"decode, {s.what}: {how}; {slot_input} = the slot of each sequence's newest token (position lens - 1)"
        tokens, stage = s.batch, "decode"
    else:
        g, q_lens, prefix, how = prefill_batch(s, seed)
        lens = q_lens + prefix
        layout = core.paged_kv(g, lens, c.page)
        table = block_table(layout, lens, c.page)
        loc = np.concatenate([slots(table[b], np.arange(prefix[b], lens[b]), c.page) for b in range(s.batch)])
        text = (f"prefill, {s.what}: {how}; layout = core.paged_kv(same rng, q_lens + prefix, {c.page}); {slot_input} = "
                f"the slots of positions prefix[b] .. prefix[b] + q_lens[b] - 1")
        tokens, stage = int(q_lens.sum()), "prefill"
    kind = "decode" if stage == "decode" else "prefill"
    return Spec(name, f"{kind}_{step_key(s)}", {"num_tokens": tokens, "num_pages": layout["num_pages"]},
                {**inputs, slot_input: loc}, seed, text, stage=stage, num_tokens=tokens)


def sparse_mla(name: str, s, seed: int, c: DSA, sm_scale: float) -> Spec:
    """Sparse MLA over the selected tokens: one selection per decode row, or per query token of a prefill."""
    inputs = {"q_nope": "random", "q_pe": "random", "ckv_cache": "random", "kpe_cache": "random"}
    if isinstance(s, Decode):
        g, lens, layout, table, how = decode_batch(s, seed, c.page)
        sel = np.full((s.batch, c.topk), -1, dtype=np.int64)
        for b in range(s.batch):
            picked = slots(table[b], topk_positions(g, int(lens[b]), c), c.page)
            sel[b, :len(picked)] = picked
        return Spec(name, f"decode_{step_key(s)}", {"num_tokens": s.batch, "num_pages": layout["num_pages"]},
                    {**inputs, "sparse_indices": sel, "sm_scale": sm_scale}, seed,
                    f"decode, {s.what}: {how}; then per sequence topk_positions(same rng, lens[b]) mapped to slots; "
                    f"sm_scale = 192^-0.5 * mscale^2", stage="decode", num_tokens=s.batch)
    g, q_lens, prefix, how = prefill_batch(s, seed)
    lens = q_lens + prefix
    layout = core.paged_kv(g, lens, c.page)
    table = block_table(layout, lens, c.page)
    rows = []
    for b in range(s.batch):
        for j in range(int(q_lens[b])):
            picked = slots(table[b], topk_positions(g, int(prefix[b]) + j + 1, c), c.page)
            rows.append(np.concatenate([picked, np.full(c.topk - len(picked), -1)]))
    tokens = int(q_lens.sum())
    return Spec(name, f"prefill_b{s.batch}_q{s.median}_prefix{k_label(s.prefix)}",
                {"num_tokens": tokens, "num_pages": layout["num_pages"]},
                {**inputs, "sparse_indices": np.stack(rows), "sm_scale": sm_scale}, seed,
                f"prefill, {s.what}: {how}; layout = core.paged_kv(same rng, q_lens + prefix, {c.page}); query j of "
                f"sequence b selects topk_positions(same rng, prefix[b] + j + 1) mapped to slots; sm_scale = "
                f"192^-0.5 * mscale^2", stage="prefill", num_tokens=tokens)


def rope(name: str, s, seed: int, c: DSA) -> Spec:
    """The indexer's RoPE at the step's positions (decode: lens - 1; prefill: prefix .. prefix + q_len - 1)."""
    if isinstance(s, Decode):
        _, lens, _, _, how = decode_batch(s, seed, c.page)
        pos = lens - 1  # each sequence's newest token
        text, stage = f"decode, {s.what}: positions = lens - 1 with {how}", "decode"
    else:
        _, q_lens, prefix, how = prefill_batch(s, seed)
        pos = np.concatenate([np.arange(prefix[b], prefix[b] + q_lens[b]) for b in range(s.batch)])
        text, stage = f"prefill, {s.what}: positions prefix[b] .. prefix[b] + q_lens[b] - 1 with {how}", "prefill"
    rows = int(pos.max()) + 1
    return Spec(name, f"{stage}_{step_key(s)}", {"num_tokens": len(pos), "max_position": rows},
                {"positions": pos, "q_pe": "random", "k_pe": "random", "cos_sin_cache": "random"}, seed,
                f"{text}; q_pe, k_pe random; cos_sin_cache made from the YaRN rope configuration, {rows} rows",
                stage=stage, num_tokens=len(pos))


def indexer_topk(name: str, s, seed: int, c: DSA) -> Spec:
    """The indexer's decode logits and the top-k over them in one kernel: indexer_logits' decode step (same
    seed, so the same lengths and page table, one shared blob) without the logits' max_context axis."""
    if not isinstance(s, Decode):
        raise ValueError(f"{name}: the fused indexer + top-k is a decode kernel (scenarios: decode)")
    _, lens, layout, table, how = decode_batch(s, seed, c.page)
    return Spec(name, step_key(s), {"batch_size": s.batch, "num_pages": layout["num_pages"],
                                    "max_num_pages": table.shape[1]},
                {"q_fp8": "random", "k_cache_fp8": "random", "k_cache_scale": "random", "weights": "random",
                 "seq_lens": lens, "block_table": table}, seed,
                f"decode, {s.what}: {how}; q, keys, key scales and head weights random; the top {c.topk} tokens "
                f"of each sequence longer than {c.topk}, every token of a shorter one",
                stage="decode", num_tokens=s.batch)


def k_gather(name: str, s, seed: int, c: DSA) -> Spec:
    """The prefill gather of every sequence's index keys (its whole context) from the paged cache: cache_store's
    prefill draw (same seed: the same lengths and layout), seq_lens = q_lens + prefix and their block table."""
    if not isinstance(s, Prefill):
        raise ValueError(f"{name}: the index-key gather is a prefill kernel (scenarios: prefill)")
    g, q_lens, prefix, how = prefill_batch(s, seed)
    lens = q_lens + prefix
    layout = core.paged_kv(g, lens, c.page)
    table = block_table(layout, lens, c.page)
    return Spec(name, f"prefill_{step_key(s)}", {"batch_size": s.batch, "num_pages": layout["num_pages"],
                                                 "max_num_pages": table.shape[1], "num_k": int(lens.sum())},
                {"index_k_cache": "random", "index_k_scale_cache": "random", "seq_lens": lens, "block_table": table},
                seed, f"prefill, {s.what}: {how}; layout = core.paged_kv(same rng, q_lens + prefix, {c.page}), "
                f"block_table from it (unused entries 0); seq_lens = q_lens + prefix; cache keys and scales random",
                stage="prefill", num_tokens=int(q_lens.sum()))


BUILDERS = {"indexer_logits": indexer_logits, "topk": topk, "cache_store": cache_store, "sparse_mla": sparse_mla,
            "rope": rope, "indexer_topk": indexer_topk, "k_gather": k_gather}
