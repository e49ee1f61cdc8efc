"""gpt-oss decode attention with sinks over an FP8 (float8_e4m3) KV cache: gqa_paged_decode_fp8kv_sink_h64_kv8_d64_ps16
(the full-attention layers) and gqa_paged_decode_fp8kv_sink_swa128_h64_kv8_d64_ps16 (the 128-token sliding-window
layers), the bfloat16-cache kernels gqa_paged_decode_sink_*_h64_kv8_d64_ps16 with the cache stored as float8 codes
and dequantised with one k_scale and one v_scale per tensor, as the FP8-KV GQA kernels (fp8kv.py) apply them.

vLLM's gpt-oss recipe (vllm-project/recipes OpenAI/GPT-OSS.md with GPT-OSS_Blackwell.yaml) sets kv-cache-dtype: fp8
on Blackwell (compute capability 10.0) and keeps the bfloat16 cache on Hopper (GPT-OSS_Hopper.yaml has no
kv-cache-dtype); the same launch serves gpt-oss-20b. The dataset's gpt-oss records are H100 bfloat16, so the two
kernels are tagged model-alt.

The definitions, einsum cascades and baselines are written from this file (`cd tests && python -m
reference_cases.sink_fp8kv` rewrites them; tests/test_sink_fp8kv.py proves the committed files are what it writes
and plants mistakes). The independent check dequantises the whole pool once in float64 and reuses the bfloat16
sink kernels' check (gpt_oss.py: a dense re-packing, the window as a boolean mask over positions, the sink as one
more torch.softmax column).
"""

from __future__ import annotations

import json

import torch

from . import gpt_oss
from .common import Case, fp8, write_files
from .fp8kv import FP8_SCALES
from .qwen import paged_derived
from .variants import DATASET

WINDOW = gpt_oss.WINDOW  # 128: sliding_window of openai/gpt-oss-120b config.json


def name(window: int) -> str:
    return f"gqa_paged_decode_fp8kv_sink{'_swa%d' % window if window else ''}_h64_kv8_d64_ps16"


def twin(window: int) -> str:
    """The bfloat16-cache kernel of the same layers."""
    return f"gqa_paged_decode_sink{'_swa%d' % window if window else ''}_h64_kv8_d64_ps16"


# --------------------------------------------------------------------------------------------------
# The reference: the bfloat16 sink kernels' loop, the codes dequantised as they are gathered.
# --------------------------------------------------------------------------------------------------

REFERENCE = '''import torch


def run(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sinks, sm_scale, k_scale, v_scale):
    batch_size, num_qo_heads, head_dim = q.shape
    _, page_size, num_kv_heads, _ = k_cache.shape
    group = num_qo_heads // num_kv_heads
    scale = float(sm_scale)
    k_scale = float(k_scale)
    v_scale = float(v_scale)
    window = WINDOW  # keys visible to a query, counting itself (0: no window, all keys)
    sink = sinks.to(torch.float32)  # [num_qo_heads], one learned logit per head, NOT scaled
    output = torch.zeros(batch_size, num_qo_heads, head_dim, dtype=torch.float32, device=q.device)
    for b in range(batch_size):
        start = int(kv_indptr[b])
        end = int(kv_indptr[b + 1])
        kv_len = (end - start - 1) * page_size + int(kv_last_page_len[b])
        pages = kv_indices[start:end].to(torch.int64)
        # Gather this sequence's pages in order and keep its kv_len tokens. Dequantise: the cache holds
        # float8_e4m3 codes; the real key is code * k_scale and the real value code * v_scale (per tensor).
        k = k_cache[pages].reshape(-1, num_kv_heads, head_dim)[:kv_len].to(torch.float32) * k_scale
        v = v_cache[pages].reshape(-1, num_kv_heads, head_dim)[:kv_len].to(torch.float32) * v_scale
        # The new token sits at position kv_len - 1; a sliding window keeps the last `window` keys.
        first = max(0, kv_len - window) if window > 0 else 0
        k = k[first:]
        v = v[first:]
        # Query head h reads KV head h // group.
        k = k.repeat_interleave(group, dim=1)  # [keys, num_qo_heads, head_dim]
        v = v.repeat_interleave(group, dim=1)
        qb = q[b].to(torch.float32)  # [num_qo_heads, head_dim]
        logits = torch.einsum("hd,jhd->hj", qb, k) * scale  # [num_qo_heads, keys]
        # The sink joins the softmax denominator as one more logit per head; it has no value row.
        row_max = torch.maximum(logits.max(dim=-1).values, sink)  # [num_qo_heads]
        exp = torch.exp(logits - row_max[:, None])
        denom = exp.sum(dim=-1) + torch.exp(sink - row_max)
        output[b] = torch.einsum("hj,jhd->hd", exp, v) / denom[:, None]
    return {"output": output.to(torch.bfloat16)}
'''

