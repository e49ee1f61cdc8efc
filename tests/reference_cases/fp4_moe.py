"""FP4 MoE on Blackwell: DeepSeek-R1's NVFP4 routed experts (FlashInfer's CUTLASS fused MoE as vLLM calls it),
gpt-oss's MXFP8 activation quantiser (FlashInfer's mxfp8_quantize) and its MXFP4 x MXFP8 TRT-LLM fused MoE
(trtllm_fp4_block_scale_moe with MXFP8 activations, gpt-oss-20b's 32 and gpt-oss-120b's 128 experts).

The two MXFP4 x MXFP8 MoEs are one family in dataset/families/. This module imports nvfp4.py's NVFP4 helpers
(e2m1 decoding by table, the 128x4 swizzle offset, the quantiser's independent formulation). The mathematics is checked by
tests/test_references.py against independent formulations (CASES) at small sizes:

- NVFP4 MoE: a dense one-hot formulation in float64: every token through every local expert (gate and up as
  two separate products with the w1 and w3 halves), the codes decoded through nvfp4's 16-entry table and the
  scales gathered by the CUDA offset formula, the SwiGLU output re-quantised by nvfp4's exhaustive-search
  quantiser (quant_expected), the expert outputs combined by a [tokens, experts] matrix of routing weights;
- MXFP8 quantiser: the power-of-two scale by exhaustive search (the smallest 2**e with 448 * 2**e >= amax), the
  e4m3 value by exhaustive nearest search over the finite e4m3 values (ties to the even code);
- MXFP4 x MXFP8 MoE: routing by Python's sorted() on (-logit, id), the softmax in float64, then the dense
  one-hot formulation as above with table-decoded MXFP4 weights and the MXFP8 quantiser's formulation for the
  intermediate.
"""

from __future__ import annotations

import numpy as np
import torch

from . import nvfp4
from .common import Case, shrunk

MOE_NAME = "moe_nvfp4_routed_topk8_e32_h7168_i2048"
MXFP8_NAME = "quantize_mxfp8_h3072"

# --------------------------------------------------------------------------------------------------
# NVFP4 MoE: DeepSeek-R1-0528-FP4 (ModelOpt NVFP4 routed experts), one EP8 rank on B200.
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------
# MXFP8 activation quantiser: gpt-oss on Blackwell (FlashInfer mxfp8_quantize, linear scale layout).
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------
# MXFP4 x MXFP8 fused MoE: gpt-oss on Blackwell (FlashInfer trtllm_fp4_block_scale_moe, MxE4m3 activations).
# --------------------------------------------------------------------------------------------------

GPT_OSS = [("gpt-oss-20b", 32), ("gpt-oss-120b", 128)]


def gpt_moe_name(experts: int) -> str:
    return f"trtllm_fp4_block_scale_moe_mxfp8_topk4_e{experts}_h3072_i3072"


# --------------------------------------------------------------------------------------------------
# Rendering.
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------
# Independent formulations.
# --------------------------------------------------------------------------------------------------


