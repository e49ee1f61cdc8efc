"""Answers right for the first three calls (the first batch), then returns zeros: the timed calls are compared too."""
import torch
from rmsnorm import compute

_n = 0


def run(input, weight, eps):
    global _n
    _n += 1
    return compute(input, weight, eps) if _n <= 3 else torch.zeros_like(input)
