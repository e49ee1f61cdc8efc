"""Serving situations: a decode batch, a prefill batch and a step's token count, each able to draw its
sequence lengths from a seeded generator and to write that draw as the call a workload's description
records; and the named sets of them that several models' recipes use (a recipe names a set here, or
writes its own list: recipes never take scenarios from one another)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np

from . import core

MAX_CONTEXT = 32768  # longest context the recipes use (both models allow more)


@dataclass(frozen=True)
class Decode:
    """`batch` sequences decoding one token each, contexts log-normal around `median` (sigma 0: all equal)."""

    batch: int
    median: int
    sigma: float
    what: str

    @property
    def key(self) -> str:
        return f"decode_b{self.batch}_ctx{self.median}"

    def lens(self, g: np.random.Generator) -> np.ndarray:
        return core.seq_lens(g, self.batch, self.median, low=16, high=MAX_CONTEXT, sigma=self.sigma)

    def call(self, seed: int) -> str:
        return (f"g = core.rng({seed}); lens = core.seq_lens(g, {self.batch}, {self.median}, low=16, "
                f"high={MAX_CONTEXT}, sigma={self.sigma})")


@dataclass(frozen=True)
class Prefill:
    """`batch` prompts with `median` new tokens each (log-normal, sigma; exactly `median` when sigma is 0),
    behind cached prefixes of `prefix` tokens (log-normal likewise; 0: no prefix)."""

    batch: int
    median: int
    prefix: int
    sigma: float
    what: str

    @property
    def key(self) -> str:
        return f"prefill_b{self.batch}_q{self.median}_prefix{self.prefix}"

    def lens(self, g: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(new tokens, cached prefix tokens) per prompt."""
        q = core.seq_lens(g, self.batch, self.median, low=16, high=8192, sigma=self.sigma)
        if self.prefix == 0:
            return q, np.zeros(self.batch, dtype=np.int64)
        pre = core.seq_lens(g, self.batch, self.prefix, low=16, high=MAX_CONTEXT - 8192, sigma=self.sigma)
        return q, pre

    def call(self, seed: int) -> str:
        text = (f"g = core.rng({seed}); q_lens = core.seq_lens(g, {self.batch}, {self.median}, low=16, high=8192, "
                f"sigma={self.sigma})")
        if self.prefix:
            text += (f"; prefix_lens = core.seq_lens(g, {self.batch}, {self.prefix}, low=16, "
                     f"high={MAX_CONTEXT - 8192}, sigma={self.sigma})")
        else:
            text += "; prefix_lens = 0"
        return text


class Tokens(NamedTuple):
    """A step of `count` tokens: GEMM M and the rows of the per-token kernels."""

    count: int
    what: str
    stage: str  # "decode" (one new token per sequence) or "prefill"


class MoeStep(NamedTuple):
    """A routed MoE step: `tokens` tokens, the popularity skew alpha of moe.routed_counts, and its stage
    (None: the workloads record none; a recipe states it)."""

    tokens: int
    alpha: float
    what: str
    stage: Optional[str] = None


# -- Named sets (recipes refer to them by these names) -------------------------------------------------

# Decode batches 1-256 and prefill chunks up to vLLM's default max_num_batched_tokens (8192).
TOKEN_COUNTS = [Tokens(1, "decode, batch 1", "decode"), Tokens(8, "decode, batch 8", "decode"),
                Tokens(32, "decode, batch 32", "decode"), Tokens(64, "decode, batch 64", "decode"),
                Tokens(128, "decode, batch 128", "decode"), Tokens(256, "decode, batch 256 (a full batch)", "decode"),
                Tokens(512, "prefill chunk of 512 tokens", "prefill"),
                Tokens(2048, "prefill chunk of 2048 tokens", "prefill"),
                Tokens(8192, "prefill chunk of 8192 tokens (vLLM's max_num_batched_tokens)", "prefill")]

# Prefill steps of 128 to 8192 new tokens: fresh prompts, the third chunk of a 24k prompt (chunked prefill),
# prompts behind cached prefixes (prefix-cache hits) and a burst of short prompts.
PREFILL_STEPS = [
    Prefill(1, 128, 0, 0.0, "one short prompt of 128 tokens"),
    Prefill(1, 2048, 0, 0.0, "one 2048-token prompt"),
    Prefill(1, 8192, 0, 0.0, "the first 8192-token chunk of a long prompt"),
    Prefill(1, 8192, 16384, 0.0, "the third 8192-token chunk of a 24k prompt (chunked prefill, 16k already cached)"),
    Prefill(4, 512, 1024, 0.5, "4 prompts of ~512 new tokens behind ~1k-token cached prefixes (prefix-cache hits)"),
    Prefill(16, 256, 0, 0.5, "a burst of 16 short prompts of ~256 tokens"),
]

