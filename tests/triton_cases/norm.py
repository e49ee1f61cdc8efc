"""RMSNorm and fused residual-add RMSNorm."""

from __future__ import annotations

from . import TritonCase
from .common import bf16


def rmsnorm_inputs(d, g):
    import torch
    H = d["axes"]["hidden_size"]["value"]
    sets = []
    for batch in (3, 8):
        x = bf16(torch.randn(batch, H, generator=g) * 2.0)
        w = bf16(1.0 + 0.1 * torch.randn(H, generator=g))
        sets.append((f"batch_size={batch}", {"batch_size": batch}, {"hidden_states": x, "weight": w}))
    return sets


def fused_add_rmsnorm_inputs(d, g):
    import torch
    H = d["axes"]["hidden_size"]["value"]
    sets = []
    for batch in (3, 8):
        x = bf16(torch.randn(batch, H, generator=g))
        r = bf16(torch.randn(batch, H, generator=g) * 3.0)
        w = bf16(1.0 + 0.1 * torch.randn(H, generator=g))
        sets.append((f"batch_size={batch}", {"batch_size": batch}, {"hidden_states": x, "residual": r, "weight": w}))
    return sets


def rmsnorm_shapes(d):
    import torch
    H = d["axes"]["hidden_size"]["value"]
    for b in (1, 4096):
        yield torch.empty(b, H, dtype=torch.bfloat16), torch.empty(H, dtype=torch.bfloat16)


def fused_add_rmsnorm_shapes(d):
    import torch
    for x, w in rmsnorm_shapes(d):
        yield x, torch.empty_like(x), w


CASES = {
    "rmsnorm_h4096": TritonCase(rmsnorm_inputs, rmsnorm_shapes),
    "fused_add_rmsnorm_h4096": TritonCase(fused_add_rmsnorm_inputs, fused_add_rmsnorm_shapes),
}
