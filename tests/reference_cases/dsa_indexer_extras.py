"""Independent formulations for the two DeepSeek-V3.2 indexer kernels between the others: the head-weight
scaling (dsa_indexer_weights_scale_h64) and the prefill gather of the paged index keys
(dsa_indexer_k_gather_d128_ps64).

- The head weights in float64 as one division by sqrt(64 * 128) = 64 * sqrt(2), not three float32 products; the
  weights are float32 (a bfloat16 rounding of them is a planted mistake in test_references.py).
- The key gather as a Python dictionary from (sequence, position) to the (page, offset) the block table names,
  read one token at a time, keys and scales looked up together.

Sizes: the real 64 heads; a few tokens, q_scale drawn as powers of two (as act_quant's ue8m0 scales are) in one
set and uniform in the others, weights of very different magnitudes.
"""

from __future__ import annotations

import math

import torch

from .common import TOKEN_SETS, Case, uniform


def weights_scale_inputs(ax, g, i):
    T, H = ax["num_tokens"], ax["num_index_heads"]
    w = torch.randn(T, H, generator=g) * [1.0, 30.0, 1e-3][i]
    if i == 1:
        q_scale = 2.0 ** -torch.randint(2, 15, (T, H), generator=g).float()  # ue8m0 scales
    else:
        q_scale = uniform((T, H), 2.0 ** -12, 2.0 ** -4, g)
    return {"weights": w, "q_scale": q_scale}  # float32, as the projection leaves them


def weights_scale_expected(ax, x):
    return {"head_weights": x["weights"].double() * x["q_scale"].double() / (64.0 * math.sqrt(2.0))}


def gather_derived(ax):
    pages = [(n + 63) // 64 for n in ax["_lens"]]
    return {"batch_size": len(pages), "max_num_pages": max(pages), "num_pages": sum(pages) + 3,
            "num_k": sum(ax["_lens"])}


def gather_inputs(ax, g, i):
    P, ps, D = ax["num_pages"], ax["page_size"], ax["index_head_dim"]
    lens = ax["_lens"]
    table = torch.zeros(len(lens), ax["max_num_pages"], dtype=torch.int32)
    pool = torch.randperm(P, generator=g).to(torch.int32)  # pages scattered over the pool, out of order
    used = 0
    for b, n in enumerate(lens):
        pages = (n + ps - 1) // ps
        table[b, :pages] = pool[used:used + pages]
        used += pages
    keys = torch.randn(P, ps, D, generator=g)
    return {"index_k_cache": (keys * 100).clamp(-448, 448).to(torch.float8_e4m3fn),
            "index_k_scale_cache": uniform((P, ps), 2.0 ** -12, 2.0 ** -4, g),
            "seq_lens": torch.tensor(lens, dtype=torch.int32), "block_table": table}


def gather_expected(ax, x):
    ps = ax["page_size"]
    where = {}  # (sequence, position) -> (page, offset), one token at a time
    for b, n in enumerate(x["seq_lens"].tolist()):
        for p in range(n):
            where[(b, p)] = (int(x["block_table"][b][p // ps]), p % ps)
    keys, scales = [], []
    for b, p in sorted(where):  # sequence after sequence, positions ascending
        page, off = where[(b, p)]
        keys.append(x["index_k_cache"][page][off].double())
        scales.append(float(x["index_k_scale_cache"][page][off]))
    return {"k_fp8": torch.stack(keys), "k_scale": torch.tensor(scales, dtype=torch.float64)}


CASES = {
    "dsa_indexer_weights_scale_h64": Case(TOKEN_SETS, weights_scale_inputs, weights_scale_expected),
    # One sequence inside a page; three with a page boundary and a 1-token one; two with partial last pages.
    "dsa_indexer_k_gather_d128_ps64": Case([{"_lens": (5,)}, {"_lens": (64, 130, 1)}, {"_lens": (200, 65)}],
                                           gather_inputs, gather_expected, derived=gather_derived),
}
