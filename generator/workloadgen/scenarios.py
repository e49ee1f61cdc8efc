"""Serving situations shared by the recipes: a decode batch and a prefill batch, each able to draw
its sequence lengths from a seeded generator and to write that draw as the call a workload's
description records."""

from __future__ import annotations

from dataclasses import dataclass

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
