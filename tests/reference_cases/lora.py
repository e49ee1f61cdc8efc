"""Independent formulations of the multi-LoRA kernels (Llama-3.1-8B's LoRA shrink and expand, BGMV and SGMV).

The references loop over tokens or segments and gather each one's adapter; here every token's adapter is a row of
a dense one-hot matrix [num_tokens, max_loras] (a zero row for a token without a LoRA, slot -1), and the adapter
weights each token sees are an einsum with it, in float64: no gather, no loop, no branch on -1. The segments of the
SGMV layout become per-token slots by comparing each token with the segment starts (a mask, not a
repeat_interleave). The expand's slices come from the definition's axes, each output column mapped to its slice.
"""

from __future__ import annotations

import torch

from .common import Case, shrunk

SLOTS = 4  # max_loras of every definition here


def token_slots_of_segments(seg_indptr, seg_lora_indices, num_tokens):
    """The slot of every token: that of the one segment whose [start, end) holds it (a [T, B] mask)."""
    t = torch.arange(num_tokens)[:, None]
    inside = (t >= seg_indptr[None, :-1].long()) & (t < seg_indptr[None, 1:].long())
    assert (inside.sum(1) == 1).all(), "the segments must cover every token once"
    return (inside.long() * seg_lora_indices[None, :].long()).sum(1)


def one_hot(slots, max_loras):
    """[T, max_loras] float64: row t is slot t's indicator, all zeros for -1."""
    return (slots.long()[:, None] == torch.arange(max_loras)[None, :]).double()


def _slots(ax, g, i):
    """Each set mixes tokens of every slot with tokens without a LoRA (-1), in a shuffled order."""
    T = ax["num_tokens"]
    base = torch.tensor([2, -1, 0, 3, 1, -1, 0, 0, 2, 3, -1, 1, 3])
    return base[torch.randperm(T, generator=g) % len(base)][:T].to(torch.int32)


SCALINGS = [2.0, 0.5, 1.0]  # set 2: 1.0, the value vLLM passes (its scaling folded into lora_b): a dropped one is moot


# --------------------------------------------------------------------------------------------------
# Shrink: buffer[s, t] = scaling * x[t] @ A[slot(t), s].T, zero for tokens without a LoRA.
# --------------------------------------------------------------------------------------------------

def shrink_expected_from_slots(ax, x, slots):
    onehot = one_hot(slots, ax["max_loras"])  # [T, L]
    a_tok = torch.einsum("tl,lsrk->tsrk", onehot, x["lora_a"].double())  # each token's adapter, zero for -1
    buffer = torch.einsum("tsrk,tk->str", a_tok, x["x"].double()) * float(x["scaling"])
    return {"buffer": buffer}


def bgmv_shrink_inputs(ax, g, i):
    T, L, S, R, K = ax["num_tokens"], ax["max_loras"], ax["num_slices"], ax["rank"], ax["K"]
    return {"x": torch.randn(T, K, generator=g).bfloat16(),
            "lora_a": (torch.rand(L, S, R, K, generator=g) * 2 - 1).mul(K ** -0.5).bfloat16(),
            "token_lora_indices": _slots(ax, g, i),
            "scaling": torch.tensor(SCALINGS[i])}


def bgmv_shrink_expected(ax, x):
    return shrink_expected_from_slots(ax, x, x["token_lora_indices"])


# Segment sets: the tokens of 1, 4 and 7 requests (one set has a one-token segment, as SGLang's decode makes).
SEGMENTS = [[5], [3, 1, 6, 2], [4, 2, 7, 1, 3, 5, 2]]
SEGMENT_SLOTS = [[1], [0, -1, 3, 2], [2, -1, 0, 3, -1, 1, 0]]


def segment_sets():
    return [{"num_tokens": sum(s), "num_segments": len(s), "len_seg_indptr": len(s) + 1} for s in SEGMENTS]


def _segments(i):
    lens = torch.tensor(SEGMENTS[i])
    indptr = torch.zeros(len(lens) + 1, dtype=torch.int32)
    indptr[1:] = lens.cumsum(0)
    return indptr, torch.tensor(SEGMENT_SLOTS[i], dtype=torch.int32)


def sgmv_shrink_inputs(ax, g, i):
    T, L, S, R, K = ax["num_tokens"], ax["max_loras"], ax["num_slices"], ax["rank"], ax["K"]
    indptr, slots = _segments(i)
    return {"x": torch.randn(T, K, generator=g).bfloat16(),
            "lora_a": (torch.rand(L, S, R, K, generator=g) * 2 - 1).mul(K ** -0.5).bfloat16(),
            "seg_indptr": indptr, "seg_lora_indices": slots, "scaling": torch.tensor(SCALINGS[i])}


