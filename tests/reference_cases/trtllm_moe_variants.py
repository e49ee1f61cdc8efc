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
    experts: int  # num_experts of the definition (local experts)
    hidden: int
    inter: int
    top_k: int
    routing: str  # renormalize | llama4


MODELS = {  # the constants of each flashinfer-bench definition, from the config the definition names
    "qwen3-30b": Model(128, 2048, 768, 8, "renormalize"),  # Qwen/Qwen3-30B-A3B config.json
    "qwen3-235b-ep2": Model(64, 4096, 1536, 8, "renormalize"),  # Qwen/Qwen3-235B-A22B config.json
    "qwen3-next-ep4": Model(128, 2048, 512, 10, "renormalize"),  # Qwen/Qwen3-Next-80B-A3B-Instruct config.json
    "llama-4-scout": Model(16, 5120, 8192, 1, "llama4"),  # meta-llama/Llama-4-Scout-17B-16E-Instruct config.json (text_config)
    "llama-4-maverick": Model(128, 5120, 8192, 1, "llama4"),  # meta-llama/Llama-4-Maverick-17B-128E-Instruct config.json (text_config)
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
