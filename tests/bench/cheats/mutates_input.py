"""Zeroes its weight input after computing the answer: a solution may not modify its inputs."""
from rmsnorm import compute


def run(input, weight, eps):
    out = compute(input, weight, eps)
    weight.zero_()
    return out
