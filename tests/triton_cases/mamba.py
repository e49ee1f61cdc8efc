"""Mamba-2 selective-state update (decode)."""

from __future__ import annotations

from . import TritonCase
from .common import bf16


def ssu_inputs(d, g):
    """A cache with more slots than sequences (the copy of the untouched slots runs), slots in random order,
    dt spread so that softplus meets both its exp and its pass-through (> 20) ranges. head_dim and dstate are the
    real 80 and 128 (the kernel's tiles); the heads are fewer than 128 (each head is its own programs, and the
    interpreter pays per program): 16 heads in 1 group keeps the model's 16 heads per group, 8 in 4 groups
    checks another group mapping."""
    import torch
    ax = d["axes"]
    P, N = (ax[n]["value"] for n in ("head_dim", "dstate"))
    sets = []
    for batch, slots, H, G in ((1, 3, 16, 1), (2, 4, 8, 4)):
        dt = torch.randn(batch, H, generator=g) * 4.0
        dt[0, :4] = torch.tensor([30.0, 25.0, -30.0, 0.0])
        inputs = {"state": torch.randn(slots, H, P, N, generator=g),  # float32, the model's SSM cache dtype
                  "x": bf16(torch.randn(batch, H, P, generator=g)),
                  "dt": bf16(dt),
                  "A": -(1.0 + 15.0 * torch.rand(H, generator=g)),
                  "B": bf16(torch.randn(batch, G, N, generator=g)),
                  "C": bf16(torch.randn(batch, G, N, generator=g)),
                  "D": bf16(0.5 + torch.rand(H, generator=g)),
                  "dt_bias": bf16(-6.0 + 4.0 * torch.rand(H, generator=g)),
                  "state_batch_indices": torch.randperm(slots, generator=g)[:batch].to(torch.int32)}
        sets.append((f"batch_size={batch} num_slots={slots} nheads={H} ngroups={G}",
                     {"batch_size": batch, "num_slots": slots, "nheads": H, "ngroups": G}, inputs))
    return sets


def ssu_shapes(d):
    import torch
    ax = d["axes"]
    H, P, N, G = (ax[n]["value"] for n in ("nheads", "head_dim", "dstate", "ngroups"))
    for batch, slots in ((1, 2), (256, 320)):
        yield (torch.empty(slots, H, P, N, dtype=torch.float32), torch.empty(batch, H, P, dtype=torch.bfloat16),
               torch.empty(batch, H, dtype=torch.bfloat16), torch.empty(H, dtype=torch.float32),
               torch.empty(batch, G, N, dtype=torch.bfloat16), torch.empty(batch, G, N, dtype=torch.bfloat16),
               torch.empty(H, dtype=torch.bfloat16), torch.empty(H, dtype=torch.bfloat16),
               torch.randperm(slots)[:batch].to(torch.int32))


CASES = {
    "mamba_selective_state_update_h128_d80_s128_ng8": TritonCase(ssu_inputs, ssu_shapes),
}
