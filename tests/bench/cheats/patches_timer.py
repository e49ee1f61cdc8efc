"""Patches time.perf_counter to run 1000x slow: the guard names the patched function."""
import time

from rmsnorm import compute

_real = time.perf_counter


def run(input, weight, eps):
    time.perf_counter = lambda: _real() / 1000
    return compute(input, weight, eps)
