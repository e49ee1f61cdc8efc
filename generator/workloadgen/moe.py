"""Seeded MoE routing for the recipes: which experts a step's tokens pick, and the layouts MoE kernels
take from that (segment sizes, SGLang's block-aligned sort).

- routed_counts: each token picks top_k DISTINCT experts of a Zipf-like popularity (Gumbel top-k);
- skewed_bias and route_ids: DeepSeek-V3's noaux_tc selection over sigmoid scores plus a skewed
  e_score_correction_bias (DeepSeek-V3, Kimi-K2);
- align_block_size and block_m: moe_align_block_size as SGLang's fused MoE runs it;
- grouped_gemms, biased_sorted_layer and gathered_layer: the engine's builders of a routed step's workloads.
"""

from __future__ import annotations

from typing import Iterator, Mapping, Optional

import numpy as np

from . import core
from .spec import Spec

MOE_TEXT = ("{model} MoE, {what}: {tokens} tokens x {top_k} experts = {rows} rows over {used} of {num_experts} "
            "experts (largest segment {largest} rows): {call}; {role}")


def routed_counts(g: np.random.Generator, num_tokens: int, num_experts: int, top_k: int, *,
                  alpha: float = 0.6) -> np.ndarray:
    """Tokens per expert when each of `num_tokens` tokens picks `top_k` DISTINCT experts.

    Expert popularity is Zipf-like as in core.skewed_counts (rank r has weight r**-alpha, ranks shuffled
    over the experts); each token draws its top_k experts without replacement in proportion to the
    popularity (Gumbel top-k). Unlike core.skewed_counts(g, num_tokens * top_k, num_experts), an expert
    never gets more than num_tokens rows (a token cannot pick an expert twice), which matters for small
    decode batches and for hot experts. alpha 0.6 puts ~7x the mean load on the hottest expert and
    ~25% of the rows on the 8 hottest (a load-balanced router on a skewed batch); 1.0 is a strongly
    imbalanced layer (~13x, ~40%)."""
    picks = routed_picks(g, num_tokens, num_experts, top_k, alpha=alpha)
    return np.bincount(picks.ravel(), minlength=num_experts).astype(np.int64)


def routed_call(seed: int, tokens: int, alpha: float, num_experts: int = 128, top_k: int = 8) -> str:
    """The draw of routed_counts as Qwen3-30B-A3B's workload descriptions record it (under its first home's
    name, qwen.routed_counts: the committed descriptions keep their bytes)."""
    return (f"g = core.rng({seed}); counts = qwen.routed_counts(g, {tokens}, {num_experts}, {top_k}, "
            f"alpha={alpha}); m_indptr = core.indptr(counts)")


def skewed_bias(g: np.random.Generator, num_experts: int, spread: float) -> np.ndarray:
    """A selection bias that makes a few experts hot: popularity ranks r (a random permutation of
    1..num_experts) give spread * standardised(-ln r), float32. Added to sigmoid scores in (0, 1),
    spread 0.02-0.08 skews loads like a trained router without a balanced bias does."""
    rank = g.permutation(num_experts).astype(np.float64) + 1.0
    z = -np.log(rank)
    return (spread * (z - z.mean()) / z.std()).astype(np.float32)


