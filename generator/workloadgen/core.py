"""Seeded structured generators for index inputs that real serving would produce.

Uniform random integers make incoherent index tensors (an indptr that is not monotone, page ids that
repeat, expert counts that are flat). These generators build them from a description of the batch
instead: sequence lengths drawn around a median, pages handed out by a fragmented allocator, tokens
per expert skewed the way learned routers skew them. Everything draws from numpy's PCG64 with an
explicit seed, so the same seed gives the same bytes on every machine.
"""

from __future__ import annotations

from typing import Optional

import numpy as np


def rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


def seq_lens(g: np.random.Generator, batch: int, median: int, *, low: int = 1, high: Optional[int] = None,
             sigma: float = 0.5) -> np.ndarray:
    """`batch` sequence lengths, log-normal around `median` (a serving batch mixes short and long
    requests), clipped to [low, high]. sigma=0 gives every sequence the median."""
    high = high if high is not None else 4 * median
    if sigma == 0:
        lens = np.full(batch, median, dtype=np.int64)
    else:
        lens = np.rint(median * np.exp(sigma * g.standard_normal(batch))).astype(np.int64)
    return np.clip(lens, low, high)


def indptr(lens) -> np.ndarray:
    """Exclusive prefix sum with a leading 0: row i owns [indptr[i], indptr[i+1])."""
    out = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lens, dtype=np.int64), out=out[1:])
    return out


def paged_kv(g: np.random.Generator, lens, page_size: int, *, free_fraction: float = 0.25) -> dict:
    """A paged KV cache layout for sequences of the given lengths.

    Returns kv_indptr [batch + 1], kv_indices [total pages] (page ids, each used once), kv_last_page_len
    [batch] (tokens in each sequence's last page, 1..page_size) and num_pages, the size of the page
    pool: the pages in use plus `free_fraction` more, from which pages are taken in a random order,
    as an allocator that has served many requests hands them out (no contiguous runs to exploit).
    """
    lens = np.asarray(lens, dtype=np.int64)
    if (lens < 1).any():
        raise ValueError("every sequence needs at least one token")
    pages = (lens + page_size - 1) // page_size
    used = int(pages.sum())
    num_pages = used + int(np.ceil(used * free_fraction))
    indices = g.permutation(num_pages)[:used]
    last = lens - (pages - 1) * page_size
    return {"kv_indptr": indptr(pages), "kv_indices": indices.astype(np.int64),
            "kv_last_page_len": last, "num_pages": num_pages}


def skewed_counts(g: np.random.Generator, total: int, groups: int, *, alpha: float = 1.1,
                  empty_fraction: float = 0.0) -> np.ndarray:
    """`total` items split over `groups` with Zipf-like popularity (rank r gets weight r**-alpha, ranks
    shuffled over the groups): routed MoE tokens pile onto a few hot experts and leave others nearly
    idle. `empty_fraction` of the groups get nothing at all (experts no token picked)."""
    weights = np.arange(1, groups + 1, dtype=np.float64) ** -alpha
    weights = weights[g.permutation(groups)]
    if empty_fraction > 0:
        weights[g.permutation(groups)[: int(groups * empty_fraction)]] = 0.0
    counts = g.multinomial(total, weights / weights.sum())
    return counts.astype(np.int64)


def top_k_rows(keys: np.ndarray, k: int) -> np.ndarray:
    """np.argsort(-keys, axis=1, kind="stable")[:, :k] (each row's k largest keys, largest first, equal keys in index
    order) without sorting whole rows: routing draws sort [tokens, experts] keys, most of a recipe run's time."""
    if k >= keys.shape[1]:
        return np.argsort(-keys, axis=1, kind="stable")[:, :k]
    picked = np.argpartition(-keys, k - 1, axis=1)[:, :k]  # the k largest, in no order
    values = np.take_along_axis(keys, picked, axis=1)
    # A key equal to the k-th largest outside the picks would make the choice arbitrary: sort those rows whole.
    if ((keys >= values.min(axis=1, keepdims=True)).sum(axis=1) != k).any():
        return np.argsort(-keys, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(picked, np.lexsort((picked, -values), axis=1), axis=1)
