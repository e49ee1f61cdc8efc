"""liger-kernel contenders: RMSNorm (plain and Gemma's 1 + w), the fused residual add + RMSNorm, RoPE, SiLU/GELU-and-mul.

Liger's norms run in casting mode "gemma": x and w widened to float32, the mean of squares, rsqrt,
normalisation and the (offset + w) multiply in float32, one rounding to the input dtype, as the
definitions state. (Its default "llama" mode rounds the normalised value before the weight multiply:
not these definitions.) The fused add stores x + r rounded to bfloat16 and normalises that rounded sum,
as the definitions do.
"""

from __future__ import annotations

import re

from .common import TRITON_GPUS, Family, Unclaimed, reference_eps, sig

AUTHOR = "liger-kernel"
DEPENDENCIES = ("torch>=2.6", "triton>=3.3", "liger-kernel>=0.8.5,<0.9")
_GEMMA_SCALE = re.compile(r"\(1\.0 \+ weight")

RMSNORM_SOURCE = '''import torch
from liger_kernel.ops.rms_norm import LigerRMSNormFunction

EPS = {eps!r}  # the definition's eps, inside the root
OFFSET = {offset!r}  # the scale is (OFFSET + weight)


def run(hidden_states, weight):
    # casting_mode "gemma": everything in float32, one rounding to bfloat16 at the end.
    out = LigerRMSNormFunction.apply(hidden_states, weight, EPS, OFFSET, "gemma", False)
    return {{"output": out}}
'''

FUSED_ADD_SOURCE = '''import torch
from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction

EPS = {eps!r}  # the definition's eps, inside the root
OFFSET = {offset!r}  # the scale is (OFFSET + weight)


def run(hidden_states, residual, weight):
    # The kernel stores s = x + r in bfloat16 and normalises that rounded sum; casting_mode "gemma":
    # the norm and the weight multiply in float32, one rounding at the end.
    out, residual_out = LigerFusedAddRMSNormFunction.apply(hidden_states, residual, weight, EPS, OFFSET, "gemma", False)
    return {{"output": out, "residual_out": residual_out}}
'''

QK_RMSNORM_SOURCE = '''import torch
from liger_kernel.ops.rms_norm import LigerRMSNormFunction

EPS = {eps!r}  # the definition's eps, inside the root
OFFSET = {offset!r}  # the scale is (OFFSET + weight)


def run(input, weight):
    # One norm per (token, head): the rows of a [num_tokens * num_heads, head_dim] view.
    rows = input.reshape(-1, input.shape[-1])
    out = LigerRMSNormFunction.apply(rows, weight, EPS, OFFSET, "gemma", False)
    return {{"output": out.view(input.shape)}}
'''

ALLREDUCE_SOURCE = '''import torch
from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction

EPS = {eps!r}  # the definition's eps, inside the root


def run(partials, residual, weight):
    # The all-reduce of the TP ranks' partials, on one device: summed in float32, rounded to bfloat16
    # (torch ops, inside the call), then liger's fused residual add + RMSNorm on that rounded sum.
    allreduced = partials.to(torch.float32).sum(dim=0).to(torch.bfloat16)
    out, residual_out = LigerFusedAddRMSNormFunction.apply(allreduced, residual, weight, EPS, 0.0, "gemma", False)
    return {{"output": out, "residual_out": residual_out}}
'''

RMSNORM_EPS_INPUT_SOURCE = '''import torch
from liger_kernel.ops.rms_norm import LigerRMSNormFunction


def run(input, weight, eps):
    # casting_mode "gemma": everything in float32, one rounding to float16 at the end; eps is the
    # workload's scalar (a Python number; float() of a tensor would copy it to the host).
    return {"output": LigerRMSNormFunction.apply(input, weight, float(eps), 0.0, "gemma", False)}
'''

GELU_SOURCE = '''import torch
from liger_kernel.ops.geglu import LigerGELUMulFunction


def run(input):
    # As SiLU: liger rounds gelu(gate) to the input dtype before the multiply; in float32 that is exact.
    gate, up = input.to(torch.float32).chunk(2, dim=-1)
    out = LigerGELUMulFunction.apply(gate, up)
    return {"output": out.to(torch.bfloat16)}
'''

ROPE_SOURCE = '''import torch
from liger_kernel.ops.rope import LigerRopeFunction


def run(positions, q, k, cos_sin_cache):
    head_dim = q.shape[-1]
    half = head_dim // 2
    # The cache rows of the tokens' positions, split into the cos and sin halves (liger reads half-width
    # cos/sin when told rotary_dim = head_dim: no duplication needed).
    rows = cos_sin_cache[positions]
    cos, sin = rows[:, :half], rows[:, half:]
    # Liger rotates in place, in the [tokens, heads, dim] memory order it is given as a [1, heads, tokens, dim]
    # view: copies of q and k, so that the inputs stay as they are.
    q_out, k_out = LigerRopeFunction.apply(q.clone().unsqueeze(0).transpose(1, 2), k.clone().unsqueeze(0).transpose(1, 2),
                                           cos, sin, None, 1, head_dim)
    return {"q_out": q_out.transpose(1, 2).squeeze(0), "k_out": k_out.transpose(1, 2).squeeze(0)}
'''

