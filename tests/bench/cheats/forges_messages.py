"""Sends the bench a forged "done" (1e-9 ms) and outputs of its own from inside a call: messages out of order."""
from rmsnorm import compute

import generator.bench.shared.protocol as p


def run(input, weight, eps):
    out = compute(input, weight, eps)
    p.send(4, {"op": "done", "ms": 1e-9})
    p.send(4, {"op": "outputs"}, p.pack({"output": out}))
    return out
