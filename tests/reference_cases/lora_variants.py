"""Multi-LoRA qkv_proj shrink and expand (BGMV, decode) for the other dense models vLLM serves with LoRA whose shapes
differ from Llama-3.1-8B's: Qwen2.5-7B (K 3584; q 3584, k and v 512 each) and Llama-3.2-3B (K 3072; q 3072, k and
v 1024 each). Mistral-7B-Instruct-v0.3 and Qwen3-8B have Llama-3.1-8B's hidden size and heads (4096; 32 x 128
queries, 8 x 128 keys and values), so lora_bgmv_shrink_s3_l4_r16_k4096 / lora_bgmv_expand_s3_l4_r16_n6144 are
theirs already.

Rendered from the checked templates (reference_cases/lora.py): the shrink's reference, cascade and baseline byte
for byte (it reads its sizes from the tensors); the expand's with its one constant line (q_size, kv_size) changed.
tests/test_lora_variants.py proves the committed files are what files() writes (`cd tests && python -m
reference_cases.lora_variants` rewrites them) and that the template's slice sizes fail a variant's check.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

from . import lora
from .common import Case, write_files

DATASET = Path(__file__).resolve().parents[2] / "dataset"
SHRINK, EXPAND = "lora_bgmv_shrink_s3_l4_r16_k4096", "lora_bgmv_expand_s3_l4_r16_n6144"
EXPAND_SIZES = "    q_size, kv_size = 4096, 1024  #"
SOURCE_8B = "meta-llama/Llama-3.1-8B config.json"


@dataclass(frozen=True)
class Dense:
    model: str  # "Qwen2.5-7B"
    record: str  # calling record (model-alt tag)
    source: str  # config.json
    hidden: int
    heads: int
    kv_heads: int

    @property
    def q(self) -> int:
        return self.heads * 128

    @property
    def kv(self) -> int:
        return self.kv_heads * 128

    @property
    def n(self) -> int:
        return self.q + 2 * self.kv


MODELS = [Dense("Qwen2.5-7B", "qwen2.5-7b", "Qwen/Qwen2.5-7B config.json", 3584, 28, 4),
          Dense("Llama-3.2-3B", "llama-3.2-3b", "meta-llama/Llama-3.2-3B config.json", 3072, 24, 8)]


def _load(kind: str, name: str) -> dict:
    path = DATASET / "definitions" / "grouped_gemm" / f"{name}.json" if kind == "definitions" else \
        DATASET / "solutions" / "baseline" / "grouped_gemm" / name / f"{name}_torch.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _replace_all(d: dict, pairs) -> dict:
    texts = [d] + [spec for part in ("axes", "inputs", "outputs") for spec in d[part].values()]
    for old, new in pairs:
        hits = [t for t in texts if old in t.get("description", "")]
        assert hits, f"{d['name']}: {old[:60]!r}... is no longer in its template's text"
        for t in hits:
            t["description"] = t["description"].replace(old, new)
    return d


def names(m: Dense) -> tuple:
    return f"lora_bgmv_shrink_s3_l4_r16_k{m.hidden}", f"lora_bgmv_expand_s3_l4_r16_n{m.n}"


NOTE = (" The same kernel as {template} (Llama-3.1-8B) at this model's sizes; vLLM serves the model with LoRA "
        "adapters (--enable-lora; its supported-models list marks LoRA for {arch}).")


def render_shrink(m: Dense) -> dict:
    shrink, expand = names(m)
    d = copy.deepcopy(_load("definitions", SHRINK))
    d["name"] = shrink
    arch = "Qwen2ForCausalLM" if m.model.startswith("Qwen") else "LlamaForCausalLM"
    _replace_all(d, (
        ("of Llama-3.1-8B's fused qkv_proj", f"of {m.model}'s fused qkv_proj"),
        (f"K = 4096 (hidden_size from {SOURCE_8B}).",
         f"K = {m.hidden} (hidden_size from {m.source})." + NOTE.format(template=SHRINK, arch=arch)),
        (f"(lora_{'bgmv_expand_s3_l4_r16_n6144'})", f"({expand})"),
        (f"hidden_size = 4096 ({SOURCE_8B}).", f"hidden_size = {m.hidden} ({m.source}).")))
    d["axes"]["K"]["value"] = m.hidden
    bound = round(m.hidden ** -0.5, 5)  # PEFT's kaiming_uniform bound for lora_A, 1/sqrt(K)
    _replace_all(d, (("1/sqrt(4096) = 0.01562)", f"1/sqrt({m.hidden}) = {bound})"),))
    d["inputs"]["lora_a"]["random"].update(low=-bound, high=bound)
    d["tags"] = [t.replace("model-alt:llama-3.1-8b", f"model-alt:{m.record}") for t in d["tags"]]
    return d


def render_expand(m: Dense) -> dict:
    shrink, expand = names(m)
    d = copy.deepcopy(_load("definitions", EXPAND))
    d["name"] = expand
    arch = "Qwen2ForCausalLM" if m.model.startswith("Qwen") else "LlamaForCausalLM"
    q, kv, n = m.q, m.kv, m.n
    _replace_all(d, (
        ("of Llama-3.1-8B's fused qkv_proj", f"of {m.model}'s fused qkv_proj"),
        ("q in columns [0, 4096) (q_size = num_attention_heads * head_dim = 32 * 128), k in [4096, 5120) and v in "
         f"[5120, 6144) (kv_size = num_key_value_heads * head_dim = 8 * 128, {SOURCE_8B}); SGLang's output_offset "
         "[0, 4096, 5120, 6144]",
         f"q in columns [0, {q}) (q_size = num_attention_heads * head_dim = {m.heads} * 128), k in [{q}, {q + kv}) and "
         f"v in [{q + kv}, {n}) (kv_size = num_key_value_heads * head_dim = {m.kv_heads} * 128, {m.source}); SGLang's "
         f"output_offset [0, {q}, {q + kv}, {n}]"),
        ("(the output of the layer's shrink, lora_bgmv_shrink_s3_l4_r16_k4096)",
         f"(the output of the layer's shrink, {shrink})"),
        ("(q_proj's 4096 rows, k_proj's 1024, v_proj's 1024)", f"(q_proj's {q} rows, k_proj's {kv}, v_proj's {kv})"),
        ("num_attention_heads * head_dim = 32 * 128.", f"num_attention_heads * head_dim = {m.heads} * 128."),
        ("num_key_value_heads * head_dim = 8 * 128.", f"num_key_value_heads * head_dim = {m.kv_heads} * 128."),
        ("Numerics:", NOTE.format(template=EXPAND, arch=arch).strip() + "\n\nNumerics:")))
    for axis, value in (("N", n), ("q_size", q), ("kv_size", kv)):
        d["axes"][axis]["value"] = value
    d["tags"] = [t.replace("model-alt:llama-3.1-8b", f"model-alt:{m.record}") for t in d["tags"]]
    assert d["reference"].count(EXPAND_SIZES) == 1
    d["reference"] = d["reference"].replace(EXPAND_SIZES, f"    q_size, kv_size = {q}, {kv}  #")
    return d


def files() -> dict:
    text = lambda x: json.dumps(x, indent=2, ensure_ascii=False) + "\n"  # noqa: E731
    out = {}
    for m in MODELS:
        for template, d in ((SHRINK, render_shrink(m)), (EXPAND, render_expand(m))):
            name = d["name"]
            out[f"definitions/grouped_gemm/{name}.json"] = text(d)
            out[f"einsums/grouped_gemm/{name}.yaml"] = \
                (DATASET / "einsums" / "grouped_gemm" / f"{template}.yaml").read_text(encoding="utf-8")
            sol = _load("solutions", template)
            if template == EXPAND:  # the baseline spells the slice sizes out as the reference does
                code = sol["sources"][0]["content"]
                assert code.count(EXPAND_SIZES) == 1
                code = code.replace(EXPAND_SIZES, f"    q_size, kv_size = {m.q}, {m.kv}  #")
                sol = {**sol, "sources": [{**sol["sources"][0], "content": code}]}
            out[f"solutions/baseline/grouped_gemm/{name}/{name}_torch.json"] = \
                text({**sol, "name": f"{name}_torch", "definition": name})
    return out


CASES = {}
for _m in MODELS:
    _s, _e = names(_m)
    CASES[_s] = Case(lora.TOKEN_SETS, lora.bgmv_shrink_inputs, lora.bgmv_shrink_expected)
    CASES[_e] = Case(lora.TOKEN_SETS, lora.bgmv_expand_inputs, lora.bgmv_expand_expected)


def write(root: Path = DATASET) -> list:
    return write_files(files(), root)


if __name__ == "__main__":
    for p in write():
        print(f"wrote {p.relative_to(DATASET.parent)}")
