"""Descriptions of the TRT-LLM fused MoE definitions (trtllm_moe_render.py)."""

from __future__ import annotations

API = {"fp4": "flashinfer.fused_moe.trtllm_fp4_block_scale_moe",
       "fp4_routed": "flashinfer.fused_moe.trtllm_fp4_block_scale_routed_moe",
       "fp8": "flashinfer.fused_moe.trtllm_fp8_per_tensor_scale_moe"}

FORMULA = {
    ("fp4", "renormalize"): "    e_1..e_K = the K largest routing_logits[t] (ties: lower id first)\n"
                            "    w_j      = softmax over j of routing_logits[t, e_j]",
    ("fp4", "llama4"): "    e_1      = argmax routing_logits[t] (ties: lower id first)\n"
                       "    w_1      = sigmoid(routing_logits[t, e_1])",
    ("fp4_routed", "renormalize"): "    e_j, w_j = topk_ids[t, j] >> 16, the bfloat16 with bits topk_ids[t, j] & 0xFFFF",
    ("fp4_routed", "llama4"): "    e_j, w_j = topk_ids[t, j] >> 16, the bfloat16 with bits topk_ids[t, j] & 0xFFFF",
    ("fp8", "renormalize"): "    e_1..e_K = the K largest routing_logits[t] (ties: lower id first)\n"
                            "    w_j      = softmax over j of routing_logits[t, e_j]",
    ("fp8", "llama4"): "    e_1      = argmax routing_logits[t] (ties: lower id first)\n"
                       "    w_1      = sigmoid(routing_logits[t, e_1])",
}

EXPERT = {
    "fp4": "    [u; g]   = W1[e_j] · x[t]                  u: rows [0, I), g: rows [I, 2I); W1 = MXFP4 dequantised\n"
           "    a        = bfloat16(silu(g) ⊙ u)\n"
           "    output[t] = Σ_j w_j · W2[e_j] · a          float32, bfloat16 once",
    "fp8_renormalize": "    u, g     = s1[e_j] · (W1[e_j] · x[t])[0:I], s1g[e_j] · (W1[e_j] · x[t])[I:2I]\n"
                       "    output[t] = Σ_j w_j · s2[e_j] · W2[e_j] · (silu(g) ⊙ u)     float32, bfloat16 once",
    "fp8_llama4": "    u, g     = w_1 · s1[e_1] · (W1[e_1] · x[t])[0:I], w_1 · s1g[e_1] · (W1[e_1] · x[t])[I:2I]\n"
                  "    output[t] = s2[e_1] · W2[e_1] · (silu(g) ⊙ u)     float32, bfloat16 once",
}

MXFP4 = ("MXFP4 weights, as the kernel takes them (MxFP4 x bfloat16 mode): gemm1_weights [E, 2I, H / 2] and "
         "gemm2_weights [E, H, I / 2] hold two e2m1 codes per byte (element 2i in the LOW nibble, 2i + 1 in the high "
         "nibble; code bits: sign 3, exponent 2..1 with bias 1, mantissa 0, so the 16 codes are +-{0, 0.5, 1, 1.5, 2, "
         "3, 4, 6}); gemm1_weights_scale [E, 2I, H / 32] and gemm2_weights_scale [E, H, I / 32] hold one e8m0 byte "
         "per block of 32 consecutive values of a row, the power of two 2 ** (byte - 127) (the OCP MX format, as "
         "gpt-oss's checkpoints store it and this dataset's grouped_gemm_mxfp4_* definitions take it). FlashInfer's "
         "docstring gives these shapes and dtypes (uint8 codes; the scales as a float8 type, e8m0 for MXFP4, stored "
         "here as their uint8 bytes). The engines shuffle the rows of both tensors once at load time for the kernel "
         "(shuffle_matrix_a / shuffle_matrix_sf_a, use_shuffled_weight), which moves bytes, not values: the "
         "definition takes the row-major logical layout. flashinfer-bench's definition of the same name takes float32 "
         "weights instead (its description: \"kernel uses MxFP4-quantized weights\"); here the inputs are what the "
         "kernel reads.")

