"""Workloads for the kernels every model runs around its layers: the token embedding lookup (whole table
at TP1, a vocabulary shard at TP>1), the paged KV-cache append, the temperature softmax of the logits, the
samplers at the other models' vocabularies, and the tensor-parallel all-reduce and logits all-gather
(Qwen3-30B-A3B's are its recipe's, dataset/recipes/qwen3-30b-a3b.yaml).

Serving situations (shared with the model recipes where they exist):
- token counts of a step (embedding, all-reduce, GEMM M, RoPE): decode batches 1-256 and prefill chunks up
  to 8192 tokens (vLLM's default max_num_batched_tokens); the all-reduce inputs hold every rank's buffer on
  one device, so their largest chunk is 4096 tokens (2048 at TP16, two nodes: 16 x 2048 x 7168 x 2 bytes);
- token ids: natural text uses a few tokens very often and most rarely, so ids are Zipf-distributed over a
  seeded permutation of the vocabulary (families.token_ids); a vocabulary shard sees the tokens of the whole
  step and keeps those in its rows;
- KV append: the slots of the step's tokens in a page table made by core.paged_kv (decode: each sequence's
  newest token; prefill: the chunk's tokens behind their cached prefix; a decode batch padded to vLLM's
  CUDA-graph size has slot -1 for the padding);
- sampling: per-request settings drawn from a menu of client choices (value, share of requests), as in
  llama.py; the temperature menu likewise.
Index inputs (token ids, slots, per-request parameters) are seeded arrays stored as blobs; float tensors are
"random" (the bench draws them from the seed with the definition's distribution).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from . import core
from .families import ids_call, kv_append as append_spec, menu_text, per_request, shard_rank, slots_of, token_ids
from .scenarios import KV_APPEND_DECODE, KV_APPEND_PADDED, KV_APPEND_PREFILL, TEMPERATURE_MENU
from .scenarios import SAMPLING_BATCHES as BATCHES
from .spec import Spec

TOKENS = [(1, "decode, batch 1"), (8, "decode, batch 8"), (64, "decode, batch 64"), (256, "decode, batch 256 (a full batch)"),
          (512, "prefill chunk of 512 tokens"), (2048, "prefill chunk of 2048 tokens"),
          (8192, "prefill chunk of 8192 tokens (vLLM's max_num_batched_tokens)")]


# --------------------------------------------------------------------------------------------------
# Token embedding
# --------------------------------------------------------------------------------------------------

EMBEDDINGS = [  # definition, vocabulary, tensor-parallel degree (1: the whole table), model label
    ("embedding_v32064_h8192", 128256, 4, "Llama-3.3-70B TP4"),
    ("embedding_v16032_h8192", 128256, 8, "Llama-3.3-70B TP8"),
]


def embedding_workloads() -> Iterator[Spec]:
    for name, vocab, tp, model in EMBEDDINGS:
        id_dtype = np.int64 if "SGLang" in model else np.int32  # SGLang's input_ids are int64
        for seed, (n, what) in enumerate(TOKENS):
            g = core.rng(seed)
            ids = token_ids(g, n, vocab).astype(id_dtype)
            about = f"{model}, {what}: {n} tokens; {ids_call(seed, n, vocab)}"
            if tp == 1:
                yield Spec(name, f"t{n}", {"num_tokens": n}, {"input_ids": ids, "weight": "random"}, seed, about)
                continue
            shard = vocab // tp
            rank = shard_rank(ids, shard)
            yield Spec(name, f"t{n}_rank{rank}", {"num_tokens": n},
                       {"input_ids": ids, "weight": "random", "vocab_start": rank * shard}, seed,
                       f"{about}; rank {rank} of {tp} (vocab_start = {rank} * {shard}), the shard of the step's first "
                       f"token: this rank looks rows up{'' if n == 1 else ' and zeroes the tokens of other shards'}")


# --------------------------------------------------------------------------------------------------
# Paged KV-cache append
# --------------------------------------------------------------------------------------------------

APPENDS = [("paged_kv_append_kv2_d128_ps16", "Llama-3.3-70B TP4")]


def append_workloads() -> Iterator[Spec]:
    for name, model in APPENDS:
        seed = 0
        for s in KV_APPEND_DECODE + KV_APPEND_PADDED:
            g = core.rng(seed)
            lens = s.lens(g)
            kv = core.paged_kv(g, lens, 16)
            slots = slots_of(kv, lens, np.ones_like(lens), 16)
            padded = ""
            if s is KV_APPEND_PADDED[0]:
                slots = np.concatenate([slots, np.full(104 - s.batch, -1, dtype=np.int64)])
                padded = "; 4 slots of -1 appended (CUDA-graph padding to 104)"
            yield append_spec(name, s.key, slots, kv["num_pages"], seed,
                              f"{model} decode, {s.what}: {s.call(seed)}; kv = core.paged_kv(g, lens, 16); "
                              f"slot_mapping = the slot of each sequence's newest token{padded}")
            seed += 1
        for s in KV_APPEND_PREFILL:
            g = core.rng(seed)
            q, pre = s.lens(g)
            kv = core.paged_kv(g, q + pre, 16)
            slots = slots_of(kv, q + pre, q, 16)
            yield append_spec(name, s.key, slots, kv["num_pages"], seed,
                              f"{model} prefill, {s.what}: {s.call(seed)}; kv = core.paged_kv(g, prefix_lens + q_lens, "
                              f"16); slot_mapping = the slots of each prompt's q_len new tokens behind its prefix")
            seed += 1


# --------------------------------------------------------------------------------------------------
# Temperature softmax and sampling
# --------------------------------------------------------------------------------------------------

SOFTMAX = []


def softmax_workloads() -> Iterator[Spec]:
    for name, model in SOFTMAX:
        for seed, b in enumerate(BATCHES):
            g = core.rng(seed)
            temp = per_request(g, b, TEMPERATURE_MENU).astype(np.float32)
            yield Spec(name, f"b{b}", {"batch_size": b}, {"logits": "random", "temperature": temp}, seed,
                       f"{model}, logits of {b} sequences (decode batch {b}, or prompts finishing their prefill); logits "
                       f"random (skewed_logits, the definition's draw); g = core.rng({seed}); temperature = per_request(g, "
                       f"{b}, {menu_text(TEMPERATURE_MENU)}) (value, share of requests)")


# --------------------------------------------------------------------------------------------------
# Collectives
# --------------------------------------------------------------------------------------------------

ALLREDUCES = [("allreduce_tp4_h8192", 4, 4096, "Llama-3.3-70B TP4"),
              ("allreduce_tp8_h8192", 8, 4096, "Llama-3.3-70B TP8"),]
ALLGATHERS = [("allgather_tp4_v32064", "Llama-3.3-70B TP4"),
              ("allgather_tp8_v16032", "Llama-3.3-70B TP8")]


def collective_workloads() -> Iterator[Spec]:
    for name, tp, largest, model in ALLREDUCES:
        sizes = [(n, w) for n, w in TOKENS if n <= largest] + ([(largest, f"prefill chunk of {largest} tokens")]
                                                               if largest not in dict(TOKENS) else [])
        for seed, (n, what) in enumerate(sizes):
            yield Spec(name, f"t{n}", {"num_tokens": n}, {"partials": "random"}, seed,
                       f"{model}, {what}: the {tp} ranks' partial sums of {n} tokens (random)")
    for name, model in ALLGATHERS:
        for seed, b in enumerate(BATCHES):
            yield Spec(name, f"b{b}", {"batch_size": b}, {"shards": "random"}, seed,
                       f"{model}, logits of {b} sampled sequences (decode batch {b}): every rank's shard (random)")


def workloads() -> Iterator[Spec]:
    yield from embedding_workloads()
    yield from append_workloads()
    yield from softmax_workloads()
    yield from collective_workloads()