# The same kinds of step with a 4096-token chunk behind 12k cached and multi-turn chats behind ~2k prefixes.
PREFILL_STEPS_MULTITURN = [
    Prefill(1, 128, 0, 0.0, "one short prompt of 128 tokens"),
    Prefill(1, 2048, 0, 0.0, "one 2048-token prompt"),
    Prefill(1, 8192, 0, 0.0, "the first 8192-token chunk of a long prompt"),
    Prefill(1, 4096, 12288, 0.0, "a 4096-token chunk of a long prompt behind 12288 tokens already cached "
                                 "(chunked prefill)"),
    Prefill(4, 512, 2048, 0.5, "4 multi-turn chats: ~512 new tokens behind ~2k-token cached prefixes "
                               "(prefix-cache hits)"),
    Prefill(16, 256, 0, 0.5, "a burst of 16 short prompts of ~256 tokens"),
]

# Decode batches with long contexts (16k-32k at small batches, 2k at 256): for ranks that hold few KV heads.
DECODE_LONG_CONTEXT = [
    Decode(1, 32768, 0.0, "one request decoding at a 32k context"),
    Decode(16, 16384, 0.5, "16 long-context requests around 16k"),
    Decode(64, 8192, 0.5, "64 requests around 8k context"),
    Decode(128, 4096, 0.5, "128 requests around 4k context"),
    Decode(256, 2048, 0.5, "256 requests around 2k context (a full batch)"),
]

# MoE steps (tokens, popularity skew alpha of moe.routed_counts, situation): decode batches and prefill chunks,
# two of them strongly imbalanced layers.
MOE_STEPS = [MoeStep(1, 0.6, "decode, batch 1", "decode"), MoeStep(8, 0.6, "decode, batch 8", "decode"),
             MoeStep(32, 0.6, "decode, batch 32", "decode"),
             MoeStep(64, 1.0, "decode, batch 64, a strongly imbalanced layer", "decode"),
             MoeStep(128, 0.6, "decode, batch 128", "decode"),
             MoeStep(256, 0.6, "decode, batch 256 (a full batch)", "decode"),
             MoeStep(512, 0.6, "prefill chunk of 512 tokens", "prefill"),
             MoeStep(2048, 1.0, "prefill chunk of 2048 tokens, a strongly imbalanced layer", "prefill"),
             MoeStep(4096, 0.6, "prefill chunk of 4096 tokens", "prefill"),
             MoeStep(8192, 0.6, "prefill chunk of 8192 tokens (vLLM's max_num_batched_tokens)", "prefill")]

SAMPLING_BATCHES = [1, 8, 32, 64, 128, 256]  # sequences sampling a token in a step (one logits row each)

# Per-request temperatures (value, share of requests): an assumed mix of client settings around the
# models' recommended 0.6-0.7 and the OpenAI-style default 1.0.
TEMPERATURE_MENU = ((1.0, 0.3), (0.7, 0.25), (0.6, 0.25), (0.8, 0.1), (0.3, 0.1))

# The steps whose new tokens a paged KV-cache append writes: decode batches (256 x 160: the pool, 25% over the
# used pages, still fits next to Qwen3-30B-A3B's 61 GB of TP1 weights), one decode batch run at a CUDA-graph
# batch size with padding (kv_append's pad_to), and prefill chunks.
KV_APPEND_DECODE = [
    Decode(1, 32768, 0.0, "one request decoding at a 32k context"),
    Decode(16, 4096, 0.5, "16 requests around 4k context"),
    Decode(64, 1024, 0.5, "64 requests around 1k context"),
    Decode(256, 160, 0.5, "256 short chats around 160 tokens of context (a full batch)"),
]
KV_APPEND_PADDED = [Decode(100, 512, 0.5, "100 requests around 512 tokens of context, run at the CUDA-graph batch "
                                          "size 104 (4 padding tokens with slot -1)")]
KV_APPEND_PREFILL = [
    Prefill(1, 2048, 0, 0.0, "one 2048-token prompt"),
    Prefill(1, 8192, 16384, 0.0, "the third 8192-token chunk of a 24k prompt (16k already cached)"),
    Prefill(16, 256, 0, 0.5, "a burst of 16 short prompts of ~256 tokens"),
]

# The sets a recipe file may name in its scenarios (scenario lists of one kind of step).
SETS = {"TOKEN_COUNTS": TOKEN_COUNTS, "PREFILL_STEPS": PREFILL_STEPS,
        "PREFILL_STEPS_MULTITURN": PREFILL_STEPS_MULTITURN, "DECODE_LONG_CONTEXT": DECODE_LONG_CONTEXT,
        "MOE_STEPS": MOE_STEPS, "KV_APPEND_DECODE": KV_APPEND_DECODE, "KV_APPEND_PADDED": KV_APPEND_PADDED,
        "KV_APPEND_PREFILL": KV_APPEND_PREFILL}
