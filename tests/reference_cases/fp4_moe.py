"""FP4 MoE on Blackwell: DeepSeek-R1's NVFP4 routed experts (FlashInfer's CUTLASS fused MoE as vLLM calls it),
gpt-oss's MXFP8 activation quantiser (FlashInfer's mxfp8_quantize) and its MXFP4 x MXFP8 TRT-LLM fused MoE
(trtllm_fp4_block_scale_moe with MXFP8 activations, gpt-oss-20b's 32 and gpt-oss-120b's 128 experts).

Rendered like nvfp4.py (whose NVFP4 helpers this module imports: e2m1 decoding by table, the 128x4 swizzle
offset, the quantiser's independent formulation): `cd tests && python -m reference_cases.fp4_moe` writes the
files, tests/test_fp4_moe.py proves the committed files are this rendering. The mathematics is checked by
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

from pathlib import Path

import numpy as np
import torch

from . import nvfp4
from .common import Case, shrunk, write_files

DATASET = Path(__file__).resolve().parents[2] / "dataset"

MOE_NAME = "moe_nvfp4_routed_topk8_e32_h7168_i2048"
MXFP8_NAME = "quantize_mxfp8_h3072"

# --------------------------------------------------------------------------------------------------
# NVFP4 MoE: DeepSeek-R1-0528-FP4 (ModelOpt NVFP4 routed experts), one EP8 rank on B200.
# --------------------------------------------------------------------------------------------------

MOE_REFERENCE = '''import torch


''' + nvfp4.DECODE_SOURCE + '''def dequant(packed, scale):
    """NVFP4 rows -> float32: e2m1 code value x e4m3 block scale (one per 16 values; exact in float32)."""
    return decode_e2m1(packed) * unswizzle(scale, packed.shape[0]).repeat_interleave(16, dim=1)


def requantize(act, global_scale):
    """The SwiGLU output (bfloat16) quantised to NVFP4 with the global scale, as the values the second GEMM
    reads: e2m1 code value x e4m3 block scale (the quantize_nvfp4 kernels' rule, cvt_warp_fp16_to_fp4)."""
    M, K = act.shape
    g = torch.as_tensor(global_scale, dtype=torch.float32, device=act.device)
    x = act.to(torch.float32).view(M, K // 16, 16)
    vec_max = x.abs().amax(dim=-1)
    sixth = torch.tensor(1.0 / 6.0, dtype=torch.float32, device=act.device)
    sf = (g * (vec_max * sixth)).clamp(max=448.0)  # float32 block scale, saturating
    sf_value = sf.to(torch.float8_e4m3fn).to(torch.float32)  # rounded to e4m3 (nearest even)
    out_scale = torch.where(sf_value != 0, 1.0 / (sf_value * (1.0 / g)), torch.zeros_like(sf_value))
    v = x * out_scale[:, :, None]
    # e2m1 magnitude code, round to nearest, ties to the even code, saturating at 6 (grid 0 .. 6).
    a = v.abs()
    magnitude = ((a > 0.25).to(torch.int64) + (a >= 0.75).to(torch.int64) + (a > 1.25).to(torch.int64)
                 + (a >= 1.75).to(torch.int64) + (a > 2.5).to(torch.int64) + (a >= 3.5).to(torch.int64)
                 + (a > 5.0).to(torch.int64))
    grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float32, device=act.device)
    value = torch.where(torch.signbit(v), -grid[magnitude], grid[magnitude])
    return (value * sf_value[:, :, None]).view(M, K)


def run(hidden_states, hidden_states_scale, topk_ids, topk_weights, gemm1_weights, gemm1_weights_scale,
        gemm1_alpha, gemm2_input_scale, gemm2_weights, gemm2_weights_scale, gemm2_alpha, local_expert_offset):
    T = hidden_states.shape[0]
    E_local, two_I, _ = gemm1_weights.shape
    I = two_I // 2
    H = gemm2_weights.shape[1]
    offset = int(local_expert_offset)
    device = hidden_states.device

    # The activations: code value x block scale (their 1 / global scale is folded into gemm1_alpha).
    x = dequant(hidden_states, hidden_states_scale)  # [T, H] float32
    output = torch.zeros(T, H, dtype=torch.float32, device=device)

    for le in range(E_local):
        e = offset + le  # global expert id; picks of other ranks' experts are skipped
        hit = topk_ids == e  # [T, top_k]; a token picks an expert at most once
        rows = torch.nonzero(hit.any(dim=1)).squeeze(1)
        if rows.numel() == 0:
            continue
        weight = (topk_weights * hit).sum(dim=1)[rows]  # the pick's routing weight

        # GEMM 1 (NVFP4 x NVFP4, float32 accumulation), alpha, bfloat16 output.
        w13 = dequant(gemm1_weights[le], gemm1_weights_scale[le])  # [2I, H]
        h = ((x[rows] @ w13.T) * gemm1_alpha[le]).to(torch.bfloat16).to(torch.float32)
        up, gate = h[:, :I], h[:, I:]  # rows [0, I): w3 (up), rows [I, 2I): w1 (gate)
        act = (gate / (1.0 + torch.exp(-gate)) * up).to(torch.bfloat16)  # SiLU(gate) x up, float32 -> bf16

        # Re-quantised to NVFP4 with the second GEMM's global input scale, then GEMM 2 and alpha.
        a = requantize(act, gemm2_input_scale)  # [rows, I]
        w2 = dequant(gemm2_weights[le], gemm2_weights_scale[le])  # [H, I]
        y = (a @ w2.T) * gemm2_alpha[le]  # [rows, H] float32

        output[rows] += weight[:, None] * y  # weighted by the routing weight, summed over the picks
    return {"output": output.to(torch.bfloat16)}
'''

MOE_BASELINE = '''import torch
import torch.nn.functional as F

LUT = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
MIDPOINTS = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
GRID = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def dequant(packed, scale):
    """[..., rows, K / 2] codes with [..., rows_padded, K / 16] swizzled scales -> [..., rows, K] float32."""
    lead, rows = packed.shape[:-2], packed.shape[-2]
    lut = LUT.to(packed.device)
    vals = torch.stack([lut[(packed & 15).long()], lut[(packed >> 4).long()]], -1).reshape(*lead, rows, -1)
    rp, c = scale.shape[-2:]
    s = scale.float().reshape(-1, rp // 128, c // 4, 32, 4, 4).permute(0, 1, 4, 3, 2, 5).reshape(*lead, rp, c)
    return vals * s[..., :rows, :].repeat_interleave(16, dim=-1)


def requantize(act, g):
    m, k = act.shape
    x = act.float().view(m, k // 16, 16)
    sf = (g * (x.abs().amax(-1) * torch.tensor(1.0 / 6.0))).clamp(max=448.0).to(torch.float8_e4m3fn).float()
    v = x * torch.where(sf != 0, 1.0 / (sf * (1.0 / g)), torch.zeros_like(sf))[..., None]
    a = v.abs()
    mid = MIDPOINTS.to(v.device)
    idx = torch.bucketize(a, mid, right=False)
    up = torch.bucketize(a, mid, right=True)
    idx = torch.where((a[..., None] == mid).any(-1) & (up % 2 == 0), up, idx)
    q = GRID.to(v.device)[idx]
    return (torch.where(torch.signbit(v), -q, q) * sf[..., None]).view(m, k)


def run(hidden_states, hidden_states_scale, topk_ids, topk_weights, gemm1_weights, gemm1_weights_scale,
        gemm1_alpha, gemm2_input_scale, gemm2_weights, gemm2_weights_scale, gemm2_alpha, local_expert_offset):
    # Sort the local picks by expert, run each expert's rows through dequantised weights, scatter-add back.
    n_local, two_i, _ = gemm1_weights.shape
    i = two_i // 2
    g2 = torch.as_tensor(gemm2_input_scale, dtype=torch.float32, device=hidden_states.device)
    x = dequant(hidden_states, hidden_states_scale)
    local = topk_ids.long() - int(local_expert_offset)
    mask = (local >= 0) & (local < n_local)
    tok, slot = torch.nonzero(mask, as_tuple=True)
    experts = local[tok, slot]
    order = torch.argsort(experts, stable=True)
    tok, slot, experts = tok[order], slot[order], experts[order]
    out = torch.zeros(x.shape[0], gemm2_weights.shape[1], device=x.device)
    for e in torch.unique(experts).tolist():
        sel = experts == e
        t = tok[sel]
        h = (F.linear(x[t], dequant(gemm1_weights[e], gemm1_weights_scale[e])) * gemm1_alpha[e]).bfloat16().float()
        act = (F.silu(h[:, i:]) * h[:, :i]).bfloat16()
        y = F.linear(requantize(act, g2), dequant(gemm2_weights[e], gemm2_weights_scale[e])) * gemm2_alpha[e]
        out.index_add_(0, t, topk_weights[t, slot[sel]][:, None] * y)
    return {"output": out.bfloat16()}
'''

MOE_EINSUM = '''# NVFP4 fused MoE of one EP rank (FlashInfer's CUTLASS fused MoE, routing done before): the rows of the
# step's picks that fall on this rank's experts are dispatched (copies: free), each expert's two block-scaled
# FP4 GEMMs run at the FP4 tensor-core rate (tcgen05 kind::mxf4nvf4 reads the e2m1 codes and e4m3 block scales
# as they are, so the decode of the operands is a view), the SwiGLU output is re-quantised to NVFP4 (block
# amax, e4m3 scale, e2m1 codes: 4 bits written per value) for the second GEMM, and the expert outputs are
# weighted and summed per token. The expert of a row is data: the gathers (copies) hand each row its expert's
# weights and global scale (alpha), which scales the row's products once per output (compute_dtype states the
# unit: the operands are e2m1 codes, which the cascade reads as packed bytes).
# Model of the data: rows on this rank = seq_len (8 picks per token, 32 of 256 experts local: seq_len * 8 * 32
# / 256 under uniform routing); experts whose weights are read = min(num_local_experts, rows). Bytes: codes 4
# bits per value, one e4m3 scale byte per 16 values. Left out: the sort/scan that builds the dispatch, the
# bfloat16 rounding of the GEMM outputs.
{% set ROWS = seq_len %}
{% set ACTIVE = [num_local_experts, ROWS] | min %}
workload:
  rank_sizes:
    T: {{ seq_len }}
    TP: {{ seq_len_padded }}
    K: {{ top_k }}
    LE: {{ num_local_experts }}
    H: {{ hidden_size }}
    HP: {{ hidden_packed }}
    HS: {{ hidden_sf }}
    O: {{ gemm1_out_size }}
    I: {{ intermediate_size }}
    IP: {{ intermediate_packed }}
    IS: {{ intermediate_sf }}
    R: {{ ROWS }}
  iteration_space_shape:
    le: 0 <= le < {{ ACTIVE }}
    bi: 0 <= bi < 16
  einsums:
  - name: DispatchRows
    is_copy_operation: true
    tensor_accesses:
    - {name: hidden_states, projection: {T: t, HP: h // 2}}
    - {name: hidden_states_scale, projection: {TP: t, HS: h // 16}}
    - {name: topk_ids, projection: [t, k]}
    - {name: local_expert_offset, projection: []}
    - {name: x_rows, projection: {R: r, H: h}, output: true}
  - name: GatherW1
    is_copy_operation: true
    tensor_accesses:
    - {name: gemm1_weights, projection: {LE: le, O: o, HP: h // 2}}
    - {name: gemm1_weights_scale, projection: {LE: le, O: o, HS: h // 16}}
    - {name: gemm1_alpha, projection: {LE: le}}
    - {name: w1_rows, projection: [r, o, h], output: true}
    - {name: alpha1_rows, projection: [r], output: true}
  - name: GatherW2
    is_copy_operation: true
    tensor_accesses:
    - {name: gemm2_weights, projection: {LE: le, H: h, IP: i // 2}}
    - {name: gemm2_weights_scale, projection: {LE: le, H: h, IS: i // 16}}
    - {name: gemm2_alpha, projection: {LE: le}}
    - {name: w2_rows, projection: [r, h, i], output: true}
    - {name: alpha2_rows, projection: [r], output: true}
  - name: Gemm1
    compute_dtype: float4_e2m1
    tensor_accesses:
    - {name: x_rows, projection: [r, h]}
    - {name: w1_rows, projection: [r, o, h]}
    - {name: alpha1_rows, projection: [r]}
    - {name: h1, projection: [r, o], output: true}
  - name: SiluAndMul
    tensor_accesses:
    - {name: h1, projection: [r, o]}
    - {name: act, projection: {R: r, I: o // 2}, output: true}
  - name: RequantBlockMax
    tensor_accesses:
    - {name: act, projection: {R: r, I: s * 16 + bi}}
    - {name: act_max, projection: {R: r, IS: s}, output: true}
  - name: Requantize
    tensor_accesses:
    - {name: act, projection: [r, i]}
    - {name: act_max, projection: {R: r, IS: i // 16}}
    - {name: gemm2_input_scale, projection: []}
    - {name: act_fp4, projection: [r, i], output: true}
  - name: Gemm2
    compute_dtype: float4_e2m1
    tensor_accesses:
    - {name: act_fp4, projection: [r, i]}
    - {name: w2_rows, projection: [r, h, i]}
    - {name: alpha2_rows, projection: [r]}
    - {name: y, projection: [r, h], output: true}
  - name: Combine
    tensor_accesses:
    - {name: y, projection: [r, h]}
    - {name: topk_weights, projection: {T: r, K: '0'}}
    - {name: output, projection: {T: r, H: h}, output: true}
  bits_per_value: {Intermediates: 32, x_rows | w1_rows | w2_rows | act_fp4: 4}
'''

MOE_SOURCES = (
    "Sources. Serving: nvidia/DeepSeek-R1-0528-FP4 (NVIDIA ModelOpt quant_algo NVFP4 for the routed experts' "
    "w1/w2/w3, group_size 16) on 8 B200 (sm100) with vLLM at TP8 + expert parallelism (--tensor-parallel-size 8 "
    "--enable-expert-parallel, so EP8: 256 / 8 = 32 experts a rank). vLLM 0.33 picks the NVFP4 MoE kernel "
    "itself and on Blackwell prefers FlashInfer's TRT-LLM kernel (trtllm_fp4_block_scale_moe, DeepSeekV3 routing "
    "fused in, shuffled weights; issue 40's audit of vLLM 0.33.0); the environment variables earlier releases and "
    "vLLM's DeepSeek recipe used to choose (VLLM_USE_FLASHINFER_MOE_FP4=1, VLLM_FLASHINFER_MOE_BACKEND "
    "'throughput' for this CUTLASS kernel, 'latency' for the TRT-LLM one) are gone. This definition is FlashInfer's "
    "CUTLASS fused MoE, the kernel vLLM runs when its MoE backend option names FlashInfer's CUTLASS path; its "
    "mathematics is the TRT-LLM kernel's after the routing. vLLM's CUTLASS path "
    "(model_executor/layers/quantization/modelopt.py ModelOptNvFp4FusedMoE, fused_moe/flashinfer_cutlass_moe.py "
    "FlashInferExperts.apply and flashinfer_cutlass_prepare_finalize.py): FusedMoE.select_experts runs "
    "DeepSeek-V3's grouped top-k routing first (sigmoid scores + e_score_correction_bias for the choice, n_group "
    "8, topk_group 4, top 8, weights = the chosen sigmoid scores renormalised to sum 1); the prepare step "
    "quantises the hidden states to NVFP4 with a1_gscale, scales in the 128x4 swizzled layout "
    "(moe_kernel_quantize_input(..., is_fp4_scale_swizzled=True) without data parallelism: quantize_nvfp4_h7168 "
    "of this dataset is that kernel); then flashinfer_cutlass_fused_moe(input=a1q, token_selected_experts="
    "topk_ids, token_final_scales=topk_weights, fc1_expert_weights, fc2_expert_weights, quant_scales=[a1_gscale, "
    "w1_scale, g1_alphas, a2_gscale, w2_scale, g2_alphas], input_sf=a1q_scale, ep_size=8, ep_rank) is this "
    "definition. DeepSeek's routed_scaling_factor 2.5 is NOT in this kernel: vLLM's DeepseekV2MoE multiplies "
    "the fused MoE's output by it afterwards (final_hidden_states *= routed_scaling_factor for bfloat16), and "
    "the EP ranks' outputs are then summed by the all-reduce.\n\n"
    "Weights as process_weights_after_loading leaves them: w13 = [w3; w1] (reorder_w1w3_to_w3w1: the up "
    "projection's rows first, then the gate's, the order the CUTLASS kernel's gated activation reads: linear "
    "half at offset 0, gate half at offset inter_size, doActivationKernel in FlashInfer's "
    "csrc/fused_moe/cutlass_backend/cutlass_fused_moe_kernels.cuh), block scales swizzled per expert "
    "(swizzle_blockscale); the global scales shared across experts (use_global_sf for FlashInfer backends: "
    "w13_input_scale.max() and w2_input_scale.max() over the rank's experts), so gemm1_alpha[e] = g1_alphas[e] = "
    "w13_input_scale x w13_weight_scale_2[e] and gemm2_alpha[e] = g2_alphas[e] = w2_input_scale x "
    "w2_weight_scale_2[e] per local expert, gemm2_input_scale = a2_gscale = 1 / w2_input_scale. The kernel "
    "quantises the SwiGLU output itself (the post-activation float value converted to bfloat16, then "
    "cvt_warp_fp16_to_fp4 with fc2_act_global_scale: quantizePackedFPXValue in the same file).\n\n"
    "Shapes: deepseek-ai/DeepSeek-V3 config.json (DeepSeek-R1-0528 has the same): n_routed_experts 256, "
    "num_experts_per_tok 8, hidden_size 7168, moe_intermediate_size 2048 (experts are whole on a rank under "
    "EP).")

MOE_NUMERICS = (
    "Numerics: code value x e4m3 scale is exact in float32; GEMM 1 accumulates in float32, is multiplied by "
    "gemm1_alpha[e] and written as bfloat16 (the CUTLASS epilogue); SiLU(gate) x up in float32, rounded to "
    "bfloat16 and re-quantised to NVFP4 with gemm2_input_scale (the quantiser's rule: e4m3 block scale per 16 "
    "values, e2m1 codes round to nearest even); GEMM 2 accumulates in float32 times gemm2_alpha[e]; the routing "
    "weights multiply the expert outputs, summed in float32 and rounded to bfloat16 once. An implementation "
    "whose finalize reads bfloat16 expert outputs (the unfused finalize) differs by that one rounding per "
    "pick. The kernel's approximate reciprocals (rcp.approx.ftz) may move a value within an ulp of an e2m1 "
    "midpoint to the neighbouring code.")


def moe_description() -> str:
    return (
        "NVFP4 fused Mixture-of-Experts of one expert-parallel rank on Blackwell with pre-computed routing: "
        "DeepSeek-R1-0528-FP4's routed experts at EP8 (32 local experts of 256, hidden 7168, intermediate 2048, "
        "top 8), as FlashInfer's CUTLASS fused MoE (cutlass_fused_moe with NVFP4 activations and weights) "
        "computes it for vLLM. For each token t and each of its picks j whose expert e = topk_ids[t, j] lies in "
        "[local_expert_offset, local_expert_offset + 32) (picks of other ranks' experts add nothing):\n\n"
        "    x        = e2m1(hidden_states[t]) x hidden_states_scale (block scale per 16, 128x4 swizzled)\n"
        "    [u; g]   = bfloat16(gemm1_alpha[e] x W13[e] x)    u: rows [0, I) (w3), g: rows [I, 2I) (w1)\n"
        "    a        = NVFP4(bfloat16(SiLU(g) x u), gemm2_input_scale)   re-quantised: code x block scale\n"
        "    output[t] += topk_weights[t, j] x gemm2_alpha[e] x W2[e] a\n\n"
        "with W13[e] and W2[e] the experts' NVFP4 weights decoded (e2m1 code x e4m3 block scale). "
        f"{MOE_SOURCES}\n\n{nvfp4.FORMAT}\n\n{nvfp4.SWIZZLE} Each expert's weight scales are swizzled on their "
        f"own ([32, rows, K / 16] holds 32 swizzled matrices).\n\n{MOE_NUMERICS}")


def moe_definition() -> dict:
    codes = {"distribution": "randint", "low": 0, "high": 256}
    block_scale = {"distribution": "uniform", "low": 8.0, "high": 448.0}
    # alpha = input_scale x weight_scale_2 = 1 / (a_global x w_global): activation amax ~11 (a_global 240) and
    # weight amax ~0.5 (w_global 5376) give 7.75e-07; per-expert weight scales spread it.
    alpha = {"distribution": "uniform", "low": 5e-07, "high": 1e-06}
    return {
        "name": MOE_NAME,
        "description": moe_description(),
        "type": "moe",
        "tags": ["status:draft", "model-alt:deepseek-v3", "stage:decode", "stage:prefill", "tp:8", "ep:8",
                 "quantization:nvfp4", "gpu:sm100", "fused"],
        "axes": {
            "seq_len": {"type": "var", "description": "Tokens in the step (all tokens of the rank's batch, not only "
                                                      "those with local picks)."},
            "seq_len_padded": {"type": "var", "description": "seq_len rounded up to a multiple of 128: rows of the "
                                                             "swizzled activation scales."},
            "num_experts": {"type": "const", "value": 256, "description": "n_routed_experts = 256 (deepseek-ai/"
                                                                          "DeepSeek-V3 config.json)."},
            "num_local_experts": {"type": "const", "value": 32, "description": "Experts on this rank: 256 / EP 8."},
            "top_k": {"type": "const", "value": 8, "description": "num_experts_per_tok = 8."},
            "hidden_size": {"type": "const", "value": 7168, "description": "hidden_size = 7168."},
            "hidden_packed": {"type": "const", "value": 3584, "description": "hidden_size / 2: bytes of a row of "
                                                                              "e2m1 codes."},
            "hidden_sf": {"type": "const", "value": 448, "description": "hidden_size / 16: block scales per row."},
            "intermediate_size": {"type": "const", "value": 2048, "description": "moe_intermediate_size = 2048 "
                                                                                  "(whole experts under EP)."},
            "gemm1_out_size": {"type": "const", "value": 4096, "description": "Rows of w13: 2 x intermediate_size."},
            "intermediate_packed": {"type": "const", "value": 1024, "description": "intermediate_size / 2."},
            "intermediate_sf": {"type": "const", "value": 128, "description": "intermediate_size / 16."},
        },
        "constraints": [
            "seq_len_padded == (seq_len + 127) // 128 * 128", "hidden_packed * 2 == hidden_size",
            "hidden_sf * 16 == hidden_size", "intermediate_packed * 2 == intermediate_size",
            "intermediate_sf * 16 == intermediate_size", "gemm1_out_size == 2 * intermediate_size",
            "num_experts % num_local_experts == 0", "hidden_sf % 4 == 0", "intermediate_sf % 4 == 0",
            "hidden_size % 128 == 0", "gemm1_out_size % 128 == 0",
        ],
        "inputs": {
            "hidden_states": {"shape": ["seq_len", "hidden_packed"], "dtype": "uint8", "random": codes,
                              "description": "The layer input quantised to NVFP4 (quantize_nvfp4_h7168's quantized): "
                                             "two e2m1 codes a byte."},
            "hidden_states_scale": {"shape": ["seq_len_padded", "hidden_sf"], "dtype": "float8_e4m3",
                                    "random": block_scale,
                                    "description": "Its block scales (input_sf), 128x4 swizzled; padding rows unread."},
            "topk_ids": {"shape": ["seq_len", "top_k"], "dtype": "int32",
                         "description": "Global expert ids of each token's 8 picks (distinct), from the grouped "
                                        "top-k routing (token_selected_experts)."},
            "topk_weights": {"shape": ["seq_len", "top_k"], "dtype": "float32",
                             "description": "The picks' routing weights (token_final_scales): renormalised sigmoid "
                                            "scores, without routed_scaling_factor."},
            "gemm1_weights": {"shape": ["num_local_experts", "gemm1_out_size", "hidden_packed"], "dtype": "uint8",
                              "random": codes,
                              "description": "Local experts' [w3; w1] (up rows, then gate rows), e2m1 codes."},
            "gemm1_weights_scale": {"shape": ["num_local_experts", "gemm1_out_size", "hidden_sf"],
                                    "dtype": "float8_e4m3", "random": block_scale,
                                    "description": "w13 block scales, each expert's 128x4 swizzled."},
            "gemm1_alpha": {"shape": ["num_local_experts"], "dtype": "float32", "random": alpha,
                            "description": "g1_alphas: w13_input_scale x w13_weight_scale_2[e] (1 / (a_global x "
                                           "w_global))."},
            "gemm2_input_scale": {"shape": [], "dtype": "float32",
                                  "description": "a2_gscale = 1 / w2_input_scale: the global encode scale of the "
                                                 "re-quantised SwiGLU output (448 x 6 / its calibrated amax)."},
            "gemm2_weights": {"shape": ["num_local_experts", "hidden_size", "intermediate_packed"], "dtype": "uint8",
                              "random": codes, "description": "Local experts' w2 (down), e2m1 codes."},
            "gemm2_weights_scale": {"shape": ["num_local_experts", "hidden_size", "intermediate_sf"],
                                    "dtype": "float8_e4m3", "random": block_scale,
                                    "description": "w2 block scales, each expert's 128x4 swizzled."},
            "gemm2_alpha": {"shape": ["num_local_experts"], "dtype": "float32", "random": alpha,
                            "description": "g2_alphas: w2_input_scale x w2_weight_scale_2[e]."},
            "local_expert_offset": {"shape": [], "dtype": "int32",
                                    "description": "Global id of this rank's first expert: 32 x ep_rank."},
        },
        "outputs": {"output": {"shape": ["seq_len", "hidden_size"], "dtype": "bfloat16",
                               "description": "This rank's share of the routed experts' output (before "
                                              "routed_scaling_factor and the all-reduce over the ranks)."}},
        "reference": MOE_REFERENCE,
    }


# --------------------------------------------------------------------------------------------------
# MXFP8 activation quantiser: gpt-oss on Blackwell (FlashInfer mxfp8_quantize, linear scale layout).
# --------------------------------------------------------------------------------------------------

MXFP8_REFERENCE = '''import torch


def run(input):
    M, K = input.shape
    block = 32  # MX: one power-of-two (e8m0) scale per 32 values along K
    x = input.to(torch.float32).view(M, K // block, block)

    # Scale: the block's largest magnitude times 1/448 (448 = the largest float8_e4m3fn value), in float32,
    # converted to e8m0 rounding UP (to the smallest power of two >= the product; cvt.rp.satfinite.ue8m0x2.f32).
    vec_max = x.abs().amax(dim=-1)  # [M, K / 32], exact
    inv_448 = torch.tensor(1.0 / 448.0, dtype=torch.float32, device=input.device)  # 1/448 rounded to float32
    sf = vec_max * inv_448
    mantissa, exponent = torch.frexp(sf)  # sf = mantissa x 2**exponent, mantissa in [0.5, 1) (0 for sf = 0)
    e = torch.where(mantissa == 0.5, exponent - 1, exponent)  # a power of two stays; anything else rounds up
    e = torch.where(vec_max > 0, e, torch.full_like(e, -127))  # an all-zero block: the smallest scale, byte 0
    byte = (e + 127).clamp(0, 254)  # e8m0 byte = exponent + 127 (254 = 2**127, satfinite)
    scale_value = torch.pow(2.0, (byte - 127).to(torch.float64)).to(torch.float32)

    # Values: x / scale (an exact power-of-two division), saturated to +-448, rounded to e4m3 (nearest even).
    v = (x / scale_value[:, :, None]).clamp(-448.0, 448.0)
    quantized = v.view(M, K).to(torch.float8_e4m3fn)
    return {"quantized": quantized, "scale": byte.to(torch.uint8)}
'''

MXFP8_BASELINE = '''import torch


def run(input):
    m, k = input.shape
    x = input.float().view(m, k // 32, 32)
    amax = x.abs().amax(-1)
    # ceil(log2(amax / 448)) from the float32 product's bits: exponent field, +1 unless the mantissa is zero.
    bits = (amax * torch.tensor(1.0 / 448.0)).view(torch.int32)
    exp_field = (bits >> 23) & 0xFF
    byte = exp_field + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    byte = torch.where(amax > 0, byte, torch.zeros_like(byte)).clamp(0, 254)
    q = (x * torch.pow(2.0, 127.0 - byte.double()).float()[..., None]).clamp(-448.0, 448.0)
    return {"quantized": q.view(m, k).to(torch.float8_e4m3fn), "scale": byte.to(torch.uint8)}
'''

MXFP8_EINSUM = '''# MXFP8 activation quantisation: per row and 32-value block the largest magnitude (a reduction), its e8m0
# scale (one byte), then each value divided by the scale and rounded to float8_e4m3 (one byte written).
workload:
  rank_sizes:
    M: {{ M }}
    K: {{ K }}
    S: {{ K_sf }}
  iteration_space_shape:
    bi: 0 <= bi < 32
  einsums:
  - name: BlockAbsMax
    tensor_accesses:
    - {name: input, projection: {M: m, K: s * 32 + bi}}
    - {name: vec_max, projection: [m, s], output: true}
  - name: BlockScale
    tensor_accesses:
    - {name: vec_max, projection: [m, s]}
    - {name: scale, projection: [m, s], output: true}
  - name: Quantize
    tensor_accesses:
    - {name: input, projection: [m, k]}
    - {name: vec_max, projection: {M: m, S: k // 32}}
    - {name: quantized, projection: [m, k], output: true}
  bits_per_value: {Intermediates: 32}
'''


MXFP8_SOURCE = (
    "gpt-oss-20b and gpt-oss-120b (openai/gpt-oss-20b and -120b config.json: hidden_size 2880, intermediate_size "
    "2880, num_local_experts 32 / 128, num_experts_per_tok 4, swiglu_limit 7.0) served by vLLM on one B200 "
    "(sm100) with VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1, the setting vLLM's gpt-oss recipe gives for Blackwell "
    "(vllm-project/recipes OpenAI/GPT-OSS.md: 'Use FlashInfer MXFP4+MXFP8 MoE'): Mxfp4MoEMethod's "
    "SM100_FI_MXFP4_MXFP8_TRTLLM backend (vllm/model_executor/layers/quantization/mxfp4.py). Its create_weights "
    "pads hidden_size and the intermediate size to multiples of 256 (round_up(2880, 256) = 3072, zero rows and "
    "columns), and FusedMoE pads the hidden states to the layer's hidden_size with zeros (F.pad in "
    "forward_native), so the MoE kernels see H = I = 3072; apply() quantises them with FlashInfer's "
    "mxfp8_quantize(x, False) (is_sf_swizzled_layout False: scales row-major, [tokens, H / 32]) and calls "
    "trtllm_fp4_block_scale_moe.")


def mxfp8_description() -> str:
    return (
        "MXFP8 quantisation of bfloat16 activations on Blackwell (OCP MX: float8_e4m3 values, one e8m0 "
        f"power-of-two scale per 32 values along K): the MoE layer input of {MXFP8_SOURCE} This is that "
        "mxfp8_quantize; its two outputs are the hidden_states and hidden_states_scale of "
        "trtllm_fp4_block_scale_moe_mxfp8_* in this dataset. (On Hopper the dataset's grouped_gemm_mxfp4_* "
        "definitions take the bfloat16 activations as they are.)\n\n"
        "The rule is FlashInfer's cvt_warp_fp16_to_mxfp8 (csrc/nv_internal/tensorrt_llm/kernels/"
        "quantization_utils.cuh): SF = vecMax x rcp(448) in float32; the e8m0 scale byte = "
        "__nv_cvt_float_to_e8m0(SF, satfinite, cudaRoundPosInf), i.e. 2 ** ceil(log2(SF)) (rounded UP, so "
        "amax / scale <= 448 and no value saturates); each value x (1 / scale), clamped to +-448 and converted "
        "to float8_e4m3 with round to nearest even. scale[m, s] = the byte, 2 ** (byte - 127). An all-zero block "
        "(the 192 padding columns of every row are six of them) gets byte 0 and zero values: the conversion's "
        "floor 2 ** -127 and a zero output scale (the kernel tests SFValue != 0 for this case, see its comment "
        "there).\n\n"
        "Numerics: the kernel's reciprocal of 448 is rcp.approx.ftz.f32; the reference uses 1/448 correctly "
        "rounded to float32. For bfloat16 inputs the product vecMax x (1/448) lands exactly on a power of two "
        "only when vecMax = 448 x 2**e (exactly 2**e then, as 1/448 rounds to within 0.4 ulp), so the rounding "
        "up is the same either way. Blocks whose largest magnitude is below 448 x 2**-126 but not 0 (a scale "
        "below float32's normal range) are outside this definition. Quantized values are compared as "
        "float8_e4m3 values, the scale bytes exactly.")


def mxfp8_definition() -> dict:
    return {
        "name": MXFP8_NAME,
        "description": mxfp8_description(),
        "type": "quantize",
        "tags": ["status:draft", "model-alt:gpt-oss-120b", "model-alt:gpt-oss-20b", "stage:decode", "stage:prefill",
                 "tp:1", "quantization:mxfp8", "gpu:sm100"],
        "axes": {
            "M": {"type": "var", "description": "Tokens in the step (rows)."},
            "K": {"type": "const", "value": 3072, "description": "hidden_size 2880 padded to 3072 (round_up(2880, "
                                                                 "256): vLLM's SM100 TRT-LLM MXFP4 backends)."},
            "K_sf": {"type": "const", "value": 96, "description": "K / 32: scales per row."},
        },
        "constraints": ["K_sf * 32 == K"],
        "inputs": {"input": {"shape": ["M", "K"], "dtype": "bfloat16",
                             "description": "Hidden states (the MoE layer input), columns 2880.. zero in serving."}},
        "outputs": {
            "quantized": {"shape": ["M", "K"], "dtype": "float8_e4m3", "description": "Values / their block's scale."},
            "scale": {"shape": ["M", "K_sf"], "dtype": "uint8",
                      "description": "e8m0 block scales (the byte: 2 ** (byte - 127)), row-major."},
        },
        "reference": MXFP8_REFERENCE,
    }


# --------------------------------------------------------------------------------------------------
# MXFP4 x MXFP8 fused MoE: gpt-oss on Blackwell (FlashInfer trtllm_fp4_block_scale_moe, MxE4m3 activations).
# --------------------------------------------------------------------------------------------------

GPT_OSS = [("gpt-oss-20b", 32), ("gpt-oss-120b", 128)]


def gpt_moe_name(experts: int) -> str:
    return f"trtllm_fp4_block_scale_moe_mxfp8_topk4_e{experts}_h3072_i3072"


GPT_MOE_REFERENCE = '''import torch


def decode_mxfp4(blocks, scales):
    """[rows, K / 2] uint8 (two e2m1 codes a byte, element 2i in the low nibble) and [rows, K / 32] uint8 e8m0
    scales -> [rows, K] float32."""
    rows = blocks.shape[0]
    codes = torch.stack([blocks & 0x0F, blocks >> 4], dim=-1).reshape(rows, -1).to(torch.int32)
    sign = 1.0 - 2.0 * ((codes >> 3) & 1).to(torch.float32)  # bit 3
    exponent = ((codes >> 1) & 3).to(torch.float32)  # bits 2..1, bias 1
    mantissa = (codes & 1).to(torch.float32)  # bit 0
    normal = torch.pow(2.0, exponent - 1.0) * (1.0 + 0.5 * mantissa)
    subnormal = 0.5 * mantissa  # exponent field 0: 0 or 0.5
    values = sign * torch.where(exponent > 0, normal, subnormal)
    scale = torch.pow(2.0, scales.to(torch.float32) - 127.0)  # e8m0: 2 ** (byte - 127), one per 32 values
    return (values.reshape(rows, -1, 32) * scale[:, :, None]).reshape(rows, -1)


def mxfp8_requantize(act):
    """bfloat16 [rows, I] -> the values GEMM 2 reads: float8_e4m3 value x e8m0 scale per 32 values (the rule of
    mxfp8_quantize: scale = 2 ** ceil(log2(amax / 448)), values rounded to e4m3, nearest even)."""
    rows, I = act.shape
    x = act.to(torch.float32).view(rows, I // 32, 32)
    vec_max = x.abs().amax(dim=-1)
    sf = vec_max * torch.tensor(1.0 / 448.0, dtype=torch.float32, device=act.device)
    mantissa, exponent = torch.frexp(sf)
    e = torch.where(mantissa == 0.5, exponent - 1, exponent)  # rounded up to a power of two
    e = torch.where(vec_max > 0, e, torch.full_like(e, -127)).clamp(-127, 127)
    scale = torch.pow(2.0, e.to(torch.float64)).to(torch.float32)
    q = (x / scale[:, :, None]).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).to(torch.float32)
    return (q * scale[:, :, None]).view(rows, I)


def run(routing_logits, hidden_states, hidden_states_scale, gemm1_weights, gemm1_weights_scale, gemm1_bias,
        gemm1_alpha, gemm1_beta, gemm1_clamp_limit, gemm2_weights, gemm2_weights_scale, gemm2_bias):
    T, E = routing_logits.shape
    top_k = 4
    I = gemm1_weights.shape[1] // 2
    H = gemm2_weights.shape[1]
    device = routing_logits.device

    # Routing (Renormalize: TopK -> Softmax): the 4 largest logits (ties: the lower expert id first), their
    # softmax in float32, rounded to bfloat16 (the routing kernel's expert weights).
    logits = routing_logits.to(torch.float32)
    ranked = torch.sort(logits, dim=-1, descending=True, stable=True)
    topk_ids = ranked.indices[:, :top_k]
    topk_weights = torch.softmax(ranked.values[:, :top_k], dim=-1).to(torch.bfloat16).to(torch.float32)

    # MXFP8 activations: e4m3 value x 2 ** (byte - 127), one scale per 32 values.
    scale = torch.pow(2.0, hidden_states_scale.to(torch.float32) - 127.0)
    x = (hidden_states.to(torch.float32).view(T, H // 32, 32) * scale[:, :, None]).view(T, H)

    output = torch.zeros(T, H, dtype=torch.float32, device=device)
    for e in range(E):
        hit = topk_ids == e  # [T, top_k]
        rows = torch.nonzero(hit.any(dim=1)).squeeze(1)
        if rows.numel() == 0:
            continue
        weight = (topk_weights * hit).sum(dim=1)[rows]

        # GEMM 1 + bias (float32), the clamped SwiGLU of gpt-oss: rows [0, I) linear, rows [I, 2I) gate.
        w13 = decode_mxfp4(gemm1_weights[e], gemm1_weights_scale[e])  # [2I, H]
        h = x[rows] @ w13.T + gemm1_bias[e]
        linear, gate = h[:, :I], h[:, I:]
        limit = gemm1_clamp_limit[e]
        gate = torch.minimum(gate, limit)
        linear = torch.maximum(torch.minimum(linear, limit), -limit)
        act = gate * torch.sigmoid(gemm1_alpha[e] * gate) * (linear + gemm1_beta[e])

        # Re-quantised to MXFP8 (through bfloat16), GEMM 2 + bias, weighted and summed per token.
        a = mxfp8_requantize(act.to(torch.bfloat16))  # [rows, I]
        w2 = decode_mxfp4(gemm2_weights[e], gemm2_weights_scale[e])  # [H, I]
        y = a @ w2.T + gemm2_bias[e]
        output[rows] += weight[:, None] * y
    return {"output": output.to(torch.bfloat16)}
'''

GPT_MOE_BASELINE = '''import torch
import torch.nn.functional as F

LUT = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def dequant(blocks, scales):
    lut = LUT.to(blocks.device)
    v = torch.stack([lut[(blocks & 15).long()], lut[(blocks >> 4).long()]], -1).flatten(-2)
    s = torch.exp2(scales.float() - 127.0).repeat_interleave(32, dim=-1)
    return v * s


def mxfp8(act):
    r, i = act.shape
    x = act.float().view(r, i // 32, 32)
    bits = (x.abs().amax(-1) * torch.tensor(1.0 / 448.0)).view(torch.int32)
    byte = ((bits >> 23) & 0xFF) + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    byte = torch.where(bits != 0, byte, torch.zeros_like(byte)).clamp(0, 254)
    s = torch.pow(2.0, byte.double() - 127.0).float()[..., None]
    return ((x / s).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).float() * s).view(r, i)


def run(routing_logits, hidden_states, hidden_states_scale, gemm1_weights, gemm1_weights_scale, gemm1_bias,
        gemm1_alpha, gemm1_beta, gemm1_clamp_limit, gemm2_weights, gemm2_weights_scale, gemm2_bias):
    t = routing_logits.shape[0]
    i = gemm1_weights.shape[1] // 2
    logits = routing_logits.float()
    ids = torch.argsort(-logits, dim=-1, stable=True)[:, :4]
    w = torch.softmax(torch.gather(logits, 1, ids), -1).bfloat16().float()
    x = hidden_states.float() * torch.exp2(hidden_states_scale.float() - 127.0).repeat_interleave(32, dim=-1)
    out = torch.zeros(t, gemm2_weights.shape[1], device=x.device)
    flat = ids.reshape(-1)
    tok = torch.arange(t, device=x.device).repeat_interleave(4)
    wt = w.reshape(-1)
    for e in torch.unique(flat).tolist():
        sel = flat == e
        rows = tok[sel]
        h = F.linear(x[rows], dequant(gemm1_weights[e], gemm1_weights_scale[e]), gemm1_bias[e])
        lim = gemm1_clamp_limit[e]
        g = torch.minimum(h[:, i:], lim)
        lin = torch.clamp(h[:, :i], -float(lim), float(lim))
        act = (g * torch.sigmoid(gemm1_alpha[e] * g) * (lin + gemm1_beta[e])).bfloat16()
        y = F.linear(mxfp8(act), dequant(gemm2_weights[e], gemm2_weights_scale[e]), gemm2_bias[e])
        out.index_add_(0, rows, wt[sel][:, None] * y)
    return {"output": out.bfloat16()}
'''

GPT_MOE_EINSUM = '''# MXFP4 x MXFP8 fused MoE (TRT-LLM, routing fused in): top-4 of the router logits and their softmax, the
# rows dispatched to their experts (copies: free), the two block-scaled GEMMs at the FP8 tensor-core rate
# (tcgen05 kind::mxf8f6f4 reads e2m1 weights and e4m3 activations with their e8m0 scales as they are: the
# decode is a view; compute_dtype states that unit), the clamped SwiGLU with its expert's alpha, beta and
# limit (gathered per row with the weights: the expert of a row is data) and its MXFP8 re-quantisation (one
# byte written per value), the expert outputs weighted and summed per token. Model of the data: rows = seq_len x 4; experts whose weights
# are read = min(num_experts, rows). Bytes: weights 4 bits per value, activations 8, one scale byte per 32.
# Left out: the sort/scan that builds the dispatch, the rounding of the intermediate to bfloat16.
{% set ROWS = seq_len * top_k %}
{% set ACTIVE = [num_experts, ROWS] | min %}
workload:
  rank_sizes:
    T: {{ seq_len }}
    E: {{ num_experts }}
    K: {{ top_k }}
    H: {{ hidden_size }}
    HP: {{ hidden_packed }}
    HS: {{ hidden_sf }}
    O: {{ gemm1_out_size }}
    I: {{ intermediate_size }}
    IP: {{ intermediate_packed }}
    IS: {{ intermediate_sf }}
    R: {{ ROWS }}
  iteration_space_shape:
    ae: 0 <= ae < {{ ACTIVE }}
    bi: 0 <= bi < 32
  einsums:
  - name: TopK
    tensor_accesses:
    - {name: routing_logits, projection: [t, e]}
    - {name: topk_ids, projection: [t, k], output: true}
    - {name: topk_logits, projection: [t, k], output: true}
  - name: Softmax
    tensor_accesses:
    - {name: topk_logits, projection: [t, k]}
    - {name: topk_weights, projection: [t, k], output: true}
  - name: DispatchRows
    is_copy_operation: true
    tensor_accesses:
    - {name: hidden_states, projection: [t, h]}
    - {name: hidden_states_scale, projection: {T: t, HS: h // 32}}
    - {name: topk_ids, projection: [t, k]}
    - {name: x_rows, projection: {R: r, H: h}, output: true}
  - name: GatherW1
    is_copy_operation: true
    tensor_accesses:
    - {name: gemm1_weights, projection: {E: ae, O: o, HP: h // 2}}
    - {name: gemm1_weights_scale, projection: {E: ae, O: o, HS: h // 32}}
    - {name: gemm1_bias, projection: {E: ae, O: o}}
    - {name: gemm1_alpha, projection: {E: ae}}
    - {name: gemm1_beta, projection: {E: ae}}
    - {name: gemm1_clamp_limit, projection: {E: ae}}
    - {name: w1_rows, projection: [r, o, h], output: true}
    - {name: alpha_rows, projection: [r], output: true}
    - {name: beta_rows, projection: [r], output: true}
    - {name: limit_rows, projection: [r], output: true}
  - name: GatherW2
    is_copy_operation: true
    tensor_accesses:
    - {name: gemm2_weights, projection: {E: ae, H: h, IP: i // 2}}
    - {name: gemm2_weights_scale, projection: {E: ae, H: h, IS: i // 32}}
    - {name: gemm2_bias, projection: {E: ae, H: h}}
    - {name: w2_rows, projection: [r, h, i], output: true}
  - name: Gemm1
    compute_dtype: float8_e4m3
    tensor_accesses:
    - {name: x_rows, projection: [r, h]}
    - {name: w1_rows, projection: [r, o, h]}
    - {name: h1, projection: [r, o], output: true}
  - name: ClampedSwiglu
    tensor_accesses:
    - {name: h1, projection: [r, o]}
    - {name: alpha_rows, projection: [r]}
    - {name: beta_rows, projection: [r]}
    - {name: limit_rows, projection: [r]}
    - {name: act, projection: {R: r, I: o // 2}, output: true}
  - name: RequantBlockMax
    tensor_accesses:
    - {name: act, projection: {R: r, I: s * 32 + bi}}
    - {name: act_max, projection: {R: r, IS: s}, output: true}
  - name: Requantize
    tensor_accesses:
    - {name: act, projection: [r, i]}
    - {name: act_max, projection: {R: r, IS: i // 32}}
    - {name: act_fp8, projection: [r, i], output: true}
  - name: Gemm2
    compute_dtype: float8_e4m3
    tensor_accesses:
    - {name: act_fp8, projection: [r, i]}
    - {name: w2_rows, projection: [r, h, i]}
    - {name: y, projection: [r, h], output: true}
  - name: Combine
    tensor_accesses:
    - {name: y, projection: [r, h]}
    - {name: topk_weights, projection: {T: r // 4, K: r - r // 4 * 4}}
    - {name: output, projection: {T: r // 4, H: h}, output: true}
  bits_per_value: {Intermediates: 32, x_rows | act_fp8: 8, w1_rows | w2_rows: 4}
'''


def gpt_moe_description(model: str, experts: int) -> str:
    other = {"gpt-oss-20b": "gpt-oss-120b's 128-expert sibling", "gpt-oss-120b": "gpt-oss-20b's 32-expert sibling"}
    return (
        f"MXFP4 x MXFP8 fused Mixture-of-Experts on Blackwell, routing fused in: {model}'s MoE layer ({experts} "
        "experts, top 4, hidden and intermediate 2880 padded to 3072) as FlashInfer's trtllm_fp4_block_scale_moe "
        "computes it with MXFP8 activations (MxE4m3 x MxE2m1, trtllm-gen cubins for sm100). For each token t:\n\n"
        "    e_1..e_4 = the 4 largest routing_logits[t] (ties: lower id first)\n"
        "    w_j      = bfloat16(softmax over j of routing_logits[t, e_j])        (Renormalize, method 1)\n"
        "    x        = e4m3(hidden_states[t]) x 2 ** (hidden_states_scale[t] - 127)   (per 32 values)\n"
        "    [l; g]   = W1[e_j] x + gemm1_bias[e_j]     l: rows [0, I) (linear), g: rows [I, 2I) (gate)\n"
        "    g, l     = min(g, limit), clamp(l, -limit, limit)                  limit = gemm1_clamp_limit[e_j]\n"
        "    a        = MXFP8(bfloat16(g x sigmoid(alpha g) x (l + beta)))  alpha, beta = gemm1_alpha, gemm1_beta[e_j]\n"
        "    output[t] = sum_j w_j x (W2[e_j] a + gemm2_bias[e_j])\n\n"
        "with W1, W2 the MXFP4 weights decoded (e2m1 code x 2 ** (e8m0 byte - 127) per 32 values) and MXFP8(.) "
        "the quantisation of quantize_mxfp8_h3072 (e8m0 scale per 32 rounded up, e4m3 values) read back as "
        f"value x scale.\n\nSources: {MXFP8_SOURCE} vLLM passes router_logits as bfloat16, routing_bias None, "
        "x_quant and x_scale, w13_weight / w13_weight_scale / w13_bias (float32), gemm1_alpha = 1.702, gemm1_beta "
        "= 1.0 and gemm1_clamp_limit = 7.0 per expert (gpt-oss's SwiGLU: alpha 1.702, the +1 on the linear half, "
        "swiglu_limit 7.0), w2_weight / w2_weight_scale / w2_bias, no output scales, num_experts, top_k 4, "
        "intermediate_size 3072, local_expert_offset 0 (TP1: every expert local), routed_scaling_factor None, "
        "routing_method_type 1 (Renormalize), do_finalize True. The activation's form and the half order follow "
        "FlashInfer's reference (tests/moe/trtllm_gen_fused_moe_utils.py run_moe_dequant: x0 = the first half, "
        "clamped to +-limit, x1 = the second half, clamped above, x1 sigmoid(alpha x1) (x0 + beta); the "
        "activation quantised to MXFP8 through bfloat16 for QuantMode FP4_MXFP4_MXFP8; routing weights "
        "routing_reference_renormalize, rounded to the logits' bfloat16).\n\n"
        "Weights as this definition takes them: the row-major logical layout, linear half then gate half, two "
        "e2m1 codes a byte (element 2i in the low nibble) and one e8m0 byte per 32 values of a row (the OCP MX "
        "format of the gpt-oss checkpoints and of this dataset's grouped_gemm_mxfp4_* definitions). vLLM reaches "
        "the kernel's bytes by moves only: the checkpoint interleaves gate and linear rows (gate even), "
        "swap_every_two_rows puts each linear row before its gate (the row interleave FlashInfer's "
        "reorder_rows_for_gated_act_gemm makes of [linear; gate]), and the shuffle for the transposed MMA output "
        "(get_w2_permute_indices_with_cache, epilogue_tile_m 128; nvfp4_block_scale_interleave for the scales) "
        "permutes rows; the padding rows and columns are zeros.\n\n"
        "Numerics: GEMM 1 and 2 accumulate in float32 with their biases in float32; the routing weights are "
        "bfloat16; the weighted sum is float32, rounded to bfloat16 once. A kernel whose finalize reads "
        f"bfloat16 expert outputs differs by that rounding. {other[model]} is the same definition with "
        "another expert count.")


def gpt_moe_definition(model: str, experts: int) -> dict:
    codes = {"distribution": "randint", "low": 0, "high": 256}
    return {
        "name": gpt_moe_name(experts),
        "description": gpt_moe_description(model, experts),
        "type": "moe",
        "tags": ["status:draft", f"model-alt:{model}", "stage:decode", "stage:prefill", "tp:1", "quantization:mxfp4",
                 "quantization:mxfp8", "gpu:sm100", "fused"],
        "axes": {
            "seq_len": {"type": "var", "description": "Tokens in the step."},
            "num_experts": {"type": "const", "value": experts,
                            "description": f"num_local_experts = {experts} ({model} config.json), all on the GPU."},
            "top_k": {"type": "const", "value": 4, "description": "num_experts_per_tok = 4."},
            "hidden_size": {"type": "const", "value": 3072, "description": "hidden_size 2880 padded to 3072."},
            "hidden_packed": {"type": "const", "value": 1536, "description": "hidden_size / 2."},
            "hidden_sf": {"type": "const", "value": 96, "description": "hidden_size / 32."},
            "intermediate_size": {"type": "const", "value": 3072, "description": "intermediate_size 2880 padded "
                                                                                  "to 3072."},
            "gemm1_out_size": {"type": "const", "value": 6144, "description": "2 x intermediate_size."},
            "intermediate_packed": {"type": "const", "value": 1536, "description": "intermediate_size / 2."},
            "intermediate_sf": {"type": "const", "value": 96, "description": "intermediate_size / 32."},
        },
        "constraints": ["top_k <= num_experts", "hidden_packed * 2 == hidden_size", "hidden_sf * 32 == hidden_size",
                        "intermediate_packed * 2 == intermediate_size", "intermediate_sf * 32 == intermediate_size",
                        "gemm1_out_size == 2 * intermediate_size"],
        "inputs": {
            "routing_logits": {"shape": ["seq_len", "num_experts"], "dtype": "bfloat16",
                               "random": {"distribution": "skewed_logits", "alpha": 1.0},
                               "description": "Router logits (the router GEMM's output with its bias)."},
            "hidden_states": {"shape": ["seq_len", "hidden_size"], "dtype": "float8_e4m3",
                              "description": "MXFP8 values of the padded hidden states (quantize_mxfp8_h3072)."},
            "hidden_states_scale": {"shape": ["seq_len", "hidden_sf"], "dtype": "uint8",
                                    "random": {"distribution": "randint", "low": 122, "high": 127},
                                    "description": "Their e8m0 scales, row-major."},
            "gemm1_weights": {"shape": ["num_experts", "gemm1_out_size", "hidden_packed"], "dtype": "uint8",
                              "random": codes, "description": "[linear; gate] e2m1 codes (gate_up_proj)."},
            "gemm1_weights_scale": {"shape": ["num_experts", "gemm1_out_size", "hidden_sf"], "dtype": "uint8",
                                    "random": {"distribution": "randint", "low": 118, "high": 125},
                                    "description": "Their e8m0 scales."},
            "gemm1_bias": {"shape": ["num_experts", "gemm1_out_size"], "dtype": "float32",
                           "random": {"distribution": "normal", "mean": 0.0, "std": 0.1},
                           "description": "gate_up_proj bias, [linear; gate] like the rows."},
            "gemm1_alpha": {"shape": ["num_experts"], "dtype": "float32",
                            "random": {"distribution": "uniform", "low": 1.702, "high": 1.702},
                            "description": "SwiGLU alpha per expert: 1.702."},
            "gemm1_beta": {"shape": ["num_experts"], "dtype": "float32",
                           "random": {"distribution": "uniform", "low": 1.0, "high": 1.0},
                           "description": "SwiGLU beta (added to the linear half) per expert: 1.0."},
            "gemm1_clamp_limit": {"shape": ["num_experts"], "dtype": "float32",
                                  "random": {"distribution": "uniform", "low": 7.0, "high": 7.0},
                                  "description": "swiglu_limit per expert: 7.0."},
            "gemm2_weights": {"shape": ["num_experts", "hidden_size", "intermediate_packed"], "dtype": "uint8",
                              "random": codes, "description": "down_proj e2m1 codes."},
            "gemm2_weights_scale": {"shape": ["num_experts", "hidden_size", "intermediate_sf"], "dtype": "uint8",
                                    "random": {"distribution": "randint", "low": 118, "high": 125},
                                    "description": "Their e8m0 scales."},
            "gemm2_bias": {"shape": ["num_experts", "hidden_size"], "dtype": "float32",
                           "random": {"distribution": "normal", "mean": 0.0, "std": 0.1},
                           "description": "down_proj bias."},
        },
        "outputs": {"output": {"shape": ["seq_len", "hidden_size"], "dtype": "bfloat16",
                               "description": "The MoE output (padded columns included)."}},
        "reference": GPT_MOE_REFERENCE,
    }


# --------------------------------------------------------------------------------------------------
# Rendering.
# --------------------------------------------------------------------------------------------------


def rendered() -> dict:
    """name -> (kind, definition dict, einsum, baseline source, baseline description)."""
    return {
        MOE_NAME: ("moe", moe_definition(), MOE_EINSUM, MOE_BASELINE,
                   "The local picks sorted by expert; each expert's rows through weights dequantised by a 16-entry "
                   "lookup table, torch.nn.functional.linear, the SwiGLU output re-quantised with torch.bucketize "
                   "on the e2m1 midpoints, index_add_ back to the tokens."),
        MXFP8_NAME: ("quantize", mxfp8_definition(), MXFP8_EINSUM, MXFP8_BASELINE,
                     "Vectorised: the e8m0 byte read from the float32 product's exponent and mantissa bits, one "
                     "multiplication by 2 ** (127 - byte) and a float8_e4m3fn cast."),
        **{gpt_moe_name(e): ("moe", gpt_moe_definition(m, e), GPT_MOE_EINSUM, GPT_MOE_BASELINE,
                             "Stable argsort routing, weights dequantised by a 16-entry lookup table and exp2 of the "
                             "scale bytes, torch.nn.functional.linear with the biases, the e8m0 byte of the "
                             "re-quantisation read from the float32 bits, index_add_ back to the tokens.")
           for m, e in GPT_OSS},
    }


def files() -> dict:
    out = {}
    for name, (kind, d, einsum, source, text) in rendered().items():
        out[f"definitions/{kind}/{name}.json"] = nvfp4._json(d)
        out[f"einsums/{kind}/{name}.yaml"] = einsum
        out[f"solutions/baseline/{kind}/{name}/{name}_torch.json"] = nvfp4._json(nvfp4.baseline(name, kind, source, text))
    return out


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


if __name__ == "__main__":  # cd tests && python -m reference_cases.fp4_moe
    for path in write_files(files(), DATASET):
        print(f"wrote {path.relative_to(DATASET.parent)}")
