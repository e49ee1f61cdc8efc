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

Rendered from the checked templates (reference_cases/lora.py): the shrink's reference, cascade and baseline byte
for byte (it reads its sizes from the tensors); the expand's with its one constant line (q_size, kv_size) changed.
tests/test_lora_variants.py proves the committed files are what files() writes (`cd tests && python -m
reference_cases.lora_variants` rewrites them), that the template's slice sizes fail a variant's check, and that the
unsharded layer's slice offsets fail a TP variant's.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

from . import lora
from .common import Case, replace_in_descriptions, write_files

DATASET = Path(__file__).resolve().parents[2] / "dataset"
SHRINK, EXPAND = "lora_bgmv_shrink_s3_l4_r16_k4096", "lora_bgmv_expand_s3_l4_r16_n6144"
EXPAND_SIZES = "    q_size, kv_size = 4096, 1024  #"
EXPAND_SLICES = "    slices = [(0, q_size), (q_size, kv_size), (q_size + kv_size, kv_size)]"
SOURCE_8B = "meta-llama/Llama-3.1-8B config.json"
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

    def per_rank(self, heads: int) -> str:
        return f"{heads}" if self.tp == 1 else f"{heads} / {self.tp}"

    @property
    def flags(self) -> str:
        tp = f" --tensor-parallel-size {self.tp}" if self.tp > 1 else ""
        return f"{self.model} served with --enable-lora --max-loras 4 --max-lora-rank 16{tp}"


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


def _load(kind: str, name: str) -> dict:
    path = DATASET / "definitions" / "grouped_gemm" / f"{name}.json" if kind == "definitions" else \
        DATASET / "solutions" / "baseline" / "grouped_gemm" / name / f"{name}_torch.json"
    return json.loads(path.read_text(encoding="utf-8"))


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


def _unique(items) -> list:
    return list(dict.fromkeys(items))


def _whose(ms, sharded: str) -> str:
    """The template's "of Llama-3.1-8B's fused qkv_proj at TP1", for these models."""
    if len(ms) == 1 and ms[0].tp == 1:
        return f"of {ms[0].model}'s fused qkv_proj at TP1"
    tps = {}
    for m in ms:
        tps.setdefault(m.model, []).append(f"TP{m.tp}")
    ranks = " and of ".join(f"{model} at {' and '.join(t)}" for model, t in tps.items())
    return f"of the fused qkv_proj of {ranks}" + (f" ({sharded}; see below)" if any(m.tp > 1 for m in ms) else "")


def _note(template: str, ms) -> str:
    whose = f"{ms[0].model}'s sizes" if len(ms) == 1 else "these models' sizes"
    archs = ", ".join(_unique(m.arch for m in ms))
    return (f" The same kernel as {template} (Llama-3.1-8B) at {whose}; vLLM runs it for "
            f"{'; '.join(m.flags for m in ms)} (its supported-models list marks LoRA for {archs}).")


SHRINK_TP = (" Tensor parallelism leaves the shrink whole: vLLM's MergedQKVParallelLinearWithLoRA "
             "(vllm/lora/layers/column_parallel_linear.py; --fully-sharded-loras off, its default) keeps lora_A "
             "unsliced (slice_lora_a returns it; lora_a_stacked is [max_loras, 1, max_lora_rank, input_size]) and "
             "the layer's input is replicated on every rank, so each rank runs this shrink at K = hidden_size and "
             "the full rank; only lora_B is sliced (the expand).")

EXPAND_TP = (" At tensor parallelism each rank expands into its own shard of the output: vLLM's "
             "MergedQKVParallelLinearWithLoRA (vllm/lora/layers/column_parallel_linear.py; --fully-sharded-loras "
             "off, its default) slices each projection's lora_B as the column-parallel qkv_proj is sliced: "
             "output_slices = (num_heads * head_dim, num_kv_heads * head_dim, num_kv_heads * head_dim) with the "
             "rank's head counts, and slice_lora_b keeps rows [shard_id * size, (shard_id + 1) * size) of q_proj's "
             "lora_B (shard_id = tp_rank) and of k_proj's and v_proj's (shard_id = tp_rank // num_kv_head_replicas, "
             "every rank here having KV heads of its own); the expand adds them at the offsets of the rank's local "
             "output (0, q_size, q_size + kv_size), not at the unsharded layer's (k at num_attention_heads * "
             "head_dim).")


def _tags(d: dict, ms) -> list:
    tags = []
    for t in d["tags"]:
        if t == "model-alt:llama-3.1-8b":
            tags += [f"model-alt:{m.record}" for m in ms]
        elif t == "tp:1":
            tags += [f"tp:{tp}" for tp in sorted(_unique(m.tp for m in ms))]
        else:
            tags.append(t)
    return tags


