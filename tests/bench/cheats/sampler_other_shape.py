"""Returns its draws three times over, in a shape of its own: a failed pair, never a crash of the comparison."""
from top_k import draw


def run(probs, top_k):
    return draw(probs, top_k)[:, None].repeat(1, 3)
