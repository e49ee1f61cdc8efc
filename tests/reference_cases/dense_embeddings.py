"""Independent checks of the TP1 embedding lookups of the dense models (Qwen3-8B, Qwen3-14B, Llama-3.2-3B,
Qwen2.5-7B) and of Qwen2.5-7B's temperature softmax: common_kernels.py's F.embedding over the table (the
vocabulary shrunk: each row is looked up alike) and its float64 softmax of logits / temperature.
"""

from __future__ import annotations

from .common import Case, shrunk
from .common_kernels import embedding_expected, embedding_inputs, softmax_case

CASES = {
    **{name: Case([shrunk({"num_tokens": n}, vocab_size=v) for n, v in ((1, 50), (7, 300), (33, 1000))],
                  embedding_inputs, embedding_expected)
       for name in ("embedding_v151936_h4096", "embedding_v128256_h3072", "embedding_v152064_h3584",
                    "embedding_v151936_h5120")},
    "softmax_temperature_v152064": softmax_case(),
}
