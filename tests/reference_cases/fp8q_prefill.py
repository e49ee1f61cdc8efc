"""Chunked prefill over an FP8 KV cache with an FP8 query, as vLLM 0.33 serves it by default on SM90/SM100 (its
FlashInfer and FlashAttention-3 backends quantise the prefill query to FP8 over an FP8 cache; issue 40's audit):
gqa_paged_prefill_causal_fp8q_fp8kv_h32_kv8_d128_ps16 (Llama-3.1-8B), rendered from the bfloat16-query template
gqa_paged_prefill_causal_fp8kv_h32_kv8_d128_ps16 with the query's dtype, its per-tensor q_scale and the lines that
use them changed (`cd tests && python -m reference_cases.fp8q_prefill` rewrites the files). The bfloat16-query
definitions stay as the configuration with query quantisation disabled.

The check is fp8kv.py's (the pool dequantised in float64, then the bfloat16 prefill's SDPA check) with the query
codes dequantised by q_scale first; the sets' q_scale differs from 1 in two of them, so a kernel that drops it fails
there (planted in test_references.py).
"""

from __future__ import annotations

import copy
import json

from .common import PAGED_PREFILL_SETS, Case, fp8, write_files
from .fp8kv import PREFILL_TEMPLATE, fp8kv_prefill_expected, fp8kv_prefill_inputs
from .llama import prefill_derived
from .variants import DATASET

NAME = "gqa_paged_prefill_causal_fp8q_fp8kv_h32_kv8_d128_ps16"
Q_SCALES = [0.02, 1.0 / 64, 1.0]  # 1.0: a checkpoint without a calibrated query scale (vLLM's default q_scale)
SIGNATURE = "sm_scale, k_scale, v_scale):"
Q_LINE = "        qb = q[q_start:q_end].to(torch.float32)  # [q_len, num_qo_heads, head_dim]\n"
V_SCALE_LINE = "    v_scale = float(v_scale)\n"
BASELINE_Q = "        qb = q[qo[b]:qo[b + 1]].float().transpose(0, 1)  # [H, q_len, D]\n"
BASELINE_SCALE = "    scale = float(sm_scale) * float(k_scale)\n"

DESCRIPTION = (
    "Grouped-query attention for prefill over a paged FP8 KV cache with an FP8 query (float8_e4m3 codes with one "
    "scale per tensor for Q, K and V) with page_size = 16, for Llama-3.1-8B at TP1 served with an FP8 KV cache "
    "(vLLM --kv-cache-dtype fp8): chunked prefill, where each prompt's new tokens attend to the prompt's whole KV "
    "(cached prefix plus the chunk itself, already written to the cache as FP8 codes). On SM90/SM100 vLLM 0.33's "
    "FlashInfer and FlashAttention-3 backends quantise the prefill query to FP8 too before the kernel (q_data_type "
    "float8_e4m3 for FlashInfer's BatchPrefillWithPagedKVCacheWrapper, the query divided by the layer's q_scale, "
    "1.0 unless the checkpoint carries calibrated scales; issue 40's audit of vLLM 0.33.0): this definition is that "
    "served kernel, the query's quantisation a separate step before it; gqa_paged_prefill_causal_fp8kv_h32_kv8_d128_"
    "ps16 is the configuration with query quantisation disabled (bfloat16 query), whose mathematics this is with "
    "q = q_code * q_scale. Heads from meta-llama/Llama-3.1-8B config.json: 32 query heads, 8 KV heads, head_dim = "
    "128; query head h reads KV head h // 4. Queries are ragged: sequence b owns q[qo_indptr[b]:qo_indptr[b+1]]. "
    "Sequence b owns the pages kv_indices[kv_indptr[b]:kv_indptr[b+1]] in token order; all are full except the "
    "last, which holds kv_last_page_len[b] tokens (1..16). Causal, aligned bottom-right: query i of sequence b sits "
    "at position kv_len[b] - q_len[b] + i and sees keys 0 .. kv_len[b] - q_len[b] + i. s[h, i, j] = sm_scale * "
    "(q_scale * q_code[i, h]) . (k_scale * k_code[j, h // 4]); output[i, h] = sum_j softmax_j(s)[j] * v_scale * "
    "v_code[j, h // 4] over the visible keys; lse[i, h] = log2(sum_j exp(s[h, i, j])), base 2, as FlashInfer "
    "returns it (FlashInfer folds q_scale and k_scale into the softmax scale and v_scale into the output). Tagged "
    "model-alt: the dataset's llama-3.1-8b record serves a bfloat16 KV cache.\n\nNumerics: codes converted to "
    "float32 and scaled in float32; float32 logits, softmax and weighted sum; output rounded to bfloat16 once; lse "
    "float32.")


