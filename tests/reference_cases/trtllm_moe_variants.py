"""The public FlashInfer-Trace set's TRT-LLM fused MoE definitions (flashinfer-bench's trtllm_fp4_block_scale_moe_*,
trtllm_fp4_block_scale_routed_moe_*, trtllm_fp8_per_tensor_scale_moe_*), and the table of their constants
that trtllm_moe.py checks them at.

Thirteen definitions, five kinds of mathematics: MXFP4 weights with bfloat16 activations routed by
Renormalize (TopK -> Softmax) or Llama4 (Top-1 -> Sigmoid) logits, the same with pre-computed packed routing,
and FP8 per-tensor-scale weights with either routing. Each kind is a family in dataset/families/ (one
template definition, the other constants per sibling; `kerneltrace definitions` renders them), so the mathematics
is checked on every definition at a tiny size by trtllm_moe.py's independent formulation (cheap: the const axes
shrink).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Model:
    label: str
    source: str  # the config.json the constants come from
    experts: int  # num_experts of the definition (local experts)
    hidden: int
    inter: int
    top_k: int
    routing: str  # renormalize | llama4
    tags: tuple
    status: str
    serving: str  # how the shape is served, and how faithful the definition is to it
    layers: str  # how often a step calls it


MODELS = {
    "qwen3-30b": Model(
        "Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B config.json: num_experts 128, num_experts_per_tok 8, hidden_size 2048, "
        "moe_intermediate_size 768, norm_topk_prob true", 128, 2048, 768, 8, "renormalize",
        ("model-alt:qwen3-30b-a3b", "ep:1", "tp:1"), "verified",
        "All 128 experts on one Blackwell GPU (expert parallelism 1, TP1: the MXFP4 experts of the 48 layers are "
        "about 15 GB). Tagged model-alt: the dataset's qwen3-30b-a3b record counts the bfloat16 checkpoint's kernels "
        "on an H100 (router GEMM, moe_routing_softmax_topk8_e128 and vLLM's sorted grouped GEMMs).",
        "Every one of the 48 layers is a MoE layer (decoder_sparse_step 1): 48 calls a step."),
    "qwen3-235b-ep2": Model(
        "Qwen3-235B-A22B at EP2", "Qwen/Qwen3-235B-A22B config.json: num_experts 128, num_experts_per_tok 8, "
        "hidden_size 4096, moe_intermediate_size 1536, norm_topk_prob true", 64, 4096, 1536, 8, "renormalize",
        ("model-alt:qwen3-235b-a22b-tp8", "ep:2"), "draft",
        "flashinfer-bench's definition calls this Qwen3-235B-A22B at EP2 (128 / 2 = 64 local experts). One EP2 "
        "rank holds 64 of the 128 experts, but it routes every token over all 128 and computes only the picks that "
        "land on it (local_expert_offset); here the top 8 are taken over the 64 experts alone, as the public "
        "definition has it. Kept as a draft under the public name with Qwen3-235B-A22B's expert shape.",
        "94 MoE layers a step (decoder_sparse_step 1)."),
    "qwen3-next-ep4": Model(
        "Qwen3-Next-80B-A3B at EP4", "Qwen/Qwen3-Next-80B-A3B-Instruct config.json: num_experts 512, "
        "num_experts_per_tok 10, hidden_size 2048, moe_intermediate_size 512, norm_topk_prob true", 128, 2048, 512,
        10, "renormalize", ("model-alt:qwen3-next-80b-a3b", "ep:4"), "draft",
        "flashinfer-bench's definition calls this Qwen3-Next-80B-A3B at EP4 (512 / 4 = 128 local experts). One EP4 "
        "rank holds 128 of the 512 experts, but it routes every token over all 512 (moe_routing_softmax_topk10_e512) "
        "and computes only its own picks; here the top 10 are taken over the 128 experts alone, as the public "
        "definition has it. The shared expert is not included. Kept as a draft under the public name with "
        "Qwen3-Next's expert shape.",
        "48 MoE layers a step."),
    "llama-4-scout": Model(
        "Llama-4-Scout-17B-16E", "meta-llama/Llama-4-Scout-17B-16E-Instruct config.json (text_config): "
        "num_local_experts 16, num_experts_per_tok 1, hidden_size 5120, intermediate_size 8192", 16, 5120, 8192, 1,
        "llama4", ("model-alt:llama-4-scout", "ep:1", "tp:1"), "verified",
        "All 16 experts at full width on one Blackwell GPU (EP1, TP1: the 109B parameters fit a 192 GB B200 in FP8 "
        "or MXFP4). flashinfer-bench tags it tp:8, but its intermediate size is the whole 8192 (a TP8 rank would hold "
        "1024). Tagged model-alt: the dataset's llama-4-scout record is SGLang TP8 on H100 in bfloat16 "
        "(moe_routing_top1_sigmoid_e16 and the Triton grouped GEMMs). The shared expert runs as its own GEMMs.",
        "Every one of the 48 layers is a MoE layer (interleave_moe_layer_step 1): 48 calls a step."),
    "llama-4-maverick": Model(
        "Llama-4-Maverick-17B-128E", "meta-llama/Llama-4-Maverick-17B-128E-Instruct config.json (text_config): "
        "num_local_experts 128, num_experts_per_tok 1, hidden_size 5120, intermediate_size 8192 (the experts'; "
        "intermediate_size_mlp 16384 is the dense layers')", 128, 5120, 8192, 1, "llama4",
        ("model-alt:llama-4-maverick", "ep:1"), "verified",
        "All 128 experts at full width: the whole routed-expert computation of one MoE layer (about 16 GB of FP8 or "
        "8 GB of MXFP4 per layer; the model does not fit one GPU, so served, each EP rank runs this kernel over its "
        "share of the experts and the ranks' outputs are summed). The dataset has no calling record for Maverick "
        "(its recipe llama-4-maverick writes the workloads). The shared expert runs as its own GEMMs.",
        "24 of the 48 layers are MoE layers (interleave_moe_layer_step 2): 24 calls a step."),
}


@dataclass(frozen=True)
class Variant:
    kind: str  # fp4 | fp4_routed | fp8
    model: str

    @property
    def m(self) -> Model:
        return MODELS[self.model]

    @property
    def name(self) -> str:
        m = self.m
        base = {"fp4": "trtllm_fp4_block_scale_moe", "fp4_routed": "trtllm_fp4_block_scale_routed_moe",
                "fp8": "trtllm_fp8_per_tensor_scale_moe"}[self.kind]
        return f"{base}_topk{m.top_k}_e{m.experts}_h{m.hidden}_i{m.inter}"


VARIANTS = [Variant(k, m) for k in ("fp4", "fp4_routed")
            for m in ("qwen3-next-ep4", "llama-4-maverick", "llama-4-scout", "qwen3-30b", "qwen3-235b-ep2")] + \
    [Variant("fp8", m) for m in ("llama-4-maverick", "llama-4-scout", "qwen3-30b")]


def e8m0_range(fan_in: int) -> tuple:
    """randint bounds of the e8m0 scale bytes: weights of about 1 / sqrt(fan_in) (uniform e2m1 codes have a
    root mean square of 2.93), scales 2 ** -2 .. 2 ** 1 around it."""
    centre = 127 - round(math.log2(2.93 * math.sqrt(fan_in)))
    return centre - 2, centre + 2


def tags(v: Variant) -> list:
    m = v.m
    quant = "quantization:fp8-per-tensor" if v.kind == "fp8" else "quantization:mxfp4"
    extra = ["routing:pre-computed"] if v.kind == "fp4_routed" else []
    return [f"status:{m.status}", *m.tags, "stage:decode", "stage:prefill", quant, "gpu:sm100", "fused", *extra]










