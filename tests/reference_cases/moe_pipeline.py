"""Independent formulations for the kernels of the Triton fused-MoE path (DeepSeek-V3 TP8/EP8 and TP16/EP16,
Qwen3-30B-A3B TP1; the Kimi-K2 shapes in kimi.py reuse these functions).

All in float64 or plain Python, without the references' code paths: the per-token-group quantisation group by
group in a Python loop; moe_align_block_size as Python lists per expert; the sorted grouped GEMMs pair by pair
with fully dequantised weights (no per-block partial products), the pair-to-expert map rebuilt from the
aligned blocks; silu_and_mul with F.silu; moe_sum with Tensor.sum.

The grouped GEMMs shrink N and K (several 128-blocks of every scale remain, so block-scale indexing is
checked as at the real size) and keep the real expert count: at real size the e32 w13 weights are 940 MB.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import Case, fp8, shrunk, uniform

TOP_K = 8


# --------------------------------------------------------------------------------------------------
# Per-token-group FP8 quantisation.
# --------------------------------------------------------------------------------------------------

def quant_inputs(ax, g, i):
    T, H = ax["num_tokens"], ax["hidden_size"]
    x = torch.randn(T, H, generator=g) * [1.0, 40.0, 1e-3][i % 3]
    x[0, :128] = 0.0  # an all-zero group: the eps floor of the scale, outputs 0
    if T > 1:
        x[1, 5] = 3000.0  # one outlier: the rest of its group lands near float8's subnormals
    if T > 2 and H > 128:
        x[2, 128:256] *= 1e-4  # a group far smaller than its neighbours: its own scale
    return {"input": x.bfloat16()}


def group_quant_expected(group_scale):
    """Expected outputs of a per-token-group quantisation whose scale of a group is group_scale(its absmax):
    group by group in a Python loop, the values before their float8 rounding."""
    def expected(ax, x):
        T, H = ax["num_tokens"], ax["hidden_size"]
        x64 = x["input"].double()
        out = torch.empty(T, H, dtype=torch.float64)
        scale = torch.empty(T, H // 128, dtype=torch.float64)
        for t in range(T):
            for grp in range(H // 128):
                vals = x64[t, grp * 128:(grp + 1) * 128]
                s = group_scale(max(abs(v) for v in vals.tolist()))
                scale[t, grp] = s
                out[t, grp * 128:(grp + 1) * 128] = torch.clamp(vals / s, -448.0, 448.0)
        return {"output": out, "scale": scale}
    return expected


def plain_scale(amax):
    return max(amax, 1e-10) / 448.0


def ue8m0_scale(amax):
    """The power of two at or above the kernel's float32 ratio max(amax, 1e-4) * fp32(1/448), by math.frexp."""
    ratio = float(torch.tensor(max(amax, 1e-4), dtype=torch.float32) * torch.tensor(1.0 / 448.0, dtype=torch.float32))
    mant, exp = math.frexp(ratio)
    return math.ldexp(1.0, exp - 1 if mant == 0.5 else exp)


quant_expected = group_quant_expected(plain_scale)
ue8m0_expected = group_quant_expected(ue8m0_scale)


def quant_case():
    return Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 5}], quant_inputs, quant_expected)


def ue8m0_inputs(ax, g, i):
    x = quant_inputs(ax, g, i)["input"].float()
    x[-1, :128] = torch.linspace(-1.0, 1.0, 128) * 56.0  # absmax 56 = 448 / 8: the scale is exactly 2^-3
    return {"input": x.bfloat16()}


# --------------------------------------------------------------------------------------------------
# moe_align_block_size as lists; also the index inputs of the GEMM cases.
# --------------------------------------------------------------------------------------------------

