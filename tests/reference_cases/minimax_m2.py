"""Independent formulations for the MiniMax-M2 definitions (bfloat16): its norms, its partial RoPE, its samplers.

The norms are Qwen3's at hidden_size 3072 (rms_norm_eps 1e-6 too: qwen.py's F.rms_norm checks) and the samplers
llama.py's statistical check. The RoPE rotates only the first rotary_dim = 64 of each head's 128 dims: checked
here as a complex multiplication of the rotary part in float64 with the real rope_theta 5e6 cache, the other 64
dims compared with the input, at the head counts of two tensor-parallel degrees (the heads are var axes).
"""

from __future__ import annotations

import torch

from . import llama
from .common import ROW_SETS, Case, rope_sets
from .qwen import fused_expected, fused_inputs, rmsnorm_expected, rmsnorm_inputs

ROPE_THETA = 5_000_000.0  # rope_theta of MiniMaxAI/MiniMax-M2
ROTARY_DIM = 64  # rotary_dim of MiniMaxAI/MiniMax-M2 (head_dim 128)


def minimax_cos_sin_cache(max_position, rotary_dim=ROTARY_DIM):
    """Row p = concat(cos(p * inv_freq), sin(p * inv_freq)), inv_freq over the rotary dims only, float32."""
    inv_freq = ROPE_THETA ** (-torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)
    angles = torch.outer(torch.arange(max_position, dtype=torch.float64), inv_freq)
    return torch.cat([angles.cos(), angles.sin()], dim=-1).float()


def rope_inputs(ax, g, i):
    T, P = ax["num_tokens"], ax["max_position"]
    positions = torch.randint(0, P, (T,), generator=g)
    positions[0] = P - 1  # the last row of the cache is read
    return {"q": torch.randn(T, ax["num_qo_heads"], ax["head_dim"], generator=g).bfloat16(),
            "k": torch.randn(T, ax["num_kv_heads"], ax["head_dim"], generator=g).bfloat16(),
            "cos_sin_cache": minimax_cos_sin_cache(P, ax["rotary_dim"]), "positions": positions}


def rope_expected(ax, x):
    R = ax["rotary_dim"]
    half = R // 2
    rows = x["cos_sin_cache"].double()[x["positions"]]  # [T, rotary_dim]
    rot = torch.complex(rows[:, :half], rows[:, half:]).unsqueeze(1)  # cos + i sin, [T, 1, half]

    def rotate(t):
        t = t.double()
        z = torch.complex(t[..., :half], t[..., half:R]) * rot
        return torch.cat([z.real, z.imag, t[..., R:]], dim=-1)  # the dims past rotary_dim unchanged

    return {"q_out": rotate(x["q"]), "k_out": rotate(x["k"])}


# Per-rank heads at TP4 (12 query, 2 KV), TP8 (6, 1) and TP1 (48, 8), with rope_sets' positions.
ROPE = [{**s, **heads} for s, heads in zip(rope_sets(196608), ({"num_qo_heads": 12, "num_kv_heads": 2},
                                                              {"num_qo_heads": 6, "num_kv_heads": 1},
                                                              {"num_qo_heads": 48, "num_kv_heads": 8}))]

CASES = {
    "rmsnorm_h3072_eps1e_6": Case(ROW_SETS, rmsnorm_inputs, rmsnorm_expected),
    "fused_add_rmsnorm_h3072_eps1e_6": Case(ROW_SETS, fused_inputs, fused_expected),
    "rope_with_cos_sin_cache_neox_style_d128_rd64": Case(ROPE, rope_inputs, rope_expected),
    **{f"{kind}_sampling_from_probs_v200064": llama.sampling_case(kind, llama.TINY_VOCAB)
       for kind in ("top_k", "top_p", "top_k_top_p")},
}
