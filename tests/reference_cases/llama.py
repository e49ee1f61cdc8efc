"""Independent formulations for the Llama-3.1-8B definitions (TP1, bfloat16).

Everything here is computed in float64 with library calls the references may not use (F.rms_norm,
F.silu, complex multiplication for RoPE, F.scaled_dot_product_attention on a dense re-packing of the
paged cache) so that a mistake in a reference does not repeat itself in its check.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import (
    DECODE_PS1_SETS,
    DECODE_PS16_SETS,
    LN2,
    PAGED_PREFILL_SETS,
    RAGGED_SETS,
    Case,
    norm_checks,
    rope_expected,
    rope_inputs_with,
    shrunk,
)

EPS = 1e-5  # rms_norm_eps of meta-llama/Llama-3.1-8B


# --------------------------------------------------------------------------------------------------
# Norms. Rows of very different scales (a residual stream grows layer by layer); a weight around 1.
# --------------------------------------------------------------------------------------------------

# 0.01: eps = 1e-5 is then a visible part of mean(x^2) ~ 1e-4 (common.rmsnorm_inputs_at).
rmsnorm_inputs, rmsnorm_expected, fused_inputs, fused_expected = norm_checks((1.0, 20.0, 0.01), EPS)


# --------------------------------------------------------------------------------------------------
# SwiGLU activation.
# --------------------------------------------------------------------------------------------------

def silu_inputs(ax, g, i):
    scale = [1.0, 6.0, 0.1][i % 3]  # 6: saturated gates (silu ~ g or ~ 0)
    return {"input": (torch.randn(ax["num_tokens"], ax["gate_up_size"], generator=g) * scale).bfloat16()}


def silu_expected(ax, x):
    gate, up = x["input"].double().split(ax["intermediate_size"], dim=-1)
    return {"output": F.silu(gate) * up}


# --------------------------------------------------------------------------------------------------
# RoPE. The cache is the real llama3-scaled one (HF _compute_llama3_parameters), built in float64;
# the rotation is checked as a complex multiplication (x1 + i x2) * (cos + i sin).
# --------------------------------------------------------------------------------------------------

def llama3_inv_freq(head_dim=128, theta=500000.0, factor=8.0, low=1.0, high=4.0, original=8192):
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    wavelen = 2 * math.pi / inv_freq
    smooth = (original / wavelen - low) / (high - low)
    scaled = torch.where(wavelen > original / low, inv_freq / factor, inv_freq)
    mid = (wavelen >= original / high) & (wavelen <= original / low)
    return torch.where(mid, (1 - smooth) * inv_freq / factor + smooth * inv_freq, scaled)


def llama3_cos_sin_cache(max_position, head_dim=128):
    angles = torch.outer(torch.arange(max_position, dtype=torch.float64), llama3_inv_freq(head_dim))
    return torch.cat([angles.cos(), angles.sin()], dim=-1).float()


rope_inputs = rope_inputs_with(llama3_cos_sin_cache)


# --------------------------------------------------------------------------------------------------
# GEMM C = A @ B.T in float64.
# --------------------------------------------------------------------------------------------------

def gemm_inputs(ax, g, i):
    M, N, K = ax["M"], ax["N"], ax["K"]
    return {"A": torch.randn(M, K, generator=g).bfloat16(), "B": (torch.randn(N, K, generator=g) / 8).bfloat16()}


def gemm_expected(ax, x):
    return {"C": F.linear(x["A"].double(), x["B"].double())}


def gemm_case(**smaller):
    """smaller: const axes to shrink (N, for every GEMM whose weight is over a few million elements: every
    output column is the same dot product over the real K, so a thousand columns check what 6144 or 128256
    do; K, the accumulation depth the tolerances are about, stays real)."""
    return Case([shrunk({"M": m}, **smaller) for m in (1, 3, 8)], gemm_inputs, gemm_expected)


# --------------------------------------------------------------------------------------------------
# Paged KV cache helpers: a coherent page table for the given sizes, and a dense re-packing of it.
# --------------------------------------------------------------------------------------------------

def split_counts(total, parts, g):
    """`total` split into `parts` positive counts (random cut points)."""
    cuts = (torch.randperm(total - 1, generator=g)[: parts - 1] + 1).sort().values if parts > 1 else torch.empty(0, dtype=torch.int64)
    bounds = torch.cat([torch.tensor([0]), cuts, torch.tensor([total])])
    return bounds[1:] - bounds[:-1]


def page_table(ax, g):
    """kv_indptr, kv_indices, kv_last_page_len (int32) for batch_size sequences over num_kv_indices pages."""
    B, n, P = ax["batch_size"], ax["num_kv_indices"], ax["page_size"]
    pages = split_counts(n, B, g)
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), pages.cumsum(0)])
    indices = torch.randperm(ax["num_pages"], generator=g)[:n]  # scattered, distinct page ids
    last = torch.randint(1, P + 1, (B,), generator=g)
    return indptr.int(), indices.int(), last.int()


def kv_lengths(indptr, last, page_size):
    return [(int(indptr[b + 1]) - int(indptr[b]) - 1) * page_size + int(last[b]) for b in range(len(last))]


def gather_sequence(cache, indptr, indices, b, kv_len):
    """Token-major [kv_len, heads, dim] float64 of sequence b, page by page (no reshape of the pool)."""
    pages = [cache[int(p)] for p in indices[int(indptr[b]):int(indptr[b + 1])]]
    return torch.cat(pages, dim=0)[:kv_len].double()


def attend(q, k, v, scale, causal_offset=None):
    """q [Lq, H, D], k/v [Lk, Hk, D] float64 -> (out [Lq, H, D], base-2 lse [Lq, H]) via SDPA.
    causal_offset: query i may see keys j <= i + causal_offset (None: no mask)."""
    H, Hk = q.shape[1], k.shape[1]
    qh = q.transpose(0, 1)  # [H, Lq, D]
    kh = k.transpose(0, 1).repeat_interleave(H // Hk, dim=0)  # [H, Lk, D], head h <- h // (H/Hk)
    vh = v.transpose(0, 1).repeat_interleave(H // Hk, dim=0)
    mask = None
    if causal_offset is not None:
        mask = torch.ones(q.shape[0], k.shape[0], dtype=torch.bool).tril(diagonal=causal_offset)
    out = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask, scale=scale)
    logits = (qh @ kh.transpose(-1, -2)) * scale
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(logits, dim=-1) / LN2  # [H, Lq]
    return out.transpose(0, 1), lse.transpose(0, 1)


SM_SCALE = 1.0 / math.sqrt(128)


def decode_inputs(ax, g, i):
    sharp = [1.0, 3.0, 0.5][i % 3]  # peakier or flatter softmax
    indptr, indices, last = page_table(ax, g)
    shape = (ax["num_pages"], ax["page_size"], ax["num_kv_heads"], ax["head_dim"])
    # sm_scale as a Python float, a 0-d tensor, and a float of another value.
    sm_scale = [SM_SCALE, torch.tensor(SM_SCALE, dtype=torch.float32), 0.1][i % 3]
    return {"q": (torch.randn(ax["batch_size"], ax["num_qo_heads"], ax["head_dim"], generator=g) * sharp).bfloat16(),
            "k_cache": torch.randn(shape, generator=g).bfloat16(), "v_cache": torch.randn(shape, generator=g).bfloat16(),
            "kv_indptr": indptr, "kv_indices": indices, "kv_last_page_len": last, "sm_scale": sm_scale}


def decode_expected(ax, x):
    lens = kv_lengths(x["kv_indptr"], x["kv_last_page_len"], ax["page_size"])
    outs, lses = [], []
    for b, n in enumerate(lens):
        k = gather_sequence(x["k_cache"], x["kv_indptr"], x["kv_indices"], b, n)
        v = gather_sequence(x["v_cache"], x["kv_indptr"], x["kv_indices"], b, n)
        out, lse = attend(x["q"][b:b + 1].double(), k, v, float(x["sm_scale"]))
        outs.append(out[0])
        lses.append(lse[0])
    return {"output": torch.stack(outs), "lse": torch.stack(lses)}


def decode_derived(ax):
    return {"len_indptr": ax["batch_size"] + 1}



# --------------------------------------------------------------------------------------------------
# Causal prefill: ragged queries that are the last q_len tokens of each sequence.
# --------------------------------------------------------------------------------------------------

def split_queries(total_q, kv_lens, g):
    """q_len[b] in [1, kv_len[b]] summing to total_q; sequence 0 gets a full prompt (q_len == kv_len)
    when the total allows, the rest is spread at random."""
    caps = list(kv_lens)
    q = [1] * len(caps)
    left = total_q - len(caps)
    assert 0 <= left <= sum(caps) - len(caps), "test sizes: total_q does not fit the KV lengths"
    take = min(caps[0] - 1, left)
    q[0] += take
    left -= take
    while left:
        b = int(torch.randint(0, len(caps), (1,), generator=g))
        add = min(caps[b] - q[b], left, int(torch.randint(1, 8, (1,), generator=g)))
        q[b] += add
        left -= add
    return q


def indptr_of(lens):
    return torch.tensor([0] + list(lens), dtype=torch.int64).cumsum(0).int()


def paged_prefill_inputs(ax, g, i):
    sharp = [1.0, 3.0, 0.5][i % 3]
    kv_indptr, kv_indices, last = page_table(ax, g)
    kv_lens = kv_lengths(kv_indptr, last, ax["page_size"])
    q_lens = split_queries(ax["total_q"], kv_lens, g)
    shape = (ax["num_pages"], ax["page_size"], ax["num_kv_heads"], ax["head_dim"])
    sm_scale = [SM_SCALE, torch.tensor(SM_SCALE, dtype=torch.float32), 0.1][i % 3]
    return {"q": (torch.randn(ax["total_q"], ax["num_qo_heads"], ax["head_dim"], generator=g) * sharp).bfloat16(),
            "k_cache": torch.randn(shape, generator=g).bfloat16(), "v_cache": torch.randn(shape, generator=g).bfloat16(),
            "qo_indptr": indptr_of(q_lens), "kv_indptr": kv_indptr, "kv_indices": kv_indices,
            "kv_last_page_len": last, "sm_scale": sm_scale}


def paged_prefill_expected(ax, x):
    kv_lens = kv_lengths(x["kv_indptr"], x["kv_last_page_len"], ax["page_size"])
    qo = x["qo_indptr"].tolist()
    outs, lses = [], []
    for b, n in enumerate(kv_lens):
        k = gather_sequence(x["k_cache"], x["kv_indptr"], x["kv_indices"], b, n)
        v = gather_sequence(x["v_cache"], x["kv_indptr"], x["kv_indices"], b, n)
        q_len = qo[b + 1] - qo[b]
        out, lse = attend(x["q"][qo[b]:qo[b + 1]].double(), k, v, float(x["sm_scale"]), causal_offset=n - q_len)
        outs.append(out)
        lses.append(lse)
    return {"output": torch.cat(outs), "lse": torch.cat(lses)}


def ragged_inputs(ax, g, i):
    sharp = [1.0, 3.0, 0.5][i % 3]
    kv_lens = split_counts(ax["total_kv"], ax["batch_size"], g).tolist()
    q_lens = split_queries(ax["total_q"], kv_lens, g)
    sm_scale = [SM_SCALE, torch.tensor(SM_SCALE, dtype=torch.float32), 0.1][i % 3]
    Hq, Hk, D = ax["num_qo_heads"], ax["num_kv_heads"], ax["head_dim"]
    return {"q": (torch.randn(ax["total_q"], Hq, D, generator=g) * sharp).bfloat16(),
            "k": torch.randn(ax["total_kv"], Hk, D, generator=g).bfloat16(),
            "v": torch.randn(ax["total_kv"], Hk, D, generator=g).bfloat16(),
            "qo_indptr": indptr_of(q_lens), "kv_indptr": indptr_of(kv_lens), "sm_scale": sm_scale}


def ragged_expected(ax, x):
    qo, kv = x["qo_indptr"].tolist(), x["kv_indptr"].tolist()
    outs, lses = [], []
    for b in range(ax["batch_size"]):
        q_len, kv_len = qo[b + 1] - qo[b], kv[b + 1] - kv[b]
        out, lse = attend(x["q"][qo[b]:qo[b + 1]].double(), x["k"][kv[b]:kv[b + 1]].double(),
                          x["v"][kv[b]:kv[b + 1]].double(), float(x["sm_scale"]), causal_offset=kv_len - q_len)
        outs.append(out)
        lses.append(lse)
    return {"output": torch.cat(outs), "lse": torch.cat(lses)}


# --------------------------------------------------------------------------------------------------
# Sampling, checked statistically. Each input set has GROUPS distinct rows (a head of HEAD tokens at
# random vocabulary ids holding 95% of the mass, a tail of tiny distinct probabilities over the rest),
# each repeated REPS times; top_k / top_p are chosen so that no kept set sits on a knife edge (top_p
# halfway between two cumulative sums). The check draws CALLS times: every sample must lie in the kept
# set, and the counts per group must pass a chi-square test against the renormalised distribution.
# --------------------------------------------------------------------------------------------------

# The vocabulary is shrunk to TINY_VOCAB in every set (sampling_case's default): the same head, tail, plans and
# chi-square at a small part of the cost (the code under test sorts the row CALLS times per set: about 10 s per
# sampler with a set at 128256; 0.3 s here for a top-k/top-p sampler's three sets, one thread). Nothing in the
# filters or the draw depends on the row's length (the tail holds 5% of the mass either way, k = 15 still keeps 5
# tail tokens): the plans put top_p halfway between two cumulative sums of the head, far from float32 rounding of
# the tail.
TINY_VOCAB = 2048
ALL = "all"  # top_k = vocab_size: top-k keeps every token
GROUPS, REPS, CALLS, HEAD = 4, 4, 20, 10
P_VALUE_MIN = 1e-4  # per group; a correct sampler fails this with probability 1e-4

# Per input set, per group: (top_k, head tokens top-p keeps or None for top_p = 1). Every set has a group
# where both bind (top-p keeps fewer tokens than top-k), which tells top-k-first from joint filtering.
SAMPLING_PLANS = [
    [(3, 2), (1, None), (ALL, 5), (ALL, None)],
    [(5, 2), (ALL, 1), (2, None), (8, 6)],
    [(10, 9), (4, 3), (ALL, 7), (15, None)],  # k = 15 > HEAD keeps 5 tail tokens (negligible mass)
]


def sampling_dist(g, vocab):
    """One row of `vocab` float64 probabilities summing to 1."""
    head = 0.02 + torch.rand(HEAD, generator=g, dtype=torch.float64)
    head = head.sort(descending=True).values / head.sum() * 0.95
    row = 0.5 + torch.rand(vocab, generator=g, dtype=torch.float64)
    row *= 0.05 / row.sum()
    row[torch.randperm(vocab, generator=g)[:HEAD]] = head
    return row / row.sum()


def keep_top_k(p, k):
    return p >= torch.topk(p, k).values[-1]


def keep_top_p(p, top_p):
    """The smallest set of most probable tokens whose mass reaches top_p (searchsorted on the cumsum)."""
    if top_p >= 1.0:
        return torch.ones_like(p, dtype=torch.bool)
    values, order = p.sort(descending=True)
    n = int(torch.searchsorted(values.cumsum(0), torch.tensor([top_p], dtype=p.dtype))) + 1
    keep = torch.zeros_like(p, dtype=torch.bool)
    keep[order[:n]] = True
    return keep


def renormalise(p, keep):
    q = torch.where(keep, p, torch.zeros_like(p))
    return q / q.sum()


def midway_top_p(p, cut):
    """A top_p keeping exactly the `cut` most probable tokens of p, halfway between two cumsums."""
    if cut is None:
        return 1.0
    # Token j is kept when the mass before it, c[j - 1], is below top_p: keeping `cut` tokens needs
    # c[cut - 2] < top_p <= c[cut - 1].
    c = p.sort(descending=True).values.cumsum(0)
    return float((c[cut - 2] + c[cut - 1]) / 2) if cut > 1 else float(c[0] / 2)


def sampling_inputs(kind):
    def make(ax, g, i):
        rows, ks, ps = [], [], []
        vocab = ax["vocab_size"]
        for k, cut in SAMPLING_PLANS[i % 3]:
            k = vocab if k == ALL else k
            p = sampling_dist(g, vocab).float().double()  # what the row holds in float32
            after_k = renormalise(p, keep_top_k(p, k)) if kind == "top_k_top_p" else p
            rows.append(p.float())
            ks.append(k)
            ps.append(midway_top_p(after_k, cut))
        probs = torch.stack(rows).repeat(REPS, 1)  # row r belongs to group r % GROUPS
        top_k = torch.tensor(ks, dtype=torch.int32).repeat(REPS)
        top_p = torch.tensor(ps, dtype=torch.float32).repeat(REPS)
        return {"top_k": {"probs": probs, "top_k": top_k},
                "top_p": {"probs": probs, "top_p": top_p},
                "top_k_top_p": {"probs": probs, "top_k": top_k, "top_p": top_p}}[kind]
    return make


def sampling_target(kind, x, r):
    """Renormalised float64 distribution that group r samples from."""
    p = x["probs"][r].double()
    if kind in ("top_k", "top_k_top_p"):
        p = renormalise(p, keep_top_k(p, int(x["top_k"][r])))
    if kind in ("top_p", "top_k_top_p"):
        p = renormalise(p, keep_top_p(p, float(x["top_p"][r])))
    return p


def chi_square_p_value(counts, expected_probs):
    """Goodness of fit: tokens expected at least 5 times are bins of their own, the rest one bin."""
    n = counts.sum()
    big = expected_probs * n >= 5
    obs = torch.cat([counts[big], counts[~big].sum().reshape(1)]).double()
    exp = torch.cat([expected_probs[big], expected_probs[~big].sum().reshape(1)]) * n
    if exp[-1] < 5:  # fold a small remainder into the smallest bin of its own
        obs, exp = obs[:-1].clone(), exp[:-1].clone()
        j = int(exp.argmin())
        obs[j] += counts[~big].sum()
        exp[j] += expected_probs[~big].sum() * n
    if len(exp) < 2:
        return 1.0
    stat = ((obs - exp) ** 2 / exp).sum()
    return float(torch.special.gammaincc(torch.tensor((len(exp) - 1) / 2.0, dtype=torch.float64), stat / 2))


def statistical_check(target, what: str = "the target distribution", row_note=lambda x, row: ""):
    """Every draw inside the support of target(x, group), and each group's counts a chi-square fit to it."""
    def check(outputs_fn, ax, x, who):
        torch.manual_seed(4321)  # the draws use the global generator: seeded, so the test is deterministic
        targets = [target(x, r) for r in range(GROUPS)]
        counts = torch.zeros(GROUPS, ax["vocab_size"], dtype=torch.int64)
        for _ in range(CALLS):
            samples = outputs_fn()["samples"]
            assert ((samples >= 0) & (samples < ax["vocab_size"])).all(), f"{who}: sample id out of range"
            for row, token in enumerate(samples.tolist()):
                r = row % GROUPS
                assert targets[r][token] > 0, (f"{who}: row {row} sampled token {token}, outside the kept set"
                                               f"{row_note(x, row)}")
                counts[r, token] += 1
        for r in range(GROUPS):
            p_value = chi_square_p_value(counts[r], targets[r])
            assert p_value > P_VALUE_MIN, (f"{who}: group {r} frequencies do not follow {what} "
                                           f"(chi-square p = {p_value:.2e})")
    return check


