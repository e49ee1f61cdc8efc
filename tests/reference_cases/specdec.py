"""Independent formulations of speculative decoding's verify-step kernels for Llama-3.1-8B (TP1): the verify attention
over a paged KV cache with a chain of drafts (vLLM) or an EAGLE draft tree (SGLang), and the rejection sampler.

- Chain verify: SDPA in float64 on each sequence's gathered pages with a causal mask offset by the context
  (llama.attend), as the paged prefill's check; the queries come per sequence instead of by qo_indptr.
- Tree verify: no mask at all: each verify token attends the keys it may see, gathered (the context and the
  verify tokens its tree row lists), one SDPA per token, in float64.
- Rejection sampling: every acceptance test at once as u * p_draft <= p_target in float64 (the reference divides
  in float32), the accepted prefix as a cumulative product, and the draw as vLLM writes it, the exponential race
  argmax(w / q) with q = exp(-gumbel) and w normalised, in float64 (the reference takes ln w + g in float32).
"""

from __future__ import annotations

import torch

from .common import Case, shrunk
from .llama import SM_SCALE, attend, gather_sequence, kv_lengths

# --------------------------------------------------------------------------------------------------
# Verify attention. Each set: (page size 16 or 1 by the definition) pages per sequence as listed, the last page's
# fill drawn so that every sequence holds at least num_verify_tokens tokens; one sequence of the first set has no
# context at all (kv_len == num_verify_tokens: only the verify tokens to attend).
# --------------------------------------------------------------------------------------------------

VERIFY_SETS = [{"batch_size": 1, "num_verify_tokens": 4, "num_kv_indices": 1, "num_pages": 2},
               {"batch_size": 3, "num_verify_tokens": 5, "num_kv_indices": 7, "num_pages": 12},
               {"batch_size": 4, "num_verify_tokens": 3, "num_kv_indices": 9, "num_pages": 9}]
# Page size 1: a page per token, so more pages for the same few tokens per sequence.
TREE_SETS = [{"batch_size": 1, "num_verify_tokens": 8, "num_kv_indices": 8, "num_pages": 10},
             {"batch_size": 3, "num_verify_tokens": 6, "num_kv_indices": 40, "num_pages": 50},
             {"batch_size": 4, "num_verify_tokens": 4, "num_kv_indices": 37, "num_pages": 37}]


