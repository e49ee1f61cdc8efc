"""Independent formulation of vLLM's pack_bitmatrix for gpt-oss-120b (128 experts) and gpt-oss-20b (32 experts).

The bit matrix is built as a dense [tokens, experts] 0/1 array (numpy), packed by numpy.packbits in little bit
order (bit b of byte j is column 8 j + b) and the bytes read as little-endian uint32 words, then as int32 with the
same bits: word w holds experts 32 w .. 32 w + 31, expert e at bit e % 32. No shifts or compares per slot, as the
reference has.
"""

from __future__ import annotations

import numpy as np
import torch

from .common import Case

TOP_K = 4  # num_experts_per_tok of openai/gpt-oss-120b and gpt-oss-20b


def inputs_with(num_experts: int):
    def make(ax, g, i):
        T = ax["num_tokens"]
        ids = torch.stack([torch.randperm(num_experts, generator=g)[:TOP_K] for _ in range(T)])
        # Set 0 holds a token with the first and last bit of words (bit 31 is the int32 sign bit).
        if i == 0:
            ids[0] = torch.tensor({32: [31, 0, 30, 17], 128: [31, 0, 127, 96]}[num_experts])
        return {"topk_ids": ids.int()}
    return make


def expected_with(num_experts: int):
    def expected(ax, x):
        ids = x["topk_ids"].numpy().astype(np.int64)
        dense = np.zeros((ids.shape[0], num_experts), dtype=np.uint8)
        np.put_along_axis(dense, ids, 1, axis=1)
        packed = np.packbits(dense, axis=1, bitorder="little")  # [tokens, num_experts / 8] bytes
        words = np.ascontiguousarray(packed).view("<u4").view(np.int32)
        return {"bitmatrix": torch.from_numpy(words.astype(np.int64))}
    return expected


SIZES = [{"num_tokens": 1}, {"num_tokens": 7}, {"num_tokens": 40}]

CASES = {
    f"moe_pack_bitmatrix_e{e}_topk4": Case(SIZES, inputs_with(e), expected_with(e)) for e in (128, 32)
}
