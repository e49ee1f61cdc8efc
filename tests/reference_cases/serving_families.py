"""Independent formulations for kernel families that serving engines run and the model files do not
cover: attention over an FP8 KV cache, cascade (shared-prefix) attention and the merge of attention
states, and logits processing (penalties, min-p).

As elsewhere, everything is float64 with library calls the references may not use (SDPA on a dense
re-packing of the paged cache, torch.logsumexp, bincount, F.softmax), organised differently from the
references (whole batch at once where they loop, or the other way round).
"""

from __future__ import annotations

import torch

from .common import Case, fp8
from .llama import SM_SCALE, attend, decode_derived, gather_sequence, kv_lengths, page_table

# --------------------------------------------------------------------------------------------------
# GQA decode over an FP8 KV cache with per-tensor scales. The codes span the e4m3 range (std 64, as the
# bench draws them); scales vary per set, one of them 1.0 (vLLM's value for a checkpoint without scales).
# --------------------------------------------------------------------------------------------------

FP8_SCALES = [(0.02, 0.01), (1.0 / 64, 0.05), (1.0, 1.0 / 128)]


def fp8kv_decode_inputs(ax, g, i):
    sharp = [1.0, 3.0, 0.5][i % 3]
    indptr, indices, last = page_table(ax, g)
    shape = (ax["num_pages"], ax["page_size"], ax["num_kv_heads"], ax["head_dim"])
    k_scale, v_scale = FP8_SCALES[i % 3]
    # sm_scale as a Python float, a 0-d tensor, and a float of another value (as the bf16 cases).
    sm_scale = [SM_SCALE, torch.tensor(SM_SCALE, dtype=torch.float32), 0.1][i % 3]
    # Set 2: k_scale 1.0 with codes of std 64 would make one key win every softmax; smaller codes there.
    std = 64.0 if k_scale < 1.0 else 1.0
    return {"q": (torch.randn(ax["batch_size"], ax["num_qo_heads"], ax["head_dim"], generator=g) * sharp).bfloat16(),
            "k_cache": fp8(torch.randn(shape, generator=g), std), "v_cache": fp8(torch.randn(shape, generator=g), 64.0),
            "kv_indptr": indptr, "kv_indices": indices, "kv_last_page_len": last, "sm_scale": sm_scale,
            "k_scale": [k_scale, torch.tensor(k_scale), k_scale][i % 3], "v_scale": v_scale}


def fp8kv_decode_expected(ax, x):
    """The codes dequantised once for the whole pool (float64), then the bf16 decode's SDPA check."""
    k_pool = x["k_cache"].double() * float(x["k_scale"])
    v_pool = x["v_cache"].double() * float(x["v_scale"])
    lens = kv_lengths(x["kv_indptr"], x["kv_last_page_len"], ax["page_size"])
    outs, lses = [], []
    for b, n in enumerate(lens):
        k = gather_sequence(k_pool, x["kv_indptr"], x["kv_indices"], b, n)
        v = gather_sequence(v_pool, x["kv_indptr"], x["kv_indices"], b, n)
        out, lse = attend(x["q"][b:b + 1].double(), k, v, float(x["sm_scale"]))
        outs.append(out[0])
        lses.append(lse[0])
    return {"output": torch.stack(outs), "lse": torch.stack(lses)}


FP8KV_SETS = [{"batch_size": 1, "num_kv_indices": 1, "num_pages": 2},
              {"batch_size": 3, "num_kv_indices": 7, "num_pages": 12},
              {"batch_size": 4, "num_kv_indices": 9, "num_pages": 9}]


CASES = {
    "gqa_paged_decode_fp8kv_h32_kv8_d128_ps16": Case(FP8KV_SETS, fp8kv_decode_inputs, fp8kv_decode_expected,
                                                     derived=decode_derived),
}
