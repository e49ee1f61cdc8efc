"""Returns a torch.Tensor subclass whose == is always true: outputs must be plain tensors."""
import torch
from rmsnorm import compute


class Lazy(torch.Tensor):
    def __eq__(self, other):
        return True


def run(input, weight, eps):
    return compute(input, weight, eps).as_subclass(Lazy)