def render_shrink(m: Dense) -> dict:
    name = shrink_name(m)
    ms = groups(shrink_name)[name]
    expands = " / ".join(_unique(expand_name(x) for x in ms))
    sources = " and ".join(_unique(x.source for x in ms))
    d = copy.deepcopy(_load("definitions", SHRINK))
    d["name"] = name
    tp_note = SHRINK_TP if any(x.tp > 1 for x in ms) else ""
    replace_in_descriptions(d, (
        ("of Llama-3.1-8B's fused qkv_proj at TP1", _whose(ms, "every rank runs it whole")),
        (f"K = 4096 (hidden_size from {SOURCE_8B}).",
         f"K = {m.hidden} (hidden_size from {sources})." + _note(SHRINK, ms) + tp_note),
        (f"(lora_{'bgmv_expand_s3_l4_r16_n6144'})", f"({expands})"),
        (f"hidden_size = 4096 ({SOURCE_8B}).", f"hidden_size = {m.hidden} ({sources}).")), name)
    d["axes"]["K"]["value"] = m.hidden
    bound = round(m.hidden ** -0.5, 5)  # PEFT's kaiming_uniform bound for lora_A, 1/sqrt(K)
    replace_in_descriptions(d, (("1/sqrt(4096) = 0.01562)", f"1/sqrt({m.hidden}) = {bound})"),), name)
    d["inputs"]["lora_a"]["random"].update(low=-bound, high=bound)
    d["tags"] = _tags(d, ms)
    return d


def render_expand(m: Dense) -> dict:
    name = expand_name(m)
    ms = groups(expand_name)[name]
    shrinks = " / ".join(_unique(shrink_name(x) for x in ms))
    sources = " and ".join(_unique(x.source for x in ms))
    heads, kv_heads = m.per_rank(m.heads), m.per_rank(m.kv_heads)
    assert all((x.q, x.kv, x.per_rank(x.heads), x.per_rank(x.kv_heads)) == (m.q, m.kv, heads, kv_heads) for x in ms)
    per = "" if m.tp == 1 else " / tp"
    d = copy.deepcopy(_load("definitions", EXPAND))
    d["name"] = name
    q, kv, n = m.q, m.kv, m.n
    tp_note = EXPAND_TP if m.tp > 1 else ""
    replace_in_descriptions(d, (
        ("of Llama-3.1-8B's fused qkv_proj at TP1", _whose(ms, "one rank's shard")),
        ("q in columns [0, 4096) (q_size = num_attention_heads * head_dim = 32 * 128), k in [4096, 5120) and v in "
         f"[5120, 6144) (kv_size = num_key_value_heads * head_dim = 8 * 128, {SOURCE_8B}); SGLang's output_offset "
         "[0, 4096, 5120, 6144]",
         f"q in columns [0, {q}) (q_size = num_attention_heads{per} * head_dim = {heads} * 128), k in [{q}, {q + kv}) "
         f"and v in [{q + kv}, {n}) (kv_size = num_key_value_heads{per} * head_dim = {kv_heads} * 128, {sources}); "
         f"SGLang's output_offset [0, {q}, {q + kv}, {n}]"),
        ("(the output of the layer's shrink, lora_bgmv_shrink_s3_l4_r16_k4096)",
         f"(the output of the layer's shrink, {shrinks})"),
        ("(q_proj's 4096 rows, k_proj's 1024, v_proj's 1024)", f"(q_proj's {q} rows, k_proj's {kv}, v_proj's {kv})"),
        ("num_attention_heads * head_dim = 32 * 128.", f"num_attention_heads{per} * head_dim = {heads} * 128."),
        ("num_key_value_heads * head_dim = 8 * 128.", f"num_key_value_heads{per} * head_dim = {kv_heads} * 128."),
        ("Numerics:", (_note(EXPAND, ms) + tp_note).strip() + "\n\nNumerics:")), name)
    for axis, value in (("N", n), ("q_size", q), ("kv_size", kv)):
        d["axes"][axis]["value"] = value
    d["tags"] = _tags(d, ms)
    assert d["reference"].count(EXPAND_SIZES) == 1
    d["reference"] = d["reference"].replace(EXPAND_SIZES, f"    q_size, kv_size = {q}, {kv}  #")
    return d


def definitions() -> list:
    """(template, rendered definition, a model of it) for every variant, the shrinks and expands in MODELS' order."""
    out = []
    for key, template, render in ((shrink_name, SHRINK, render_shrink), (expand_name, EXPAND, render_expand)):
        out += [(template, render(ms[0]), ms[0]) for ms in groups(key).values()]
    return out


def files() -> dict:
    text = lambda x: json.dumps(x, indent=2, ensure_ascii=False) + "\n"  # noqa: E731
    out = {}
    for template, d, m in definitions():
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
