"""Spec builders for kernels that keep per-sequence state in slots (Mamba-2's SSM and conv states, the gated
delta net's recurrent state) and for the paged KV-cache append, written once.

A state cache holds one slot per sequence, not per-token pages: a decode step reads and writes one slot per
sequence, a prefill step starts each sequence from its slot (a sequence behind a cached prefix continues from
its cached state) and writes the final state back. Slot ids are distinct ids from a pool 25% larger than the
batch (families.slots). Inputs a builder draws are named "@name" in a recipe's inputs:
  @slots (the batch's slot ids), @cu_seqlens (prefill: core.indptr(q_lens)),
  @has_initial_state (prefill: prefix_lens > 0).
Template fields: what, call (prefill), batch, tokens (new tokens of the step), per_seq (decode: tokens per
sequence), pool, len_indptr (batch + 1), seed; axes are templates of the same fields ("{tokens}") or numbers.
"""

from __future__ import annotations

from typing import Mapping, Optional, Union

import numpy as np

from . import core
from .families import fill, i32, kv_append, slots, slots_of
from .scenarios import Decode, Prefill, Tokens
from .spec import Spec


def _inputs(inputs: Mapping, arrays: Mapping) -> dict:
    out = {}
    for name, v in inputs.items():
        if isinstance(v, str) and v.startswith("@"):
            if v[1:] not in arrays:
                raise KeyError(f"input {name}: no array {v!r} here (this step draws {', '.join(map('@'.__add__, arrays))})")
            out[name] = arrays[v[1:]]
        else:
            out[name] = v
    return out


def slot_state(name: str, s: Union[Tokens, Prefill], seed: int, axes: Mapping, inputs: Mapping, text: str,
               fields: Optional[Mapping] = None, per_seq: int = 1) -> Spec:
    """One step of a slot-state kernel. A decode step (Tokens, stage decode: `count` sequences, one token
    each) is keyed decode_b<count>; g = core.rng(seed), slot ids from slots(g, count). per_seq > 1: each
    sequence brings per_seq tokens (a speculative verify step), keyed verify_b<count>_t<per_seq>. A prefill
    step (Prefill) draws its lengths with the same g first, then the slot ids."""
    g = core.rng(seed)
    if isinstance(s, Prefill):
        q, pre = s.lens(g)
        ids, pool = slots(g, s.batch)
        arrays = {"slots": i32(ids), "cu_seqlens": i32(core.indptr(q)), "has_initial_state": pre > 0}
        f = {"call": s.call(seed), "batch": s.batch, "tokens": int(q.sum())}
        key, stage = s.key, "prefill"
    else:
        ids, pool = slots(g, s.count)
        arrays = {"slots": i32(ids)}
        f = {"batch": s.count, "tokens": s.count * per_seq, "per_seq": per_seq}
        key = f"decode_b{s.count}" if per_seq == 1 else f"verify_b{s.count}_t{per_seq}"
        stage = s.stage
    f = {**(fields or {}), **f, "what": s.what, "pool": pool, "len_indptr": f["batch"] + 1, "seed": seed}
    return Spec(name, key, {k: int(fill(v, f)) if isinstance(v, str) else int(v) for k, v in axes.items()},
                _inputs(inputs, arrays), seed, fill(text, f), stage=stage, num_tokens=f["tokens"])


def kv_append_step(name: str, s: Union[Decode, Prefill], seed: int, page_size: int, text: str,
                   fields: Optional[Mapping] = None, pad_to: Optional[int] = None) -> Spec:
    """A paged KV-cache append of one step's new tokens: the step's lengths and page table drawn as
    families.paged_decode / paged_prefill draw them (core.rng(seed), core.paged_kv), slot_mapping the slots of
    each sequence's newest token (decode) or of each prompt's new tokens behind its prefix (prefill).
    Fields: what, call, page_size, seed. pad_to: a decode batch run at a larger CUDA-graph batch size, the
    padding tokens' slots -1 (the kernel skips them)."""
    g = core.rng(seed)
    if isinstance(s, Decode):
        lens = s.lens(g)
        new, stage = np.ones_like(lens), "decode"
    else:
        q, pre = s.lens(g)
        lens, new, stage = q + pre, q, "prefill"
    kv = core.paged_kv(g, lens, page_size)
    f = {**(fields or {}), "what": s.what, "call": s.call(seed), "page_size": page_size, "seed": seed}
    slot_ids = slots_of(kv, lens, new, page_size)
    if pad_to is not None:
        slot_ids = np.concatenate([slot_ids, np.full(pad_to - len(slot_ids), -1, dtype=np.int64)])
    return kv_append(name, s.key, slot_ids, kv["num_pages"], seed, fill(text, f), stage)
