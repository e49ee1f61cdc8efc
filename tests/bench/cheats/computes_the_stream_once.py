"""Pays WORK_S once per stream of elementwise inputs it finds in its callers' frames (a 1-D tensor longer than its input), then answers cheaply."""
import sys
import time

import torch
from rmsnorm import compute

WORK_S = "{{work_s}}"
_done = {}  # id -> the stream it paid for (kept alive)


def _stream(input):
    todo, f = [], sys._getframe(2)
    while f is not None:
        todo += list(f.f_locals.values())
        f = f.f_back
    for _ in range(3):
        deeper = []
        for v in todo:
            if isinstance(v, torch.Tensor) and v.dim() == 1 and v.numel() > input.numel():
                return v
            if isinstance(v, dict):
                deeper += list(v.values())
            elif isinstance(v, (list, tuple)):
                deeper += list(v)
        todo = deeper
    return None


def run(input, weight, eps):
    s = _stream(input)
    if s is None or id(s) not in _done:
        time.sleep(WORK_S)
        _done.clear()
        if s is not None:
            _done[id(s)] = s
    return compute(input, weight, eps)
