"""Writes a fake PASSED result with a 1e-9 ms latency to the bench's pipe and exits: a bad message, not a result."""
import os


def run(input, weight, eps):
    os.write(4, b'{"event": "result", "status": "PASSED", "performance": {"latency_ms": 1e-9}}\n')
    os._exit(0)