SILU_SOURCE = '''import torch
from liger_kernel.ops.swiglu import LigerFusedGateUpSiLUMulFunction


def run(input):
    # Liger rounds silu(gate) to the input's dtype before multiplying by up; the definition rounds once,
    # after the product. Widened to float32 first, that inner rounding is exact, so the one rounding is
    # the final .to(bfloat16). Both conversions are part of this call (and of its time).
    out = LigerFusedGateUpSiLUMulFunction.apply(input.to(torch.float32))
    return {"output": out.to(torch.bfloat16)}
'''


def _norm_constants(definition, gemma: bool) -> tuple[float, float]:
    eps = reference_eps(definition)
    if eps is None:
        raise Unclaimed("no single `eps = <number>` line in the reference: the eps to bake in is unknown")
    if bool(_GEMMA_SCALE.search(definition.reference)) != gemma:
        raise Unclaimed("the reference's scale is not " + ("(1 + w)" if gemma else "w") + " as the name says")
    return eps, 1.0 if gemma else 0.0


def _rmsnorm(definition):
    gemma = definition.name.startswith("gemma_")
    eps, offset = _norm_constants(definition, gemma)
    scale = "(1 + weight), Gemma's offset" if gemma else "weight"
    return RMSNORM_SOURCE.format(eps=eps, offset=offset), (
        f"liger-kernel's RMSNorm Triton kernel (LigerRMSNormFunction, casting_mode 'gemma', eps {eps:g} baked in, "
        f"scale {scale}): x and the weight widened to float32 in the kernel, mean of squares, rsqrt(mean + eps), "
        "normalisation and weight multiply in float32, one rounding to bfloat16. No layout conversion.")


def _fused_add(definition):
    gemma = definition.name.startswith("gemma_")
    eps, offset = _norm_constants(definition, gemma)
    scale = "(1 + weight), Gemma's offset" if gemma else "weight"
    return FUSED_ADD_SOURCE.format(eps=eps, offset=offset), (
        f"liger-kernel's fused residual add + RMSNorm Triton kernel (LigerFusedAddRMSNormFunction, casting_mode "
        f"'gemma', eps {eps:g} baked in, scale {scale}): residual_out = x + r rounded to bfloat16, the norm of that "
        "rounded sum in float32 with one rounding to bfloat16. No layout conversion.")


def _qk_rmsnorm(definition):
    gemma = definition.name.startswith("gemma_")
    eps, offset = _norm_constants(definition, gemma)
    return QK_RMSNORM_SOURCE.format(eps=eps, offset=offset), (
        f"liger-kernel's RMSNorm Triton kernel (casting_mode 'gemma', eps {eps:g}, scale "
        + ("(1 + weight)" if gemma else "weight") + ") over the [num_tokens * num_heads, head_dim] rows of the "
        "input (a view, no copy): float32 inside, one rounding to bfloat16.")


def _allreduce(definition):
    eps, _ = _norm_constants(definition, gemma=False)
    return ALLREDUCE_SOURCE.format(eps=eps), (
        "The all-reduce of the partials done on one device by torch (sum over the TP ranks in float32, rounded to "
        f"bfloat16, inside the timed call), then liger-kernel's fused residual add + RMSNorm (eps {eps:g}, "
        "casting_mode 'gemma'): residual_out = sum + residual rounded to bfloat16, the norm of that rounded value in "
        "float32, one rounding. No collective: the definition's partials are all on this device.")


def _rmsnorm_eps_input(definition):  # noqa: ARG001 (eps comes with the call)
    return RMSNORM_EPS_INPUT_SOURCE, (
        "liger-kernel's RMSNorm Triton kernel (LigerRMSNormFunction, casting_mode 'gemma') with the call's eps (a "
        "scalar of the workload, passed on as a Python float): float16 x and weight widened to float32 in the "
        "kernel, mean of squares, rsqrt(mean + eps), normalisation and weight multiply in float32, one rounding to "
        "float16. No layout conversion.")


def _gelu_tanh(definition):  # noqa: ARG001 (every sibling is the same call)
    return GELU_SOURCE, (
        "liger-kernel's GEGLU Triton kernel (LigerGELUMulFunction, GELU's tanh approximation) on the gate and up "
        "halves widened to float32, output rounded to bfloat16: liger rounds gelu(gate) to the input dtype before "
        "the multiply, which in float32 is exact, so the result is rounded once as the definition states. The "
        "widening (float32 copies of both halves) and the final rounding are inside the timed call.")


