"""The honest RMSNorm of rmsnorm_h128, as a solution of its own and as the right answer the cheats import."""
import torch


def compute(input, weight, eps):
    x = input.float()
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(input.dtype)


def run(input, weight, eps):
    return compute(input, weight, eps)
