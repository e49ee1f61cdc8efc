"""Temperature softmax of the next-token logits (the step before the probs-based samplers)."""

from __future__ import annotations

from . import TritonCase


def softmax_inputs(d, g):
    import torch
    vocab = d["axes"]["vocab_size"]["value"]
    sets = []
    # 1 and 3 rows take the split path (32 and 32 chunks per row, the partials merged); 270 rows take one
    # chunk per row. Logit scales from flat (1) to very peaked (12 / temperature 0.3).
    for rows, scale in ((1, 4.0), (3, 12.0), (270, 1.0)):
        logits = torch.randn(rows, vocab, generator=g) * scale
        temperature = 0.3 + 1.2 * torch.rand(rows, generator=g)
        sets.append((f"batch_size={rows}", {"batch_size": rows}, {"logits": logits, "temperature": temperature}))
    return sets


def softmax_shapes(d):
    import torch
    vocab = d["axes"]["vocab_size"]["value"]
    for rows in (1, 8, 256):
        yield (torch.empty(rows, vocab, dtype=torch.float32), torch.empty(rows, dtype=torch.float32))


CASES = {"softmax_temperature_v128256": TritonCase(softmax_inputs, softmax_shapes)}
