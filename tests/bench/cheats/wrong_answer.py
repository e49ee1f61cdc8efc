"""Returns the answer 5% too large."""
from rmsnorm import compute


def run(input, weight, eps):
    return compute(input, weight, eps) * 1.05
