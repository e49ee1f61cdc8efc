"""Independent formulations for the DeepSeek-V3.2 definitions (DeepSeek Sparse Attention, TP8).

Everything in float64, by other routes than the references:
- sparse MLA as DENSE MLA over the whole cache pool with every non-selected slot masked out
  (F.scaled_dot_product_attention with a boolean mask, and a masked logsumexp for lse);
- the indexer logits as a naive loop over (query, key position), the key found through the block table
  one token at a time, relu as max(0, .) and the head sum as a Python sum;
- the top-2048 selection with Python's sorted() on (-value, position) pairs;
- the key-cache and latent-cache stores as a per-slot dictionary of the last write;
- the LayerNorm with F.layer_norm; the GEMMs with DeepSeek-V3's and Qwen's cases (dequantise then matmul);
- the Hadamard transform as the in-place butterfly (no matrix); the indexer's NeoX RoPE as a complex multiplication of the pairs (i, i + 32) on DeepSeek-V3's
  independently built YaRN cache.

Sizes: small var axes; the sparse attention keeps topk = 2048 in two sets (rows padded with -1) and
shrinks it to 32 in one, where rows are full; the top-k keeps 2048 with rows of up to 2600 columns.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import LN2, Case, fp8, shrunk, uniform
from .deepseek import SM_SCALE, qgemm_case, rope_ds_inputs
from .qwen import gemm_case

# --------------------------------------------------------------------------------------------------
# Sparse MLA: rows of cache slots; sizes give the pool and, per query row, how many slots it selects.
# --------------------------------------------------------------------------------------------------

def sparse_inputs(ax, g, i):
    T, H, P, ps, K = ax["num_tokens"], ax["num_qo_heads"], ax["num_pages"], ax["page_size"], ax["topk"]
    pool = P * ps
    indices = torch.full((T, K), -1, dtype=torch.int32)
    for t, n in enumerate(ax["_selected"]):
        chosen = torch.randperm(pool, generator=g)[:n].to(torch.int32)
        if i == 1:  # -1 padding interleaved with the valid entries, not only at the end
            where = torch.randperm(K, generator=g)[:n]
            indices[t, where] = chosen
        else:
            indices[t, :n] = chosen
    scale = [SM_SCALE, torch.tensor(SM_SCALE, dtype=torch.float32), 0.4][i]
    return {"q_nope": torch.randn(T, H, ax["head_dim_ckv"], generator=g).bfloat16(),
            "q_pe": torch.randn(T, H, ax["head_dim_kpe"], generator=g).bfloat16(),
            "ckv_cache": torch.randn(P, ps, ax["head_dim_ckv"], generator=g).bfloat16(),
            "kpe_cache": torch.randn(P, ps, ax["head_dim_kpe"], generator=g).bfloat16(),
            "sparse_indices": indices, "sm_scale": scale}


def sparse_expected(ax, x):
    """Full MLA over every slot of the pool, non-selected slots masked out."""
    scale = float(x["sm_scale"])
    ckv = x["ckv_cache"].double().reshape(-1, ax["head_dim_ckv"])  # [pool, 512]
    kpe = x["kpe_cache"].double().reshape(-1, ax["head_dim_kpe"])
    k = torch.cat([ckv, kpe], dim=-1)  # [pool, 576]
    outs, lses = [], []
    for t in range(ax["num_tokens"]):
        mask = torch.zeros(k.shape[0], dtype=torch.bool)
        row = x["sparse_indices"][t].long()
        mask[row[row >= 0]] = True
        q = torch.cat([x["q_nope"][t].double(), x["q_pe"][t].double()], dim=-1)  # [H, 576]
        outs.append(F.scaled_dot_product_attention(q[None], k[None], ckv[None], attn_mask=mask[None, None, :],
                                                   scale=scale)[0])
        logits = (q @ k.T * scale).masked_fill(~mask[None, :], float("-inf"))
        lses.append(torch.logsumexp(logits, dim=-1) / LN2)
    return {"output": torch.stack(outs), "lse": torch.stack(lses)}


# --------------------------------------------------------------------------------------------------
# Indexer logits: naive loops, one (query, key) pair at a time.
# --------------------------------------------------------------------------------------------------

def _index_score(q, k, k_scale, w):
    """sum_h w[h] * max(0, q[h] . k * k_scale), float64, heads summed one by one."""
    dots = (q.double() @ k.double()) * float(k_scale)  # [H]
    return sum(float(w[h]) * max(0.0, float(dots[h])) for h in range(q.shape[0]))


def _fp8_rows(shape, g):
    """FP8 values spanning the format's range (one quantiser scale per 128-wide row)."""
    x = torch.randn(*shape, generator=g)
    return fp8(x / x.abs().amax(dim=-1, keepdim=True).clamp_min(1e-10), 448.0)


