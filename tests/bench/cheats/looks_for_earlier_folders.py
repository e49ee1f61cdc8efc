"""Fails at import where its folder's parent holds anything but its own folder (an earlier solution's files)."""
import os

from rmsnorm import compute

HERE = os.path.dirname(os.path.abspath(__file__))
assert os.listdir(os.path.dirname(HERE)) == [os.path.basename(HERE)], os.listdir(os.path.dirname(HERE))


def run(input, weight, eps):
    return compute(input, weight, eps)
