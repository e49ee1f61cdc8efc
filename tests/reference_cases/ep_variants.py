"""Expert-parallel dispatch and combine at EP8 for DeepSeek-V3 and MiniMax-M2 (issue #26), DeepEP normal mode.

- ep_dispatch_fp8_ep8_e256_topk8_h7168 (DeepSeek-V3): the dispatch with an FP8 payload (e4m3 values and float32
  per-128-column scales, as SGLang's and vLLM's DeepEP paths send a block-FP8 model's tokens). Its own definition
  (the layout of ep_dispatch_ep4_e128_topk8_h2048, the scales travelling beside the values), checked here in full.
- ep_dispatch_fp8_ep8_e256_topk8_h3072 (MiniMax-M2): rendered from it, other hidden_size and text; the reference
  differs in its comment line only.
- ep_combine_ep8_topk8_h7168 / _h3072: rendered from ep_combine_ep4_topk8_h2048 (reference, einsum cascade and
  baseline byte for byte; only constants and text differ).

tests/test_ep_variants.py proves the committed files are what files() writes (`cd tests && python -m
reference_cases.ep_variants` rewrites them). The checks: collective_fusion.py's independent formulations (one
nonzero() over the [destination, source, token] membership; a dense token x row matrix for the combine), at the
real ep, experts and top_k, hidden_size shrunk (a copy and a weighted sum are the same at any width).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import torch

from . import collective_fusion as cf
from .common import Case, replace_in_descriptions, shrunk, write_files

DATASET = Path(__file__).resolve().parents[2] / "dataset"
FP8_DISPATCH = "ep_dispatch_fp8_ep8_e256_topk8_h7168"
COMBINE = "ep_combine_ep4_topk8_h2048"


def _load(kind: str, name: str) -> dict:
    return json.loads((DATASET / kind / "moe" / f"{name}.json").read_text(encoding="utf-8")) if kind == "definitions" \
        else json.loads((DATASET / kind / "moe" / name / f"{name}_torch.json").read_text(encoding="utf-8"))


MINIMAX_REF = ("    num_experts = 256  # n_routed_experts of deepseek-ai/DeepSeek-V3\n",
               "    num_experts = 256  # num_local_experts of MiniMaxAI/MiniMax-M2\n")
MINIMAX_TEXT = (
    ("for DeepSeek-V3 served with expert parallelism 8 on eight H200s", "for MiniMax-M2 served with expert parallelism 8 "
                                                                       "on eight H100s"),
    ("(n_routed_experts = 256, num_experts_per_tok = 8, hidden_size = 7168 in deepseek-ai/DeepSeek-V3 config.json)",
     "(num_local_experts = 256, num_experts_per_tok = 8, hidden_size = 3072 in MiniMaxAI/MiniMax-M2 config.json; the "
     "released checkpoint is block-FP8, quantization_config weight_block_size [128, 128])"),
    ("(quantize_fp8_per_token_group128_h7168)", "(quantize_fp8_per_token_group128_h3072)"),
    ("Tagged model-alt: the calling record deepseek-v3 runs the experts at EP8 with attention TP8",
     "Tagged model-alt: the calling record minimax-m2 (SGLang --tp-size 8 --ep-size 8, no all-to-all backend) runs "
     "the experts at EP8 with attention TP8"),
    ("(ep_combine_ep8_topk8_h7168)", "(ep_combine_ep8_topk8_h3072)"),
    ("num_experts_per_tok = 8 (deepseek-ai/DeepSeek-V3 config.json).", "num_experts_per_tok = 8 (MiniMaxAI/MiniMax-M2 "
                                                                        "config.json)."),
    ("hidden_size = 7168 (deepseek-ai/DeepSeek-V3 config.json).", "hidden_size = 3072 (MiniMaxAI/MiniMax-M2 config.json)."),
    ("hidden_size / 128 = 56.", "hidden_size / 128 = 24."),
    ("n_routed_experts = 256 (deepseek-ai/DeepSeek-V3 config.json), 32 per rank.",
     "num_local_experts = 256 (MiniMaxAI/MiniMax-M2 config.json), 32 per rank."),
    ("(DeepSeek's grouped top-8 of the biased sigmoid scores)", "(MiniMax-M2's top-8 of the biased sigmoid scores)"),
    ("(normalised, times routed_scaling_factor)", "(renormalised over the picks; routed_scaling_factor 1)"),
)


def render_minimax_dispatch() -> dict:
    d = copy.deepcopy(_load("definitions", FP8_DISPATCH))
    d["name"] = "ep_dispatch_fp8_ep8_e256_topk8_h3072"
    replace_in_descriptions(d, MINIMAX_TEXT, d["name"])
    d["axes"]["hidden_size"]["value"], d["axes"]["num_scale_blocks"]["value"] = 3072, 24
    d["tags"] = [t.replace("model-alt:deepseek-v3", "model-alt:minimax-m2") for t in d["tags"]]
    assert d["reference"].count(MINIMAX_REF[0]) == 1
    d["reference"] = d["reference"].replace(*MINIMAX_REF)
    return d


COMBINE_TEXT = {
    7168: ("DeepSeek-V3", "eight H200s", "n_routed_experts = 256, num_experts_per_tok = 8, hidden_size = 7168 in "
           "deepseek-ai/DeepSeek-V3 config.json", "deepseek-ai/DeepSeek-V3 config.json", "deepseek-v3",
           "the calling record deepseek-v3 runs the experts at EP8 with attention TP8, where every rank holds every "
           "token and an all-reduce sums the experts' results (no all-to-all)", "ep_dispatch_fp8_ep8_e256_topk8_h7168"),
    3072: ("MiniMax-M2", "eight H100s", "num_local_experts = 256, num_experts_per_tok = 8, hidden_size = 3072 in "
           "MiniMaxAI/MiniMax-M2 config.json", "MiniMaxAI/MiniMax-M2 config.json", "minimax-m2",
           "the calling record minimax-m2 (SGLang --tp-size 8 --ep-size 8, no all-to-all backend) runs the experts at "
           "EP8 with attention TP8, where every rank holds every token and an all-reduce sums the experts' results",
           "ep_dispatch_fp8_ep8_e256_topk8_h3072"),
}


def render_combine(hidden: int) -> dict:
    model, gpus, consts, source, record, alt, dispatch = COMBINE_TEXT[hidden]
    d = copy.deepcopy(_load("definitions", COMBINE))
    d["name"] = f"ep_combine_ep8_topk8_h{hidden}"
    d["description"] = (
        "Expert-parallel combine (the all-to-all that brings the experts' results back to each token's rank, weighted "
        f"and summed) of {model} served with expert parallelism 8 on {gpus} (tag ep:8): SGLang --enable-dp-attention "
        "--moe-a2a-backend deepep (normal mode) or vLLM --data-parallel-size 8 --enable-expert-parallel "
        "--all2all-backend deepep_high_throughput, the 256 routed experts placed linearly, rank d holding experts "
        f"[32 d, 32 d + 32) ({consts}). The experts' results travel in bfloat16 (the dispatch sent FP8, "
        f"{dispatch}). Tagged model-alt: {alt}. As the engines run it: on each expert rank, every received row's 8 "
        "per-pick expert outputs times the received routing weights, summed over the picks (vLLM's "
        "TopKWeightAndReduceContiguous; SGLang's ep_gather, which weights only the local picks: DeepEP's combine does "
        "not weight), then DeepEP's normal intranode Buffer.combine sends each row back and sums, per token, the rows "
        "from the ranks it was sent to, in token order: output[r, t] = sum over d with token_rows[r, t, d] >= 0 of "
        "sum_k recv_topk_weights[row, k] * expert_out[row, k], row = token_rows[r, t, d]. The rows are those of "
        f"{dispatch} (the same step's recv_topk_weights and token_rows, DeepEP's handle); a pick on another rank has "
        "weight 0 there, so its expert_out slot adds nothing. The same kernel as ep_combine_ep4_topk8_h2048 "
        "(Qwen3-30B-A3B at EP4) at 8 ranks and this hidden size. Modelled on one device as the all-reduce and "
        "all-gather are: the ranks' tensors side by side on a leading rank axis (every rank the same num_tokens, as a "
        "CUDA-graph-padded data-parallel decode step has them), and the received buffers of the 8 ranks concatenated "
        "in rank order. The definition fixes the result, shapes and bytes; a single-GPU benchmark times the local "
        "gather only, not the NVLink transfer of the real all-to-all (see the Models page). Numerics: products and "
        "both sums in float32, output rounded to bfloat16 once (the engines multiply and sum the picks in bfloat16; "
        "DeepEP sums the ranks in float32: the tolerance covers those roundings).")
    d["tags"] = [t.replace("model-alt:qwen3-30b-a3b-tp4", f"model-alt:{record}").replace("ep:4", "ep:8")
                 for t in d["tags"]]
    d["axes"]["ep_size"].update(value=8, description="Expert-parallel ranks taking part: 8.")
    d["axes"]["top_k"]["description"] = f"num_experts_per_tok = 8 ({source})."
    d["axes"]["hidden_size"].update(value=hidden, description=f"hidden_size = {hidden} ({source}).")
    return d


def files() -> dict:
    out = {}
    text = lambda x: json.dumps(x, indent=2, ensure_ascii=False) + "\n"  # noqa: E731
    mm = render_minimax_dispatch()
    out[f"definitions/moe/{mm['name']}.json"] = text(mm)
    out[f"einsums/moe/{mm['name']}.yaml"] = (DATASET / "einsums" / "moe" / f"{FP8_DISPATCH}.yaml").read_text("utf-8")
    sol = _load("solutions/baseline", FP8_DISPATCH)
    out[f"solutions/baseline/moe/{mm['name']}/{mm['name']}_torch.json"] = text(
        {**sol, "name": f"{mm['name']}_torch", "definition": mm["name"]})
    sol = _load("solutions/baseline", COMBINE)
    for hidden in COMBINE_TEXT:
        d = render_combine(hidden)
        out[f"definitions/moe/{d['name']}.json"] = text(d)
        out[f"einsums/moe/{d['name']}.yaml"] = (DATASET / "einsums" / "moe" / f"{COMBINE}.yaml").read_text("utf-8")
        out[f"solutions/baseline/moe/{d['name']}/{d['name']}_torch.json"] = text(
            {**sol, "name": f"{d['name']}_torch", "definition": d["name"]})
    return out


# --------------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------------

def _ids(ax, g, i):
    """Routing of one set: random distinct picks; set 0 leaves the last rank without a pick (it receives nothing);
    set 2 sends every pick of rank 0's tokens to the last rank and rank 2's first token only to rank 0."""
    ep, T, k, E = ax["ep_size"], ax["num_tokens"], ax["top_k"], ax["num_experts"]
    L = E // ep
    ids, weights = cf.ep_routing(ax, g)
    if i == 0:
        ids = torch.stack([torch.randperm(E - L, generator=g)[:k] for _ in range(ep * T)]).reshape(ep, T, k)
    if i == 2:
        ids[0] = (ep - 1) * L + torch.stack([torch.randperm(L, generator=g)[:k] for _ in range(T)])
        ids[2, 0] = torch.randperm(L, generator=g)[:k]
    ax["num_recv"] = int(cf.membership(ids, E).sum())
    return ids.to(torch.int64), weights.float()


def fp8_dispatch_inputs(ax, g, i):
    ids, weights = _ids(ax, g, i)
    x = torch.randn(ax["ep_size"], ax["num_tokens"], ax["hidden_size"], generator=g) * 100
    scale = torch.rand(ax["ep_size"], ax["num_tokens"], ax["num_scale_blocks"], generator=g) * 0.01 + 1e-4
    return {"x_fp8": x.clamp(-448, 448).to(torch.float8_e4m3fn), "x_scale": scale, "topk_ids": ids,
            "topk_weights": weights}


def fp8_dispatch_expected(ax, x):
    out = cf.dispatch_expected(ax, {"hidden_states": x["x_fp8"].float(), "topk_ids": x["topk_ids"],
                                    "topk_weights": x["topk_weights"]})
    pairs = cf.membership(x["topk_ids"], ax["num_experts"]).nonzero()
    r, t = pairs[:, 1], pairs[:, 2]
    return {"recv_x": out["recv_x"], "recv_x_scale": x["x_scale"].double()[r, t],
            **{k: v for k, v in out.items() if k != "recv_x"}}


def combine_inputs(ax, g, i):
    full = {**ax, "num_experts": 256}
    ids, weights = _ids(full, g, i)
    layout = cf.dispatch_expected(full, {"hidden_states": torch.zeros(ids.shape[0], ids.shape[1], 1),
                                         "topk_ids": ids, "topk_weights": weights})
    ax["num_recv"] = full["num_recv"]
    scale = [1.0, 30.0, 0.01][i % 3]
    expert_out = (torch.randn(ax["num_recv"], ax["top_k"], ax["hidden_size"], generator=g) * scale).bfloat16()
    return {"expert_out": expert_out, "recv_topk_weights": layout["recv_topk_weights"].float(),
            "token_rows": layout["token_rows"].to(torch.int32)}


FP8_SETS = [shrunk({"num_tokens": 1}, hidden_size=256, num_scale_blocks=2),
            shrunk({"num_tokens": 3}, hidden_size=384, num_scale_blocks=3),
            shrunk({"num_tokens": 5}, hidden_size=256, num_scale_blocks=2)]
COMBINE_SETS = [shrunk({"num_tokens": 1}, hidden_size=64), shrunk({"num_tokens": 3}, hidden_size=96),
                shrunk({"num_tokens": 5}, hidden_size=64)]
CASES = {
    FP8_DISPATCH: Case(FP8_SETS, fp8_dispatch_inputs, fp8_dispatch_expected),
    "ep_dispatch_fp8_ep8_e256_topk8_h3072": Case(FP8_SETS, fp8_dispatch_inputs, fp8_dispatch_expected),
    "ep_combine_ep8_topk8_h7168": Case(COMBINE_SETS, combine_inputs, cf.combine_expected),
    "ep_combine_ep8_topk8_h3072": Case(COMBINE_SETS, combine_inputs, cf.combine_expected),
}


def write(root: Path = DATASET) -> list:
    return write_files(files(), root)


if __name__ == "__main__":
    for p in write():
        print(f"wrote {p.relative_to(DATASET.parent)}")
