"""Spec builders for the kernel families every model runs, written once: paged decode, paged and ragged
prefill, RoPE positions, per-token kernels, embedding shards, KV-cache append and sampling.

A builder takes a serving situation (scenarios.Decode / Prefill, or a token count) and a description
template, draws the index inputs with the seeded generators of core.py, and returns the Spec with its
stage and token count stated. Templates are str.format strings; each builder names the fields it fills
(`{what}`, `{call}`, `{seed}`, ...); `fields` (a recipe's constants and model label) fill the rest.
"""

from __future__ import annotations

import functools
import math
from typing import Iterable, Mapping, Optional

import numpy as np

from . import core
from .scenarios import Decode, Prefill
from .spec import Spec

PAGED_DECODE_TEXT = ("{model} decode, {what} ({kv_tokens} KV tokens): {call}; core.paged_kv(g, lens, {page_size}) "
                     "(pool 25% larger than used, pages in random order)")
PAGED_PREFILL_TEXT = ("{model} chunked prefill, {what}: {q_tokens} query tokens over {kv_tokens} KV tokens; {call}; "
                      "qo_indptr = core.indptr(q_lens); core.paged_kv(g, prefix_lens + q_lens, {page_size})")



def i32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.int32)


def fill(template: str, fields: Mapping) -> str:
    return template.format_map(fields)


def paged_decode(name: str, s: Decode, seed: int, page_size: int, sm_scale: float, text: str,
                 fields: Optional[Mapping] = None, extra: Optional[Mapping] = None) -> Spec:
    """A paged GQA decode workload: the situation's lengths drawn with core.rng(seed), paged by core.paged_kv.
    Fields: what, call, kv_tokens, page_size, seed. extra: more inputs (e.g. attention sinks)."""
    g = core.rng(seed)
    lens = s.lens(g)
    kv = core.paged_kv(g, lens, page_size)
    return Spec(
        name, s.key,
        {"batch_size": s.batch, "num_pages": kv["num_pages"], "len_indptr": s.batch + 1,
         "num_kv_indices": len(kv["kv_indices"])},
        {"q": "random", "k_cache": "random", "v_cache": "random", "kv_indptr": i32(kv["kv_indptr"]),
         "kv_indices": i32(kv["kv_indices"]), "kv_last_page_len": i32(kv["kv_last_page_len"]), "sm_scale": sm_scale,
         **(extra or {})},
        seed, fill(text, {**(fields or {}), "what": s.what, "call": s.call(seed), "kv_tokens": int(lens.sum()),
                          "page_size": page_size, "seed": seed}),
        stage="decode", num_tokens=s.batch)


def paged_prefill(name: str, s: Prefill, seed: int, page_size: int, sm_scale: float, text: str,
                  fields: Optional[Mapping] = None, *, q_first: bool = False, extra: Optional[Mapping] = None) -> Spec:
    """A paged causal GQA prefill workload: new tokens behind cached prefixes, both paged by core.paged_kv
    (the new tokens' K/V are in the cache after the prefix). Fields: what, call, q_tokens, kv_tokens,
    page_size, seed. q_first: total_q is the first axis (the order of definitions that declare it first)."""
    g = core.rng(seed)
    q, pre = s.lens(g)
    kv = core.paged_kv(g, q + pre, page_size)
    axes = {"batch_size": s.batch, "total_q": int(q.sum())}
    if q_first:
        axes = {"total_q": axes["total_q"], "batch_size": s.batch}
    return Spec(
        name, s.key,
        {**axes, "num_pages": kv["num_pages"], "len_indptr": s.batch + 1, "num_kv_indices": len(kv["kv_indices"])},
        {"q": "random", "k_cache": "random", "v_cache": "random", "qo_indptr": i32(core.indptr(q)),
         "kv_indptr": i32(kv["kv_indptr"]), "kv_indices": i32(kv["kv_indices"]),
         "kv_last_page_len": i32(kv["kv_last_page_len"]), "sm_scale": sm_scale, **(extra or {})},
        seed, fill(text, {**(fields or {}), "what": s.what, "call": s.call(seed), "q_tokens": int(q.sum()),
                          "kv_tokens": int((q + pre).sum()), "page_size": page_size, "seed": seed}),
        stage="prefill", num_tokens=int(q.sum()))


