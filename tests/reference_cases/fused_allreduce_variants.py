"""The independent check of the fused all-reduce + residual add + RMSNorm at the tensor-parallel degree and hidden size
of every recorded model served with TP > 1 on one node: siblings of the checked template
allreduce_fused_add_rmsnorm_tp4_h8192 (reference_cases/collective_fusion.py checks its mathematics in full), rendered by
`kerneltrace definitions` from dataset/families/fused_allreduce_variants.json (each model's tp_size, hidden_size and
rms_norm_eps, the reference and baseline differing from the template's in the eps only).

Each variant gets a cheap check of an independent float64 formulation (an einsum over ranks,
torch.linalg.vector_norm) at its real tp_size and hidden_size, a few tokens, with the eps this check holds for it
(EPS below, from the model's config: a definition whose eps is not its model's fails).

Left out, and why: Gemma-3-27B at TP2 and Qwen3-Next at TP4 normalise with (1 + w) (GemmaRMSNorm, which vLLM's
pattern does not match; Gemma 3's o_proj all-reduce is followed by a plain sandwich norm, not by an add + norm);
Kimi-K2 at TP16 and DeepSeek-V3 at TP16 span two nodes, where the kernel's NVLink IPC workspace does not reach
(SGLang enables the fusion on one node only).
"""

from __future__ import annotations

from pathlib import Path

from .collective_fusion import _norm64, fused_inputs
from .common import Case

DATASET = Path(__file__).resolve().parents[2] / "dataset"
TEMPLATE = "allreduce_fused_add_rmsnorm_tp4_h8192"

# rms_norm_eps of each variant's model (config.json): the check's own record, not read from the definition.
EPS = {
    "allreduce_fused_add_rmsnorm_tp4_h5120": 1e-6,  # Qwen/Qwen3-32B
    "allreduce_fused_add_rmsnorm_tp4_h2048": 1e-6,  # Qwen/Qwen3-30B-A3B
    "allreduce_fused_add_rmsnorm_tp8_h4096": 1e-6,  # Qwen/Qwen3-235B-A22B
    "allreduce_fused_add_rmsnorm_tp8_h5120": 1e-5,  # zai-org/GLM-4.5 (and Llama-4-Scout's text_config)
    "allreduce_fused_add_rmsnorm_tp8_h3072": 1e-6,  # MiniMaxAI/MiniMax-M2
    "allreduce_fused_add_rmsnorm_tp8_h7168": 1e-6,  # deepseek-ai/DeepSeek-V3
}


# --------------------------------------------------------------------------------------------------
# The check: float64, another route to the same numbers (collective_fusion.py's, with the variant's eps).
# --------------------------------------------------------------------------------------------------

def inputs(ax, g, i):
    # collective_fusion's draws; the third set's values near 1e-3 (see SIZES)
    return fused_inputs(ax, g, i, scales=(1.0, 30.0, 0.001))


def _expected(eps: float):
    def expected(ax, x):
        normed, residual_out = _norm64(ax, x, eps)
        return {"output": normed, "residual_out": residual_out}
    return expected


# One token, three tokens (one cancelling), two tokens of values near 1e-3, whose mean square (about 1e-5) is where
# eps = 1e-6 and 1e-5 differ by a quarter of the output.
SIZES = [{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 2}]
CASES = {name: Case(SIZES, inputs, _expected(eps)) for name, eps in EPS.items()}

