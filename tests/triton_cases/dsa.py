"""DeepSeek Sparse Attention: sparse MLA over the selected cache slots (split over the top-k slots)."""

from __future__ import annotations

import math

from . import TritonCase
from .common import bf16, check_forced

SM_SCALE = 192 ** -0.5 * (0.1 * math.log(40.0) + 1.0) ** 2  # DeepSeek-V3.2's 192^-0.5 * mscale^2


def _sparse_inputs(g, d, num_tokens, num_pages, selected, interleave, scale):
    """Rows of `selected[t]` distinct random slots of a num_pages-page pool, the rest -1 (at the end, or
    scattered over the row when interleave). The definition's topk (2048) columns are kept."""
    import torch
    ax = d["axes"]
    H, C, R, ps, K = (ax[n]["value"] for n in ("num_qo_heads", "head_dim_ckv", "head_dim_kpe", "page_size", "topk"))
    pool = num_pages * ps
    idx = torch.full((num_tokens, K), -1, dtype=torch.int32)
    for t, n in enumerate(selected):
        slots = torch.randperm(pool, generator=g)[:n].to(torch.int32)
        where = torch.randperm(K, generator=g)[:n] if interleave else torch.arange(n)
        idx[t, where] = slots
    inputs = {"q_nope": bf16(torch.randn(num_tokens, H, C, generator=g)),
              "q_pe": bf16(torch.randn(num_tokens, H, R, generator=g)),
              "ckv_cache": bf16(torch.randn(num_pages, ps, C, generator=g)),
              "kpe_cache": bf16(torch.randn(num_pages, ps, R, generator=g)),
              "sparse_indices": idx, "sm_scale": scale}
    return {"num_tokens": num_tokens, "num_pages": num_pages}, inputs


def sparse_mla_inputs(d, g):
    import torch
    sets = []
    # A decode-like token selecting a whole small pool, padding at the end; two tokens (one with a single
    # slot) with padding scattered over the row and the scale as a 0-d tensor; a row with no valid slot.
    for label, args in (("1 token, 192 slots selected", (1, 3, (192,), False, SM_SCALE)),
                        ("2 tokens, 1 and 150 slots scattered", (2, 4, (1, 150), True,
                                                                 torch.tensor(SM_SCALE, dtype=torch.float32))),
                        ("2 tokens, 0 and 40 slots", (2, 2, (0, 40), False, 0.4))):
        axes, inputs = _sparse_inputs(g, d, *args)
        sets.append((label, axes, inputs))
    return sets


def sparse_mla_extra(module, index, label, axes, inputs, outputs, expected, d):
    # These 1-2 token sets take 8 splits by default (slices of 256 slots, most of them padding only, through
    # the merge kernel); the first set is run again with one split, the direct store prefill and large
    # decode batches take.
    return check_forced(label, d, axes, expected, "num_splits", (1,) if index == 0 else (),
                        lambda s: dict(zip(("output", "lse"), module.sparse_mla(*inputs.values(), num_splits=s))))


def sparse_mla_shapes(d):
    import torch
    ax = d["axes"]
    H, C, R, ps, K = (ax[n]["value"] for n in ("num_qo_heads", "head_dim_ckv", "head_dim_kpe", "page_size", "topk"))
    bf = torch.bfloat16
    for num_tokens, num_pages in ((1, 640), (64, 8192), (4096, 1024)):  # decode 1 (8 splits), 64 (5), prefill (1)
        yield (torch.empty(num_tokens, H, C, dtype=bf), torch.empty(num_tokens, H, R, dtype=bf),
               torch.empty(num_pages, ps, C, dtype=bf), torch.empty(num_pages, ps, R, dtype=bf),
               torch.zeros(num_tokens, K, dtype=torch.int32), SM_SCALE)


CASES = {
    "dsa_sparse_mla_h16_ckv512_kpe64_topk2048_ps64": TritonCase(sparse_mla_inputs, sparse_mla_shapes, sparse_mla_extra),
}
