"""Workloads for the six example definitions of the origin document "seed 000" (no index inputs: shapes only).

The shapes follow serving: GEMM M is the number of tokens in a step (decode batches 1-256, prefill
chunks up to 8k); grouped GEMM G is experts with tokens, M the tokens each got (the seed's layout
gives every group the same M); GQA takes Llama-3.1-8B's 32/8 heads for decode (Q=1) and prefill.
"""

from __future__ import annotations

from typing import Iterator

from .spec import Spec

GEMM_M = [(1, "decode, batch 1"), (16, "decode, batch 16"), (128, "decode, batch 128"),
          (1024, "prefill chunk of 1024 tokens"), (4096, "prefill chunk of 4096 tokens")]
GROUPED = [(2, 64, "decode batch spread over 2 experts"), (4, 128, "4 experts, 128 tokens each"),
           (8, 16, "decode, 8 experts with 16 tokens each"), (8, 256, "prefill, 8 experts with 256 tokens each"),
           (16, 512, "prefill, 16 experts with 512 tokens each")]
GQA = [(1, 128, 128, "short prefill, one sequence"), (4, 64, 512, "chunked prefill, 4 sequences"),
       (8, 16, 256, "speculative decoding verify, 16 draft tokens"), (2, 256, 1024, "prefill chunk after a 768-token prefix"),
       (32, 1, 2048, "decode, 32 sequences at 2k context")]
RMSNORM = [(1, "decode, batch 1"), (32, "decode, batch 32"), (256, "decode, batch 256"),
           (512, "prefill chunk of 512 tokens"), (8192, "prefill chunk of 8192 tokens")]


def workloads() -> Iterator[Spec]:
    for seed, (m, what) in enumerate(GEMM_M):
        yield Spec("gemm_fp16_n4096_k4096", f"m{m}", {"M": m}, {"A": "random", "B": "random"}, seed, what)
        yield Spec("quantized_gemm_n4096_k4096_ng128_kg128", f"m{m}", {"M": m},
                   {"A": "random", "B": "random", "A_scale": "random", "B_scale": "random"}, seed, what)
    for seed, (g, m, what) in enumerate(GROUPED):
        yield Spec("grouped_gemm_n4096_k4096", f"g{g}_m{m}", {"G": g, "M": m}, {"A": "random", "B": "random"},
                   seed, what)
        yield Spec("quantized_grouped_gemm_n4096_k4096_kg128", f"g{g}_m{m}", {"G": g, "M": m},
                   {"A": "random", "B": "random", "A_scale": "random", "B_scale": "random"}, seed, what)
    for seed, (b, q, kv, what) in enumerate(GQA):
        yield Spec("gqa_hr4_dqk128_dvo128", f"b{b}_q{q}_kv{kv}", {"B": b, "Q": q, "KV": kv, "H_qo": 32, "H_kv": 8},
                   {"q": "random", "k": "random", "v": "random"}, seed, f"{what} (Llama-3.1-8B heads: 32 query, 8 KV)")
    for seed, (b, what) in enumerate(RMSNORM):
        yield Spec("rmsnorm_fp16_h4096", f"b{b}", {"batch_size": b},
                   {"input": "random", "weight": "random", "eps": 1e-05}, seed, what)
