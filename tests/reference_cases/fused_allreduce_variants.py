"""The fused all-reduce + residual add + RMSNorm at the tensor-parallel degree and hidden size of every recorded
model served with TP > 1 on one node: constant variants of the checked template allreduce_fused_add_rmsnorm_tp4_h8192
(reference_cases/collective_fusion.py checks its mathematics in full), rendered from the table below.

A variant is the template's structure with its own tp_size, hidden_size and text; its reference and baseline are
the template's with one change, the norm's eps (each model's rms_norm_eps), and its einsum cascade is the
template's byte for byte. tests/test_fused_allreduce_variants.py proves every committed file is what render()
writes (`cd tests && python -m reference_cases.fused_allreduce_variants` rewrites them) and that the references
differ from the template's in the eps line only. Each variant gets a cheap check of an independent float64
formulation (an einsum over ranks, torch.linalg.vector_norm) at its real tp_size and hidden_size, a few tokens.

Left out, and why: Gemma-3-27B at TP2 and Qwen3-Next at TP4 normalise with (1 + w) (GemmaRMSNorm, which vLLM's
pattern does not match; Gemma 3's o_proj all-reduce is followed by a plain sandwich norm, not by an add + norm);
Kimi-K2 at TP16 and DeepSeek-V3 at TP16 span two nodes, where the kernel's NVLink IPC workspace does not reach
(SGLang enables the fusion on one node only).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

from .collective_fusion import _norm64, fused_inputs
from .common import Case, write_files

DATASET = Path(__file__).resolve().parents[2] / "dataset"
TEMPLATE = "allreduce_fused_add_rmsnorm_tp4_h8192"
TEMPLATE_EPS = "    eps = 1e-5  # rms_norm_eps of meta-llama/Llama-3.3-70B-Instruct\n"
BASELINE_EPS = "keepdim=True) + 1e-5)"

VLLM = ("vLLM replaces the pattern all-reduce -> fused_add_rms_norm by it when its AllReduceFusionPass is on "
        "(pass_config fuse_allreduce_rms; AllReduceFusedAddRMSNormPattern, pattern kARResidualRMSNorm), which vLLM "
        "0.33 turns on by default at its default optimisation level -O2 for TP > 1 on SM90/SM100 with FlashInfer "
        "installed (vllm/config/vllm.py enable_allreduce_rms_fusion and -O2's pass_config, lines 163-187 and 292 of "
        "the snapshot 000fc94b read for issue 40), and only for steps of at "
        "most max_token_num tokens: its workspace holds {mb} MB per rank at TP{tp} on an {gpu} "
        "(FI_ALLREDUCE_FUSION_MAX_SIZE_MB[90][{tp}] in vllm/compilation/collective_fusion.py, "
        "compilation/passes/fusion/allreduce_rms_fusion.py in later releases), {mb} MiB / ({h} x 2 bytes) = {limit} "
        "tokens, capped by max_num_batched_tokens; larger steps keep the separate all-reduce and fused_add_rmsnorm. "
        "The workloads stay within that bound. SGLang's --enable-flashinfer-allreduce-fusion calls the same kernel "
        "(flashinfer_allreduce_residual_rmsnorm, with fp32_acc on: the ranks summed in float32 as here).")
SGLANG = ("SGLang calls it (flashinfer_allreduce_residual_rmsnorm, through the layer communicator's "
          "forward_with_allreduce_fusion) when launched with --enable-flashinfer-allreduce-fusion, for steps of 1 to "
          "2048 tokens (FUSE_ALLREDUCE_MAX_BATCH_SIZE in python/sglang/srt/layers/communicator.py, also the "
          "workspace's max_token_num) and without DP attention; larger steps keep the separate all-reduce and "
          "fused add + RMSNorm. The workloads stay within that bound. SGLang passes fp32_acc=True "
          "(python/sglang/srt/layers/flashinfer_comm_fusion.py, as issue 40's audit of SGLang 0.5.23 read it): the "
          "ranks are summed in float32, as the definition does. vLLM's AllReduceFusionPass (pass_config "
          "fuse_allreduce_rms) fuses the same pattern.")
AUTO = ("SGLang 0.5.23 turns the flag on by itself for {arch} (python/sglang/srt/server_args.py, "
        "ServerArgs._handle_model_specific_adjustments: on SM90/SM100, one node, TP > 1, no DP attention, not H20, "
        "moe_a2a_backend none), which the record's launch satisfies, so the record counts this kernel in its decode "
        "step (every decode batch is within the 2048-token limit); its prefill step (chunks of 4096 tokens and more, "
        "over the limit) keeps {plain} and {norm} apart, as the record's notes say.")


@dataclass(frozen=True)
class Fused:
    label: str  # "Qwen3-32B at TP4 on four H100s (vLLM)"
    source: str  # config.json the constants come from
    tp: int
    hidden: int
    eps: str  # rms_norm_eps as written in the config
    layers: int  # decoder layers: the all-reduces each step fuses
    records: tuple  # calling records that call it only in another launch (model-alt tags)
    engine: str  # "vllm" or "sglang"
    note: str = ""  # which record counts what apart, the auto-enable, other users
    vllm_mb: float = 0.0  # vLLM's workspace at this tp on SM90 (MB)
    gpu: str = "H100"
    counted: tuple = ()  # calling records whose steps count it (model tags): their release fuses by default

    @property
    def name(self) -> str:
        return f"allreduce_fused_add_rmsnorm_tp{self.tp}_h{self.hidden}"

    @property
    def limit(self) -> int:
        return int(self.vllm_mb * 2**20 // (self.hidden * 2)) if self.engine == "vllm" else 2048


VARIANTS = [
    Fused("Qwen3-32B at TP4 on four H100s (vLLM)", "Qwen/Qwen3-32B config.json", 4, 5120, "1e-6", 64,
          (), "vllm",
          "The calling record qwen3-32b-tp4 counts it in its decode step (decode batches up to the limit); its "
          "prefill step, over the limit, keeps allreduce_tp4_h5120 and fused_add_rmsnorm_h5120 apart.", vllm_mb=2,
          counted=("qwen3-32b-tp4",)),
    Fused("Qwen3-30B-A3B at TP4 on four H100s (vLLM)", "Qwen/Qwen3-30B-A3B config.json", 4, 2048, "1e-6", 48,
          (), "vllm",
          "After the MoE block the all-reduce of the routed experts' partial sums (FusedMoE reduce_results) meets the "
          "next layer's input_layernorm the same way. The calling record qwen3-30b-a3b-tp4 counts it in its decode "
          "step; its prefill step, over the limit, keeps allreduce_tp4_h2048 and fused_add_rmsnorm_h2048 apart.",
          vllm_mb=2, counted=("qwen3-30b-a3b-tp4",)),
    Fused("Qwen3-235B-A22B at TP8 on eight H200s (vLLM)", "Qwen/Qwen3-235B-A22B config.json", 8, 4096, "1e-6", 94,
          (), "vllm",
          "After the MoE block the all-reduce of the routed experts' partial sums meets the next layer's "
          "input_layernorm the same way. The calling record qwen3-235b-a22b-tp8 counts it in its decode step (decode "
          "batches up to the limit; larger ones keep the pair); its prefill step, over the limit, keeps "
          "allreduce_tp8_h4096 and fused_add_rmsnorm_h4096_eps1e_6 apart.", vllm_mb=0.5,
          gpu="H200 (SM90, the H100's row)", counted=("qwen3-235b-a22b-tp8",)),
    Fused("GLM-4.5 at TP8 on eight H200s (SGLang) and Llama-4-Scout-17B-16E at TP8 on eight H100s (SGLang)",
          "zai-org/GLM-4.5 config.json; meta-llama/Llama-4-Scout-17B-16E-Instruct config.json (text_config)", 8, 5120,
          "1e-5", 92, ("llama-4-scout",), "sglang",
          AUTO.format(arch="Glm4MoeForCausalLM (GLM-4.5's architecture; not for Llama4ForConditionalGeneration)",
                      plain="allreduce_tp8_h5120", norm="fused_add_rmsnorm_h5120_eps1e_5")
          + " Llama-4-Scout (48 layers, the same hidden size and eps) runs it only with the flag set by hand; its "
          "record counts the two kernels apart (model-alt).", counted=("glm-4.5",)),
    Fused("MiniMax-M2 at TP8 on eight H100s (SGLang, EP8 experts)", "MiniMaxAI/MiniMax-M2 config.json", 8, 3072,
          "1e-6", 62, ("minimax-m2",), "sglang",
          "SGLang does not turn the flag on by itself for MiniMaxM2ForCausalLM; the calling record minimax-m2 counts "
          "allreduce_tp8_h3072 and fused_add_rmsnorm_h3072_eps1e_6 apart, so the kernel is tagged model-alt."),
    Fused("DeepSeek-V3 at TP8 on eight H200s (SGLang, EP8 experts)", "deepseek-ai/DeepSeek-V3 config.json", 8, 7168,
          "1e-6", 61, (), "sglang",
          AUTO.format(arch="DeepseekV3ForCausalLM (DeepSeek-V3's and V3.2's architecture)",
                      plain="allreduce_tp8_h7168", norm="fused_add_rmsnorm_h7168")
          + " DeepSeek-V3.2-Exp (deepseek-v3.2, the same hidden size and eps, TP8 on 8 H200) likewise.",
          counted=("deepseek-v3", "deepseek-v3.2")),
]


def template() -> dict:
    return json.loads((DATASET / "definitions" / "reduction" / f"{TEMPLATE}.json").read_text(encoding="utf-8"))


def reference(v: Fused) -> str:
    ref = template()["reference"]
    assert ref.count(TEMPLATE_EPS) == 1, f"{TEMPLATE}'s eps line changed: update TEMPLATE_EPS"
    model = v.source.split(" config.json")[0].split("; ")
    return ref.replace(TEMPLATE_EPS, f"    eps = {v.eps}  # rms_norm_eps of {' and '.join(model)}\n")


def description(v: Fused) -> str:
    engine = (VLLM.format(mb=f"{v.vllm_mb:g}", tp=v.tp, gpu=v.gpu, h=v.hidden, limit=v.limit)
              if v.engine == "vllm" else SGLANG)
    return " ".join([
        f"Tensor-parallel all-reduce fused with the residual add and RMSNorm that follow it, for {v.label} (tp:{v.tp}): "
        "FlashInfer's trtllm_allreduce_fusion (flashinfer.comm, ported from TensorRT-LLM's allReduceFusionKernels): one "
        "kernel exchanges the ranks' partial buffers over NVLink (one-shot Lamport or two-shot), sums them (fp32_acc), "
        "and on every rank adds the residual and normalises.",
        f"It replaces the all-reduce after o_proj plus post_attention_layernorm ({v.layers} layers) and the all-reduce "
        f"after the MLP or MoE block plus the next layer's input_layernorm ({v.layers - 1} layers, and the final norm).",
        engine, v.note,
        "residual_out = bf16(bf16(sum_r partials[r]) + residual); output[t, i] = x[t, i] / sqrt(mean_j(x[t, j]^2) + "
        f"eps) * weight[i], x = residual_out in float32; hidden_size = {v.hidden}, eps = {v.eps} (hidden_size, "
        f"rms_norm_eps in {v.source}).",
        f"Modelled on one device as the plain all-reduce is (allreduce_tp{v.tp}_h{v.hidden}): input partials "
        f"[tp_size, num_tokens, hidden_size] holds the {v.tp} ranks' buffers, and the outputs are what every rank "
        "holds afterwards (the same on every rank). The definition fixes the mathematics, shapes and bytes; a "
        "single-GPU benchmark of it times the local reduction and norm only, not the NVLink exchange that dominates "
        "the real kernel (see the Models page).",
        f"The same kernel and mathematics as {TEMPLATE} (Llama-3.3-70B), at this model's tp_size, hidden_size and eps.",
        "Numerics, as the kernel computes them: the sum over ranks accumulated in float32 and rounded to bfloat16 (the "
        "all-reduce value), the residual added to it and rounded to bfloat16 (residual_out), the mean of squares, "
        "rsqrt and the weight multiply in float32 on that bfloat16 sum; output rounded to bfloat16 once. The serving "
        "kernel writes residual_out and the norm in place of its inputs; this definition returns both and leaves its "
        "inputs unchanged."])


def render(v: Fused) -> dict:
    t = template()
    d = copy.deepcopy(t)
    d["axes"]["tp_size"].update(value=v.tp, description=f"Tensor-parallel ranks taking part: {v.tp}.")
    d["axes"]["num_tokens"]["description"] = (
        "Tokens in the step (decode batch or prefill chunk); the engines fuse only steps up to their max_token_num "
        f"({v.limit} here).")
    d["axes"]["hidden_size"].update(value=v.hidden, description=f"hidden_size = {v.hidden} from {v.source}; the mean "
                                                                "of squares is taken over it.")
    stages = ["stage:decode"] + (["stage:prefill"] if v.limit > 256 else [])
    tags = [*stages, *(f"model:{r}" for r in v.counted), *(f"model-alt:{r}" for r in v.records), f"tp:{v.tp}", "quantization:bf16", "status:draft",
            "collective:all_reduce", "fused"]
    out = {"name": v.name, "description": description(v), "type": t["type"], "tags": tags}
    out.update({k: val for k, val in d.items() if k not in ("name", "description", "type", "tags")})
    out["reference"] = reference(v)
    return out


def baseline(v: Fused) -> dict:
    src = DATASET / "solutions" / "baseline" / "reduction" / TEMPLATE / f"{TEMPLATE}_torch.json"
    sol = json.loads(src.read_text(encoding="utf-8"))
    code = sol["sources"][0]["content"]
    assert code.count(BASELINE_EPS) == 1, f"{TEMPLATE}'s baseline eps changed: update BASELINE_EPS"
    sources = [{**sol["sources"][0], "content": code.replace(BASELINE_EPS, f"keepdim=True) + {v.eps})")}]
    return {**sol, "name": f"{v.name}_torch", "definition": v.name, "sources": sources}


def files() -> dict:
    """Every file the variants consist of: dataset-relative path -> text."""
    einsum = (DATASET / "einsums" / "reduction" / f"{TEMPLATE}.yaml").read_text(encoding="utf-8")
    out = {}
    for v in VARIANTS:
        out[f"definitions/reduction/{v.name}.json"] = json.dumps(render(v), indent=2, ensure_ascii=False) + "\n"
        out[f"einsums/reduction/{v.name}.yaml"] = einsum
        out[f"solutions/baseline/reduction/{v.name}/{v.name}_torch.json"] = \
            json.dumps(baseline(v), indent=2, ensure_ascii=False) + "\n"
    return out


# --------------------------------------------------------------------------------------------------
# The check: float64, another route to the same numbers (collective_fusion.py's, with the variant's eps).
# --------------------------------------------------------------------------------------------------

def inputs(ax, g, i):
    # collective_fusion's draws; the third set's values near 1e-3 (see SIZES)
    return fused_inputs(ax, g, i, scales=(1.0, 30.0, 0.001))


def _expected(eps: float):
    def expected(ax, x):
        normed, residual_out = _norm64(ax, x, eps)
        return {"output": normed, "residual_out": residual_out}
    return expected


# One token, three tokens (one cancelling), two tokens of values near 1e-3, whose mean square (about 1e-5) is where
# eps = 1e-6 and 1e-5 differ by a quarter of the output.
SIZES = [{"num_tokens": 1}, {"num_tokens": 3}, {"num_tokens": 2}]
CASES = {v.name: Case(SIZES, inputs, _expected(float(v.eps))) for v in VARIANTS}


def write(root: Path = DATASET) -> list:
    return write_files(files(), root)


if __name__ == "__main__":
    for p in write():
        print(f"wrote {p.relative_to(DATASET.parent)}")