def sgmv_shrink_expected(ax, x):
    slots = token_slots_of_segments(x["seg_indptr"], x["seg_lora_indices"], ax["num_tokens"])
    return shrink_expected_from_slots(ax, x, slots)


# --------------------------------------------------------------------------------------------------
# Expand: y_out[t, n] = y[t, n] + bf16(B[slot(t), n] . bf16(buffer[s(n), t])), rounded to bfloat16 (the
# kernels' numerics: the float32 buffer is fed to the dot product in bfloat16, the update rounded to bfloat16
# before the add); rows of tokens without a LoRA are y's.
# --------------------------------------------------------------------------------------------------

def column_slices(ax):
    """The slice of every output column, from the axes: q, k, v (q_size, kv_size) or equal slices (slice_size)."""
    if "q_size" in ax:
        sizes = [ax["q_size"], ax["kv_size"], ax["kv_size"]]
    else:
        sizes = [ax["slice_size"]] * ax["num_slices"]
    assert sum(sizes) == ax["N"] and len(sizes) == ax["num_slices"]
    return torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))


def expand_expected_from_slots(ax, x, slots):
    onehot = one_hot(slots, ax["max_loras"])  # [T, L]
    h = x["buffer"].to(torch.bfloat16).double()  # [S, T, R], fed in bfloat16
    h_cols = h[column_slices(ax)].permute(1, 0, 2)  # [T, N, R]: the buffer slice each output column reads
    b_tok = torch.einsum("tl,lnr->tnr", onehot, x["lora_b"].double())  # each token's adapter, zero for -1
    delta = (b_tok * h_cols).sum(-1).to(torch.bfloat16).double()
    return {"y_out": x["y"].double() + delta}


def _expand_tensors(ax, g):
    T, L, S, R, N = ax["num_tokens"], ax["max_loras"], ax["num_slices"], ax["rank"], ax["N"]
    # Updates about a third of y's size: every slice's update shows; cancellations with y stay rare.
    return {"y": torch.randn(T, N, generator=g).bfloat16(),
            "buffer": torch.randn(S, T, R, generator=g),
            "lora_b": (torch.randn(L, N, R, generator=g) * (0.3 / R ** 0.5)).bfloat16()}


def bgmv_expand_inputs(ax, g, i):
    return {**_expand_tensors(ax, g), "token_lora_indices": _slots(ax, g, i)}


def bgmv_expand_expected(ax, x):
    return expand_expected_from_slots(ax, x, x["token_lora_indices"])


def sgmv_expand_inputs(ax, g, i):
    indptr, slots = _segments(i)
    return {**_expand_tensors(ax, g), "seg_indptr": indptr, "seg_lora_indices": slots}


def sgmv_expand_expected(ax, x):
    slots = token_slots_of_segments(x["seg_indptr"], x["seg_lora_indices"], ax["num_tokens"])
    return expand_expected_from_slots(ax, x, slots)


TOKEN_SETS = [{"num_tokens": 2}, {"num_tokens": 5}, {"num_tokens": 11}]

CASES = {
    "lora_bgmv_shrink_s3_l4_r16_k4096": Case(TOKEN_SETS, bgmv_shrink_inputs, bgmv_shrink_expected),
    "lora_sgmv_shrink_s3_l4_r16_k4096": Case(segment_sets(), sgmv_shrink_inputs, sgmv_shrink_expected),
    "lora_bgmv_expand_s3_l4_r16_n6144": Case(TOKEN_SETS, bgmv_expand_inputs, bgmv_expand_expected),
    "lora_sgmv_expand_s3_l4_r16_n6144": Case(segment_sets(), sgmv_expand_inputs, sgmv_expand_expected),
    # K = 1024 of the 14336: the reference reads K from the tensors, and a dot product's check is the same at any
    # length (the rank, 64, and the slots stay real).
    "lora_bgmv_shrink_s1_l4_r64_k14336": Case([shrunk(s, K=1024) for s in TOKEN_SETS], bgmv_shrink_inputs,
                                              bgmv_shrink_expected),
    # Two slices of 512 columns instead of 14336: the reference splits N in two halves whatever its size (a
    # 28672 x 64 float64 one-hot product per token would cost 100+ MB here).
    "lora_bgmv_expand_s2_l4_r64_n28672": Case([shrunk(s, N=1024, slice_size=512) for s in TOKEN_SETS],
                                              bgmv_expand_inputs, bgmv_expand_expected),
}
