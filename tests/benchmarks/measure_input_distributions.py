"""What the structured input distributions of generator/bench/shared/inputs.py look like, measured.

Prints, for the values the definitions use: the tokens top-p keeps of power_law_probs rows (the
smallest set of most probable tokens whose probability reaches p, as the samplers compute it), the
top-1 probability; for skewed_logits, how top-k routing spreads tokens over the experts; for
fp8_blockwise, how much of the format's range the blocks use. Run:

    python tests/benchmarks/measure_input_distributions.py [--rows 2048]
"""

from __future__ import annotations

import argparse

import torch

from generator.bench.shared.inputs import draw


def kept_by_top_p(probs: torch.Tensor, p: float) -> torch.Tensor:
    ordered, _ = probs.double().sort(-1, descending=True)
    before = ordered.cumsum(-1) - ordered  # mass of the tokens ranked above each token
    return (before < p).sum(-1)  # a token is kept while the mass above it is still below p


def quantiles(x: torch.Tensor) -> str:
    q = torch.quantile(x.double(), torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0], dtype=torch.float64))
    return "min {:.0f}, p10 {:.0f}, median {:.0f}, p90 {:.0f}, max {:.0f}".format(*q.tolist())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2048)
    args = parser.parse_args()
    for vocab in (128256, 151936):
        for dist, params in (("power_law_probs", {"low": 1.4, "high": 2.5}), ("softmax_normal", {"scale": 3.0})):
            kept = {p: [] for p in (0.7, 0.8, 0.9, 0.95)}
            top1 = []
            for chunk in range(0, args.rows, 256):
                x = draw({"distribution": dist, **params, "dtype": "float32", "shape": [256, vocab], "seed": chunk})
                for p in kept:
                    kept[p].append(kept_by_top_p(x, p))
                top1.append(x.max(-1).values)
            print(f"{dist}{params} vocab {vocab}, {args.rows} rows: top-1 probability "
                  f"{quantiles(torch.cat(top1) * 100)} (%)")
            for p, sizes in kept.items():
                print(f"  top-p {p}: tokens kept {quantiles(torch.cat(sizes).double())}")
    for experts, top_k, alpha in ((128, 8, 0.6), (128, 8, 1.0), (256, 8, 0.6)):
        tokens = 4096
        logits = draw({"distribution": "skewed_logits", "alpha": alpha, "dtype": "float32", "shape": [tokens, experts],
                       "seed": 0})
        counts = torch.bincount(logits.topk(top_k, -1).indices.flatten(), minlength=experts).double()
        mean = tokens * top_k / experts
        print(f"skewed_logits alpha {alpha}, {tokens} tokens, top-{top_k} of {experts}: hottest expert "
              f"{counts.max() / mean:.2f}x the mean load, coldest {counts.min() / mean:.2f}x; hottest 10% of "
              f"experts take {counts.sort(descending=True).values[: experts // 10].sum() / counts.sum() * 100:.0f}% "
              f"of the routed slots")
    for block in ([1, 128], [128, 128]):
        rec = {"distribution": "fp8_blockwise", "block": block, "std": 1.0, "dtype": "float8_e4m3",
               "shape": [256, 1024], "seed": 0}
        q = draw(rec).float().abs()
        print(f"fp8_blockwise block {block}: |q| max {q.max():.0f}, median {q.median():.1f}, "
              f"{(q >= 64).double().mean() * 100:.0f}% of values at or above 64, {(q == 0).double().mean() * 100:.2f}% zero")


if __name__ == "__main__":
    main()