BASELINE = '''import torch


def run(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sinks, sm_scale, k_scale, v_scale):
    # Per sequence: gather its pages (float8 codes to float32), k_scale folded into the softmax scale and v_scale
    # applied to the output (as FlashInfer's bmm1_scale / bmm2_scale do), the sink as one more softmax column.
    window = WINDOW
    B, H, D = q.shape
    page_size, Hk = k_cache.shape[1], k_cache.shape[2]
    out = torch.empty(B, H, D, dtype=torch.float32, device=q.device)
    sink = sinks.float().view(H, 1)
    bmm1 = float(sm_scale) * float(k_scale)
    for b in range(B):
        pages = kv_indices[int(kv_indptr[b]):int(kv_indptr[b + 1])].long()
        n = (len(pages) - 1) * page_size + int(kv_last_page_len[b])
        first = max(0, n - window) if window else 0
        k = k_cache[pages].flatten(0, 1)[first:n].float().repeat_interleave(H // Hk, dim=1)  # [L, H, D]
        v = v_cache[pages].flatten(0, 1)[first:n].float().repeat_interleave(H // Hk, dim=1)
        s = torch.einsum("hd,lhd->hl", q[b].float(), k) * bmm1
        p = torch.softmax(torch.cat([s, sink], dim=1), dim=1)[:, :-1]
        out[b] = torch.einsum("hl,lhd->hd", p, v) * float(v_scale)
    return {"output": out.to(torch.bfloat16)}
'''

RECIPE = ("vLLM's gpt-oss recipe (vllm-project/recipes OpenAI/GPT-OSS.md, \"Recipe for NVIDIA Blackwell & Hopper "
          "Hardware\") launches `vllm serve openai/gpt-oss-120b --config GPT-OSS_Blackwell.yaml --tensor-parallel-size "
          "1` on Blackwell (compute capability 10.0), and that config sets kv-cache-dtype: fp8 (fp8_e4m3); its Hopper "
          "config GPT-OSS_Hopper.yaml does not (the bfloat16 cache), and the same launch serves openai/gpt-oss-20b.")
BACKEND = ("On Blackwell vLLM runs this in its FlashInfer backend (first in vllm/platforms/cuda.py's backend "
           "priorities for compute capability 10) through TensorRT-LLM's attention "
           "(flashinfer.decode.trtllm_batch_decode_with_kv_cache with sinks, window_left = sliding_window - 1 and "
           "kv_cache_dtype float8_e4m3): vllm/utils/flashinfer.py use_trtllm_attention returns True whenever a "
           "layer has sinks (\"the only backend that supports them\" on SM100), so sinks and the FP8 cache are "
           "supported together there. FlashInfer folds the scales out of the loops: bmm1_scale = q_scale * k_scale "
           "* sm_scale multiplies q . k_code and bmm2_scale = v_scale the weighted sum of v_code (vLLM's "
           "_k_scale_float and _v_scale_float: 1.0 for the gpt-oss checkpoints, which carry no KV-cache scales; the "
           "workloads pass stand-in scales so that the bench's codes dequantise to unit-scale keys and values). With "
           "an FP8 cache vLLM's FlashInfer backend also quantises the query to FP8 (q_data_type = kv_cache_dtype, "
           "q_scale 1.0 without calibrated scales) as a separate step before the kernel unless "
           "--attention-config.disable_flashinfer_q_quantization is set; this kernel takes the bfloat16 query, as "
           "the dataset's other FP8-KV kernels do. On Hopper (not the recipe's configuration) vLLM's "
           "FlashAttention-3 backend takes both sinks (s_aux) and an FP8 cache (flash_attn_supports_sinks and "
           "flash_attn_supports_fp8), with a quantised query.")

SINK_TEXT = ("Attention sinks (gpt-oss): each query head h has one learned logit sinks[h] (self_attn.sinks in the "
             "checkpoint) that joins the softmax denominator as an extra column with no value row, and is NOT "
             "multiplied by sm_scale (openai/gpt-oss gpt_oss/torch/model.py sdpa() concatenates S to QK before the "
             "softmax and drops that column after it). The sinks are stored bfloat16 in the checkpoint and read as "
             "float32 here.")

