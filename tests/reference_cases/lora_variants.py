"""Multi-LoRA qkv_proj shrink and expand (BGMV, decode) for the other dense models vLLM serves with LoRA whose shapes
differ from Llama-3.1-8B's, one rank's shapes at the tensor parallelism of each calling record: Qwen2.5-7B (K 3584;
q 3584, k and v 512 each), Llama-3.2-3B (K 3072; q 3072, k and v 1024), Qwen3-14B (K 5120; q 5120, k and v 1024),
Qwen3-32B at TP4 (K 5120; q 2048, k and v 256), Llama-3.3-70B at TP4 (K 8192; q 2048, k and v 256) and TP8 (K 8192;
q 1024, k and v 128), Gemma-3-27B at TP2 (K 5376; q 2048, k and v 1024). Mistral-7B-Instruct-v0.3 and Qwen3-8B have
Llama-3.1-8B's hidden size and heads (4096; 32 x 128 queries, 8 x 128 keys and values), so
lora_bgmv_shrink_s3_l4_r16_k4096 / lora_bgmv_expand_s3_l4_r16_n6144 are theirs already.

Tensor parallelism (vLLM's MergedQKVParallelLinearWithLoRA, vllm/lora/layers/column_parallel_linear.py, with
--fully-sharded-loras off, its default): lora_A is not sliced and the layer's input is replicated, so every rank's
shrink has K = hidden_size; lora_B is sliced as the column-parallel qkv_proj is (q rows of the rank's query heads,
k and v rows of its KV heads), so the expand's N and slice sizes are the rank's. Models whose ranks share a shape
share a definition (one tag per record): shrink k5120 (Qwen3-14B, Qwen3-32B TP4), k8192 (Llama-3.3-70B TP4 and
TP8); expand n2560 (Qwen3-32B TP4, Llama-3.3-70B TP4).

Siblings of the checked templates (reference_cases/lora.py) in dataset/families/: the shrink's reference, cascade
and baseline byte for byte (it reads its sizes from the tensors); the expand's with its one constant line (q_size,
kv_size) changed. tests/definitions/test_lora_variants.py proves that, that the template's slice sizes fail a
variant's check, and that the unsharded layer's slice offsets fail a TP variant's.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import lora
from .common import Case

SHRINK, EXPAND = "lora_bgmv_shrink_s3_l4_r16_k4096", "lora_bgmv_expand_s3_l4_r16_n6144"
EXPAND_SIZES = "    q_size, kv_size = 4096, 1024  #"
EXPAND_SLICES = "    slices = [(0, q_size), (q_size, kv_size), (q_size + kv_size, kv_size)]"
HEAD_DIM = 128  # head_dim of every model here


@dataclass(frozen=True)
class Dense:
    model: str  # "Qwen2.5-7B"
    record: str  # calling record (model-alt tag)
    source: str  # config.json
    arch: str  # the architecture vLLM's supported-models list marks LoRA for
    hidden: int
    heads: int
    kv_heads: int
    tp: int = 1

    def __post_init__(self):
        assert self.heads % self.tp == 0 and self.kv_heads % self.tp == 0, "no KV-head replication here"

    @property
    def q(self) -> int:  # the rank's q columns
        return self.heads // self.tp * HEAD_DIM

    @property
    def kv(self) -> int:  # the rank's k (and v) columns
        return self.kv_heads // self.tp * HEAD_DIM

    @property
    def n(self) -> int:
        return self.q + 2 * self.kv


MODELS = [Dense("Qwen2.5-7B", "qwen2.5-7b", "Qwen/Qwen2.5-7B config.json", "Qwen2ForCausalLM", 3584, 28, 4),
          Dense("Llama-3.2-3B", "llama-3.2-3b", "meta-llama/Llama-3.2-3B config.json", "LlamaForCausalLM", 3072, 24, 8),
          Dense("Qwen3-14B", "qwen3-14b", "Qwen/Qwen3-14B config.json", "Qwen3ForCausalLM", 5120, 40, 8),
          Dense("Qwen3-32B", "qwen3-32b-tp4", "Qwen/Qwen3-32B config.json", "Qwen3ForCausalLM", 5120, 64, 8, 4),
          Dense("Llama-3.3-70B", "llama-3.3-70b-tp4", "meta-llama/Llama-3.3-70B-Instruct config.json",
                "LlamaForCausalLM", 8192, 64, 8, 4),
          Dense("Llama-3.3-70B", "llama-3.3-70b-tp8", "meta-llama/Llama-3.3-70B-Instruct config.json",
                "LlamaForCausalLM", 8192, 64, 8, 8),
          Dense("Gemma-3-27B", "gemma-3-27b", "google/gemma-3-27b-it config.json text_config",
                "Gemma3ForConditionalGeneration", 5376, 32, 16, 2)]


def shrink_name(m: Dense) -> str:
    return f"lora_bgmv_shrink_s3_l4_r16_k{m.hidden}"


def expand_name(m: Dense) -> str:
    return f"lora_bgmv_expand_s3_l4_r16_n{m.n}"


def names(m: Dense) -> tuple:
    return shrink_name(m), expand_name(m)


def groups(key) -> dict:
    """{definition name: the models (records) whose ranks run it}, in MODELS' order."""
    out = {}
    for m in MODELS:
        out.setdefault(key(m), []).append(m)
    return out


CASES = {}
for _m in MODELS:
    _s, _e = names(_m)
    CASES[_s] = Case(lora.TOKEN_SETS, lora.bgmv_shrink_inputs, lora.bgmv_shrink_expected)
    CASES[_e] = Case(lora.TOKEN_SETS, lora.bgmv_expand_inputs, lora.bgmv_expand_expected)




