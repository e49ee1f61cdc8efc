"""Returns half of the answer's columns."""
from rmsnorm import compute


def run(input, weight, eps):
    return compute(input, weight, eps)[:, :64]
