"""Independent formulation of speculative decoding's MLA verify step (DeepSeek-V3's MTP drafts verified by the
target model over the paged latent cache), mla_paged_verify_causal_h16_ckv512_kpe64_ps1.

No mask at all: each verify token attends only the keys it may see, gathered explicitly (the verified context and
the verify tokens up to itself, in float64), its logit written as the two sums of the definition, the latent part
and the rotary part, and the softmax, weighted sum and base-2 log-sum-exp computed by hand. The reference instead
masks a [heads, verify tokens, kv_len] logit block with an offset position compare.

Sets (page size by the definition): set 0's first sequence has no context at all (kv_len == num_verify_tokens:
only the verify tokens to attend), where top-left and bottom-right alignment agree; the others have contexts.
"""

from __future__ import annotations

import torch

from .common import Case
from .deepseek import SM_SCALE
from .specdec import verify_derived, verify_page_table

LN2 = 0.6931471805599453

# Page size 1 (SGLang's FlashInfer MLA backend): a page per token.
PS1_SETS = [{"batch_size": 1, "num_verify_tokens": 4, "num_kv_indices": 4, "num_pages": 6},
            {"batch_size": 3, "num_verify_tokens": 4, "num_kv_indices": 23, "num_pages": 30},
            {"batch_size": 2, "num_verify_tokens": 2, "num_kv_indices": 9, "num_pages": 9}]
# Page size 64 (FlashMLA): contexts across page boundaries.
PS64_SETS = [{"batch_size": 1, "num_verify_tokens": 4, "num_kv_indices": 1, "num_pages": 2},
             {"batch_size": 3, "num_verify_tokens": 3, "num_kv_indices": 5, "num_pages": 7},
             {"batch_size": 2, "num_verify_tokens": 2, "num_kv_indices": 3, "num_pages": 3}]


def mla_verify_inputs(ax, g, i):
    indptr, indices, last = verify_page_table(ax, g)
    Q, P = ax["num_verify_tokens"], ax["page_size"]
    if i == 0:  # the first sequence: no context, only its verify tokens
        n_pages = int(indptr[1] - indptr[0])
        last[0] = Q - (n_pages - 1) * P
        assert 1 <= int(last[0]) <= P, "test sizes: set 0 cannot hold exactly the verify tokens"
    B, H = ax["batch_size"], ax["num_qo_heads"]
    sharp = [1.0, 2.0, 0.5][i % 3]
    return {"q_nope": (torch.randn(B, Q, H, ax["head_dim_ckv"], generator=g) * sharp).bfloat16(),
            "q_pe": (torch.randn(B, Q, H, ax["head_dim_kpe"], generator=g) * 2.0).bfloat16(),
            "ckv_cache": torch.randn(ax["num_pages"], P, ax["head_dim_ckv"], generator=g).bfloat16(),
            "kpe_cache": torch.randn(ax["num_pages"], P, ax["head_dim_kpe"], generator=g).bfloat16(),
            "kv_indptr": indptr, "kv_indices": indices, "kv_last_page_len": last,
            "sm_scale": [SM_SCALE, torch.tensor(SM_SCALE, dtype=torch.float32), 0.4][i % 3]}


def _slots(x, b, page_size):
    """(page, offset) of every token of sequence b, in token order."""
    start, end = int(x["kv_indptr"][b]), int(x["kv_indptr"][b + 1])
    n = (end - start - 1) * page_size + int(x["kv_last_page_len"][b])
    return [(int(p), s) for p in x["kv_indices"][start:end].tolist() for s in range(page_size)][:n]


def mla_verify_expected(ax, x):
    Q, H, P = ax["num_verify_tokens"], ax["num_qo_heads"], ax["page_size"]
    scale = float(x["sm_scale"])
    out = torch.zeros(ax["batch_size"], Q, H, ax["head_dim_ckv"], dtype=torch.float64)
    lse = torch.zeros(ax["batch_size"], Q, H, dtype=torch.float64)
    for b in range(ax["batch_size"]):
        slots = _slots(x, b, P)
        n = len(slots)
        for i in range(Q):
            seen = slots[: n - Q + i + 1]  # the context, the verify tokens before token i, and token i
            ckv = torch.stack([x["ckv_cache"][p, s] for p, s in seen]).double()  # [seen, 512]
            kpe = torch.stack([x["kpe_cache"][p, s] for p, s in seen]).double()  # [seen, 64]
            for h in range(H):
                logit = (ckv @ x["q_nope"][b, i, h].double() + kpe @ x["q_pe"][b, i, h].double()) * scale
                m = logit.max()
                w = torch.exp(logit - m)
                out[b, i, h] = (w[:, None] * ckv).sum(0) / w.sum()
                lse[b, i, h] = (m + torch.log(w.sum())) / LN2
    return {"output": out, "lse": lse}


CASES = {
    "mla_paged_verify_causal_h16_ckv512_kpe64_ps1": Case(PS1_SETS, mla_verify_inputs, mla_verify_expected,
                                                         derived=verify_derived),
}
