"""bf16 GEMM (C = A B^T)."""

from __future__ import annotations

import math

from . import TritonCase
from .common import bf16


def gemm_inputs(d, g):
    import torch
    sets = []
    # The launcher works for any N, K: these smaller N, K cover every block-size branch (M <= 16, 32, 64,
    # 128, 512, larger) and an uneven K; the last set has the definition's K (the 32-step float32
    # accumulation of the decode tiles) with a few column tiles, not all 192 of the real N (the same program
    # 192 times, 9 s under the interpreter).
    for M, N, K in ((1, 64, 256), (20, 96, 128), (37, 96, 200), (100, 128, 192), (130, 160, 256), (600, 272, 128)):
        A = bf16(torch.randn(M, K, generator=g))
        B = bf16(torch.randn(N, K, generator=g) / math.sqrt(K))
        sets.append((f"M={M} N={N} K={K} (small N, K)", {"M": M, "N": N, "K": K}, {"A": A, "B": B}))
    N, K = 160, d["axes"]["K"]["value"]
    A = bf16(torch.randn(1, K, generator=g))
    B = bf16(torch.randn(N, K, generator=g) / math.sqrt(K))
    sets.append((f"M=1 N={N} K={K} (the definition's K)", {"M": 1, "N": N, "K": K}, {"A": A, "B": B}))
    return sets


def gemm_extra(module, index, label, axes, inputs, outputs, expected, d):
    from tolerances import assert_close
    exact = inputs["A"].double() @ inputs["B"].double().T  # against float64 too, not only the reference
    assert_close(outputs["C"], exact, "bfloat16", f"gemm [{label}] vs float64")
    return 0.0


def gemm_shapes(d):
    import torch
    ax = {n: a.get("value") for n, a in d["axes"].items()}
    B = torch.empty(ax["N"], ax["K"], dtype=torch.bfloat16)
    for m in (1, 32, 64, 128, 512, 8192):
        yield torch.empty(m, ax["K"], dtype=torch.bfloat16), B


CASES = {"gemm_n6144_k4096": TritonCase(gemm_inputs, gemm_shapes, gemm_extra)}
