"""Writes all but the last row of its output buffer, leaving the bench's NaN poison there."""
from rmsnorm import compute


def run(input, weight, eps, output):
    output[:-1] = compute(input, weight, eps)[:-1]
