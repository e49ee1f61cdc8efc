"""Independent formulations for the kernels around the layers (embedding lookup, paged KV append,
temperature softmax, samplers at Qwen's and DeepSeek's vocabularies, all-reduce and all-gather) and for the
Qwen3-30B-A3B TP4 shards.

Each is computed another way than its reference: the lookup as a one-hot matrix product (a shard's rows
placed in a zero table of the whole vocabulary), the KV append as one indexed assignment on the flattened
pool, the softmax with torch.softmax in float64, the collectives as torch.sum / a permute-reshape, the
samplers checked statistically (llama.py's draw counts and chi-square; the joint filter with its own
target distribution).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import llama, qwen
from .common import Case, rope_expected, shrunk
from .llama import (
    ALL,
    GROUPS,
    REPS,
    keep_top_k,
    keep_top_p,
    midway_top_p,
    renormalise,
    sampling_dist,
    statistical_check,
)

# --------------------------------------------------------------------------------------------------
# Embedding. The real hidden size; the vocabulary shrunk (a 128256 x 4096 table is 1 GB, and every row is
# looked up the same way).
# --------------------------------------------------------------------------------------------------

def embedding_inputs(ax, g, i):
    V, T = ax["vocab_size"], ax["num_tokens"]
    ids = torch.randint(0, V, (T,), generator=g)
    ids[0] = V - 1  # the last row is read
    return {"input_ids": ids.int(), "weight": torch.randn(V, ax["hidden_size"], generator=g).bfloat16()}


def embedding_expected(ax, x):
    onehot = F.one_hot(x["input_ids"].long(), ax["vocab_size"]).double()  # [T, V]
    return {"output": onehot @ x["weight"].double()}


TP_OF = {}  # shard definition -> tensor-parallel degree, filled below


def shard_inputs(tp, id_dtype):
    def make(ax, g, i):
        VS, T = ax["vocab_shard"], ax["num_tokens"]
        rank = [0, tp // 2, tp - 1][i % 3]
        ids = torch.randint(0, VS * tp, (T,), generator=g)
        ids[0] = rank * VS  # first row of this shard
        ids[-1] = rank * VS + VS - 1 if i % 2 == 0 else (rank * VS + VS) % (VS * tp)  # last row, or the next shard's first
        return {"input_ids": ids.to(id_dtype), "weight": torch.randn(VS, ax["hidden_size"], generator=g).bfloat16(),
                "vocab_start": torch.tensor(rank * VS, dtype=torch.int32)}
    return make


def shard_expected_for(tp):
    def expected(ax, x):
        VS = ax["vocab_shard"]
        start = int(x["vocab_start"])
        table = torch.zeros(VS * tp, ax["hidden_size"], dtype=torch.float64)  # the whole vocabulary, zeros elsewhere
        table[start:start + VS] = x["weight"].double()
        return {"output": F.embedding(x["input_ids"].long(), table)}
    return expected


def shard_case(tp, id_dtype=torch.int32):
    # The shard shrunk to at most 200 rows: the independent table spans the whole vocabulary (tp shards) in
    # float64, 0.9 GB at 1000 rows x 16 shards x 7168 for the same lookups.
    sizes = [shrunk({"num_tokens": n}, vocab_shard=vs) for n, vs in ((1, 50), (7, 120), (33, 200))]
    return Case(sizes, shard_inputs(tp, id_dtype), shard_expected_for(tp))


# --------------------------------------------------------------------------------------------------
# Paged KV append: distinct random slots (some tokens padded with -1), the result as one assignment.
# --------------------------------------------------------------------------------------------------

def append_inputs(ax, g, i):
    T, NP, PS, H, D = ax["num_tokens"], ax["num_pages"], ax["page_size"], ax["num_kv_heads"], ax["head_dim"]
    slots = torch.randperm(NP * PS, generator=g)[:T]
    if i == 2:
        slots[-2:] = -1  # CUDA-graph padding
    shape = (NP, PS, H, D)
    return {"k": torch.randn(T, H, D, generator=g).bfloat16(), "v": torch.randn(T, H, D, generator=g).bfloat16(),
            "k_cache": torch.randn(shape, generator=g).bfloat16(), "v_cache": torch.randn(shape, generator=g).bfloat16(),
            "slot_mapping": slots}


def append_expected(ax, x):
    keep = x["slot_mapping"] >= 0
    out = {}
    for new, pool, name in ((x["k"], x["k_cache"], "k_cache_out"), (x["v"], x["v_cache"], "v_cache_out")):
        flat = pool.double().reshape(-1, ax["num_kv_heads"], ax["head_dim"]).clone()
        flat[x["slot_mapping"][keep]] = new[keep].double()
        out[name] = flat.reshape(pool.shape)
    return out


APPEND = [{"num_tokens": 1, "num_pages": 2}, {"num_tokens": 20, "num_pages": 3}, {"num_tokens": 40, "num_pages": 9}]


# --------------------------------------------------------------------------------------------------
# Temperature softmax: peaked logits (scale 4) and flat ones, temperatures in [0.3, 1.5]. Set 0 at the real
# vocabulary; the others shrunk (the same row-wise softmax).
# --------------------------------------------------------------------------------------------------

def softmax_inputs(ax, g, i):
    B, V = ax["batch_size"], ax["vocab_size"]
    scale = [4.0, 1.0, 12.0][i % 3]
    return {"logits": torch.randn(B, V, generator=g) * scale,
            "temperature": 0.3 + 1.2 * torch.rand(B, generator=g)}


def softmax_expected(ax, x):
    return {"probs": torch.softmax(x["logits"].double() / x["temperature"].double().unsqueeze(1), dim=-1)}


def softmax_case():
    return Case([{"batch_size": 3}, shrunk({"batch_size": 8}, vocab_size=5000),
                 shrunk({"batch_size": 1}, vocab_size=777)], softmax_inputs, softmax_expected)


# --------------------------------------------------------------------------------------------------
# Sampling. Qwen's vLLM samplers are Llama's at another vocabulary: llama.py's statistical check, with the
# vocabulary shrunk in every set (llama.sampling_case). DeepSeek's SGLang sampler filters jointly: its own
# plans, where top-p on the original row and top-k bind differently, and its own target (the intersection,
# renormalised once).
# --------------------------------------------------------------------------------------------------

# Per set, per group: (top_k, head tokens top-p keeps on the ORIGINAL row, or None for top_p = 1). In (3, 2)
# and (4, 2) top-p binds inside top-k; top-k-first would renormalise the top 3 or 4 first, which lifts the
# first token's mass above that top_p, and keep only 1 token: every set has such a group (asserted below).
JOINT_PLANS = [
    [(3, 2), (5, 4), (ALL, 4), (2, None)],
    [(4, 2), (ALL, None), (6, 5), (1, 5)],
    [(3, 2), (10, 9), (ALL, 2), (15, None)],
]


def joint_inputs(ax, g, i):
    rows, ks, ps = [], [], []
    vocab = ax["vocab_size"]
    differs = False
    for k, cut in JOINT_PLANS[i % 3]:
        p = sampling_dist(g, vocab).float().double()
        k = vocab if k == ALL else k
        top_p = midway_top_p(p, cut)  # on the original row
        joint = keep_top_k(p, k) & keep_top_p(p, top_p)
        k_first = keep_top_p(renormalise(p, keep_top_k(p, k)), top_p)
        differs = differs or not torch.equal(joint, k_first)
        rows.append(p.float())
        ks.append(k)
        ps.append(top_p)
    assert differs, "each set needs a group where the joint filter and top-k-first keep different tokens"
    return {"probs": torch.stack(rows).repeat(REPS, 1), "top_k": torch.tensor(ks, dtype=torch.int32).repeat(REPS),
            "top_p": torch.tensor(ps, dtype=torch.float32).repeat(REPS)}


def joint_target(x, r):
    p = x["probs"][r].double()
    return renormalise(p, keep_top_k(p, int(x["top_k"][r])) & keep_top_p(p, float(x["top_p"][r])))


# Sampling without a filter (vLLM's random sampler, gpt-oss-120b): GROUPS distinct rows, REPS each; the
# target is the row itself.
def plain_inputs(ax, g, i):
    rows = [sampling_dist(g, ax["vocab_size"]).float() for _ in range(GROUPS)]
    return {"probs": torch.stack(rows).repeat(REPS, 1)}


# --------------------------------------------------------------------------------------------------
# Collectives: real sizes (a few tokens).
# --------------------------------------------------------------------------------------------------

def allreduce_inputs(ax, g, i):
    scale = [1.0, 30.0, 0.01][i % 3]
    return {"partials": (torch.randn(ax["tp_size"], ax["num_tokens"], ax["hidden_size"], generator=g) * scale).bfloat16()}


def allreduce_expected(ax, x):
    return {"output": x["partials"].double().sum(dim=0)}


def allgather_inputs(ax, g, i):
    return {"shards": torch.randn(ax["tp_size"], ax["batch_size"], ax["vocab_shard"], generator=g).bfloat16()}


def allgather_expected(ax, x):
    tp, B, VS = x["shards"].shape
    return {"logits": x["shards"].double().permute(1, 0, 2).reshape(B, tp * VS)}


def allgather_case(tp):
    # The vocabulary shard shrunk (the same copy per element); vocab_size follows it (constraint).
    return Case([shrunk({"batch_size": b}, vocab_shard=vs, vocab_size=vs * tp) for b, vs in ((1, 64), (3, 100), (8, 257))],
                allgather_inputs, allgather_expected)


ROWS = [{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 8}]

CASES = {
    "embedding_v128256_h4096": Case([shrunk({"num_tokens": n}, vocab_size=v) for n, v in ((1, 50), (7, 300), (33, 1000))],
                                    embedding_inputs, embedding_expected),
    "embedding_v151936_h2048": Case([shrunk({"num_tokens": n}, vocab_size=v) for n, v in ((1, 50), (7, 300), (33, 1000))],
                                    embedding_inputs, embedding_expected),
    "embedding_v37984_h2048": shard_case(4),
    "embedding_v32064_h8192": shard_case(4),
    "embedding_v16032_h8192": shard_case(8),
    "embedding_v16160_h7168": shard_case(8, torch.int64),
    "embedding_v8080_h7168": shard_case(16, torch.int64),
    "embedding_v10240_h7168": shard_case(16, torch.int64),
    "embedding_v131072_h4480": Case([shrunk({"num_tokens": n}, vocab_size=v) for n, v in ((1, 50), (7, 300), (33, 1000))],
                                    embedding_inputs, embedding_expected),
    **{f"paged_kv_append_kv{kv}_d128_ps16": Case(APPEND, append_inputs, append_expected) for kv in (8, 4, 2, 1)},
    "paged_kv_append_kv1_d256_ps16": Case(APPEND, append_inputs, append_expected),
    **{f"softmax_temperature_v{v}": softmax_case() for v in (128256, 151936, 129280, 262208, 131072)},
    "top_k_sampling_from_probs_v151936": llama.sampling_case("top_k"),
    "top_p_sampling_from_probs_v151936": llama.sampling_case("top_p"),
    "top_k_top_p_sampling_from_probs_v151936": llama.sampling_case("top_k_top_p"),
    "top_k_top_p_sampling_from_probs_v262208": llama.sampling_case("top_k_top_p"),
    "top_k_top_p_sampling_from_probs_v131072": llama.sampling_case("top_k_top_p"),
    # vLLM's samplers at DeepSeek-V3's vocabulary (top-k first, unlike SGLang's joint filter below), the
    # separate top-k and top-p samplers at Gemma 3's, and all three at Llama-4-Scout's.
    **{f"{kind}_sampling_from_probs_v{vocab}": llama.sampling_case(kind, llama.TINY_VOCAB)
       for vocab, kinds in ((129280, ("top_k", "top_p", "top_k_top_p")), (262208, ("top_k", "top_p")),
                            (202048, ("top_k", "top_p", "top_k_top_p")))
       for kind in kinds},
    "top_k_top_p_joint_sampling_from_probs_v129280": Case(
        [shrunk({"batch_size": GROUPS * REPS}, vocab_size=llama.TINY_VOCAB)] * 3, joint_inputs,
        check=statistical_check(joint_target)),
    "sampling_from_probs_v201088": Case([shrunk({"batch_size": GROUPS * REPS}, vocab_size=llama.TINY_VOCAB)] * 3,
                                        plain_inputs, check=statistical_check(lambda x, r: x["probs"][r].double())),
    **{name: Case(ROWS, allreduce_inputs, allreduce_expected)
       for name in ("allreduce_tp4_h2048", "allreduce_tp4_h8192", "allreduce_tp8_h8192", "allreduce_tp8_h7168",
                    "allreduce_tp16_h7168", "allreduce_tp2_h5376")},
    "allgather_tp4_v37984": allgather_case(4),
    "allgather_tp4_v32064": allgather_case(4),
    "allgather_tp8_v16032": allgather_case(8),
    "allgather_tp8_v16160": allgather_case(8),
    "allgather_tp16_v8080": allgather_case(16),
    "allgather_tp2_v131104": allgather_case(2),
    "allgather_tp16_v10240": allgather_case(16),
    # Qwen3-30B-A3B TP4 shards (o_proj and lm_head shards: qwen3_next.py has them): qwen.py's checks (F.linear; complex-multiplication RoPE with the rope_theta 1e6 cache).
    "gemm_n1280_k2048": llama.gemm_case(),
    # The TP4 expert shards: qwen.py's grouped-GEMM check (N shrunk for the gate_up shard; the 128 segments and K real).
    "grouped_gemm_e128_n384_k2048": Case([shrunk({"tokens": t}, N=32) for t in (1, 3, 10)], qwen.grouped_inputs,
                                         qwen.grouped_expected, derived=qwen.grouped_derived),
    "grouped_gemm_e128_n2048_k192": Case([shrunk({"tokens": t}, N=128) for t in (1, 4, 12)], qwen.grouped_inputs,
                                         qwen.grouped_expected, derived=qwen.grouped_derived),
    "silu_and_mul_i192": Case([{"num_tokens": 1}, {"num_tokens": 8}, {"num_tokens": 24}], qwen.silu_inputs,
                              qwen.silu_expected),
    "rope_neox_h8_kv1_d128": Case([{"num_tokens": 1, "max_position": 16}, {"num_tokens": 5, "max_position": 300},
                                   {"num_tokens": 9, "max_position": 40960}], qwen.rope_inputs, rope_expected),
}
