"""Independent check of the fused lightning indexer + top-2048 (dsa_topk_indexer_fp8_h64_d128_topk2048_ps64).

The expected output is the composition of the two definitions KernelTrace splits this kernel into, each run
from its own file: dsa_indexer_logits_paged_decode_h64_d128_ps64's reference gives the [batch, max_context]
logits (-inf past each length), dsa_topk_k2048's reference selects over each row [0, seq_lens[b]). Both are
checked on their own against float64 loops and sorted() (deepseek_v32.py), so the fused reference is held to
the same answer, tie rule and -1 padding included.

Sizes: the real 64 heads, 128 dims, page size 64 and topk 2048, with sequences above 2048 tokens (where the
selection chooses) next to short ones (where every position is listed, then -1): set 0 one 2600-token sequence
and a 100-token one; set 1 a 2049-token sequence (one page past 32), a 2112 (33 whole pages) and a 1-token one;
set 2 a 2300-token sequence whose keys repeat 8 distinct rows at one scale, so that many logits are exactly
equal, also at the 2048th place (the tie rule), and a 64-token one.
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
    if i == 2:  # 8 distinct key rows, one scale: exact ties in the logits
        rows = x["k_cache_fp8"].reshape(-1, ax["index_head_dim"])
        pick = torch.randint(0, 8, (rows.shape[0],), generator=g)
        x["k_cache_fp8"] = rows[:8][pick].reshape(x["k_cache_fp8"].shape)
        x["k_cache_scale"] = torch.full_like(x["k_cache_scale"], 2.0 ** -10)
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
        [{"_lens": (2600, 100)}, {"_lens": (2049, 2112, 1)}, {"_lens": (2300, 64)}],
        fused_inputs, fused_expected, derived=fused_derived),
}