def verify_page_table(ax, g):
    """kv_indptr, kv_indices, kv_last_page_len with every sequence at least num_verify_tokens tokens long."""
    B, n, P, Q = ax["batch_size"], ax["num_kv_indices"], ax["page_size"], ax["num_verify_tokens"]
    min_pages = -(-Q // P)
    extra = n - B * min_pages
    assert extra >= 0, "test sizes: too few pages for the verify tokens"
    counts = torch.full((B,), min_pages, dtype=torch.int64)
    for _ in range(extra):
        counts[int(torch.randint(0, B, (1,), generator=g))] += 1
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    indices = torch.randperm(ax["num_pages"], generator=g)[:n]
    last = torch.randint(1, P + 1, (B,), generator=g)
    short = counts * P - (P - last) < Q  # a one-page sequence whose fill is below Q: fill it up to Q
    last = torch.where(short, torch.full_like(last, Q - (min_pages - 1) * P), last)
    return indptr.int(), indices.int(), last.int()


def random_tree(g, n, chain=False):
    """[n, n] mask of a random tree over n nodes (node 0 the root; each node's parent an earlier node): node i sees
    itself and its ancestors. chain: every node's parent is the one before it."""
    parent = [-1] + [i - 1 if chain else int(torch.randint(0, i, (1,), generator=g)) for i in range(1, n)]
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        j = i
        while j >= 0:
            mask[i, j] = True
            j = parent[j]
    return mask


def _verify_inputs(ax, g, i, tree):
    sharp = [1.0, 3.0, 0.5][i % 3]
    indptr, indices, last = verify_page_table(ax, g)
    if i == 0:  # the first sequence: no context, only its verify tokens
        n_pages = int(indptr[1] - indptr[0])
        last[0] = ax["num_verify_tokens"] - (n_pages - 1) * ax["page_size"]
        assert 1 <= int(last[0]) <= ax["page_size"], "test sizes: set 0 cannot hold exactly the verify tokens"
    shape = (ax["num_pages"], ax["page_size"], ax["num_kv_heads"], ax["head_dim"])
    sm_scale = [SM_SCALE, torch.tensor(SM_SCALE, dtype=torch.float32), 0.1][i % 3]
    x = {"q": (torch.randn(ax["batch_size"], ax["num_verify_tokens"], ax["num_qo_heads"], ax["head_dim"], generator=g)
               * sharp).bfloat16(),
         "k_cache": torch.randn(shape, generator=g).bfloat16(), "v_cache": torch.randn(shape, generator=g).bfloat16(),
         "kv_indptr": indptr, "kv_indices": indices, "kv_last_page_len": last}
    if tree:
        # Sets 0 and 1: branching trees; set 2: chains (top-1 drafting), where the tree mask is the causal one.
        x["tree_mask"] = torch.stack([random_tree(g, ax["num_verify_tokens"], chain=(i == 2))
                                      for _ in range(ax["batch_size"])])
    x["sm_scale"] = sm_scale
    return x


def verify_inputs(ax, g, i):
    return _verify_inputs(ax, g, i, tree=False)


def tree_inputs(ax, g, i):
    return _verify_inputs(ax, g, i, tree=True)


def _sequences(ax, x):
    """(b, kv_len, its keys, its values) per sequence, gathered from the pages."""
    for b, n in enumerate(kv_lengths(x["kv_indptr"], x["kv_last_page_len"], ax["page_size"])):
        yield (b, n, gather_sequence(x["k_cache"], x["kv_indptr"], x["kv_indices"], b, n),
               gather_sequence(x["v_cache"], x["kv_indptr"], x["kv_indices"], b, n))


def verify_expected(ax, x):
    Q = ax["num_verify_tokens"]
    outs, lses = [], []
    for b, n, k, v in _sequences(ax, x):
        out, lse = attend(x["q"][b].double(), k, v, float(x["sm_scale"]), causal_offset=n - Q)
        outs.append(out)
        lses.append(lse)
    return {"output": torch.stack(outs), "lse": torch.stack(lses)}


def tree_expected(ax, x):
    """Per verify token, only the keys it may see, gathered (no mask): the context, then its tree row's tokens."""
    Q = ax["num_verify_tokens"]
    outs, lses = [], []
    for b, n, k, v in _sequences(ax, x):
        o_b, l_b = [], []
        for i in range(Q):
            keys = list(range(n - Q)) + [n - Q + j for j in range(Q) if bool(x["tree_mask"][b, i, j])]
            idx = torch.tensor(keys, dtype=torch.int64)
            out, lse = attend(x["q"][b, i:i + 1].double(), k[idx], v[idx], float(x["sm_scale"]))
            o_b.append(out[0])
            l_b.append(lse[0])
        outs.append(torch.stack(o_b))
        lses.append(torch.stack(l_b))
    return {"output": torch.stack(outs), "lse": torch.stack(lses)}


def verify_derived(ax):
    return {"len_indptr": ax["batch_size"] + 1}


# --------------------------------------------------------------------------------------------------
# Rejection sampling. The vocabulary is shrunk (the tests and the draw do not depend on its size; the bench's own
# workloads run the real 128256). Draft rows are peaked, each draft token drawn from its draft row, and target rows
# a mixture of the draft row and another, so drafts are accepted often and every stop position occurs; the last
# request of every set accepts all its drafts (u = 0), so the bonus row is drawn from. Set 2 plants
# the edge cases of vLLM's test: a draft token with draft probability 0 (rejected, even where the target gives it
# mass; FlashInfer's u * p_d < p_t would accept it), a ratio p_t / p_d equal to u (accepted: >=), and u = 0 with
# target probability 0 (accepted: 0 / p_d >= 0).
# --------------------------------------------------------------------------------------------------

SAMPLING_SETS = [shrunk({"batch_size": 4, "num_speculative_tokens": 3, "num_verify_tokens": 4}, vocab_size=64),
                 shrunk({"batch_size": 6, "num_speculative_tokens": 4, "num_verify_tokens": 5}, vocab_size=257),
                 shrunk({"batch_size": 8, "num_speculative_tokens": 2, "num_verify_tokens": 3}, vocab_size=100)]


def peaked_rows(g, rows, vocab):
    logits = 3.0 * torch.randn(rows, vocab, generator=g, dtype=torch.float64)
    return torch.softmax(logits, dim=-1)


def sampling_inputs(ax, g, i):
    B, K, V = ax["batch_size"], ax["num_speculative_tokens"], ax["vocab_size"]
    draft = peaked_rows(g, B * K, V).reshape(B, K, V)
    ids = torch.multinomial(draft.reshape(B * K, V), 1, generator=g).reshape(B, K)
    mix = 0.5 + 0.5 * torch.rand(B, K + 1, 1, generator=g, dtype=torch.float64)  # targets lean to their drafts
    other = peaked_rows(g, B * (K + 1), V).reshape(B, K + 1, V)
    target = other.clone()
    target[:, :K] = mix[:, :K] * draft + (1 - mix[:, :K]) * other[:, :K]
    u = torch.rand(B, K, generator=g, dtype=torch.float64)
    draft, target = draft.float(), target.float()
    u = u.float()
    u[-1] = 0.0  # the last request accepts every draft (u = 0, a target with mass on them): the bonus row is read
    if i == 2:
        # Row 0: draft probability 0 at its first draft (the row renormalised without it), target mass there.
        t0 = int(ids[0, 0])
        draft[0, 0, t0] = 0.0
        draft[0, 0] /= draft[0, 0].sum()
        target[0, 0, t0] = max(float(target[0, 0, t0]), 0.3)
        # Row 1: its first draft's ratio exactly u (a power of two apart: exact in float32).
        t1 = int(ids[1, 0])
        target[1, 0, t1] = draft[1, 0, t1] * 0.5
        u[1, 0] = 0.5
        # Row 2: u = 0 and target probability 0 at its first draft.
        t2 = int(ids[2, 0])
        target[2, 0, t2] = 0.0
        u[2, 0] = 0.0
        # Rows 3 and 4: every draft accepted (u = 0 and a target that keeps mass on the drafts): the bonus row.
        u[3:5] = 0.0
    gumbel = -torch.log(-torch.log(torch.rand(B, V, generator=g, dtype=torch.float64).clamp(1e-20, 1 - 1e-12)))
    return {"draft_probs": draft, "draft_token_ids": ids.int(), "target_probs": target, "uniform_samples": u,
            "gumbel_noise": gumbel.float()}


def sampling_expected(ax, x):
    B, K = ax["batch_size"], ax["num_speculative_tokens"]
    ids = x["draft_token_ids"].long()
    d = x["draft_probs"].double()
    t = x["target_probs"].double()
    p_d = d.gather(2, ids[..., None])[..., 0]
    p_t = t[:, :K].gather(2, ids[..., None])[..., 0]
    accepted = (p_d > 0) & (x["uniform_samples"].double() * p_d <= p_t)
    prefix = torch.cumprod(accepted.long(), dim=1)  # 1 while every draft so far is accepted
    a = prefix.sum(dim=1)
    out = torch.full((B, K + 1), -1, dtype=torch.int64)
    q = torch.exp(-x["gumbel_noise"].double())  # vLLM's exponential noise row
    for b in range(B):
        n = int(a[b])
        out[b, :n] = ids[b, :n]
        w = (t[b, n] - d[b, n]).clamp(min=0) if n < K else t[b, K]
        out[b, n] = torch.argmax((w / w.sum()) / q[b])
    return {"output_token_ids": out, "num_accepted": a}


CASES = {
    "gqa_paged_verify_causal_h32_kv8_d128_ps16": Case(VERIFY_SETS, verify_inputs, verify_expected,
                                                       derived=verify_derived),
    "gqa_paged_verify_tree_h32_kv8_d128_ps1": Case(TREE_SETS, tree_inputs, tree_expected, derived=verify_derived),
    "chain_speculative_sampling_v128256": Case(SAMPLING_SETS, sampling_inputs, sampling_expected),
}
