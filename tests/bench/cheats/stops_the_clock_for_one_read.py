"""Stops the worker's clock for the one read that ends each call, restored by that read: the outside bound charges the work (WORK_S a call)."""
import time

from rmsnorm import compute

import generator.bench.sandboxed.clock as _t

WORK_S = "{{work_s}}"
_real = _t._perf_counter


def run(input, weight, eps):
    start = _real()
    time.sleep(WORK_S)
    out = compute(input, weight, eps)

    def _once():
        _t._perf_counter = _real
        return start + 5e-7
    _t._perf_counter = _once
    return out