def route_ids(logits: np.ndarray, bias: np.ndarray, n_group: int = 8, topk_group: int = 4,
              top_k: int = 8) -> np.ndarray:
    """DeepSeek-V3 noaux_tc selection (the definitions' semantics), vectorised in numpy: [T, top_k] ids."""
    t, e = logits.shape
    biased = 1.0 / (1.0 + np.exp(-logits)) + bias[None, :]
    grouped = biased.reshape(t, n_group, e // n_group)
    group_scores = np.sort(grouped, axis=-1)[:, :, -2:].sum(axis=-1)
    keep = np.argsort(-group_scores, axis=-1, kind="stable")[:, :topk_group]
    mask = np.zeros((t, n_group), dtype=bool)
    np.put_along_axis(mask, keep, True, axis=1)
    masked = np.where(np.repeat(mask, e // n_group, axis=1), biased, -np.inf)
    return core.top_k_rows(masked, top_k)


def block_m(tokens: int) -> int:
    """BLOCK_SIZE_M of SGLang's tuned FP8 block-128 MoE config on H200 for this many tokens."""
    return 16 if tokens <= 512 else 64


def align_block_size(topk_ids: np.ndarray, num_experts: int, block_size: int) -> dict:
    """numpy moe_align_block_size, SGLang's convention (the definitions' semantics): bucket id + 1
    (-1 = another rank's expert is bucket 0), stable within a bucket, buckets padded to block_size."""
    flat = topk_ids.reshape(-1).astype(np.int64) + 1
    pairs, buckets = flat.size, num_experts + 1
    counts = np.bincount(flat, minlength=buckets)
    starts = np.concatenate([[0], np.cumsum((counts + block_size - 1) // block_size * block_size)])
    padded_len = pairs + buckets * (block_size - 1)
    sorted_ids = np.full(padded_len, pairs, dtype=np.int64)
    expert_ids = np.full((padded_len + block_size - 1) // block_size, -1, dtype=np.int64)
    for b in range(buckets):
        members = np.flatnonzero(flat == b)
        sorted_ids[starts[b]:starts[b] + members.size] = members
        expert_ids[starts[b] // block_size:starts[b + 1] // block_size] = b - 1
    return {"sorted_token_ids": sorted_ids, "expert_ids": expert_ids, "num_tokens_post_padded": int(starts[-1]),
            "block_size": block_size, "axes": {"block_m": block_size, "max_num_tokens_padded": padded_len,
                                               "max_num_m_blocks": len(expert_ids)}}


def grouped_gemms(gemms, tokens: int, alpha: float, what: str, seed: int, num_experts: int, top_k: int,
                  text: str = MOE_TEXT, fields: Optional[Mapping] = None, stage: Optional[str] = None
                  ) -> Iterator[Spec]:
    """The expert GEMMs of one routed MoE step: `tokens` tokens pick top_k distinct experts each
    (routed_counts with core.rng(seed) and popularity skew alpha), sorted by expert into segments
    m_indptr; rows = tokens x top_k. gemms: ((definition, role), ...), one Spec each. Template fields:
    what, tokens, top_k, rows, used (experts with rows), num_experts, largest, call, role, seed.
    num_tokens is the step's tokens (not its rows)."""
    counts = routed_counts(core.rng(seed), tokens, num_experts, top_k, alpha=alpha)
    rows = tokens * top_k
    base = {**(fields or {}), "what": what, "tokens": tokens, "top_k": top_k, "rows": rows,
            "used": int((counts > 0).sum()), "num_experts": num_experts, "largest": int(counts.max()),
            "call": routed_call(seed, tokens, alpha, num_experts, top_k), "seed": seed}
    for name, role in gemms:
        yield Spec(name, f"t{tokens}_a{alpha}", {"total_tokens": rows, "len_m_indptr": num_experts + 1},
                   {"A": "random", "B": "random", "m_indptr": np.asarray(core.indptr(counts), dtype=np.int32)},
                   seed, text.format_map({**base, "role": role}), stage=stage, num_tokens=tokens)


def biased_sorted_layer(kernels, step: Mapping, seed: int, num_experts: int, top_k: int, n_group: int,
                        topk_group: int, fields: Optional[Mapping] = None, layer: str = "",
                        ep: Optional[int] = None) -> Iterator[Spec]:
    """One routed step of a sigmoid-routed MoE layer whose experts all sit on the rank (experts TP-sharded),
    through SGLang's Triton fused-MoE path: g = core.rng(seed); bias = skewed_bias(g, num_experts, spread);
    ids = route_ids(g.standard_normal((tokens, num_experts)), bias, n_group, topk_group, top_k), sorted by
    align_block_size with block_m(tokens). step: {tokens, spread, stage, what}. kernels: ({definition, role,
    description, inputs}, ...), role one of routing, align, sorted_gemm (inputs besides the sorted layout),
    pairs (one row per token-expert pair: key pairs<rows>, num_tokens the rows). Template fields: what, seed,
    spread, tokens, experts, used (experts picked), hottest (its picks), picks, block_m, sorted_rows, and
    layer (the layer's own description template, filled first). A kernel's `key` (a template) overrides its
    role's key.

    ep: the experts are spread over ep ranks (num_experts // ep each) and the step's `rank` is the one recorded:
    its picks become local ids (other ranks' picks -1) before the sort. A rank holding none of the step's picks
    would only write zeros, so the rank of token 0's first pick is recorded instead (said in {moved}). More
    fields: rank, moved, lo .. hi (the rank's experts), local_experts, share (of the picks local), uniform (1 / ep)."""
    tokens, spread = int(step["tokens"]), float(step["spread"])
    g = core.rng(seed)
    bias = skewed_bias(g, num_experts, spread)
    ids = route_ids(g.standard_normal((tokens, num_experts)), bias.astype(np.float64), n_group, topk_group, top_k)
    bm = block_m(tokens)
    counts = np.bincount(ids.ravel(), minlength=num_experts)
    more, key_text = {}, f"t{tokens}"
    if ep is not None:
        ids, more = _local_ids(ids, num_experts // ep, int(step["rank"]), ep)
        key_text = f"t{tokens}_rank{more['rank']}"
    aligned = align_block_size(ids, more.get("local_experts", num_experts), bm)
    f = {**(fields or {}), "what": step["what"], "seed": seed, "spread": spread, "tokens": tokens,
         "experts": num_experts, "used": int((counts > 0).sum()), "hottest": int(counts.max()),
         "picks": tokens * top_k, "block_m": bm, "sorted_rows": aligned["num_tokens_post_padded"], **more}
    f["layer"] = layer.format_map(f)
    axes = {"num_tokens": tokens, **aligned["axes"]}
    index = {"sorted_token_ids": aligned["sorted_token_ids"], "expert_ids": aligned["expert_ids"],
             "num_tokens_post_padded": aligned["num_tokens_post_padded"], "block_size": bm}
    for k in kernels:
        text = k["description"].format_map(f)
        given = dict(k.get("inputs", {}))
        key, n, a = key_text, tokens, axes
        if k["role"] == "routing":
            a, given = {"num_tokens": tokens}, {"router_logits": "random", "e_score_correction_bias": bias}
        elif k["role"] == "align":
            given = {"topk_ids": ids, "block_size": bm}
        elif k["role"] == "sorted_gemm":
            a, given = {**axes, "num_pairs": tokens * top_k}, {**given, **index}
        elif k["role"] == "pairs":
            key, n = f"pairs{tokens * top_k}", tokens * top_k
            a = {"num_tokens": n}
        else:
            raise ValueError(f"role {k['role']!r}: one of routing, align, sorted_gemm, pairs")
        if "key" in k:
            key = k["key"].format_map(f)
        yield Spec(k["definition"], key, a, given, seed, text, stage=step["stage"], num_tokens=n)


def _local_ids(ids: np.ndarray, local_n: int, rank: int, ep: int) -> tuple[np.ndarray, dict]:
    """The picks of one EP rank as local ids (-1: another rank's expert), and the fields that say so."""
    moved = ""
    if not ((ids >= local_n * rank) & (ids < local_n * (rank + 1))).any():
        moved = f" (rank {rank} holds none of the step's picks: the rank of token 0's first pick)"
        rank = int(ids[0, 0]) // local_n
    local = ids - local_n * rank
    local = np.where((local >= 0) & (local < local_n), local, -1)
    if not ((local >= 0).any() and (local < 0).any()):
        raise ValueError("the rank needs local picks and picks of other ranks (zero rows)")
    return local, {"rank": rank, "moved": moved, "lo": local_n * rank, "hi": local_n * rank + local_n - 1,
                   "local_experts": local_n, "share": float((local >= 0).mean()), "uniform": 1 / ep, "ep": ep}


def routed_picks(g: np.random.Generator, num_tokens: int, num_experts: int, top_k: int, *,
                 alpha: float = 0.6) -> np.ndarray:
    """[num_tokens, top_k] DISTINCT experts per token, popular experts more often: the draw routed_counts
    counts (Zipf-like popularity, Gumbel top-k), with the picks kept."""
    weights = np.arange(1, num_experts + 1, dtype=np.float64) ** -alpha
    weights = weights[g.permutation(num_experts)]
    keys = np.log(weights / weights.sum())[None, :] + g.gumbel(size=(num_tokens, num_experts))
    return np.argpartition(-keys, top_k - 1, axis=1)[:, :top_k]


def sorted_rows(picks: np.ndarray, num_experts: int) -> tuple[np.ndarray, np.ndarray]:
    """(m_indptr [num_experts + 1], row_token [tokens * top_k]) of the rows sorted by expert, stable in
    (token, slot) order within an expert: row r of segment e is a (token, e) pair and row_token[r] its token."""
    flat = picks.reshape(-1)  # index token * top_k + slot
    order = np.argsort(flat, kind="stable")
    counts = np.bincount(flat, minlength=num_experts)
    return core.indptr(counts), order // picks.shape[1]


def gathered_layer(kernels, step: Mapping, seed: int, num_experts: int, top_k: int,
                   fields: Optional[Mapping] = None, layer: str = "") -> Iterator[Spec]:
    """One routed step of a MoE layer run as gather / scatter GEMMs over expert-sorted rows (vLLM's
    matmul_ogs): picks = routed_picks(core.rng(seed), tokens, num_experts, top_k, alpha), m_indptr and
    row_token by sorted_rows. step: {tokens, alpha, stage, what}. kernels: ({definition, role, description,
    inputs}, ...), role metadata (topk_ids = the picks), bitmatrix (topk_ids = the picks, num_tokens the only
    axis: make_routing_data's pack_bitmatrix) or gemm (inputs besides m_indptr and row_token).
    Template fields: what, seed, alpha, tokens, top_k, rows, used, largest, num_experts, layer (filled first)."""
    tokens, alpha = int(step["tokens"]), float(step["alpha"])
    picks = routed_picks(core.rng(seed), tokens, num_experts, top_k, alpha=alpha)
    m_indptr, row_token = sorted_rows(picks, num_experts)
    counts = np.diff(m_indptr)
    f = {**(fields or {}), "what": step["what"], "seed": seed, "alpha": alpha, "tokens": tokens, "top_k": top_k,
         "rows": tokens * top_k, "used": int((counts > 0).sum()), "largest": int(counts.max()),
         "num_experts": num_experts}
    f["layer"] = layer.format_map(f)
    axes = {"num_tokens": tokens, "total_rows": tokens * top_k, "len_m_indptr": num_experts + 1}
    index = {"m_indptr": m_indptr.astype(np.int32), "row_token": row_token.astype(np.int32)}
    for k in kernels:
        if k["role"] == "metadata":
            given = {**k.get("inputs", {}), "topk_ids": picks.astype(np.int32)}
        elif k["role"] == "bitmatrix":
            given = {**k.get("inputs", {}), "topk_ids": picks.astype(np.int32)}
        elif k["role"] == "gemm":
            given = {**k.get("inputs", {}), **index}
        else:
            raise ValueError(f"role {k['role']!r}: metadata, bitmatrix or gemm")
        a = {"num_tokens": tokens} if k["role"] == "bitmatrix" else axes
        yield Spec(k["definition"], f"t{tokens}_a{alpha}", a, given, seed, k["description"].format_map(f),
                   stage=step["stage"], num_tokens=tokens)


def routed_keys(g: np.random.Generator, num_tokens: int, num_experts: int, alpha: float) -> np.ndarray:
    """[num_tokens, num_experts] Gumbel keys over a Zipf-like popularity (rank r weight r**-alpha, ranks shuffled):
    a token's top_k largest are its picks; they stand for the router's logits."""
    weights = np.arange(1, num_experts + 1, dtype=np.float64) ** -alpha
    weights = weights[g.permutation(num_experts)]
    return np.log(weights / weights.sum())[None, :] + g.gumbel(size=(num_tokens, num_experts))


def routed_ids(g: np.random.Generator, num_tokens: int, num_experts: int, top_k: int, alpha: float) -> np.ndarray:
    """[num_tokens, top_k] distinct expert ids per token, Gumbel top-k over routed_keys, each row's picks in
    descending key order (SGLang's top-k order)."""
    return core.top_k_rows(routed_keys(g, num_tokens, num_experts, alpha), top_k)


def routed_align(name: str, step: Mapping, seed: int, num_experts: int, top_k: int, text: str,
                 fields: Optional[Mapping] = None) -> Spec:
    """moe_align_block_size of a softmax-routed step whose experts are all local: ids = routed_ids(core.rng(seed),
    tokens, num_experts, top_k, alpha), sorted with block_m(tokens). step: {tokens, alpha, stage, what}. Fields:
    what, seed, tokens, alpha, num_experts, top_k, used, block_m, sorted_rows."""
    tokens, alpha = int(step["tokens"]), float(step["alpha"])
    ids = routed_ids(core.rng(seed), tokens, num_experts, top_k, alpha)
    bm = block_m(tokens)
    aligned = align_block_size(ids, num_experts, bm)
    f = {**(fields or {}), "what": step["what"], "seed": seed, "tokens": tokens, "alpha": alpha,
         "num_experts": num_experts, "top_k": top_k, "used": len(np.unique(ids)), "block_m": bm,
         "sorted_rows": aligned["num_tokens_post_padded"]}
    return Spec(name, f"t{tokens}_a{alpha}", {"num_tokens": tokens, **aligned["axes"]},
                {"topk_ids": ids, "block_size": bm}, seed, text.format_map(f), stage=step["stage"], num_tokens=tokens)
