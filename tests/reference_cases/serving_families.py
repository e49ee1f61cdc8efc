"""Independent formulations for kernel families that serving engines run and the model files do not
cover: attention over an FP8 KV cache, cascade (shared-prefix) attention and the merge of attention
states, and logits processing (penalties, min-p).

As elsewhere, everything is float64 with library calls the references may not use (SDPA on a dense
re-packing of the paged cache, torch.logsumexp, bincount, F.softmax), organised differently from the
references (whole batch at once where they loop, or the other way round).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .common import DECODE_PS16_SETS, Case, fp8
from .llama import SM_SCALE, attend, decode_derived, gather_sequence, kv_lengths, page_table, split_counts

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


# --------------------------------------------------------------------------------------------------
# Cascade attention: the merge of two attention states, and decode behind a shared prefix.
# --------------------------------------------------------------------------------------------------

def merge_inputs(ax, g, i):
    T, H, D = ax["seq_len"], ax["num_heads"], ax["head_dim"]
    s_a = 10.0 + 4.0 * torch.randn(T, H, generator=g)
    # Set 0: lse as the bench draws them; set 1: differences up to +-60 (one part's weight underflows in float32);
    # set 2: equal lse on every other head (even weights) and a tie broken by one ulp elsewhere.
    s_b = [10.0 + 4.0 * torch.randn(T, H, generator=g),
           s_a + 120.0 * (torch.rand(T, H, generator=g) - 0.5),
           torch.where(torch.arange(H) % 2 == 0, s_a, torch.nextafter(s_a, torch.tensor(100.0)))][i % 3]
    return {"v_a": torch.randn(T, H, D, generator=g).bfloat16(), "s_a": s_a,
            "v_b": (3.0 * torch.randn(T, H, D, generator=g)).bfloat16(), "s_b": s_b}


def merge_expected(ax, x):
    s_a, s_b = x["s_a"].double(), x["s_b"].double()
    s = torch.logaddexp2(s_a, s_b)
    v = x["v_a"].double() * torch.exp2(s_a - s)[..., None] + x["v_b"].double() * torch.exp2(s_b - s)[..., None]
    return {"v_merged": v, "s_merged": s}


def cascade_inputs(ax, g, i):
    """A shared prefix of num_shared_pages full pages and each sequence's own pages, all distinct, from one pool."""
    sharp = [1.0, 3.0, 0.5][i % 3]
    B, P = ax["batch_size"], ax["page_size"]
    pool = torch.randperm(ax["num_pages"], generator=g)
    shared = pool[:ax["num_shared_pages"]]
    own = pool[ax["num_shared_pages"]:ax["num_shared_pages"] + ax["num_kv_indices"]]
    counts = split_counts(ax["num_kv_indices"], B, g)
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    shape = (ax["num_pages"], P, ax["num_kv_heads"], ax["head_dim"])
    sm_scale = [SM_SCALE, torch.tensor(SM_SCALE, dtype=torch.float32), 0.1][i % 3]
    return {"q": (torch.randn(B, ax["num_qo_heads"], ax["head_dim"], generator=g) * sharp).bfloat16(),
            "k_cache": torch.randn(shape, generator=g).bfloat16(), "v_cache": torch.randn(shape, generator=g).bfloat16(),
            "shared_kv_indices": shared.int(), "kv_indptr": indptr.int(), "kv_indices": own.int(),
            "kv_last_page_len": torch.randint(1, P + 1, (B,), generator=g).int(), "sm_scale": sm_scale}


def cascade_expected(ax, x):
    """The cascade itself: SDPA over the prefix and over each sequence's own tokens, merged by their lse."""
    P = ax["page_size"]
    prefix_k = torch.cat([x["k_cache"][int(p)] for p in x["shared_kv_indices"]]).double()  # [S, Hk, D]
    prefix_v = torch.cat([x["v_cache"][int(p)] for p in x["shared_kv_indices"]]).double()
    scale = float(x["sm_scale"])
    lens = kv_lengths(x["kv_indptr"], x["kv_last_page_len"], P)
    outs, lses = [], []
    for b, n in enumerate(lens):
        q = x["q"][b:b + 1].double()
        o0, l0 = attend(q, prefix_k, prefix_v, scale)
        o1, l1 = attend(q, gather_sequence(x["k_cache"], x["kv_indptr"], x["kv_indices"], b, n),
                        gather_sequence(x["v_cache"], x["kv_indptr"], x["kv_indices"], b, n), scale)
        lse = torch.logaddexp2(l0, l1)
        outs.append((o0 * torch.exp2(l0 - lse)[..., None] + o1 * torch.exp2(l1 - lse)[..., None])[0])
        lses.append(lse[0])
    return {"output": torch.stack(outs), "lse": torch.stack(lses)}