def align_lists(ids, num_experts, block):
    """(sorted_token_ids, expert_ids, num_tokens_post_padded) of flat ids (-1 allowed), SGLang's convention."""
    pairs = len(ids)
    buckets = [[p for p, e in enumerate(ids) if e + 1 == b] for b in range(num_experts + 1)]
    sorted_ids, experts = [], []
    for b, members in enumerate(buckets):
        if not members:
            continue
        padded = -(-len(members) // block) * block
        sorted_ids += members + [pairs] * (padded - len(members))
        experts += [b - 1] * (padded // block)
    total = len(sorted_ids)
    length = pairs + (num_experts + 1) * (block - 1)
    sorted_ids += [pairs] * (length - total)
    experts += [-1] * (-(-length // block) - len(experts))
    return sorted_ids, experts, total


def align_derived(ax):
    length = ax["num_tokens"] * ax["top_k"] + (ax["num_experts"] + 1) * (ax["block_m"] - 1)
    return {"max_num_tokens_padded": length, "max_num_m_blocks": -(-length // ax["block_m"]),
            "num_pairs": ax["num_tokens"] * ax["top_k"]}


def random_ids(T, E, g, local_share, top_k=TOP_K):
    """[T, top_k] distinct ids per token in [0, E), each replaced by -1 with probability 1 - local_share
    (picks on another EP rank's experts); a hot expert gets extra picks so some bucket spans blocks."""
    rows = []
    for _ in range(T):
        row = torch.randperm(E, generator=g)[:top_k]
        if not (row == 1).any() and torch.rand(1, generator=g).item() < 0.7:
            row[0] = 1  # expert 1 is hot
        away = torch.rand(top_k, generator=g) > local_share
        rows.append(torch.where(away, torch.full_like(row, -1), row))
    return torch.stack(rows).to(torch.int32)


def align_inputs_with(local_share):
    def make(ax, g, i):
        ids = random_ids(ax["num_tokens"], ax["num_experts"], g, local_share, ax["top_k"])
        return {"topk_ids": ids, "block_size": ax["block_m"] if i != 1 else torch.tensor(ax["block_m"], dtype=torch.int32)}
    return make


def align_expected(ax, x):
    s, e, total = align_lists(x["topk_ids"].reshape(-1).tolist(), ax["num_experts"], int(x["block_size"]))
    return {"sorted_token_ids": torch.tensor(s), "expert_ids": torch.tensor(e), "num_tokens_post_padded": torch.tensor(total)}


def align_case(local_share):
    sizes = [{"num_tokens": 1, "block_m": 16}, {"num_tokens": 5, "block_m": 4}, {"num_tokens": 37, "block_m": 16}]
    return Case(sizes, align_inputs_with(local_share), align_expected, derived=align_derived)


# --------------------------------------------------------------------------------------------------
# Grouped FP8 GEMMs over sorted pairs: per pair, dequantised operands, one float64 matvec.
# --------------------------------------------------------------------------------------------------

def _dequant_weights(B, B_scale, N, K):
    s = B_scale.double().repeat_interleave(128, dim=1)[:, :N].repeat_interleave(128, dim=2)[:, :, :K]
    return B.double() * s


def _scale_shapes(scales: str, rows: int, E: int, N: int, K: int) -> tuple[tuple, tuple]:
    """A_scale's and B_scale's shapes: "block" (per 128 of K per row; per 128 x 128 of each expert's weight) or
    "channel" (per row; per output channel of each expert's weight, GLM-4.5's compressed-tensors FP8)."""
    if scales == "channel":
        return (rows, 1), (E, N, 1)
    return (rows, K // 128), (E, -(-N // 128), K // 128)


def _dequant_operands(x: dict, N: int, K: int, scales: str):
    if scales == "channel":
        return x["A"].double() * x["A_scale"].double(), x["B"].double() * x["B_scale"].double()
    return (x["A"].double() * x["A_scale"].double().repeat_interleave(128, dim=1),
            _dequant_weights(x["B"], x["B_scale"], N, K))


def gemm_inputs_with(second, local_share, scales="block"):
    def make(ax, g, i):
        T, E, N, K = ax["num_tokens"], ax["num_experts"], ax["N"], ax["K"]
        rows = T * TOP_K if second else T
        ids = random_ids(T, E, g, local_share)
        s, e, total = align_lists(ids.reshape(-1).tolist(), E, ax["block_m"])
        a_scale, b_scale = _scale_shapes(scales, rows, E, N, K)
        x = {"A": fp8(torch.randn(rows, K, generator=g), 64), "A_scale": uniform(a_scale, 0.25, 4.0, g) / 64,
             "B": fp8(torch.randn(E, N, K, generator=g), 64), "B_scale": uniform(b_scale, 0.25, 4.0, g) / 64}
        if second:
            x["topk_weights"] = uniform((T, TOP_K), 0.05, 0.6, g)
        x.update({"sorted_token_ids": torch.tensor(s, dtype=torch.int32), "expert_ids": torch.tensor(e, dtype=torch.int32),
                  "num_tokens_post_padded": torch.tensor(total, dtype=torch.int32), "block_size": ax["block_m"]})
        return x
    return make


def gemm_expected_with(second, scales="block"):
    def expected(ax, x):
        T, N, K = ax["num_tokens"], ax["N"], ax["K"]
        pairs, block = T * TOP_K, int(x["block_size"])
        expert_of = {}
        for pos in range(int(x["num_tokens_post_padded"])):
            p = int(x["sorted_token_ids"][pos])
            if p < pairs:
                expert_of[p] = int(x["expert_ids"][pos // block])
        assert sorted(expert_of) == list(range(pairs)), "every pair is sorted once"
        a, w = _dequant_operands(x, N, K, scales)
        out = torch.zeros(pairs, N, dtype=torch.float64)
        for p, e in expert_of.items():
            if e >= 0:
                row = a[p] if second else a[p // TOP_K]
                out[p] = w[e] @ row
                if second:
                    out[p] *= float(x["topk_weights"].reshape(-1)[p])
        return {"C": out.view(T, TOP_K, N)}
    return expected


def gemm_case(second, local_share, smaller, scales="block"):
    sizes = [shrunk({"num_tokens": 1, "block_m": 16}, **smaller), shrunk({"num_tokens": 4, "block_m": 4}, **smaller),
             shrunk({"num_tokens": 9, "block_m": 16}, **smaller)]
    return Case(sizes, gemm_inputs_with(second, local_share, scales), gemm_expected_with(second, scales),
                derived=align_derived)


# --------------------------------------------------------------------------------------------------
# silu_and_mul and moe_sum.
# --------------------------------------------------------------------------------------------------

def silu_inputs(ax, g, i):
    return {"input": (torch.randn(ax["num_tokens"], ax["gate_up_size"], generator=g) * [1.0, 6.0, 0.1][i % 3]).bfloat16()}


def silu_expected(ax, x):
    gate, up = x["input"].double().chunk(2, dim=-1)
    return {"output": F.silu(gate) * up}


def silu_case():
    return Case([{"num_tokens": 1}, {"num_tokens": 8}, {"num_tokens": 24}], silu_inputs, silu_expected)


def sum_inputs(ax, g, i):
    x = torch.randn(ax["num_tokens"], ax["top_k"], ax["hidden_size"], generator=g) * [1.0, 20.0, 1e-2][i % 3]
    x[:, 3] = 0.0  # a pick on another EP rank: a zero row
    return {"input": x.bfloat16()}


def sum_expected(ax, x):
    return {"output": x["input"].double().sum(dim=1)}


def sum_case():
    return Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 6}], sum_inputs, sum_expected)


# --------------------------------------------------------------------------------------------------

E32_W13_SMALLER = {"N": 256, "K": 384, "num_n_blocks": 2, "num_k_blocks": 3}
E32_W2_SMALLER = {"N": 384, "K": 256, "num_n_blocks": 3, "num_k_blocks": 2}
EP8_LOCAL_SHARE = 0.4  # picks on this rank's experts (uniform routing: 1/8); higher so the blocks fill

CASES = {
    **{f"quantize_fp8_per_token_group128_h{k}": quant_case() for k in (7168, 1536, 2048, 2304, 256, 1024)},
    "moe_align_block_size_e32_topk8": align_case(EP8_LOCAL_SHARE),
    "moe_align_block_size_e16_topk8": align_case(EP8_LOCAL_SHARE),
    "moe_align_block_size_e128_topk8": align_case(1.0),
    # N and K shrunk (see the module docstring); the 32 experts, the -1 picks and the block alignment real.
    "grouped_gemm_fp8_block128_sorted_e32_n4096_k7168": gemm_case(False, EP8_LOCAL_SHARE, E32_W13_SMALLER),
    "grouped_gemm_fp8_block128_sorted_weighted_e32_n7168_k2048": gemm_case(True, EP8_LOCAL_SHARE, E32_W2_SMALLER),
    "grouped_gemm_fp8_block128_sorted_e16_n4096_k7168": gemm_case(False, EP8_LOCAL_SHARE, E32_W13_SMALLER),
    "grouped_gemm_fp8_block128_sorted_weighted_e16_n7168_k2048": gemm_case(True, EP8_LOCAL_SHARE, E32_W2_SMALLER),
    "silu_and_mul_i2048": silu_case(),
    "silu_and_mul_i1152": silu_case(),
    "silu_and_mul_i2304": silu_case(),
    "silu_and_mul_i256": silu_case(),
    "moe_sum_topk8_h7168": sum_case(),
    "moe_sum_topk8_h2048": sum_case(),
    "moe_align_block_size_e512_topk10": align_case(1.0),
    **{f"quantize_fp8_per_token_group128_ue8m0_h{k}": Case([{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 5}],
                                                          ue8m0_inputs, ue8m0_expected) for k in (8192, 128)},
    "moe_sum_topk10_h2048": sum_case(),
}
