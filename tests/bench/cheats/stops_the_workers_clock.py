"""Stops the worker's own clock (every read 0.5 us later than the last): the guard names the patched clock."""
from rmsnorm import compute

import generator.bench.sandboxed.clock as _t

_ticks = [0.0]


def _stopped():
    _ticks[0] += 5e-7
    return _ticks[0]


_t._perf_counter = _stopped


def run(input, weight, eps):
    return compute(input, weight, eps)
