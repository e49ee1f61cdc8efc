"""Independent formulations for the Qwen3-235B-A22B TP8 definitions of its own shapes (the rank shards at
tensor parallelism 8: hidden_size 4096, 128 experts of 1536 / 8 = 192 columns, 151936 / 8 = 18992 vocabulary
rows); its attention, RoPE, norms, routing and sampling are Qwen3-30B-A3B's and Qwen3-8B's definitions.

The checks of the other Qwen models at these shapes: GEMMs with F.linear in float64 (N shrunk where the weight is
large; K, the accumulation depth, real), the grouped GEMM row by row with the expert found by searchsorted over
m_indptr, moe_sum with Tensor.sum, the all-reduce as torch.sum over ranks, the all-gather as a permute-reshape,
the vocab-parallel lookup as F.embedding into a zero table of the whole vocabulary.
"""

from __future__ import annotations

from . import common_kernels, moe_pipeline, qwen
from .common import Case, shrunk

CASES = {
    "gemm_n1280_k4096": qwen.gemm_case(),
    "gemm_n4096_k1024": qwen.gemm_case(N=1000),
    "gemm_n128_k4096": qwen.gemm_case(),
    "gemm_n18992_k4096": qwen.gemm_case(N=1000),
    # N shrunk; the 128 segments and K real.
    "grouped_gemm_e128_n384_k4096": Case([shrunk({"tokens": t}, N=32) for t in (1, 3, 10)], qwen.grouped_inputs,
                                         qwen.grouped_expected, derived=qwen.grouped_derived),
    "grouped_gemm_e128_n4096_k192": Case([shrunk({"tokens": t}, N=128) for t in (1, 4, 12)], qwen.grouped_inputs,
                                         qwen.grouped_expected, derived=qwen.grouped_derived),
    "moe_sum_topk8_h4096": moe_pipeline.sum_case(),
    "allreduce_tp8_h4096": Case(common_kernels.ROWS, common_kernels.allreduce_inputs, common_kernels.allreduce_expected),
    "allgather_tp8_v18992": common_kernels.allgather_case(8),
    "embedding_v18992_h4096": common_kernels.shard_case(8),
}