def ragged_prefill(name: str, s: Prefill, seed: int, sm_scale: float, text: str,
                   fields: Optional[Mapping] = None, *, q_first: bool = False) -> Spec:
    """A ragged causal prefill over fresh prompts: the new tokens attend to each other only, so
    kv_indptr == qo_indptr. Fields: what, call, tokens, seed. q_first: total_q and total_kv first."""
    g = core.rng(seed)
    q, _ = s.lens(g)
    indptr = i32(core.indptr(q))
    total = int(q.sum())
    axes = {"batch_size": s.batch, "total_q": total, "total_kv": total, "len_indptr": s.batch + 1}
    if q_first:
        axes = {"total_q": total, "total_kv": total, "batch_size": s.batch, "len_indptr": s.batch + 1}
    return Spec(
        name, s.key, axes,
        {"q": "random", "k": "random", "v": "random", "qo_indptr": indptr, "kv_indptr": indptr, "sm_scale": sm_scale},
        seed, fill(text, {**(fields or {}), "what": s.what, "call": s.call(seed), "tokens": total, "seed": seed}),
        stage="prefill", num_tokens=total)


def rope_steps(decode: Iterable[Decode], prefill: Iterable[Prefill]):
    """(situation, positions, seed) for RoPE: the decode steps' new tokens (position lens - 1), then the
    prefill steps' new tokens (arange(prefix, prefix + q_len) per prompt); one seed after another."""
    seed = 0
    for s in decode:
        yield s, s.lens(core.rng(seed)) - 1, seed  # the new token's position
        seed += 1
    for s in prefill:
        q, pre = s.lens(core.rng(seed))
        yield s, np.concatenate([np.arange(p, p + n) for n, p in zip(q, pre)]), seed
        seed += 1


ROPE_INPUTS = {"positions": "@positions", "q": "random", "k": "random", "cos_sin_cache": "random"}