def _template(kind: str) -> dict:
    if kind == "definition":
        path = DATASET / "definitions" / "gqa" / f"{PREFILL_TEMPLATE}.json"
    else:
        path = DATASET / "solutions" / "baseline" / "gqa" / PREFILL_TEMPLATE / f"{PREFILL_TEMPLATE}_torch.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _swap(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{PREFILL_TEMPLATE}: {old.strip()!r} is no longer in its code"
    return text.replace(old, new)


def render() -> dict:
    t = _template("definition")
    d = copy.deepcopy(t)
    q = d["inputs"]["q"]
    q.update(dtype="float8_e4m3", random=copy.deepcopy(t["inputs"]["k_cache"]["random"]),
             description="Queries of the new tokens (after RoPE) as float8_e4m3 codes, query = code * q_scale; "
                         "ragged by qo_indptr. Drawn as the caches' codes.")
    d["inputs"]["q_scale"] = {"shape": [], "dtype": "float32",
                              "description": "Per-tensor dequantisation scale of the query (query = code * q_scale)."}
    ref = _swap(t["reference"], SIGNATURE, "sm_scale, k_scale, v_scale, q_scale):")
    ref = _swap(ref, V_SCALE_LINE, V_SCALE_LINE + "    q_scale = float(q_scale)\n")
    ref = _swap(ref, Q_LINE, "        qb = q[q_start:q_end].to(torch.float32) * q_scale  # dequantised FP8 query codes\n")
    d.update(name=NAME, description=DESCRIPTION, reference=ref,
             tags=["stage:prefill", "model-alt:llama-3.1-8b", "tp:1", "quantization:fp8", "status:draft"])
    return {"name": NAME, "description": DESCRIPTION, **{k: v for k, v in d.items() if k not in ("name", "description")}}


def baseline() -> dict:
    sol = _template("baseline")
    code = _swap(sol["sources"][0]["content"], SIGNATURE, "sm_scale, k_scale, v_scale, q_scale):")
    code = _swap(code, BASELINE_SCALE, "    scale = float(sm_scale) * float(k_scale) * float(q_scale)  # q_scale folded too\n")
    assert code.count(BASELINE_Q) == 1  # the codes used as they are: their scales are all in `scale`
    return {**sol, "name": f"{NAME}_torch", "definition": NAME,
            "description": sol["description"] + " The FP8 query's q_scale folded into the softmax scale with k_scale.",
            "sources": [{**sol["sources"][0], "content": code}]}


def files() -> dict:
    text = lambda x: json.dumps(x, indent=2, ensure_ascii=False) + "\n"  # noqa: E731
    einsum = (DATASET / "einsums" / "gqa" / f"{PREFILL_TEMPLATE}.yaml").read_text(encoding="utf-8")
    # The template's cascade with the query's scale read beside k_scale (the query codes' 8 bits come from q's dtype).
    einsum = _swap(einsum, "    - {name: k_scale, projection: []}\n",
                   "    - {name: k_scale, projection: []}\n    - {name: q_scale, projection: []}\n")
    einsum = _swap(einsum, "# Causal GQA prefill over a paged FP8 KV cache (float8_e4m3 codes,",
                   "# Causal GQA prefill of an FP8 query over a paged FP8 KV cache (float8_e4m3 codes, q_scale with k_scale;")
    # QK multiplies two FP8 operands here, so it runs on the FP8 unit, and PV with it (the template's rule).
    einsum = _swap(einsum, "    compute_dtype: bfloat16\n", "    compute_dtype: float8_e4m3\n")
    return {f"definitions/gqa/{NAME}.json": text(render()), f"einsums/gqa/{NAME}.yaml": einsum,
            f"solutions/baseline/gqa/{NAME}/{NAME}_torch.json": text(baseline())}


def fp8q_inputs(ax, g, i):
    x = fp8kv_prefill_inputs(ax, g, i)
    q_scale = Q_SCALES[i % 3]
    x["q"] = fp8(x["q"].float(), 1.0 / q_scale)  # codes of the same queries: q ~ code * q_scale
    x["q_scale"] = q_scale
    return x


def fp8q_expected(ax, x):
    return fp8kv_prefill_expected(ax, {**x, "q": x["q"].double() * float(x["q_scale"])})


CASES = {NAME: Case(PAGED_PREFILL_SETS, fp8q_inputs, fp8q_expected, derived=prefill_derived)}


if __name__ == "__main__":
    for p in write_files(files(), DATASET):
        print(f"wrote {p.relative_to(DATASET.parent)}")
