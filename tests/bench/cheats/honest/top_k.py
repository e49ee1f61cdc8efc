"""An honest top-k sampler (row by row), as a solution of its own and as the draws the sampler cheats import."""
import torch


def draw(probs, top_k):
    out = []
    for row, k in zip(probs, top_k):
        pivot = torch.kthvalue(row, row.numel() - int(k) + 1).values
        kept = torch.where(row >= pivot, row, torch.zeros_like(row))
        out.append(torch.multinomial(kept / kept.sum(), 1)[0])
    return torch.stack(out)


def run(probs, top_k):
    return draw(probs, top_k)
