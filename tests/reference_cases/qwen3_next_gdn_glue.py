"""Independent formulations for the copy kernels around Qwen3-Next-80B-A3B's gated delta net (TP4).

- gdn_qkvzba_split_h4_v8_d128: every output column's source column in in_proj_qkvz / in_proj_ba written
  as integer arithmetic from vLLM's layout (per key head h: [q | k | v of value heads 2h, 2h+1 | z of
  the same], and [b of 2h, 2h+1 | a of the same]), then one index_select: no per-group slicing or cat.
- gdn_state_gather_v8_d128 / gdn_state_scatter_v8_d128: the slot lookup as a dense one-hot matrix P
  [seq, slot] in float64 (exact for copies): initial_state = (P * has_initial_state) @ pool, and the
  written pool = (1 - written slots) * pool + P^T @ final_state: no indexing of the pool at all.
"""

from __future__ import annotations

import torch

from .common import Case

# --------------------------------------------------------------------------------------------------
# qkvz / ba split
# --------------------------------------------------------------------------------------------------

def split_sources(HK, HV, DK, DV):
    """Source columns of mixed_qkv, z (flattened) and b, a in the interleaved projections."""
    r = HV // HK
    group = 2 * DK + 2 * r * DV
    qkv = []
    for c in range(2 * HK * DK + HV * DV):
        if c < 2 * HK * DK:  # q of key head c // DK, then (past HK * DK) k
            part, rest = divmod(c, HK * DK)
            head, d = divmod(rest, DK)
            qkv.append(head * group + part * DK + d)
        else:
            vh, d = divmod(c - 2 * HK * DK, DV)
            qkv.append((vh // r) * group + 2 * DK + (vh % r) * DV + d)
    z = [(vh // r) * group + 2 * DK + r * DV + (vh % r) * DV + d for vh in range(HV) for d in range(DV)]
    b = [(vh // r) * 2 * r + vh % r for vh in range(HV)]
    a = [(vh // r) * 2 * r + r + vh % r for vh in range(HV)]
    return qkv, z, b, a


def split_inputs(ax, g, i):
    T = ax["num_tokens"]
    # Distinct values per column (a column ramp plus noise) so that any misplaced column shows.
    ramp = torch.arange(ax["qkvz_dim"], dtype=torch.float32) / 64.0
    return {"mixed_qkvz": (ramp + torch.randn(T, ax["qkvz_dim"], generator=g)).bfloat16(),
            "mixed_ba": (torch.arange(ax["ba_dim"]) + torch.randn(T, ax["ba_dim"], generator=g)).bfloat16()}


def split_expected(ax, x):
    T, HV, DV = ax["num_tokens"], ax["num_v_heads"], ax["head_v_dim"]
    qkv, z, b, a = split_sources(ax["num_k_heads"], HV, ax["head_k_dim"], DV)
    src, ba = x["mixed_qkvz"].double(), x["mixed_ba"].double()
    take = lambda t, cols: t.index_select(1, torch.tensor(cols))  # noqa: E731
    return {"mixed_qkv": take(src, qkv), "z": take(src, z).reshape(T, HV, DV), "b": take(ba, b), "a": take(ba, a)}


# --------------------------------------------------------------------------------------------------
# State gather / scatter (float32 pool, [slot, head, V, K])
# --------------------------------------------------------------------------------------------------

def state_derived(ax):
    return {"num_slots": ax["num_seqs"] + ax.get("free_slots", 2)}


# Set 0: one fresh prompt; set 1: fresh and continued alternating; set 2: mostly continued, one fresh.
HAS_INITIAL = {0: lambda n: [False] * n, 1: lambda n: [j % 2 == 1 for j in range(n)],
               2: lambda n: [j != 2 for j in range(n)]}


def state_inputs(ax, g, i, final=False):
    N, S = ax["num_seqs"], ax["num_slots"]
    shape = (ax["num_v_heads"], ax["head_v_dim"], ax["head_k_dim"])
    x = {"ssm_state": torch.randn((S,) + shape, generator=g),
         "state_indices": torch.randperm(S, generator=g)[:N].int()}
    if final:
        x["final_state"] = torch.randn((N,) + shape, generator=g) * 3
    else:
        x["has_initial_state"] = torch.tensor(HAS_INITIAL[i % 3](N))
    return x


def one_hot(ax, indices):
    return (indices.long()[:, None] == torch.arange(ax["num_slots"])[None, :]).double()  # [seq, slot]


def gather_expected(ax, x):
    P = one_hot(ax, x["state_indices"]) * x["has_initial_state"].double()[:, None]
    return {"initial_state": torch.einsum("ns,shvk->nhvk", P, x["ssm_state"].double())}


def scatter_expected(ax, x):
    P = one_hot(ax, x["state_indices"])
    written = P.sum(dim=0)  # 1 for the step's slots, 0 for the others
    pool = x["ssm_state"].double()
    new = (1.0 - written)[:, None, None, None] * pool + torch.einsum("ns,nhvk->shvk", P, x["final_state"].double())
    return {"new_ssm_state": new}


STATE_SETS = [{"num_seqs": 1}, {"num_seqs": 4, "free_slots": 5}, {"num_seqs": 5, "free_slots": 1}]

CASES = {
    "gdn_qkvzba_split_h4_v8_d128": Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 7}], split_inputs,
                                        split_expected),
    "gdn_state_gather_v8_d128": Case(STATE_SETS, state_inputs, gather_expected, derived=state_derived),
    "gdn_state_scatter_v8_d128": Case(STATE_SETS, lambda ax, g, i: state_inputs(ax, g, i, final=True),
                                      scatter_expected, derived=state_derived),
}
