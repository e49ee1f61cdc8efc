"""Speculative decoding's verify step: the target model attends `q` tokens per sequence (the last verified token
and the drafts after it) over the paged KV cache, their K/V already written behind the sequence's context.

A step is {batch, context, sigma, q, what} (and, for a tree, `steps` and `topk`): `batch` sequences whose verified
context lengths are log-normal around `context` (core.seq_lens, at least 16 tokens as in the decode scenarios),
each followed by its q verify tokens, paged by core.paged_kv from one pool (25% larger than used, pages in random
order). A chain of drafts (vLLM's num_speculative_tokens, EAGLE with top-1 drafting) is causal among the q
tokens; a tree (SGLang's EAGLE-2/3 drafting with speculative_eagle_topk > 1) comes with its mask among them,
drawn by eagle_tree as SGLang's drafter builds it.
"""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from . import core
from .families import i32
from .scenarios import MAX_CONTEXT
from .spec import Spec


def verify_call(seed: int, step: Mapping, page_size: int) -> str:
    return (f"g = core.rng({seed}); lens = core.seq_lens(g, {step['batch']}, {step['context']}, low=16, "
            f"high={MAX_CONTEXT}, sigma={step['sigma']}); kv = core.paged_kv(g, lens + {step['q']}, {page_size})")


def zipf_norm(s: float, vocab: int, head: int = 64) -> float:
    """sum_{r=1}^{vocab} r^-s, the first head - 1 terms summed and the rest by Euler-Maclaurin (the integral, the
    end points' halves and the first derivative correction): within 1e-10 relative for s in [1.4, 2.5] over 128256
    tokens, without summing 128256 powers per draw."""
    n, m = float(vocab), float(head)
    terms = np.sum(np.arange(1, head, dtype=np.float64) ** -s)
    return float(terms + (m ** (1 - s) - n ** (1 - s)) / (s - 1) + (m ** -s + n ** -s) / 2
                 + s / 12 * (m ** (-s - 1) - n ** (-s - 1)))


def child_probs(g: np.random.Generator, topk: int, vocab: int) -> np.ndarray:
    """The top-k probabilities of a peaked next-token distribution, largest first: probability proportional to
    rank^-s over the vocabulary, s uniform in [1.4, 2.5] (the bench's power_law_probs rows)."""
    s = 1.4 + 1.1 * g.random()
    return np.arange(1, topk + 1, dtype=np.float64) ** -s / zipf_norm(s, vocab)


def eagle_tree(g: np.random.Generator, n: int, steps: int, topk: int, vocab: int) -> np.ndarray:
    """Parents of the n verify tokens of one request (-1 for token 0, the root: the last verified token), as
    SGLang's EAGLE drafter selects them (select_top_k_tokens, then organize_draft_results): the root's top-k
    children, then for steps - 1 more levels every one of the top-k nodes of the previous level expands its top-k
    children (a cumulative score: the product of the probabilities on the path), the level's top-k by score
    expanding next; of all candidates the n - 1 of highest score are kept, in candidate order (levels in order, so
    a parent comes before its children; a child's score is below its parent's, so a kept node's parent is kept).
    The draft model's top-k probabilities are child_probs draws."""
    score, parent = [], []  # per candidate: cumulative score, parent candidate (-1: the root)
    p = child_probs(g, topk, vocab)
    score.extend(p)
    parent.extend([-1] * topk)
    frontier = list(range(topk))
    for _ in range(steps - 1):
        first = len(score)
        for f in frontier:
            p = child_probs(g, topk, vocab)
            score.extend(score[f] * p)
            parent.extend([f] * topk)
        level = np.arange(first, len(score))
        frontier = list(level[np.argsort(-np.asarray(score)[level], kind="stable")[:topk]])
    kept = np.sort(np.argsort(-np.asarray(score), kind="stable")[:n - 1])
    node = {int(c): i + 1 for i, c in enumerate(kept)}
    return np.array([-1] + [0 if parent[c] < 0 else node[parent[c]] for c in kept], dtype=np.int64)


def tree_mask(parents: np.ndarray) -> np.ndarray:
    """[n, n] bool: token i sees token j iff j is i or one of its ancestors (SGLang's QLEN_ONLY tree mask)."""
    n = len(parents)
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        j = i
        while j >= 0:
            mask[i, j] = True
            j = int(parents[j])
    return mask


# The drawn (random) tensors of a verify step by cache layout: GQA's K and V caches, or MLA's latent and rotary caches
# (absorbed queries: q_nope in the latent space and q_pe).
RANDOM_INPUTS = {"gqa": ("q", "k_cache", "v_cache"), "mla": ("q_nope", "q_pe", "ckv_cache", "kpe_cache")}


def paged_verify(name: str, step: Mapping, seed: int, page_size: int, sm_scale: float, text: str,
                 fields: Optional[Mapping] = None, vocab: int = 0, layout: str = "gqa") -> Spec:
    """A verify step over the paged cache: lens = the verified contexts, the q verify tokens behind them (kv =
    paged_kv(g, lens + q)). With `steps` and `topk` in the step, tree_mask [batch, q, q] follows from the same g:
    one eagle_tree per request. `layout` names the drawn tensors (RANDOM_INPUTS). Fields: what, call, q, drafts
    (q - 1), kv_tokens (verify tokens included), tree (the tree's draw, or ""), seed."""
    batch, q = int(step["batch"]), int(step["q"])
    g = core.rng(seed)
    lens = core.seq_lens(g, batch, int(step["context"]), low=16, high=MAX_CONTEXT, sigma=float(step["sigma"]))
    kv = core.paged_kv(g, lens + q, page_size)
    inputs = {**{t: "random" for t in RANDOM_INPUTS[layout]}, "kv_indptr": i32(kv["kv_indptr"]),
              "kv_indices": i32(kv["kv_indices"]), "kv_last_page_len": i32(kv["kv_last_page_len"])}
    key, tree = f"verify_b{batch}_ctx{step['context']}_q{q}", ""
    if "topk" in step:
        steps, topk = int(step["steps"]), int(step["topk"])
        inputs["tree_mask"] = np.stack([tree_mask(eagle_tree(g, q, steps, topk, vocab)) for _ in range(batch)])
        key += f"_topk{topk}"
        tree = (f"then per request tree_mask(eagle_tree(g, {q}, steps={steps}, topk={topk}, vocab={vocab})) "
                f"(SGLang's --speculative-num-steps {steps} --speculative-eagle-topk {topk} "
                f"--speculative-num-draft-tokens {q})")
    inputs["sm_scale"] = sm_scale
    f = {**(fields or {}), "what": step["what"], "call": verify_call(seed, step, page_size), "q": q, "drafts": q - 1,
         "kv_tokens": int((lens + q).sum()), "tree": tree, "seed": seed}
    return Spec(name, key,
                {"batch_size": batch, "num_verify_tokens": q, "num_pages": kv["num_pages"], "len_indptr": batch + 1,
                 "num_kv_indices": len(kv["kv_indices"])},
                inputs, seed, text.format_map(f), stage="decode", num_tokens=batch * q)