def _rope(definition):  # noqa: ARG001 (every sibling is the same call)
    return ROPE_SOURCE, (
        "liger-kernel's RoPE Triton kernel (LigerRopeFunction, the rotate-half / NeoX pairing of HF Llama): q and k "
        "rotated in float32 with the cos/sin of each token's position, rounded to bfloat16 once. Inside the timed "
        "call: the gather of the tokens' cos_sin_cache rows (float32), contiguous copies of the cos and sin halves, "
        "and copies of q and k (liger rotates in place; the inputs must stay unchanged); no transposing copy (the "
        "[1, heads, tokens, dim] views keep the tokens-major memory liger works on).")


def _silu(definition):  # noqa: ARG001 (every sibling is the same call)
    return SILU_SOURCE, (
        "liger-kernel's fused gate/up SwiGLU Triton kernel (LigerFusedGateUpSiLUMulFunction) on the input widened to "
        "float32, output rounded to bfloat16: liger rounds silu(gate) to the input dtype before the multiply, which "
        "in float32 is exact, so the result is rounded once as the definition states. The widening (bfloat16 -> "
        "float32 copy of the input) and the final rounding are inside the timed call.")


_NORM_SIG = sig("hidden_states:batch_size,hidden_size:bfloat16 weight:hidden_size:bfloat16",
                "output:batch_size,hidden_size:bfloat16")
_FUSED_SIG = sig("hidden_states:batch_size,hidden_size:bfloat16 residual:batch_size,hidden_size:bfloat16 "
                 "weight:hidden_size:bfloat16",
                 "output:batch_size,hidden_size:bfloat16 residual_out:batch_size,hidden_size:bfloat16")
_QK_SIG = sig("input:num_tokens,num_heads,head_dim:bfloat16 weight:head_dim:bfloat16",
              "output:num_tokens,num_heads,head_dim:bfloat16")
_ALLREDUCE_SIG = sig("partials:tp_size,num_tokens,hidden_size:bfloat16 residual:num_tokens,hidden_size:bfloat16 "
                     "weight:hidden_size:bfloat16",
                     "output:num_tokens,hidden_size:bfloat16 residual_out:num_tokens,hidden_size:bfloat16")
_EPS_INPUT_SIG = sig("input:batch_size,hidden_size:float16 weight:hidden_size:float16 eps::float32",
                     "output:batch_size,hidden_size:float16")
_ROPE_SIG = sig("positions:num_tokens:int64 q:num_tokens,num_qo_heads,head_dim:bfloat16 "
                "k:num_tokens,num_kv_heads,head_dim:bfloat16 cos_sin_cache:max_position,head_dim:float32",
                "q_out:num_tokens,num_qo_heads,head_dim:bfloat16 k_out:num_tokens,num_kv_heads,head_dim:bfloat16")
_SILU_SIG = sig("input:num_tokens,gate_up_size:bfloat16", "output:num_tokens,intermediate_size:bfloat16")


def _family(name, pattern, signature, render):
    return Family(name=name, author=AUTHOR, pattern=re.compile(pattern), signatures=(signature,), render=render,
                  language="triton", target_hardware=TRITON_GPUS, dependencies=DEPENDENCIES, suffix="liger")


FAMILIES = (
    _family("rmsnorm", r"^(gemma_)?rmsnorm_h\d+(_eps\w+)?$", _NORM_SIG, _rmsnorm),
    _family("fused_add_rmsnorm", r"^(gemma_)?fused_add_rmsnorm_h\d+(_eps\w+)?$", _FUSED_SIG, _fused_add),
    _family("qk_rmsnorm", r"^(gemma_)?qk_rmsnorm_d\d+$", _QK_SIG, _qk_rmsnorm),
    _family("allreduce_fused_add_rmsnorm", r"^allreduce_fused_add_rmsnorm_tp\d+_h\d+$", _ALLREDUCE_SIG, _allreduce),
    _family("rmsnorm_eps_input", r"^rmsnorm_fp16_h\d+$", _EPS_INPUT_SIG, _rmsnorm_eps_input),
    _family("gelu_tanh_and_mul", r"^gelu_tanh_and_mul_i\d+$", _SILU_SIG, _gelu_tanh),
    _family("rope", r"^rope_(llama3|llama4|neox|gemma3_global|gemma3_local|yarn)_h\d+_kv\d+_d\d+$", _ROPE_SIG, _rope),
    _family("silu_and_mul", r"^silu_and_mul_i\d+$", _SILU_SIG, _silu),
)

# Families looked at and not claimed, with why (the note lists them).
REJECTED = {
    "rope_deepseek_yarn_* / rope_with_cos_sin_cache_*_rd64 / qk_gemma_rmsnorm_partial_rope_gate": "a key shared by "
        "all heads ([tokens, dim], no head axis), partial rotary dims or a fused norm and gate: other calls than "
        "liger's RoPE on [tokens, heads, dim]; not claimed",
    "fused_qk_rmsnorm / qk_rmsnorm_tp8_* / rmsnorm_gated / mamba_gated_rmsnorm / layernorm": "a fused qkv "
        "layout, a TP-split sum of squares or a gate that no liger call computes exactly; not claimed",
    "allreduce_fused_add_rmsnorm_fp8_*": "quantises the output to FP8 after the norm; liger's norm does not",
}
