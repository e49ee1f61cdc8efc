"""Independent formulations for the Mistral-7B-Instruct-v0.3 definitions of its own (TP1; its 32768-token
vocabulary): its decoder layers are Llama-3.1-8B's definitions and its RoPE Qwen3-8B's.

The checks of the other models at these shapes: the lookup as a one-hot matrix product (vocabulary shrunk), the
lm_head with F.linear in float64 (N shrunk, K real), the softmax with torch.softmax in float64, the sampler
checked statistically (llama.py's draw counts and chi-square against the top-k-then-top-p distribution).
"""

from __future__ import annotations

from . import common_kernels, llama
from .common import Case, shrunk

CASES = {
    "embedding_v32768_h4096": Case([shrunk({"num_tokens": n}, vocab_size=v) for n, v in ((1, 50), (7, 300), (33, 1000))],
                                   common_kernels.embedding_inputs, common_kernels.embedding_expected),
    "gemm_n32768_k4096": llama.gemm_case(N=1000),
    "softmax_temperature_v32768": common_kernels.softmax_case(),
    "top_k_top_p_sampling_from_probs_v32768": llama.sampling_case("top_k_top_p"),
}
