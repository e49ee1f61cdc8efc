"""The all-reduce fused with the residual add and RMSNorm (the ranks' buffers side by side on one device)."""

from __future__ import annotations

from . import TritonCase
from .common import bf16


def allreduce_add_rmsnorm_inputs(d, g):
    import torch
    tp, H = d["axes"]["tp_size"]["value"], d["axes"]["hidden_size"]["value"]
    sets = []
    for tokens, scale in ((3, 1.0), (8, 30.0)):
        partials = bf16(torch.randn(tp, tokens, H, generator=g) * scale)
        residual = torch.randn(tokens, H, generator=g) * (3.0 * scale)
        # A token whose residual nearly cancels the all-reduce: there the bfloat16 rounding of the all-reduce value
        # before the add decides residual_out (a kernel that adds the float32 sum fails it).
        residual[1] = -partials.double().sum(dim=0)[1].float() + 0.01 * scale * torch.randn(H, generator=g)
        weight = bf16(1.0 + 0.1 * torch.randn(H, generator=g))
        sets.append((f"num_tokens={tokens}", {"num_tokens": tokens},
                     {"partials": partials, "residual": bf16(residual), "weight": weight}))
    return sets


def allreduce_add_rmsnorm_shapes(d):
    import torch
    tp, H = d["axes"]["tp_size"]["value"], d["axes"]["hidden_size"]["value"]
    for t in (1, 128, 4096):  # decode batch 1, vLLM's fusion limit at TP4 on an H100, a long prefill chunk
        yield (torch.empty(tp, t, H, dtype=torch.bfloat16), torch.empty(t, H, dtype=torch.bfloat16),
               torch.empty(H, dtype=torch.bfloat16))


CASES = {"allreduce_fused_add_rmsnorm_tp4_h8192": TritonCase(allreduce_add_rmsnorm_inputs, allreduce_add_rmsnorm_shapes)}
