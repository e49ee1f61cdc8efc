"""Cascade (shared-prefix) attention: decode batches whose requests all begin with the same cached prefix.

A step is {batch, shared, context, sigma, what}: `batch` requests behind one common prefix of `shared` tokens
(whole pages: vLLM cuts the common prefix to whole blocks and uses cascade attention from 256 tokens and 8
requests on), each with its own tokens after it, log-normal around `context` (the request's own prompt and the
tokens it has generated; at least 1, the new token). The prefix is paged with the requests' own tokens from one
pool by core.paged_kv, as sequence 0 of the draw, so its pages are as scattered as theirs.
"""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from . import core
from .spec import Spec

MIN_SHARED = 256  # vLLM's use_cascade_attention: no cascade below a 256-token common prefix
MIN_BATCH = 8  # ... nor below 8 requests
MAX_OWN = 32768


def shared_prefix_call(seed: int, step: Mapping, page_size: int) -> str:
    return (f"g = core.rng({seed}); own = core.seq_lens(g, {step['batch']}, {step['context']}, low=1, high={MAX_OWN}, "
            f"sigma={step['sigma']}); kv = core.paged_kv(g, [{step['shared']}] + own, {page_size}) (sequence 0 is the "
            f"shared prefix)")


def shared_prefix_decode(name: str, step: Mapping, seed: int, page_size: int, sm_scale: float, text: str,
                         fields: Optional[Mapping] = None) -> Spec:
    """A cascade decode workload: the prefix's pages (shared_kv_indices) and each request's own pages (kv_indptr,
    kv_indices, kv_last_page_len) drawn from one pool. Fields: what, call, shared, own_tokens, kv_tokens, seed."""
    batch, shared = int(step["batch"]), int(step["shared"])
    if shared % page_size or shared < MIN_SHARED or batch < MIN_BATCH:
        raise ValueError(f"a cascade step needs a shared prefix of whole pages of at least {MIN_SHARED} tokens and "
                         f"at least {MIN_BATCH} requests (vLLM's use_cascade_attention); got shared {shared}, "
                         f"batch {batch}")
    g = core.rng(seed)
    own = core.seq_lens(g, batch, int(step["context"]), low=1, high=MAX_OWN, sigma=float(step["sigma"]))
    kv = core.paged_kv(g, np.concatenate([[shared], own]), page_size)
    indptr, indices = kv["kv_indptr"], kv["kv_indices"]
    prefix_pages = int(indptr[1])
    f = {**(fields or {}), "what": step["what"], "call": shared_prefix_call(seed, step, page_size), "shared": shared,
         "own_tokens": int(own.sum()), "kv_tokens": int(own.sum()) + batch * shared, "seed": seed}
    return Spec(
        name, f"cascade_b{batch}_shared{shared}_ctx{step['context']}",
        {"batch_size": batch, "num_pages": kv["num_pages"], "num_shared_pages": prefix_pages,
         "len_indptr": batch + 1, "num_kv_indices": len(indices) - prefix_pages},
        {"q": "random", "k_cache": "random", "v_cache": "random",
         "shared_kv_indices": indices[:prefix_pages].astype(np.int32),
         "kv_indptr": (indptr[1:] - prefix_pages).astype(np.int32),
         "kv_indices": indices[prefix_pages:].astype(np.int32),
         "kv_last_page_len": kv["kv_last_page_len"][1:].astype(np.int32), "sm_scale": sm_scale},
        seed, text.format_map(f), stage="decode", num_tokens=batch)
