"""Independent formulations for the GLM-4.5 definitions of its calling record (the FP8 release on SGLang TP8,
8 H200: zai-org/GLM-4.5 config.json; compressed-tensors FP8 with per-output-channel weight scales and per-token
activation scales).

The per-token quantiser is checked row by row in a Python loop (the values before their float8 rounding); the
per-channel FP8 GEMMs with both operands dequantised in float64 and one matmul (the bias added in float64); the
sorted grouped GEMMs pair by pair with dequantised weights, the pair-to-expert map rebuilt from the aligned
blocks (moe_pipeline's index helpers); the router as deepseek.route_token with one group and no scaling; the
scaled expert sum as Tensor.sum times 2.5; the q/k norms with F.rms_norm in float64. The rest reuses the other
models' checks at GLM-4.5's shapes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import common_kernels, moe_pipeline, qwen
from .common import TOKEN_SETS, Case, fp8, shrunk, uniform
from .minimax_m2 import cast_case, fp32_gemm_case, joint_case, routing_case

ROUTED_SCALING = 2.5  # routed_scaling_factor of GLM-4.5
EPS = 1e-5  # rms_norm_eps of GLM-4.5
TOP_K = 8


def quant_expected(ax, x):
    T, H = ax["num_tokens"], ax["hidden_size"]
    x64 = x["input"].double()
    out = torch.empty(T, H, dtype=torch.float64)
    scale = torch.empty(T, 1, dtype=torch.float64)
    for t in range(T):
        s = max(max(abs(v) for v in x64[t].tolist()), 1e-10) / 448.0
        scale[t, 0] = s
        out[t] = torch.clamp(x64[t] / s, -448.0, 448.0)
    return {"output": out, "scale": scale}


def quant_inputs(ax, g, i):
    x = moe_pipeline.quant_inputs(ax, g, i)["input"].float()
    if ax["num_tokens"] > 2:
        x[-1] = 0.0  # an all-zero row: the scale's floor, outputs 0
    return {"input": x.bfloat16()}


def rowwise_inputs_with(bias):
    def make(ax, g, i):
        M, N, K = ax["M"], ax["N"], ax["K"]
        # Scales spread over a factor of 16 so that a scale applied to the wrong row or channel shows.
        x = {"A": fp8(torch.randn(M, K, generator=g), 64), "A_scale": uniform((M, 1), 0.25, 4.0, g) / 64,
             "B": fp8(torch.randn(N, K, generator=g), 64), "B_scale": uniform((N, 1), 0.25, 4.0, g) / 64}
        if bias:
            x["bias"] = (torch.randn(N, generator=g) * [0.5, 5.0, 0.0][i % 3]).bfloat16()
        return x
    return make


def rowwise_expected(ax, x):
    a = x["A"].double() * x["A_scale"].double()
    b = x["B"].double() * x["B_scale"].double()
    return {"C": F.linear(a, b, x["bias"].double() if "bias" in x else None)}


def rowwise_case(n, bias=False):
    # N shrunk where the weight is large (each column is the same scaled dot product over the real K).
    shrink = {"N": 384} if n > 1024 else {}
    return Case([shrunk({"M": m}, **shrink) for m in (1, 3, 5)], rowwise_inputs_with(bias), rowwise_expected)


def grouped_case(second, smaller):
    # Every expert is on the rank (TP: local share 1.0, no -1); per-channel scales (moe_pipeline's "channel").
    return moe_pipeline.gemm_case(second, 1.0, smaller, scales="channel")


def qk_inputs(ax, g, i):
    T, HQ, HK, D = ax["num_tokens"], ax["num_qo_heads"], ax["num_kv_heads"], ax["head_dim"]
    scale = [1.0, 30.0, 0.02][i % 3]
    return {"q": (torch.randn(T, HQ, D, generator=g) * scale).bfloat16(),
            "k": (torch.randn(T, HK, D, generator=g) * scale * 3).bfloat16(),
            "q_weight": (1.0 + 0.3 * torch.randn(D, generator=g)).bfloat16(),
            "k_weight": (1.0 + 0.3 * torch.randn(D, generator=g)).bfloat16()}


def qk_expected(ax, x):
    D = ax["head_dim"]
    return {"q_out": F.rms_norm(x["q"].double(), (D,), x["q_weight"].double(), eps=EPS),
            "k_out": F.rms_norm(x["k"].double(), (D,), x["k_weight"].double(), eps=EPS)}


def add_inputs(ax, g, i):
    scale = [1.0, 100.0, 0.01][i % 3]
    a = torch.randn(ax["num_tokens"], ax["hidden_size"], generator=g) * scale
    b = torch.randn(ax["num_tokens"], ax["hidden_size"], generator=g) * scale
    b[0, :16] = -a[0, :16]  # cancellation: exact zeros
    return {"a": a.bfloat16(), "b": b.bfloat16()}


# N and K of the grouped GEMMs shrunk (160 experts at real size hold 315 MB of w13); the 160 experts, the block
# alignment and the per-row / per-channel scales real.
E160_W13_SMALLER = {"N": 48, "K": 256}
E160_W2_SMALLER = {"N": 64, "K": 64}

CASES = {
    **{f"quantize_fp8_per_token_h{h}": Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 5}], quant_inputs,
                                            quant_expected) for h in (5120, 1536, 192)},
    "gemm_fp8_rowwise_bias_n1792_k5120": rowwise_case(1792, bias=True),
    **{f"gemm_fp8_rowwise_n{n}_k{k}": rowwise_case(n) for n, k in ((5120, 1536), (3072, 5120), (384, 5120), (5120, 192))},
    "grouped_gemm_fp8_rowwise_sorted_e160_n384_k5120": grouped_case(False, E160_W13_SMALLER),
    "grouped_gemm_fp8_rowwise_sorted_weighted_e160_n5120_k192": grouped_case(True, E160_W2_SMALLER),
    "gemm_fp32_n160_k5120": fp32_gemm_case(),
    "moe_routing_grouped_topk8_e160_ng1_kg1": routing_case(1.0),
    "moe_align_block_size_e160_topk8": moe_pipeline.align_case(1.0),
    "moe_sum_scaled_topk8_h5120": Case(moe_pipeline.sum_case().sizes, moe_pipeline.sum_inputs,
                                       lambda ax, x: {"output": x["input"].double().sum(dim=1) * ROUTED_SCALING}),
    "fused_qk_rmsnorm_h12_kv1_d128": Case(TOKEN_SETS, qk_inputs, qk_expected),
    "cast_to_float32_h5120": cast_case(),
    "add_h5120": Case(TOKEN_SETS, add_inputs, lambda ax, x: {"output": x["a"].double() + x["b"].double()}),
    "embedding_v18944_h5120": common_kernels.shard_case(8, torch.int64),
    "gemm_n18944_k5120": qwen.gemm_case(N=1000),  # N shrunk: every output column is the same dot product over K
    "allgather_tp8_v18944": common_kernels.allgather_case(8),
    "softmax_temperature_v151552": common_kernels.softmax_case(),
    "top_k_top_p_joint_sampling_from_probs_v151552": joint_case(),
}