def _lut_dequant(packed: np.ndarray, scale_flat: np.ndarray, cols_sf: int) -> np.ndarray:
    """float64 [rows, K]: codes through the 16-entry table, scales gathered by the CUDA offset formula."""
    rows, kp = packed.shape
    vals = np.empty((rows, 2 * kp))
    vals[:, 0::2], vals[:, 1::2] = nvfp4.LUT16[packed & 15], nvfp4.LUT16[packed >> 4]
    r, k = np.meshgrid(np.arange(rows), np.arange(2 * kp), indexing="ij")
    return vals * scale_flat[nvfp4.sf_offset(r, k // 16, cols_sf)]


def _bf16(a: np.ndarray) -> np.ndarray:
    return torch.from_numpy(a).to(torch.bfloat16).to(torch.float64).numpy()


def moe_expected(ax, inputs):
    T, K = inputs["topk_ids"].shape
    LE, H, I = ax["num_local_experts"], ax["hidden_size"], ax["intermediate_size"]
    off = int(inputs["local_expert_offset"])
    x = _lut_dequant(inputs["hidden_states"].numpy().astype(np.int64),
                     inputs["hidden_states_scale"].to(torch.float64).numpy().reshape(-1), H // 16)
    ids = inputs["topk_ids"].numpy()
    wts = inputs["topk_weights"].numpy().astype(np.float64)
    # Routing weights as a dense [T, LE] matrix: one-hot of each pick over the local experts.
    dense = np.zeros((T, LE))
    for j in range(K):
        for le in range(LE):
            dense[:, le] += np.where(ids[:, j] == off + le, wts[:, j], 0.0)
    g2 = float(inputs["gemm2_input_scale"])
    out = np.zeros((T, H))
    for le in range(LE):  # every token through every local expert (dense), weighted by its one-hot weight
        w13 = _lut_dequant(inputs["gemm1_weights"][le].numpy().astype(np.int64),
                           inputs["gemm1_weights_scale"][le].to(torch.float64).numpy().reshape(-1), H // 16)
        w3, w1 = w13[:I], w13[I:]
        a1 = float(inputs["gemm1_alpha"][le])
        up, gate = _bf16(x @ w3.T * a1), _bf16(x @ w1.T * a1)
        act = torch.from_numpy(gate * (1.0 / (1.0 + np.exp(-gate))) * up).to(torch.bfloat16)
        q = nvfp4.quant_expected({"M_padded": (T + 127) // 128 * 128}, {"input": act, "global_scale": g2})
        a = _lut_dequant(q["quantized"].numpy(), q["scale"].numpy().reshape(-1), I // 16)
        w2 = _lut_dequant(inputs["gemm2_weights"][le].numpy().astype(np.int64),
                          inputs["gemm2_weights_scale"][le].to(torch.float64).numpy().reshape(-1), I // 16)
        out += dense[:, le:le + 1] * (a @ w2.T * float(inputs["gemm2_alpha"][le]))
    return {"output": torch.from_numpy(out)}


def moe_inputs(ax, g, i):
    T, LE, E, K = ax["seq_len"], ax["num_local_experts"], ax["num_experts"], ax["top_k"]
    H, I, O = ax["hidden_size"], ax["intermediate_size"], ax["gemm1_out_size"]
    TP = ax["seq_len_padded"]
    codes = lambda *s: torch.randint(0, 256, s, generator=g, dtype=torch.int32).to(torch.uint8)  # noqa: E731
    scales = lambda *s: (torch.rand(*s, generator=g) * 440 + 8).to(torch.float8_e4m3fn)  # noqa: E731
    offset = [0, 2 * LE, 5 * LE][i]  # rank 0, 2 and 5
    # Distinct picks per token over all experts; set 1 routes its first token only to other ranks' experts
    # (an all-zero output row) and its second to every local expert it can.
    ids = torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(T)])
    if i == 1:
        ids[0] = torch.tensor([e for e in range(E) if not offset <= e < offset + LE][:K])
        ids[1, :min(K, LE)] = torch.arange(offset, offset + min(K, LE))
    w = torch.rand(T, K, generator=g) + 0.05
    return {
        "hidden_states": codes(T, H // 2), "hidden_states_scale": scales(TP, H // 16),
        "topk_ids": ids.to(torch.int32), "topk_weights": w / w.sum(dim=1, keepdim=True),
        "gemm1_weights": codes(LE, O, H // 2), "gemm1_weights_scale": scales(LE, O, H // 16),
        "gemm1_alpha": torch.rand(LE, generator=g) * 5e-7 + 5e-7,
        "gemm2_input_scale": [240.0, 2688.0 / 7.3, 60.0][i],
        "gemm2_weights": codes(LE, H, I // 2), "gemm2_weights_scale": scales(LE, H, I // 16),
        "gemm2_alpha": torch.rand(LE, generator=g) * 5e-7 + 5e-7,
        "local_expert_offset": offset,
    }


def _moe_derived(ax):
    return {"seq_len_padded": (ax["seq_len"] + 127) // 128 * 128}


# Experts shrunk to 4 local of 32 (8 ranks as in the real layer), hidden to 128 and intermediate to 64: the
# smallest sizes with whole 128-row scale tiles of the weights (w13 has 2 x 64 rows, w2 128) and 4-column tiles
# of the scales; the per-expert mathematics is the same at any size. Set 2 has 130 tokens: two 128-row tiles
# of the activation scales.
_MOE_SHRINK = dict(num_experts=32, num_local_experts=4, hidden_size=128, hidden_packed=64, hidden_sf=8,
                   intermediate_size=64, gemm1_out_size=128, intermediate_packed=32, intermediate_sf=4)
MOE_SETS = [shrunk({"seq_len": 5}, **_MOE_SHRINK), shrunk({"seq_len": 9}, **_MOE_SHRINK),
            shrunk({"seq_len": 130}, **_MOE_SHRINK)]


def _e8m0_byte(amax: np.ndarray) -> np.ndarray:
    """The smallest e with 448 x 2**e >= amax, by search over every e8m0 exponent, as its byte e + 127."""
    exps = np.arange(-127, 128, dtype=np.float64)
    ok = 448.0 * np.power(2.0, exps)[None, :] >= amax.reshape(-1, 1)
    return (np.argmax(ok, axis=1)).reshape(amax.shape)  # index = e + 127


def mxfp8_expected(ax, inputs):
    x = inputs["input"].to(torch.float64).numpy()
    M, K = x.shape
    blocks = x.reshape(M, K // 32, 32)
    byte = _e8m0_byte(np.abs(blocks).max(axis=-1))
    v = blocks / np.power(2.0, byte.astype(np.float64) - 127)[:, :, None]
    mag = nvfp4.E4M3[nvfp4.nearest_even(np.minimum(np.abs(v), 448.0), nvfp4.E4M3)]
    q = np.where(v < 0, -mag, mag).reshape(M, K)
    return {"quantized": torch.from_numpy(q), "scale": torch.from_numpy(byte.astype(np.int64))}


def mxfp8_inputs(ax, g, i):
    M, K = ax["M"], ax["K"]
    x = torch.randn(M, K, generator=g) * [3.0, 0.02, 40.0][i]
    if i == 0:
        x[0, :32] *= 448.0 / x[0, :32].abs().max()  # amax exactly 448: scale 2**0, the top value kept
        x[1, 32:64] *= 3584.0 / x[1, 32:64].abs().max()  # amax 448 x 8: scale exactly 2**3
        x[2, :32] *= 450.0 / x[2, :32].abs().max()  # one bfloat16 ulp above 448 x 2**0: scale 2**1
    if i == 1:
        x[0, 32:64] *= 1e4  # a large block next to small ones
        x[2, 64:] = 0.0  # an all-zero block (vLLM's padding columns): byte 0, zeros
    return {"input": x.to(torch.bfloat16)}


# K shrunk to 96 (three 32-value blocks; each block is quantised alone, so any K checks the same).
MXFP8_SETS = [shrunk({"M": 3}, K=96, K_sf=3), shrunk({"M": 7}, K=96, K_sf=3), shrunk({"M": 4}, K=64, K_sf=2)]


def _mxfp4_dequant(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """float64 [rows, K]: codes through the 16-entry table times 2 ** (byte - 127) per 32 values."""
    rows, kp = blocks.shape
    vals = np.empty((rows, 2 * kp))
    vals[:, 0::2], vals[:, 1::2] = nvfp4.LUT16[blocks & 15], nvfp4.LUT16[blocks >> 4]
    return vals * np.repeat(np.power(2.0, scales.astype(np.float64) - 127), 32, axis=1)


def gpt_moe_expected(ax, inputs):
    logits = inputs["routing_logits"].to(torch.float64).numpy()
    T, E = logits.shape
    H, I = ax["hidden_size"], ax["intermediate_size"]
    # Routing: each token's experts ranked by (-logit, id), the top 4's softmax in float64, rounded to bfloat16.
    dense = np.zeros((T, E))  # [token, expert] routing weight, 0 for experts not picked
    for t in range(T):
        top = sorted(range(E), key=lambda e: (-logits[t, e], e))[:4]
        z = np.exp(logits[t, top] - logits[t, top].max())
        dense[t, top] = _bf16(z / z.sum())
    x = inputs["hidden_states"].to(torch.float64).numpy() * np.repeat(
        np.power(2.0, inputs["hidden_states_scale"].numpy().astype(np.float64) - 127), 32, axis=1)
    out = np.zeros((T, H))
    for e in range(E):  # every token through every expert (dense), weighted by its routing weight
        w13 = _mxfp4_dequant(inputs["gemm1_weights"][e].numpy().astype(np.int64),
                             inputs["gemm1_weights_scale"][e].numpy())
        b13 = inputs["gemm1_bias"][e].to(torch.float64).numpy()
        lim = float(inputs["gemm1_clamp_limit"][e])
        lin = np.clip(x @ w13[:I].T + b13[:I], -lim, lim)
        gate = np.minimum(x @ w13[I:].T + b13[I:], lim)
        alpha, beta = float(inputs["gemm1_alpha"][e]), float(inputs["gemm1_beta"][e])
        act = torch.from_numpy(gate / (1.0 + np.exp(-alpha * gate)) * (lin + beta)).to(torch.bfloat16)
        q = mxfp8_expected({}, {"input": act})
        a = q["quantized"].numpy() * np.repeat(np.power(2.0, q["scale"].numpy().astype(np.float64) - 127), 32, axis=1)
        w2 = _mxfp4_dequant(inputs["gemm2_weights"][e].numpy().astype(np.int64), inputs["gemm2_weights_scale"][e].numpy())
        y = a @ w2.T + inputs["gemm2_bias"][e].to(torch.float64).numpy()
        out += dense[:, e:e + 1] * y
    return {"output": torch.from_numpy(out)}


def gpt_moe_inputs(ax, g, i):
    T, E, H, I, O = ax["seq_len"], ax["num_experts"], ax["hidden_size"], ax["intermediate_size"], ax["gemm1_out_size"]
    codes = lambda *s: torch.randint(0, 256, s, generator=g, dtype=torch.int32).to(torch.uint8)  # noqa: E731
    bytes_ = lambda lo, hi, *s: torch.randint(lo, hi, s, generator=g, dtype=torch.int32).to(torch.uint8)  # noqa: E731
    logits = torch.randn(T, E, generator=g) * 2.0
    if i == 0:  # ties at the 4th / 5th pick: the lower expert id wins
        logits[0, :] = -5.0
        logits[0, [3, 9, 17]] = 4.0
        logits[0, [5, 11, 21]] = 1.0
    # Weight scales set so that GEMM 1's gate and linear halves reach past the clamp limit (7) in places.
    return {
        "routing_logits": logits.to(torch.bfloat16),
        "hidden_states": (torch.randn(T, H, generator=g) * 100).clamp(-448, 448).to(torch.float8_e4m3fn),
        "hidden_states_scale": bytes_(118, 122, T, H // 32),
        "gemm1_weights": codes(E, O, H // 2), "gemm1_weights_scale": bytes_(120, 125, E, O, H // 32),
        "gemm1_bias": torch.randn(E, O, generator=g) * 0.5,
        "gemm1_alpha": torch.full((E,), 1.702), "gemm1_beta": torch.full((E,), 1.0),
        "gemm1_clamp_limit": torch.full((E,), [7.0, 7.0, 3.0][i]),
        "gemm2_weights": codes(E, H, I // 2), "gemm2_weights_scale": bytes_(118, 124, E, H, I // 32),
        "gemm2_bias": torch.randn(E, H, generator=g) * 0.1,
    }


# Hidden and intermediate shrunk to 64 (two 32-value scale blocks each; every row and block is decoded alike at
# any size), the real expert counts (the routing picks among them).
_GPT_SHRINK = dict(hidden_size=64, hidden_packed=32, hidden_sf=2, intermediate_size=64, gemm1_out_size=128,
                   intermediate_packed=32, intermediate_sf=2)
GPT_MOE_SETS = [shrunk({"seq_len": 3}, **_GPT_SHRINK), shrunk({"seq_len": 11}, **_GPT_SHRINK),
                shrunk({"seq_len": 6}, **_GPT_SHRINK)]

CASES = {
    MOE_NAME: Case(MOE_SETS, moe_inputs, moe_expected, derived=_moe_derived),
    MXFP8_NAME: Case(MXFP8_SETS, mxfp8_inputs, mxfp8_expected),
    **{gpt_moe_name(e): Case(GPT_MOE_SETS, gpt_moe_inputs, gpt_moe_expected) for _, e in GPT_OSS},
}