def paged_inputs(ax, g, i):
    B, H, D, ps = ax["batch_size"], ax["num_index_heads"], ax["index_head_dim"], ax["page_size"]
    lens = ax["_lens"]
    table = torch.zeros(B, ax["max_num_pages"], dtype=torch.int32)
    pool = torch.randperm(ax["num_pages"], generator=g).to(torch.int32)
    used = 0
    for b, n in enumerate(lens):
        pages = (n + ps - 1) // ps
        table[b, :pages] = pool[used:used + pages]
        used += pages
    return {"q_fp8": _fp8_rows((B, H, D), g), "k_cache_fp8": _fp8_rows((ax["num_pages"], ps, D), g),
            "k_cache_scale": uniform((ax["num_pages"], ps), 2.0 ** -12, 2.0 ** -8, g),
            # Head weights of both signs, so that relu before the head sum matters.
            "weights": torch.randn(B, H, generator=g) * 1e-3,
            "seq_lens": torch.tensor(lens, dtype=torch.int32), "block_table": table}


def paged_derived(ax):
    ps = ax["page_size"]
    pages = [(n + ps - 1) // ps for n in ax["_lens"]]
    return {"batch_size": len(pages), "max_num_pages": max(pages), "max_context": max(pages) * ps,
            "num_pages": sum(pages) + 2}


def paged_expected(ax, x):
    ps = ax["page_size"]
    out = torch.full((ax["batch_size"], ax["max_context"]), float("-inf"), dtype=torch.float64)
    for b in range(ax["batch_size"]):
        for pos in range(int(x["seq_lens"][b])):
            page, off = int(x["block_table"][b, pos // ps]), pos % ps
            out[b, pos] = _index_score(x["q_fp8"][b], x["k_cache_fp8"][page, off], x["k_cache_scale"][page, off],
                                       x["weights"][b].double())
    return {"logits": out}


def ragged_inputs(ax, g, i):
    Q, K, H, D = ax["num_q"], ax["num_k"], ax["num_index_heads"], ax["index_head_dim"]
    ks, ke = [], []
    k_off = 0
    for q_len, prefix in ax["_seqs"]:
        ks += [k_off] * q_len
        ke += [k_off + prefix + j + 1 for j in range(q_len)]
        k_off += prefix + q_len
    return {"q_fp8": _fp8_rows((Q, H, D), g), "k_fp8": _fp8_rows((K, D), g),
            "k_scale": uniform((K,), 2.0 ** -12, 2.0 ** -8, g), "weights": torch.randn(Q, H, generator=g) * 1e-3,
            "ks": torch.tensor(ks, dtype=torch.int32), "ke": torch.tensor(ke, dtype=torch.int32)}


def ragged_derived(ax):
    return {"num_q": sum(q for q, _ in ax["_seqs"]), "num_k": sum(q + p for q, p in ax["_seqs"])}


def ragged_expected(ax, x):
    out = torch.full((ax["num_q"], ax["num_k"]), float("-inf"), dtype=torch.float64)
    for i in range(ax["num_q"]):
        for j in range(int(x["ks"][i]), int(x["ke"][i])):
            out[i, j] = _index_score(x["q_fp8"][i], x["k_fp8"][j], x["k_scale"][j], x["weights"][i].double())
    return {"logits": out}


# --------------------------------------------------------------------------------------------------
# Top-2048: sorted() over (-value, position) pairs.
# --------------------------------------------------------------------------------------------------

def topk_inputs(ax, g, i):
    R, C = ax["num_rows"], ax["num_cols"]
    logits = torch.randn(R, C, generator=g)
    if i == 2:  # coarse values: many exact ties, also at the 2048th place
        logits = torch.round(logits * 4) / 4
    starts, ends = zip(*ax["_ranges"])
    return {"logits": logits, "row_starts": torch.tensor(starts, dtype=torch.int32),
            "row_ends": torch.tensor(ends, dtype=torch.int32)}


def topk_expected(ax, x):
    K = ax["topk"]
    out = torch.full((ax["num_rows"], K), -1, dtype=torch.int64)
    for r in range(ax["num_rows"]):
        s, e = int(x["row_starts"][r]), int(x["row_ends"][r])
        values = x["logits"][r].tolist()
        best = sorted(range(s, e), key=lambda j: (-values[j], j))[:K]
        chosen = sorted(j - s for j in best)
        out[r, :len(chosen)] = torch.tensor(chosen)
    return {"topk_indices": out}


# --------------------------------------------------------------------------------------------------
# Index-key cache store: the expected cache as a dictionary slot -> last write.
# --------------------------------------------------------------------------------------------------

def store_inputs(ax, g, i):
    T, P, ps, D = ax["num_tokens"], ax["num_pages"], ax["page_size"], ax["index_head_dim"]
    slots = torch.randperm(P * ps, generator=g)[:T].to(torch.int64)
    return {"k_fp8": _fp8_rows((T, D), g), "k_scale": uniform((T,), 2.0 ** -12, 2.0 ** -8, g),
            "slot_mapping": slots, "index_k_cache": _fp8_rows((P, ps, D), g),
            "index_k_scale_cache": uniform((P, ps), 2.0 ** -12, 2.0 ** -8, g)}


def store_expected(ax, x):
    P, ps = ax["num_pages"], ax["page_size"]
    written = {int(s): t for t, s in enumerate(x["slot_mapping"].tolist())}
    cache = torch.empty(P, ps, ax["index_head_dim"], dtype=torch.float64)
    scales = torch.empty(P, ps, dtype=torch.float64)
    for page in range(P):
        for off in range(ps):
            t = written.get(page * ps + off)
            cache[page, off] = (x["k_fp8"][t] if t is not None else x["index_k_cache"][page, off]).double()
            scales[page, off] = float(x["k_scale"][t] if t is not None else x["index_k_scale_cache"][page, off])
    return {"index_k_cache_out": cache, "index_k_scale_cache_out": scales}


def latent_store_inputs(ax, g, i):
    T, P, ps = ax["num_tokens"], ax["num_pages"], ax["page_size"]
    return {"ckv": torch.randn(T, ax["head_dim_ckv"], generator=g).bfloat16(),
            "kpe": torch.randn(T, ax["head_dim_kpe"], generator=g).bfloat16(),
            "cache_loc": torch.randperm(P * ps, generator=g)[:T].to(torch.int64),
            "ckv_cache": torch.randn(P, ps, ax["head_dim_ckv"], generator=g).bfloat16(),
            "kpe_cache": torch.randn(P, ps, ax["head_dim_kpe"], generator=g).bfloat16()}


def latent_store_expected(ax, x):
    P, ps = ax["num_pages"], ax["page_size"]
    written = {int(s): t for t, s in enumerate(x["cache_loc"].tolist())}
    out = {}
    for name, new in (("ckv", x["ckv"]), ("kpe", x["kpe"])):
        cache = torch.empty(x[f"{name}_cache"].shape, dtype=torch.float64)
        for page in range(P):
            for off in range(ps):
                t = written.get(page * ps + off)
                cache[page, off] = (new[t] if t is not None else x[f"{name}_cache"][page, off]).double()
        out[f"{name}_cache_out"] = cache
    return out


# --------------------------------------------------------------------------------------------------
# LayerNorm: rows of different scales and offsets (the mean matters, unlike RMSNorm).
# --------------------------------------------------------------------------------------------------

def layernorm_inputs(ax, g, i):
    B, H = ax["batch_size"], ax["hidden_size"]
    scale, offset = [(1.0, 0.0), (30.0, 5.0), (1e-3, 2e-3)][i]
    return {"hidden_states": (torch.randn(B, H, generator=g) * scale + offset).bfloat16(),
            "weight": 1.0 + 0.5 * torch.randn(H, generator=g), "bias": 0.1 * torch.randn(H, generator=g)}


def layernorm_expected(ax, x):
    return {"output": F.layer_norm(x["hidden_states"].double(), (ax["hidden_size"],), x["weight"].double(),
                                   x["bias"].double(), eps=1e-6)}


# --------------------------------------------------------------------------------------------------
# The indexer's prologue: Hadamard butterflies, NeoX RoPE (its act_quant is moe_pipeline.py's).
# --------------------------------------------------------------------------------------------------

def hadamard_inputs(ax, g, i):
    x = torch.randn(ax["num_rows"], ax["dim"], generator=g) * [1.0, 30.0, 1e-3][i]
    if ax["num_rows"] > 1:
        x[1] = 0.0
        x[1, 5] = 1.0  # a one-hot row: its output is row 5 of H (+-1) / sqrt(128)
    return {"x": x.bfloat16()}


def hadamard_expected(ax, x):
    """Fast Walsh-Hadamard transform, butterflies in float64: (a, b) -> (a + b, a - b) at strides 1, 2, 4, ..."""
    out = x["x"].double().clone()
    n, h = out.shape[1], 1
    while h < n:
        blocks = out.view(out.shape[0], n // (2 * h), 2, h)
        a, b = blocks[:, :, 0, :].clone(), blocks[:, :, 1, :].clone()
        blocks[:, :, 0, :], blocks[:, :, 1, :] = a + b, a - b
        h *= 2
    return {"output": out / math.sqrt(n)}


def rope_neox_expected(ax, x):
    # Pairs (x[i], x[i + 32]) as complex numbers, multiplied by cos + i sin of frequency i.
    rows = x["cos_sin_cache"].double()[x["positions"]]
    rot = torch.complex(rows[:, :32], rows[:, 32:])  # [T, 32]

    def rotate(t, r):
        t = t.double()
        z = torch.complex(t[..., :32], t[..., 32:]) * r
        return torch.cat([z.real, z.imag], dim=-1)

    return {"q_pe_out": rotate(x["q_pe"], rot[:, None, :]), "k_pe_out": rotate(x["k_pe"], rot)}


CASES = {
    "dsa_sparse_mla_h16_ckv512_kpe64_topk2048_ps64": Case(
        [{"num_tokens": 3, "num_pages": 3, "_selected": (1, 70, 192)},  # one token, a partial row, the whole pool
         {"num_tokens": 2, "num_pages": 4, "_selected": (100, 37)},  # padding interleaved with the entries
         # topk 2048 -> 32 so that rows are full (no padding) while the pool stays a few pages.
         shrunk({"num_tokens": 3, "num_pages": 2, "_selected": (32, 32, 32)}, topk=32)],
        sparse_inputs, sparse_expected),
    "dsa_indexer_logits_paged_decode_h64_d128_ps64": Case(
        [{"_lens": (5,)}, {"_lens": (64, 130, 1)}, {"_lens": (200, 65)}],
        paged_inputs, paged_expected, derived=paged_derived),
    "dsa_indexer_logits_ragged_prefill_h64_d128": Case(
        [{"_seqs": ((4, 0),)}, {"_seqs": ((3, 5), (2, 0))}, {"_seqs": ((2, 9), (1, 3), (3, 1))}],
        ragged_inputs, ragged_expected, derived=ragged_derived),
    "dsa_topk_k2048": Case(
        [{"num_rows": 2, "num_cols": 2600, "_ranges": ((0, 2600), (0, 100))},  # a selection and a short row
         {"num_rows": 3, "num_cols": 2500, "_ranges": ((0, 2049), (300, 2500), (7, 8))},  # one above 2048
         {"num_rows": 2, "num_cols": 2600, "_ranges": ((0, 2600), (100, 2400))}],  # many exact ties
        topk_inputs, topk_expected),
    "dsa_indexer_k_cache_store_d128_ps64": Case(
        [{"num_tokens": 1, "num_pages": 2}, {"num_tokens": 5, "num_pages": 3}, {"num_tokens": 64, "num_pages": 2}],
        store_inputs, store_expected),
    "mla_kv_cache_store_ckv512_kpe64_ps64": Case(
        [{"num_tokens": 1, "num_pages": 2}, {"num_tokens": 5, "num_pages": 3}, {"num_tokens": 64, "num_pages": 2}],
        latent_store_inputs, latent_store_expected),
    "layernorm_h128": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], layernorm_inputs,
                           layernorm_expected),
    "gemm_fp8_block128_n8192_k1536": qgemm_case(8192),
    "gemm_fp8_block128_n128_k7168": qgemm_case(128),
    "gemm_n64_k7168": gemm_case(),
    "hadamard_transform_d128": Case([{"num_rows": 1}, {"num_rows": 3}, {"num_rows": 64}], hadamard_inputs,
                                    hadamard_expected),
    "rope_deepseek_yarn_neox_h64_d64": Case(
        [{"num_tokens": 1, "max_position": 1}, {"num_tokens": 5, "max_position": 4096},
         {"num_tokens": 3, "max_position": 100000}],  # beyond the original 4096: interpolated frequencies
        rope_ds_inputs, rope_neox_expected),
}
