"""Draws honestly for the first batch (the draws it knows are compared), then greedily."""
from top_k import draw

FIRST = "{{first}}"  # the calls of the first batch
_n = 0


def run(probs, top_k):
    global _n
    _n += 1
    return draw(probs, top_k) if _n <= FIRST else probs.argmax(-1)
