"""Speculative decoding's verify attention over a paged KV cache: k + 1 query tokens per sequence, the last of
its cache, with bottom-right causal masking (a chain of drafts, page size 16) or a draft tree's mask (page size 1)
(split-K over the context)."""

from __future__ import annotations

import math
import sys

from . import TritonCase
from .common import ROOT, bf16, check_forced


def verify_inputs(d, g, seed, lens, num_q, sm_scale_as_tensor, masks=None, kv_heads=2):
    """Sequences of the given lengths (each >= num_q) in a paged cache laid out by the workload generator's
    allocator, num_q verify tokens each; 2 KV heads (8 query heads, the real group of 4) instead of 8.
    masks: [batch, num_q, num_q] bool for the tree definition (inserted before sm_scale)."""
    import numpy as np
    import torch
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from generator.workloadgen import core

    ax = d["axes"]
    hq, hk, D, ps = (ax[n]["value"] for n in ("num_qo_heads", "num_kv_heads", "head_dim", "page_size"))
    hq, hk = hq // hk * kv_heads, kv_heads
    assert min(lens) >= num_q
    layout = core.paged_kv(core.rng(seed), np.asarray(lens), ps)
    num_pages, batch = layout["num_pages"], len(lens)
    inputs = {
        "q": bf16(torch.randn(batch, num_q, hq, D, generator=g) * 2.0),
        "k_cache": bf16(torch.randn(num_pages, ps, hk, D, generator=g)),
        "v_cache": bf16(torch.randn(num_pages, ps, hk, D, generator=g)),
        "kv_indptr": torch.from_numpy(layout["kv_indptr"]).to(torch.int32),
        "kv_indices": torch.from_numpy(layout["kv_indices"]).to(torch.int32),
        "kv_last_page_len": torch.from_numpy(layout["kv_last_page_len"]).to(torch.int32),
    }
    if masks is not None:
        inputs["tree_mask"] = masks
    sm_scale = 1.0 / math.sqrt(D)
    inputs["sm_scale"] = torch.tensor(sm_scale, dtype=torch.float32) if sm_scale_as_tensor else sm_scale
    axes = {"batch_size": batch, "num_verify_tokens": num_q, "num_pages": num_pages, "len_indptr": batch + 1,
            "num_kv_indices": int(layout["kv_indptr"][-1]), "num_qo_heads": hq, "num_kv_heads": hk}
    return axes, inputs


# (lengths, verify tokens): set 0 has a sequence with no context (kv_len == num_verify_tokens) and one whose last
# 64-key step is partly hidden from the early verify tokens; set 1's 66-token sequence, split in two, leaves the
# second split (keys 64, 65) with nothing the first three verify tokens see; set 2 takes 2 splits by itself; set 3's
# 17 verify tokens are 68 query rows per KV head, two row blocks of 64.
CAUSAL_SETS = (([4, 17, 70], 4), ([16, 33, 5, 66], 5), ([600], 3), ([17, 40], 17))


def causal_inputs(d, g):
    sets = []
    for i, (lens, num_q) in enumerate(CAUSAL_SETS):
        axes, inputs = verify_inputs(d, g, 400 + i, lens, num_q, sm_scale_as_tensor=(i == 1))
        sets.append((f"kv_len={lens} num_verify_tokens={num_q} num_kv_heads=2", axes, inputs))
    return sets


def random_masks(g, batch, n, kind):
    """[batch, n, n] bool: 'tree', a random tree per sequence (node i sees itself and its ancestors; node 0 the
    root); 'chain', the causal mask; 'any', random visibility with only the diagonal guaranteed (the definition
    assumes no more)."""
    import torch
    masks = torch.zeros(batch, n, n, dtype=torch.bool)
    for b in range(batch):
        if kind == "any":
            masks[b] = torch.rand(n, n, generator=g) < 0.5
        else:
            for i in range(n):
                j = i
                while j >= 0:
                    masks[b, i, j] = True
                    j = (j - 1) if kind == "chain" else (int(torch.randint(0, j, (1,), generator=g)) if j else -1)
        masks[b].fill_diagonal_(True)
    return masks


# (lengths, verify tokens, mask kind): set 0 has a sequence with no context (only the tree);
# set 1 masks that are no tree (a row may hide the root), set 2 chains (top-1 drafting) over 600 keys, 2 splits;
# set 3 two row blocks (17 verify tokens).
TREE_SETS = (([8, 30, 70], 8, "tree"), ([40, 6, 66], 6, "any"), ([600], 4, "chain"), ([17, 50], 17, "tree"))


def tree_inputs(d, g):
    sets = []
    for i, (lens, num_q, kind) in enumerate(TREE_SETS):
        masks = random_masks(g, len(lens), num_q, kind)
        axes, inputs = verify_inputs(d, g, 500 + i, lens, num_q, sm_scale_as_tensor=(i == 1), masks=masks)
        sets.append((f"kv_len={lens} num_verify_tokens={num_q} {kind} masks num_kv_heads=2", axes, inputs))
    return sets


def verify_extra(module, index, label, axes, inputs, outputs, expected, d):
    # Split-K paths the heuristic does not take on these short contexts: 2 splits of set 1 put keys 64 and 65 (verify
    # tokens) in a split of their own, where rows that see neither have nothing (a -inf partial lse) and the short
    # sequences' second split is empty; 7 splits of 600 keys end in a partial step and two empty splits. (The merge
    # runs a program per verify token and query head under the interpreter: one forced run per path.)
    return check_forced(label, d, axes, expected, "num_splits", {1: (2,), 2: (7,)}.get(index, ()),
                        lambda s: dict(zip(("output", "lse"), module.paged_verify(*inputs.values(), num_splits=s))))


def verify_shapes(d):
    import torch
    bf = torch.bfloat16
    hq, hk, D, ps = (d["axes"][n]["value"] for n in ("num_qo_heads", "num_kv_heads", "head_dim", "page_size"))
    tree = "tree_mask" in d["inputs"]
    # batch 1 with 4 and 8 verify tokens (16 and 32 query rows) over 4k contexts (16 splits, the merge), 64
    # sequences (one split), and 9 verify tokens (36 query rows: the 64-row tile, 8 warps). The merge's split count
    # is the same each time (one compile of it). More than 16 verify tokens (row blocks) compile the same kernel with
    # a row-block count other than 1: left to the interpreter's set 3.
    for batch, num_q, ctx in ((1, 4, 4096), (1, 8, 4096), (64, 4, 1024), (64, 9, 512)):
        pages_per_seq = ctx // ps
        num_pages = batch * pages_per_seq
        cache = torch.empty(num_pages, ps, hk, D, dtype=bf)
        args = [torch.empty(batch, num_q, hq, D, dtype=bf), cache, cache,
                torch.arange(0, num_pages + 1, pages_per_seq, dtype=torch.int32),
                torch.arange(num_pages, dtype=torch.int32), torch.full((batch,), ps, dtype=torch.int32)]
        if tree:
            args.append(torch.empty(batch, num_q, num_q, dtype=torch.bool))
        yield (*args, 1.0 / math.sqrt(D))


CASES = {"gqa_paged_verify_causal_h32_kv8_d128_ps16": TritonCase(causal_inputs, verify_shapes, verify_extra),
         "gqa_paged_verify_tree_h32_kv8_d128_ps1": TritonCase(tree_inputs, verify_shapes, verify_extra)}