FP8 = ("FP8 per-tensor scales, as the kernel takes them (flashinfer.fused_moe.trtllm_fp8_per_tensor_scale_moe): "
       "hidden_states, gemm1_weights and gemm2_weights are float8_e4m3; the activation's and each expert's weight "
       "scales are folded into three per-expert float32 factors: output1_scales_scalar scales the up half of gemm1's "
       "output, output1_scales_gate_scalar the gate half, output2_scales_scalar gemm2's output. In FlashInfer's test "
       "(tests/moe/trtllm_gen_fused_moe_utils.py) they are scale_c_fc1 = c_global_sf / (w1_global * a_global), "
       "scale_gate_fc1 = 1 / (w1_global * a_global) and scale_c_fc2 = 1 / (c_global_sf * w2_global), c_global_sf "
       "being the quantisation scale of the intermediate activation, which the kernel re-quantises to float8 before "
       "gemm2. The reference keeps that activation in float32 (as moe_fp8_block_scale_* and flashinfer-bench's "
       "reference do: a kernel that re-quantises it moves each value by up to one e4m3 ulp, 2^-4 relative, and a "
       "weighted sum of thousands of them much less).")

ROUTING = {
    "renormalize": ("Routing: Renormalize (routing_method_type 1, TopK -> Softmax in FlashInfer's RoutingMethodType "
                    "docstring): the top k router logits in float32, in descending order (ties between equal logits "
                    "go to the LOWER expert id: bfloat16 logits tie often), their weights the softmax of those k "
                    "logits. That equals the model's softmax over all experts followed by the top k renormalised "
                    "(norm_topk_prob true; RenormalizeNaive, method 4): softmax is monotonic and the renormalised "
                    "probabilities of the picks are the softmax of their logits. No routing bias, no scaling "
                    "factor."),
    "llama4": ("Routing: Llama4 (routing_method_type 3, Top-1 -> Sigmoid): the largest router logit (ties: the lower "
               "expert id), its weight the sigmoid of that logit, as Llama 4's router computes it "
               "(transformers Llama4TextMoe: topk of the logits, then sigmoid). FlashInfer's Llama4 routing kernel "
               "(csrc/fused_moe/trtllm_backend/trtllm_fused_moe_routing_llama4.cu) reads no routing bias and no "
               "scaling factor, so this definition has no routing_bias input (flashinfer-bench's has one that its "
               "reference ignores)."),
}

WEIGHT = {
    ("fp4", "llama4"): ("Where the routing weight applies: at the expert's output. FlashInfer's FP4 launcher "
                        "hard-codes use_routing_scales_on_input = false (csrc/trtllm_fused_moe_kernel_launcher.cu), so "
                        "the finalize step multiplies each expert output by its weight, as FlashInfer's reference "
                        "(run_moe_dequant) does. Llama 4 itself scales the expert's INPUT (apply_router_weight_on_input): "
                        "with SwiGLU, w · W2 (silu(g) ⊙ u) differs from W2 (silu(w g) ⊙ w u); flashinfer-bench's "
                        "reference scales the input. This definition is the kernel's contract; an engine serving "
                        "Llama 4 through it has to account for the difference."),
    ("fp4_routed", "llama4"): ("Where the routing weight applies: at the expert's output, as for "
                               "trtllm_fp4_block_scale_moe (the FP4 launcher hard-codes use_routing_scales_on_input "
                               "= false; the finalize step multiplies by the unpacked weight). flashinfer-bench's "
                               "reference scales the input, as Llama 4's model code does."),
    ("fp8", "llama4"): ("Where the routing weight applies: on the input, i.e. on both halves of gemm1's output "
                        "(use_routing_scales_on_input = true, what FlashInfer's own test passes for Llama4 routing and "
                        "Llama 4's apply_router_weight_on_input means; the finalize step then adds the expert output "
                        "unweighted)."),
}


