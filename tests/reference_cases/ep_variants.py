"""Expert-parallel dispatch and combine at EP8 for DeepSeek-V3 and MiniMax-M2 (issue #26), DeepEP normal mode.

- ep_dispatch_fp8_ep8_e256_topk8_h7168 (DeepSeek-V3): the dispatch with an FP8 payload (e4m3 values and float32
  per-128-column scales, as SGLang's and vLLM's DeepEP paths send a block-FP8 model's tokens). Its own definition
  (the layout of ep_dispatch_ep4_e128_topk8_h2048, the scales travelling beside the values), checked here in full.
- ep_dispatch_fp8_ep8_e256_topk8_h3072 (MiniMax-M2), ep_combine_ep8_topk8_h7168 / _h3072: siblings of a template
  with other constants and text, rendered by `kerneltrace definitions` from dataset/families/ep_variants_*.json.

The checks: collective_fusion.py's independent formulations (one
nonzero() over the [destination, source, token] membership; a dense token x row matrix for the combine), at the
real ep, experts and top_k, hidden_size shrunk (a copy and a weighted sum are the same at any width).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from . import collective_fusion as cf
from .common import Case, shrunk

DATASET = Path(__file__).resolve().parents[2] / "dataset"
FP8_DISPATCH = "ep_dispatch_fp8_ep8_e256_topk8_h7168"
COMBINE = "ep_combine_ep4_topk8_h2048"


def _load(kind: str, name: str) -> dict:
    return json.loads((DATASET / kind / "moe" / f"{name}.json").read_text(encoding="utf-8")) if kind == "definitions" \
        else json.loads((DATASET / kind / "moe" / name / f"{name}_torch.json").read_text(encoding="utf-8"))


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

