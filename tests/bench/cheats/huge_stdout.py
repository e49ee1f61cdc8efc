"""Writes 64 MiB to stdout before it fails: the bench keeps the tail of a worker's output, not all of it."""
import sys


def run(input, weight, eps):
    block = "x" * (1 << 20) + "\n"
    for _ in range(64):
        sys.stdout.write(block)
    raise RuntimeError("after 64 MiB of output")
