"""Public FlashInfer-Trace GEMM names the dataset lacked (issue #26 step 2): MiniMax-M2's three unsharded bfloat16
GEMMs, gemm_n256_k3072 (the router gate), gemm_n8192_k3072 (qkv_proj) and gemm_n3072_k6144 (o_proj).

Each is the plain bfloat16 GEMM gemm_n3072_k3072 (Llama-3.2-3B's o_proj, checked by llama32_3b.py) with other N and
K and its own text: reference, einsum cascade and baseline byte for byte (tests/test_public_gemms.py proves the
committed files are what render() writes; `cd tests && python -m reference_cases.public_gemms` rewrites them).
The check: llama.py's float64 GEMM at the real K, N shrunk where the weight is large (every column is the same dot
product over K).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

from .common import write_files
from .llama import gemm_case

DATASET = Path(__file__).resolve().parents[2] / "dataset"
TEMPLATE = "gemm_n3072_k3072"
SOURCE = "MiniMaxAI/MiniMax-M2 config.json"
SERVED = ("MiniMax-M2 is released and served in FP8 (quantization_config fp8 e4m3, weight_block_size [128, 128]; the "
          "dataset's minimax-m2 record: SGLang --tp-size 8 --ep-size 8 on 8 H100)")


@dataclass(frozen=True)
class Gemm:
    n: int
    k: int
    n_text: str
    k_text: str
    body: str

    @property
    def name(self) -> str:
        return f"gemm_n{self.n}_k{self.k}"


GEMMS = [
    Gemm(256, 3072, "num_local_experts = 256", "hidden_size = 3072",
         "the MoE router gate of MiniMax-M2 in bfloat16: N = num_local_experts = 256, K = hidden_size = 3072. "
         f"{SERVED}; its gate stays unquantised (modules_to_not_convert) and SGLang runs it in float32 "
         "(ReplicatedLinear with params_dtype torch.float32 on hidden_states.to(torch.float32)): that is "
         "gemm_fp32_n256_k3072, the kernel the record counts. This definition is the same shape in bfloat16, the "
         "router GEMM of an engine that keeps the gate in the model dtype, as flashinfer-bench's FlashInfer-Trace "
         "set captured it (\"MiniMax M2 MoE gate (3072 -> 256 experts)\"). Replicated on every rank; once per layer "
         "(62 per step), M = tokens in the step."),
    Gemm(8192, 3072, "(num_attention_heads + 2 * num_key_value_heads) * head_dim = (48 + 2 * 8) * 128 = 8192",
         "hidden_size = 3072",
         "qkv_proj of MiniMax-M2 unsharded (tp:1, the whole weight): queries, keys and values of one layer in one "
         "GEMM, N = (num_attention_heads + 2 * num_key_value_heads) * head_dim = (48 + 2 * 8) * 128 = 8192, K = "
         f"hidden_size = 3072. {SERVED}, where each rank runs a block-FP8 shard of it (gemm_fp8_block128_n1024_k3072, "
         "6 query, 1 key and 1 value head). This definition is the layer's shape whole and in bfloat16: a bfloat16 "
         "(dequantised) checkpoint with the attention unsharded, as flashinfer-bench's FlashInfer-Trace set captured "
         "it. Once per layer (62 per step), M = tokens in the step."),
    Gemm(3072, 6144, "hidden_size = 3072", "num_attention_heads * head_dim = 48 * 128 = 6144",
         "o_proj of MiniMax-M2 unsharded (tp:1, the whole weight): N = hidden_size = 3072, K = num_attention_heads * "
         f"head_dim = 48 * 128 = 6144. {SERVED}, where each rank runs a block-FP8 row shard of it "
         "(gemm_fp8_block128_n3072_k768) and an all-reduce sums the partial results. This definition is the layer's "
         "shape whole and in bfloat16: a bfloat16 (dequantised) checkpoint with the attention unsharded, as "
         "flashinfer-bench's FlashInfer-Trace set captured it. Once per layer (62 per step), M = tokens in the step."),
]


def template() -> dict:
    return json.loads((DATASET / "definitions" / "gemm" / f"{TEMPLATE}.json").read_text(encoding="utf-8"))


def render(v: Gemm) -> dict:
    d = copy.deepcopy(template())
    d["name"] = v.name
    d["description"] = (
        f"Dense GEMM C = A @ B.T, {v.body} A is [M, K] activations, B is the [N, K] weight as stored (nn.Linear "
        "layout, no bias). Tagged model-alt: not the kernel the minimax-m2 record runs (FP8 or float32 there). The "
        "same kernel, constants and name as the FlashInfer-Trace set's (flashinfer-bench). Numerics: bfloat16 inputs, "
        "products accumulated in float32, one rounding of each output to bfloat16.")
    d["tags"] = ["status:draft", "model-alt:minimax-m2", "stage:decode", "stage:prefill", "tp:1" if v.n != 256
                 else "tp:8", "quantization:bf16"]
    d["axes"]["N"].update(value=v.n, description=f"{v.n_text}, from {SOURCE}.")
    d["axes"]["K"].update(value=v.k, description=f"{v.k_text}, from {SOURCE}.")
    return d


def files() -> dict:
    einsum = (DATASET / "einsums" / "gemm" / f"{TEMPLATE}.yaml").read_text(encoding="utf-8")
    sol = json.loads((DATASET / "solutions" / "baseline" / "gemm" / TEMPLATE / f"{TEMPLATE}_torch.json")
                     .read_text(encoding="utf-8"))
    out = {}
    for v in GEMMS:
        out[f"definitions/gemm/{v.name}.json"] = json.dumps(render(v), indent=2, ensure_ascii=False) + "\n"
        out[f"einsums/gemm/{v.name}.yaml"] = einsum
        out[f"solutions/baseline/gemm/{v.name}/{v.name}_torch.json"] = json.dumps(
            {**sol, "name": f"{v.name}_torch", "definition": v.name}, indent=2, ensure_ascii=False) + "\n"
    return out


CASES = {v.name: gemm_case(**({"N": 256} if v.n > 256 else {})) for v in GEMMS}


def write(root: Path = DATASET) -> list:
    return write_files(files(), root)


if __name__ == "__main__":
    for p in write():
        print(f"wrote {p.relative_to(DATASET.parent)}")
