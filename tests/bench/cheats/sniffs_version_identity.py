"""Takes an input it has seen (same object, same version) for a timed repeat, and returns garbage for it."""
import torch
from rmsnorm import compute

_seen = set()


def run(input, weight, eps):
    key = (id(input), input._version)
    if key in _seen:
        return torch.empty_like(input).fill_(7.0)
    _seen.add(key)
    return compute(input, weight, eps)
