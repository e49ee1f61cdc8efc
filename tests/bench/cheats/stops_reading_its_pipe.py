"""Stops reading its input pipe, so the workload's 256 KiB blob does not fit: the bench's write has a deadline."""
import time

import generator.bench.shared.protocol as _p

_p.recv = lambda *a, **k: time.sleep(3600)


def run(input, weight, eps):
    return input