WINDOW_TEXT = {
    0: ("gpt-oss-120b's full-attention layers (18 of the 36 per step: layers 1, 3, .., 35 of layer_types; "
        "gpt-oss-20b's 12 of 24): every earlier key is visible."),
    WINDOW: ("gpt-oss-120b's sliding-window layers (18 of the 36 per step: layers 0, 2, .., 34 of layer_types; "
             "gpt-oss-20b's 12 of 24), sliding_window = 128: a query at position p sees keys p - 127 .. p (128 keys "
             "counting itself; vLLM passes window_left = 127). vLLM frees the pages that fall out of the window and "
             "points their block-table slots at a null page that is never read, so the page table here lists every "
             "page of the sequence and the kernel reads only the window."),
}


def description(window: int) -> str:
    return "\n\n".join([
        "Batched GQA decode attention with attention sinks over a paged FP8 KV cache (float8_e4m3 codes with one "
        "scale per tensor for K and one for V), page size 16, for " + WINDOW_TEXT[window] + " One new query token "
        "per sequence attends to the cached tokens of its sequence (its own key and value already written, as "
        f"codes; the new token is at position kv_len - 1). The bfloat16-cache twin is {twin(window)}. " + RECIPE,
        SINK_TEXT,
        "The cache stores the codes k_code = fp8(k / k_scale), v_code = fp8(v / v_scale) written by the KV append, "
        "so the key and value of token j are k_code[j] * k_scale and v_code[j] * v_scale:\n\n"
        "    s_j    = sm_scale · q[h] · (k_scale · k_code_j)\n"
        "    m      = max(max_j s_j, sinks[h])\n"
        "    out[h] = Σ_j exp(s_j − m) · v_scale · v_code_j / (Σ_j exp(s_j − m) + exp(sinks[h] − m))\n\n"
        "over the visible keys j. " + BACKEND,
        "num_attention_heads = 64, num_key_value_heads = 8, head_dim = 64, sliding_window = 128 from "
        "openai/gpt-oss-120b config.json (openai/gpt-oss-20b config.json has the same attention; both at tp:1, all "
        "heads on one GPU). The KV cache is paged, layout [num_pages, page_size, num_kv_heads, head_dim] (NHD): "
        "sequence b owns the pages kv_indices[kv_indptr[b] .. kv_indptr[b+1]-1], in order; all are full except the "
        "last, which holds kv_last_page_len[b] tokens (1..page_size). Query head h reads key/value head h // 8. "
        "sm_scale is passed (1 / sqrt(64) = 0.125). The dataset's gpt-oss-120b and gpt-oss-20b records serve H100 "
        "with the bfloat16 cache, so this kernel is tagged model-alt.",
        "Numerics: codes converted to float32 and scaled in float32; float32 logits, softmax with the sink and "
        "weighted sum; output rounded once to bfloat16. No lse output (as the bfloat16 twin).",
    ])


def render(window: int) -> dict:
    """The definition: the bfloat16 twin's axes and inputs, the caches float8_e4m3, k_scale and v_scale added."""
    t = json.loads((DATASET / "definitions" / "gqa" / f"{twin(window)}.json").read_text(encoding="utf-8"))
    inputs = dict(t["inputs"])
    for cache, what in (("k_cache", "key = code * k_scale"), ("v_cache", "value = code * v_scale")):
        inputs[cache] = {
            **inputs[cache], "dtype": "float8_e4m3",
            "description": (f"Paged {cache[0]} cache: float8_e4m3 codes, {what}. Drawn normal(0, 64) clamped to "
                            "+-448 (a per-tensor scale calibrated to the cache's largest magnitude puts it at 448, "
                            "about 7 standard deviations out)."),
            "random": {"distribution": "normal", "mean": 0.0, "std": 64.0}}
    inputs["k_scale"] = {"shape": [], "dtype": "float32",
                         "description": "Per-tensor dequantisation scale of the key cache (key = code * k_scale)."}
    inputs["v_scale"] = {"shape": [], "dtype": "float32",
                         "description": "Per-tensor dequantisation scale of the value cache (value = code * v_scale)."}
    tags = ["status:draft", "model-alt:gpt-oss-120b", "model-alt:gpt-oss-20b", "stage:decode", "tp:1",
            "quantization:fp8", "attention:sink", *(["attention:sliding_window"] if window else []), "gpu:sm100"]
    return {"name": name(window), "description": description(window), "type": "gqa", "tags": tags,
            "axes": t["axes"], "constraints": t["constraints"], "inputs": inputs, "outputs": t["outputs"],
            "reference": REFERENCE.replace("WINDOW", str(window), 1)}


