"""Does its work (a 10M-cycle sleep, then the answer) on a CUDA stream of its own, outside the default stream."""
import torch
from rmsnorm import compute

_s = torch.cuda.Stream()


def run(input, weight, eps):
    out = torch.zeros_like(input)
    with torch.cuda.stream(_s):
        torch.cuda._sleep(10_000_000)
        out.copy_(compute(input, weight, eps))
    return out
