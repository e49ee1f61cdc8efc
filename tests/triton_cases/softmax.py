"""Temperature softmax of the next-token logits (the step before the probs-based samplers)."""

from __future__ import annotations

from . import TritonCase


def softmax_inputs(d, g):
    import torch
    vocab = d["axes"]["vocab_size"]["value"]
    sets = []
    # 1 and 3 rows take the split path (32 and 32 chunks per row, the partials merged) over the real
    # vocabulary; 270 rows take one chunk per row, the same loop over 2048-wide blocks at any width, so that
    # set has 2100 columns (a whole block and a masked partial one) instead of 128256: the interpreter
    # pays per program and block, 100 s at the real width. Logit scales from flat (1) to very peaked
    # (12 / temperature 0.3).
    for rows, scale, width in ((1, 4.0, vocab), (3, 12.0, vocab), (270, 1.0, 2100)):
        logits = torch.randn(rows, width, generator=g) * scale
        temperature = 0.3 + 1.2 * torch.rand(rows, generator=g)
        axes = {"batch_size": rows} if width == vocab else {"batch_size": rows, "vocab_size": width}
        sets.append((f"batch_size={rows} vocab_size={width}", axes, {"logits": logits, "temperature": temperature}))
    return sets


def softmax_shapes(d):
    import torch
    vocab = d["axes"]["vocab_size"]["value"]
    for rows in (1, 8, 256):
        yield (torch.empty(rows, vocab, dtype=torch.float32), torch.empty(rows, dtype=torch.float32))


CASES = {"softmax_temperature_v128256": TritonCase(softmax_inputs, softmax_shapes)}
