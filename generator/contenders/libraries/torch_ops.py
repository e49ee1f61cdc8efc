"""torch's own vendor kernels where the baseline calls something else: torch._scaled_mm for the row-wise FP8 GEMMs,
torch._grouped_mm for the grouped GEMMs, torch.softmax for the temperature softmax.

The baselines widen both FP8 operands to float32 and multiply there; torch._scaled_mm runs the FP8
product on the tensor cores (cuBLASLt / CUTLASS on GPUs, a real FP8 path on the CPU), accumulates in
float32 and applies the per-token and per-channel scales (and the bias) in float32 before the one
rounding to bfloat16, as the definitions state.
"""

from __future__ import annotations

import re

from .common import Family, sig

AUTHOR = "torch-ops"
DEPENDENCIES = ("torch>=2.6",)

ROWWISE_SOURCE = '''import torch


def run(A, A_scale, B, B_scale{bias_arg}):
    # B is [N, K] row-major, so B.t() is the column-major [K, N] operand _scaled_mm wants (a view);
    # the scales as [M, 1] and [1, N] (a view of B_scale [N, 1]).
    C = torch._scaled_mm(A, B.t(), scale_a=A_scale, scale_b=B_scale.t(){bias_kw}, out_dtype=torch.bfloat16)
    return {{"C": C}}
'''

_ROWWISE = "A:M,K:float8_e4m3 A_scale:M,num_k_blocks:float32 B:N,K:float8_e4m3 B_scale:N,num_k_blocks:float32"


def _rowwise(definition):
    bias = "bias" in definition.inputs
    if definition.const_axes.get("num_k_blocks") != 1:
        from .common import Unclaimed
        raise Unclaimed("row-wise scales with num_k_blocks != 1 are block scales, which _scaled_mm's row-wise "
                        "recipe does not take")
    source = ROWWISE_SOURCE.format(bias_arg=", bias" if bias else "", bias_kw=", bias=bias" if bias else "")
    return source, (
        "torch._scaled_mm with row-wise scaling (scale_a [M, 1] per token, scale_b [1, N] per output channel"
        + (", bf16 bias added in the float32 epilogue" if bias else "") + "): the FP8 e4m3 product accumulated in "
        "float32, scaled in float32, rounded to bfloat16 once (cuBLASLt/CUTLASS on Hopper, torch's CPU FP8 path on "
        "the CPU). No layout conversion: B.t() and B_scale.t() are views.")


GROUPED_SOURCE = '''import torch


def run(A, B, m_indptr):
    # Expert e's rows are A[m_indptr[e]:m_indptr[e + 1]]; _grouped_mm takes the groups' end offsets
    # (int32) and the weights as [E, K, N] (B.transpose(1, 2) is a view).
    C = torch._grouped_mm(A, B.transpose(1, 2), offs=m_indptr[1:])
    return {"C": C}
'''


def _grouped(definition):  # noqa: ARG001 (every sibling is the same call)
    return GROUPED_SOURCE, (
        "torch._grouped_mm (CUTLASS grouped GEMM on Hopper, a loop of matmuls on the CPU): each expert's rows of A "
        "times that expert's B[e].T, bfloat16 inputs, float32 accumulation, bfloat16 output. Inside the timed call: "
        "the end offsets m_indptr[1:] and B.transpose(1, 2), both views.")


SOFTMAX_SOURCE = '''import torch


def run(logits, temperature):
    # ATen's fused softmax (max, exp and sum in one kernel, float32 throughout) over the temperature-divided rows.
    return {"probs": torch.softmax(logits / temperature.unsqueeze(1), dim=-1)}
'''


def _softmax(definition):  # noqa: ARG001 (every sibling is the same call)
    return SOFTMAX_SOURCE, (
        "torch.softmax (ATen's fused softmax kernel: the row max, the exponentials and their sum in one kernel, "
        "float32 throughout) of the logits divided by each request's temperature, where the baseline writes the "
        "max-subtracted exponentials and their sum as three separate torch operations. No layout conversion.")


FAMILIES = (
    Family(name="grouped_gemm", author=AUTHOR, pattern=re.compile(r"^grouped_gemm_e\d+_n\d+_k\d+$"),
           signatures=(sig("A:total_tokens,K:bfloat16 B:num_experts,N,K:bfloat16 m_indptr:len_m_indptr:int32",
                           "C:total_tokens,N:bfloat16"),),
           render=_grouped, language="python", target_hardware=("cpu", "H100_SXM", "H200"),
           dependencies=DEPENDENCIES, suffix="grouped_mm"),
    Family(name="gemm_fp8_rowwise", author=AUTHOR, pattern=re.compile(r"^gemm_fp8_rowwise(_bias)?_n\d+_k\d+$"),
           signatures=(sig(_ROWWISE, "C:M,N:bfloat16"), sig(_ROWWISE + " bias:N:bfloat16", "C:M,N:bfloat16")),
           render=_rowwise, language="python", target_hardware=("cpu", "H100_SXM", "H200"),
           dependencies=DEPENDENCIES, suffix="scaled_mm"),
    Family(name="softmax_temperature", author=AUTHOR, pattern=re.compile(r"^softmax_temperature_v\d+$"),
           signatures=(sig("logits:batch_size,vocab_size:float32 temperature:batch_size:float32",
                           "probs:batch_size,vocab_size:float32"),),
           render=_softmax, language="python", target_hardware=("cpu", "H100_SXM", "H200"),
           dependencies=DEPENDENCIES, suffix="softmax"),
)

REJECTED = {
    "rmsnorm / fused_add_rmsnorm": "the baselines already call F.rms_norm: a torch-ops entry would be the baseline",
    "gemm_* (bf16/fp16/fp32)": "the baselines already call torch.matmul (cuBLAS): the same call",
    "gemm_fp8_block128_*": "torch._scaled_mm's 1x128 / 128x128 block scaling is CUDA-only (the CPU build rejects "
                           "those scale shapes), so nothing here can check it; lands after a GPU run",
    "gqa_ragged_prefill_causal_* / mla_ragged_prefill_causal_*": "the definitions return the base-2 log-sum-exp, "
                           "which F.scaled_dot_product_attention does not; flex_attention(return_lse=True) with a "
                           "block-diagonal causal block mask would, not built yet",
    "gqa_paged_* / mla_paged_*": "flex_attention over a paged cache needs a page-table mask per call; not built yet",
    "grouped_gemm_fp8_* / moe_*": "torch._scaled_grouped_mm is CUDA-only (sm90+), so nothing here can check it; "
                                  "the fused MoEs also route and gate around the GEMMs",
    "grouped_gemm_weighted_* / grouped_gemm_n4096_k4096 / lora_*": "other semantics (router weights, layouts) than "
                                  "the plain grouped GEMM call; not claimed",
}