def einsum_text(window: int) -> str:
    """The twin's cascade with 8-bit caches (the definition's dtype) and the two scales where FlashInfer applies them."""
    text = (DATASET / "einsums" / "gqa" / f"{twin(window)}.yaml").read_text(encoding="utf-8")
    head, sep, body = text.partition("{% set G")
    head = head.replace("over a paged KV cache:", "over a paged FP8 KV cache (float8_e4m3 codes, one scale\n# per "
                        "tensor for K and one for V):", 1)
    head += ("# The caches are read at 8 bits per value (their dtype); k_scale multiplies the scores with sm_scale\n"
             "# and v_scale the weighted sum of the values (FlashInfer's bmm1_scale and bmm2_scale); the codes'\n"
             "# conversion to a wider type is free. PV runs at QK's FP8 rate (its compute_dtype).\n")
    body = body.replace("    - {name: sm_scale, projection: []}\n",
                        "    - {name: sm_scale, projection: []}\n    - {name: k_scale, projection: []}\n", 1)
    pv_end = "    - {name: out_pages,"
    at = body.index(pv_end, body.index("- name: PV"))
    body = body[:at] + "    - {name: v_scale, projection: []}\n" + body[at:]
    # PV on the unit QK runs on (QK reads the 8-bit cache); v_scale alone would count it at the float32 rate.
    body = body.replace("  - name: PV\n", "  - name: PV\n    compute_dtype: float8_e4m3\n", 1)
    return head + sep + body


def baseline(window: int) -> dict:
    n = name(window)
    return {
        "name": f"{n}_torch", "definition": n, "author": "baseline",
        "description": ("Per-sequence " + (f"sliding-window ({window}) " if window else "") + "decode attention over "
                        "the float8 codes in float32: pages gathered, k_scale folded into the softmax scale and "
                        "v_scale applied to the output (as FlashInfer does), the sink logit appended as an extra "
                        "softmax column (torch.softmax), then dropped."),
        "spec": {"language": "python", "target_hardware": ["cpu", "H100_SXM"], "entry_point": "main.py::run",
                 "destination_passing_style": False, "dependencies": ["torch"]},
        "sources": [{"path": "main.py", "content": BASELINE.replace("WINDOW", str(window), 1)}]}


def files() -> dict:
    out = {}
    for window in (0, WINDOW):
        n = name(window)
        out[f"definitions/gqa/{n}.json"] = json.dumps(render(window), indent=2, ensure_ascii=False) + "\n"
        out[f"einsums/gqa/{n}.yaml"] = einsum_text(window)
        out[f"solutions/baseline/gqa/{n}/{n}_torch.json"] = \
            json.dumps(baseline(window), indent=2, ensure_ascii=False) + "\n"
    return out


# --------------------------------------------------------------------------------------------------
# Independent check: the bfloat16 sink kernels' inputs with the caches redrawn as codes; the pool dequantised in
# float64, then gpt_oss.py's dense check (window mask over positions, the sink as a softmax column).
# --------------------------------------------------------------------------------------------------

def inputs(ax, g, i):
    x = gpt_oss.decode_inputs(ax, g, i)
    k_scale, v_scale = FP8_SCALES[i % 3]
    std = 64.0 if k_scale < 1.0 else 1.0  # k_scale 1.0 with codes of std 64 would make one key win every softmax
    x["k_cache"] = fp8(torch.randn(x["k_cache"].shape, generator=g), std)
    x["v_cache"] = fp8(torch.randn(x["v_cache"].shape, generator=g), 64.0)
    x["k_scale"] = [k_scale, torch.tensor(k_scale), k_scale][i % 3]
    x["v_scale"] = [v_scale, v_scale, torch.tensor(v_scale)][i % 3]
    return x


def expected_with(window):
    check = gpt_oss.decode_expected_with(window)

    def expected(ax, x):
        pool = {**x, "k_cache": x["k_cache"].double() * float(x["k_scale"]),
                "v_cache": x["v_cache"].double() * float(x["v_scale"])}
        return check(ax, pool)
    return expected


# gpt_oss.DECODE: a short context; 130 > 128 beside one page and one token; 300, 128, 129 and 64 tokens.
CASES = {name(w): Case(gpt_oss.DECODE, inputs, expected_with(w), derived=paged_derived) for w in (0, WINDOW)}


def write(root=DATASET) -> list:
    return write_files(files(), root)


if __name__ == "__main__":
    for p in write():
        print(f"wrote {p.relative_to(DATASET.parent)}")
