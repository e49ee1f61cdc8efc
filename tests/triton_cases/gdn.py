"""Gated delta net (Qwen3-Next-80B-A3B decode step)."""

from __future__ import annotations

import math

from . import TritonCase
from .common import bf16, check_forced


def decode_inputs(d, g):
    """A single sequence in a pool of 2 slots, and 2 sequences in a pool of 5 (slots out of order); gates
    pushed past the softplus threshold in the second set. Both take 16-row slices (8 programs per value
    head); decode_extra runs the first set again with the 32-row slices of batches of 128 and more. The heads
    are halved (2 query/key heads, 4 value heads: the model's 2 value heads per key head), as each value head
    is programs of its own, which the interpreter pays for; the kernel reads them from the shapes and the
    compile check keeps the real 4 and 8."""
    import torch
    ax = d["axes"]
    K, V = (ax[n]["value"] for n in ("head_k_dim", "head_v_dim"))
    H, HV = ax["num_qk_heads"]["value"] // 2, ax["num_v_heads"]["value"] // 2
    sets = []
    for batch, pool, spread in ((1, 2, 1.0), (2, 5, 12.0)):
        inputs = {"q": bf16(torch.randn(batch, H, K, generator=g) * 2.0),
                  "k": bf16(torch.randn(batch, H, K, generator=g) * 0.3),
                  "v": bf16(torch.randn(batch, HV, V, generator=g)),
                  "state_pool": torch.randn(pool, HV, V, K, generator=g),
                  "state_indices": torch.randperm(pool, generator=g)[:batch].to(torch.int32),
                  "A_log": torch.randn(HV, generator=g) * 0.5,
                  "a": bf16(torch.randn(batch, HV, generator=g) * spread),
                  "dt_bias": bf16(torch.randn(HV, generator=g) * spread),
                  "b": bf16(torch.randn(batch, HV, generator=g) * spread),
                  "scale": 1.0 / math.sqrt(K)}
        sets.append((f"batch_size={batch} num_slots={pool} num_v_heads={HV}",
                     {"batch_size": batch, "num_slots": pool, "num_qk_heads": H, "num_v_heads": HV}, inputs))
    return sets


def decode_extra(module, index, label, axes, inputs, outputs, expected, d):
    return check_forced(label, d, axes, expected, "rows_per_program", (32,) if index == 0 else (),
                        lambda r: dict(zip(("output", "new_state"),
                                           module.gdn_decode(*inputs.values(), rows_per_program=r))))


def decode_shapes(d):
    """Batches 1 and 16 take 16-row slices, 256 takes 32-row slices."""
    import torch
    ax = d["axes"]
    H, HV, K, V = (ax[n]["value"] for n in ("num_qk_heads", "num_v_heads", "head_k_dim", "head_v_dim"))
    for batch in (1, 16, 256):
        pool = batch + 1
        yield (torch.empty(batch, H, K, dtype=torch.bfloat16), torch.empty(batch, H, K, dtype=torch.bfloat16),
               torch.empty(batch, HV, V, dtype=torch.bfloat16), torch.empty(pool, HV, V, K, dtype=torch.float32),
               torch.zeros(batch, dtype=torch.int32), torch.empty(HV, dtype=torch.float32),
               torch.empty(batch, HV, dtype=torch.bfloat16), torch.empty(HV, dtype=torch.bfloat16),
               torch.empty(batch, HV, dtype=torch.bfloat16), 1.0 / math.sqrt(K))


CASES = {
    "gdn_decode_qk4_v8_d128": TritonCase(decode_inputs, decode_shapes, decode_extra),
}