def sampling_check(kind):
    return statistical_check(
        lambda x, r: sampling_target(kind, x, r), "the renormalised distribution",
        lambda x, row: f" (top_k {x.get('top_k', [None] * (row + 1))[row]}, top_p {x.get('top_p', [None] * (row + 1))[row]})")


def sampling_case(kind, vocab=TINY_VOCAB):
    """The statistical check of a sampler, its vocabulary shrunk to `vocab` (sets differ by their plans and seeds)."""
    return Case([shrunk({"batch_size": GROUPS * REPS}, vocab_size=vocab)] * 3, sampling_inputs(kind),
                check=sampling_check(kind))


def prefill_derived(ax):
    return {"len_indptr": ax["batch_size"] + 1}

def gqa_cases(heads: str, kinds: tuple = ("decode_ps1", "decode_ps16", "prefill", "ragged")) -> dict:
    """The GQA attention kernels of a Llama-shaped model, named for its heads ("h24_kv8_d128"), with this module's
    checks (they read the head counts from the definition): paged decode at page size 1 and 16, paged causal prefill
    at 16, ragged causal prefill; `kinds` those the model has."""
    made = {
        "decode_ps1": (f"gqa_paged_decode_{heads}_ps1",
                       Case(DECODE_PS1_SETS, decode_inputs, decode_expected, derived=decode_derived)),
        "decode_ps16": (f"gqa_paged_decode_{heads}_ps16",
                        Case(DECODE_PS16_SETS, decode_inputs, decode_expected, derived=decode_derived)),
        "prefill": (f"gqa_paged_prefill_causal_{heads}_ps16",
                    Case(PAGED_PREFILL_SETS, paged_prefill_inputs, paged_prefill_expected, derived=prefill_derived)),
        "ragged": (f"gqa_ragged_prefill_causal_{heads}",
                   Case(RAGGED_SETS, ragged_inputs, ragged_expected, derived=prefill_derived)),
    }
    return dict(made[k] for k in kinds)


CASES = {
    "rmsnorm_h4096": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], rmsnorm_inputs, rmsnorm_expected),
    "fused_add_rmsnorm_h4096": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], fused_inputs,
                                    fused_expected),
    "silu_and_mul_i14336": Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 7}], silu_inputs, silu_expected),
    "rope_llama3_h32_kv8_d128": Case([{"num_tokens": 1, "max_position": 16}, {"num_tokens": 5, "max_position": 300},
                                      {"num_tokens": 9, "max_position": 9000}], rope_inputs, rope_expected),
    "gemm_n6144_k4096": gemm_case(N=1000),
    "gemm_n4096_k4096": gemm_case(N=1000),
    "gemm_n28672_k4096": gemm_case(N=1000),
    "gemm_n4096_k14336": gemm_case(N=1000),
    "gemm_n128256_k4096": gemm_case(N=1000),
    **gqa_cases("h32_kv8_d128"),
    "top_k_sampling_from_probs_v128256": sampling_case("top_k"),
    "top_p_sampling_from_probs_v128256": sampling_case("top_p"),
    "top_k_top_p_sampling_from_probs_v128256": sampling_case("top_k_top_p"),
}