def rope(name: str, s, positions: np.ndarray, seed: int, max_position, text: str,
         fields: Optional[Mapping] = None, inputs: Optional[Mapping] = None) -> Spec:
    """A RoPE workload over `positions`; max_position None: the largest position rounded up to a multiple
    of 4096 (the rows a cache needs); "largest + 1": the rows the step's positions need. inputs: the
    definition's inputs ("@positions" for the positions; default ROPE_INPUTS). Fields: what, call,
    max_position, seed."""
    if max_position is None:
        max_position = int(-(-(int(positions.max()) + 1) // 4096) * 4096)
    elif max_position == "largest + 1":
        max_position = int(positions.max()) + 1
    stage = "decode" if isinstance(s, Decode) else "prefill"
    given = {k: positions.astype(np.int64) if v == "@positions" else v for k, v in (inputs or ROPE_INPUTS).items()}
    return Spec(name, s.key, {"num_tokens": len(positions), "max_position": max_position}, given,
                seed, fill(text, {**(fields or {}), "what": s.what, "call": s.call(seed), "max_position": max_position,
                                  "seed": seed}),
                stage=stage, num_tokens=len(positions))


def per_request(g: np.random.Generator, batch: int, menu) -> np.ndarray:
    """One setting per request, drawn from `menu` ((value, frequency), ...): a batch mixes requests
    whose clients chose different sampling parameters."""
    values = np.array([v for v, _ in menu])
    weights = np.array([w for _, w in menu], dtype=np.float64)
    return values[g.choice(len(values), size=batch, p=weights / weights.sum())]


def menu_text(menu) -> str:
    return "(" + ", ".join(f"({v}, {w})" for v, w in menu) + ")"


def shard_rank(ids: np.ndarray, shard: int) -> int:
    """The rank a vocabulary-shard workload records: the one holding the step's first token, so that the
    rank has rows to look up (every rank sees the whole step; a rank that holds none of its tokens only
    writes zeros). With more than one token the step must also have tokens of other shards (zero rows)."""
    rank = int(ids[0]) // shard
    local = np.asarray(ids, dtype=np.int64) - rank * shard
    outside = int(((local < 0) | (local >= shard)).sum())
    if len(ids) > 1 and outside == 0:
        raise ValueError("every token of the step in one shard: no zero rows to check")
    return rank


def token_ids(g: np.random.Generator, n: int, vocab: int, alpha: float = 1.1) -> np.ndarray:
    """`n` token ids of natural-looking text: token at popularity rank r has weight (r + 1)**-alpha, the
    ranks spread over the vocabulary by a seeded permutation (ids carry no frequency order)."""
    # g.choice(vocab, size=n, p=weights / weights.sum()) by its own steps (numpy's, with p and replacement: the
    # cdf of p, then where g.random(n) falls in it): the same ids and the same state of g after, with the cdf made
    # once per vocabulary instead of once per request (a 262k-token vocabulary's cdf was most of a workload run).
    ranks = _popularity_cdf(vocab, alpha).searchsorted(g.random(n), side="right")
    return g.permutation(vocab)[ranks]


@functools.lru_cache(maxsize=64)
def _popularity_cdf(vocab: int, alpha: float) -> np.ndarray:
    weights = np.arange(1, vocab + 1, dtype=np.float64) ** -alpha
    cdf = (weights / weights.sum()).cumsum()
    cdf /= cdf[-1]
    cdf.flags.writeable = False  # shared by every call
    return cdf


def ids_call(seed: int, n: int, vocab: int) -> str:
    """token_ids' draw as the descriptions record it (under its first home's name, common_kernels)."""
    return f"g = core.rng({seed}); input_ids = common_kernels.token_ids(g, {n}, {vocab}, alpha=1.1)"


def embedding(name: str, t, seed: int, vocab: int, tp: int, id_dtype: str, text: str,
              fields: Optional[Mapping] = None) -> Spec:
    """A token-embedding lookup of step t (scenarios.Tokens): ids = token_ids(core.rng(seed), t.count, vocab).
    tp 1: the whole table (key t<m>); tp > 1: one rank's shard of vocab // tp rows, the rank holding the step's
    first token (shard_rank; key t<m>_rank<rank>). Fields: m, what, seed, ids_call, rank, tp, shard, and
    lookup_note ("" for one token, else " and zeroes the tokens of other shards")."""
    ids = token_ids(core.rng(seed), t.count, vocab).astype(id_dtype)
    f = {**(fields or {}), "m": t.count, "what": t.what, "seed": seed, "ids_call": ids_call(seed, t.count, vocab),
         "tp": tp, "lookup_note": "" if t.count == 1 else " and zeroes the tokens of other shards"}
    if tp == 1:
        return Spec(name, f"t{t.count}", {"num_tokens": t.count}, {"input_ids": ids, "weight": "random"}, seed,
                    fill(text, f), stage=t.stage, num_tokens=t.count)
    shard = vocab // tp
    rank = shard_rank(ids, shard)
    return Spec(name, f"t{t.count}_rank{rank}", {"num_tokens": t.count},
                {"input_ids": ids, "weight": "random", "vocab_start": rank * shard}, seed,
                fill(text, {**f, "rank": rank, "shard": shard}), stage=t.stage, num_tokens=t.count)


def slots_of(kv: dict, lens: np.ndarray, new: np.ndarray, page_size: int) -> np.ndarray:
    """Slots (page * page_size + offset) of the last `new[b]` tokens of each sequence of length lens[b]."""
    out = []
    for b, (n, q) in enumerate(zip(lens, new)):
        pages = kv["kv_indices"][kv["kv_indptr"][b]:kv["kv_indptr"][b + 1]]
        pos = np.arange(n - q, n)
        out.append(pages[pos // page_size] * page_size + pos % page_size)
    return np.concatenate(out).astype(np.int64)


def kv_append(name: str, key: str, slots: np.ndarray, num_pages: int, seed: int, what: str,
              stage: Optional[str] = None) -> Spec:
    """A paged KV-cache append of the step's tokens into `slots` (-1: a padding token the kernel skips)."""
    return Spec(name, key, {"num_tokens": len(slots), "num_pages": num_pages},
                {"k": "random", "v": "random", "k_cache": "random", "v_cache": "random", "slot_mapping": slots}, seed,
                what, stage=stage, num_tokens=len(slots))


def slots(g: np.random.Generator, batch: int) -> tuple[np.ndarray, int]:
    """(distinct slot ids of the batch, pool size): the pool is 25% larger than the batch, ids in random order."""
    pool = batch + int(math.ceil(batch * 0.25))
    return g.permutation(pool)[:batch].astype(np.int64), pool