CASCADE_SETS = [{"batch_size": 1, "num_shared_pages": 1, "num_kv_indices": 1, "num_pages": 2},
                {"batch_size": 3, "num_shared_pages": 4, "num_kv_indices": 7, "num_pages": 14},
                {"batch_size": 5, "num_shared_pages": 2, "num_kv_indices": 9, "num_pages": 11}]


# --------------------------------------------------------------------------------------------------
# Logits processing: penalties (bincount per row in float64) and min-p (F.softmax in float64).
# --------------------------------------------------------------------------------------------------

def penalties_inputs(ax, g, i):
    B, V, LP, LO = ax["batch_size"], ax["vocab_size"], ax["max_prompt_len"], ax["max_output_len"]
    # Ids from a small pool of tokens, so that the outputs repeat tokens (counts above 1) and reuse the prompt's.
    pool = torch.randperm(V, generator=g)[:12]
    prompt = pool[torch.randint(0, 8, (B, LP), generator=g)]
    output = pool[torch.randint(4, 12, (B, LO), generator=g)]
    for b in range(B):  # ragged rows: each padded with vocab_size past its own length (row 0 is the longest)
        prompt[b, int(torch.randint(1, LP + 1, (1,), generator=g)) if b else LP:] = V
        output[b, int(torch.randint(1, LO + 1, (1,), generator=g)) if b else LO:] = V
    presence = torch.tensor([0.5, 0.0, 1.5, 0.0, 1.0, 0.3, 0.0])[:B]
    frequency = torch.tensor([0.3, 0.0, 0.0, 1.0, 0.5, 0.2, 0.0])[:B]
    repetition = torch.tensor([1.2, 1.0, 1.1, 0.8, 1.05, 1.3, 1.0])[:B]  # 0.8: a penalty below 1 favours repeats
    logits = torch.randn(B, V, generator=g) * 5.0
    logits[:, pool[:6]] = torch.tensor([3.0, -2.0, 0.0, 7.5, -0.5, 1.0])  # seen tokens of both signs, and a zero
    return {"logits": logits, "prompt_token_ids": prompt, "output_token_ids": output,
            "presence_penalties": presence, "frequency_penalties": frequency, "repetition_penalties": repetition}


def penalties_expected(ax, x):
    V = ax["vocab_size"]
    out = x["logits"].double().clone()
    for b in range(ax["batch_size"]):
        prompt_bins = torch.bincount(x["prompt_token_ids"][b], minlength=V + 1)[:V]  # the last bin: padding
        counts = torch.bincount(x["output_token_ids"][b], minlength=V + 1)[:V].double()
        seen = (prompt_bins > 0) | (counts > 0)
        r = float(x["repetition_penalties"][b])
        factor = torch.where(out[b] > 0, torch.full_like(out[b], 1.0 / r), torch.full_like(out[b], r))
        out[b] = torch.where(seen, out[b] * factor, out[b])
        out[b] -= float(x["frequency_penalties"][b]) * counts + float(x["presence_penalties"][b]) * (counts > 0).double()
    return {"logits_out": out}


def min_p_inputs(ax, g, i):
    B, V = ax["batch_size"], ax["vocab_size"]
    logits = torch.randn(B, V, generator=g) * [3.0, 1.0, 6.0][i % 3]
    min_p = torch.tensor([0.3, 0.0, 1.0, 0.05, 0.01, 0.5, 0.2])[:B]  # 0: not set; 1: only the most likely token
    return {"logits": logits, "min_p": min_p}


def min_p_expected(ax, x):
    logits = x["logits"].double()
    probs = F.softmax(logits, dim=-1)
    keep = probs >= x["min_p"].double()[:, None] * probs.max(dim=-1, keepdim=True).values
    return {"logits_out": torch.where(keep, logits, torch.full_like(logits, float("-inf")))}


CASES = {
    "gqa_paged_decode_fp8kv_h32_kv8_d128_ps16": Case(DECODE_PS16_SETS, fp8kv_decode_inputs, fp8kv_decode_expected,
                                                     derived=decode_derived),
    "merge_state_h32_d128": Case([{"seq_len": 1}, {"seq_len": 3}, {"seq_len": 7}], merge_inputs, merge_expected),
    "gqa_cascade_decode_h32_kv8_d128_ps16": Case(CASCADE_SETS, cascade_inputs, cascade_expected, derived=decode_derived),
    # The real vocabulary: a row of 128256 float32 logits is half a megabyte.
    "logits_penalties_v128256": Case([{"batch_size": 1, "max_prompt_len": 5, "max_output_len": 3},
                                      {"batch_size": 3, "max_prompt_len": 17, "max_output_len": 9},
                                      {"batch_size": 7, "max_prompt_len": 40, "max_output_len": 25}],
                                     penalties_inputs, penalties_expected),
    "min_p_logits_v128256": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 7}], min_p_inputs, min_p_expected),
}