def text(v) -> str:
    m = v.m
    route = m.routing
    k = m.top_k
    what = {"fp4": "TRT-LLM fused Mixture-of-Experts layer with MXFP4 weights and bfloat16 activations, routing fused in",
            "fp4_routed": "TRT-LLM fused Mixture-of-Experts layer with MXFP4 weights and bfloat16 activations, "
                          "pre-computed routing",
            "fp8": "TRT-LLM fused Mixture-of-Experts layer with FP8 per-tensor-scale weights and activations, routing "
                   "fused in"}[v.kind]
    expert = EXPERT["fp4"] if v.kind != "fp8" else EXPERT[f"fp8_{route}"]
    parts = [
        f"{what}, with {m.label}'s expert shape ({m.experts} experts, hidden {m.hidden}, intermediate {m.inter}, top "
        f"{k}), as FlashInfer's {API[v.kind]} computes it (a Blackwell kernel: trtllm-gen cubins for sm100, tag "
        "gpu:sm100) and flashinfer-bench's definition of the same name names it.",
        f"For each token t (K = {k}, I = {m.inter}):\n\n" + FORMULA[(v.kind, route)] + "\n" + expert,
        f"Constants: {m.source}.",
        m.serving,
        m.layers,
    ]
    if v.kind == "fp4_routed":
        parts.append("Pre-computed routing (routing done elsewhere, e.g. by the engine's own top-k kernel): topk_ids "
                     "[seq_len, top_k] int32, each (expert_id << 16) | the 16 bits of the pick's bfloat16 routing "
                     "weight, the packed format of FlashInfer's docstring (high 16 bits the int16 expert id, low 16 "
                     "bits the weight; PackedScoreIdx in include/flashinfer/trtllm/fused_moe/RoutingKernel.h), as "
                     "flashinfer-bench's definition of the same name packs it. The weights are applied as given (the "
                     f"routing method that made them, {'Llama4' if route == 'llama4' else 'Renormalize'} for this "
                     "model, only fixes how they were computed). Workloads give topk_ids as seeded blobs "
                     "(generator/workloadgen/packed_routing.py: distinct picks of a skewed popularity, their weights "
                     "the softmax, or for top-1 the sigmoid, of the picks' Gumbel keys).")
    else:
        parts.append(ROUTING[route])
    if (v.kind, route) in WEIGHT:
        parts.append(WEIGHT[(v.kind, route)])
    parts.append(MXFP4 if v.kind != "fp8" else FP8)
    parts.append("Experts: for each token and pick with expert e, h = W1[e] @ x (2I rows: rows [0, I) the up "
                 "projection, rows [I, 2I) the gate projection: FlashInfer's reference takes x0 = h[:I] as the linear "
                 "half and applies the activation to x1 = h[I:], the order flashinfer-bench uses too), a = SiLU(gate) "
                 "* up, y = W2[e] @ a, and the token's output sums its picks' weighted y in float32, rounded to "
                 "bfloat16 once. " + ("The activation a is rounded to bfloat16 before gemm2, as the kernel stores it "
                                      "(FlashInfer's reference rounds it the same way in the MxFP4 x bfloat16 mode)."
                                      if v.kind != "fp8" else "SiLU(x) = x / (1 + exp(-x)) in float32."))
    if v.kind == "fp8":
        parts.append("Workload inputs: float8 tensors drawn normal(0, 64) (clamped to +-448), so the output scales are "
                     "about 1 / (64 * 64 * sqrt(hidden)) and 1 / (64 * sqrt(intermediate)) (uniform, 0.5 to 2 times "
                     "that); router logits skewed_logits(alpha 0.6).")
    else:
        parts.append("Workload inputs: random code bytes (every e2m1 value equally likely) and e8m0 scale bytes "
                     "around 1 / (2.93 sqrt(fan_in)) (2.93: the root mean square of a uniform code), so the GEMMs' "
                     "outputs stay near unit size; hidden states normal(0, 1)"
                     + ("; router logits skewed_logits(alpha 0.6)." if v.kind == "fp4" else "."))
    return "\n\n".join(parts)
