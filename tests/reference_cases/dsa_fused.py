"""Independent check of the fused lightning indexer + top-2048 (dsa_topk_indexer_fp8_h64_d128_topk2048_ps64).

The expected output is the composition of the two definitions KernelTrace splits this kernel into, each run
from its own file: dsa_indexer_logits_paged_decode_h64_d128_ps64's reference gives the [batch, max_context]
logits (-inf past each length), dsa_topk_k2048's reference selects over each row [0, seq_lens[b]). Both are
checked on their own against float64 loops and sorted() (deepseek_v32.py), so the fused reference is held to
the same answer, tie rule and -1 padding included.

Sizes: the real 64 heads, 128 dims, page size 64 and topk 2048, with sequences above 2048 tokens (where the
selection chooses) next to short ones (where every position is listed, then -1): set 0 only short ones (130
tokens and 1: the cheap first set the device check runs); set 1 a 2600-token sequence and a 100-token one; set 2
a 2049-token sequence (one page past 32), a 2112 (33 whole pages) and a 1-token one; set 3 a 2300-token
sequence whose keys repeat 8 distinct rows at one scale, so that many logits are exactly equal, also at the
2048th place (the tie rule), and a 64-token one; its values are small integers and powers of two, so that
the ties stay exact under any summation order (a batched matmul's included).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from .common import Case
from .deepseek_v32 import paged_derived, paged_inputs

_DEFS = Path(__file__).resolve().parents[2] / "dataset" / "definitions" / "dsa"


def _reference(name: str):
    code = json.loads((_DEFS / f"{name}.json").read_text(encoding="utf-8"))["reference"]
    scope: dict = {}
    exec(compile(code, f"{name}.reference", "exec"), scope)  # noqa: S102 - the dataset's own reference
    return scope["run"]


def fused_inputs(ax, g, i):
    x = paged_inputs(ax, g, i)
    if i == 3:
        # Exact ties that any summation order keeps: small-integer FP8 queries and keys (8 distinct key rows),
        # one power-of-two scale, power-of-two head weights; every product and sum is exact in float32.
        H, D = ax["num_index_heads"], ax["index_head_dim"]
        x["q_fp8"] = torch.randint(-3, 4, (ax["batch_size"], H, D), generator=g).float().to(torch.float8_e4m3fn)
        rows = torch.randint(-3, 4, (8, D), generator=g).float()
        pick = torch.randint(0, 8, x["k_cache_scale"].shape, generator=g)
        x["k_cache_fp8"] = rows[pick].to(torch.float8_e4m3fn)
        x["k_cache_scale"] = torch.full_like(x["k_cache_scale"], 2.0 ** -10)
        sign = torch.randint(0, 2, (ax["batch_size"], H), generator=g) * 2 - 1
        x["weights"] = sign * 2.0 ** -torch.randint(8, 13, (ax["batch_size"], H), generator=g).float()
    return x


def fused_derived(ax):
    out = paged_derived(ax)
    del out["max_context"]  # not an axis of the fused definition
    return out


def fused_expected(ax, x):
    logits = _reference("dsa_indexer_logits_paged_decode_h64_d128_ps64")(**x)["logits"]
    starts = torch.zeros(ax["batch_size"], dtype=torch.int32)
    return _reference("dsa_topk_k2048")(logits, starts, x["seq_lens"])


CASES = {
    "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64": Case(
        [{"_lens": (130, 1)}, {"_lens": (2600, 100)}, {"_lens": (2049, 2112, 1)}, {"_lens": (2300, 64)}],
        fused_inputs, fused_expected, derived=fused_derived),
}
