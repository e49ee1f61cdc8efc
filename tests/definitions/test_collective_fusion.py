"""The expert-parallel dispatch and combine workloads describe the same steps (reference_cases/collective_fusion.py
checks the definitions themselves; test_references.py plants their mistakes).

Each combine workload takes the dispatch's handle (token_rows) and received weights as blobs: they must be what the
dispatch reference delivers from the dispatch workload of the same step (same key), or the pair would benchmark two
different layers. The dispatch reference runs here at hidden_size 1 (it reads the width from its input), so the
index work is real and the check costs milliseconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

DATASET = Path(__file__).resolve().parents[2] / "dataset"
DISPATCH, COMBINE = "ep_dispatch_ep4_e128_topk8_h2048", "ep_combine_ep4_topk8_h2048"


def _workloads(name: str) -> list:
    lines = (DATASET / "workloads" / "moe" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["workload"] for line in lines if line.strip()]


def _blob(w: dict, name: str) -> torch.Tensor:
    spec = w["inputs"][name]
    return load_file(str(DATASET / spec["path"]))[spec["tensor_key"]]


def _reference(name: str):
    d = json.loads((DATASET / "definitions" / "moe" / f"{name}.json").read_text(encoding="utf-8"))
    namespace: dict = {}
    exec(compile(d["reference"], name, "exec"), namespace)
    return namespace["run"]


def _pairs():
    dispatch = _workloads(DISPATCH)
    combine = {(w["axes"]["num_tokens"], w["seed"]): w for w in _workloads(COMBINE)}  # the step: its size and seed
    assert len(dispatch) == len(combine) >= 5
    return [pytest.param(w, combine[(w["axes"]["num_tokens"], w["seed"])], id=f"t{w['axes']['num_tokens']}")
            for w in dispatch]


@pytest.mark.parametrize("dispatch_w, combine_w", _pairs())
def test_the_combine_workload_takes_what_the_dispatch_of_its_step_delivers(dispatch_w, combine_w):
    ids, weights = _blob(dispatch_w, "topk_ids"), _blob(dispatch_w, "topk_weights")
    ep, tokens, top_k = ids.shape
    assert ids.dtype == torch.int64 and ((ids >= 0) & (ids < 128)).all()
    assert all(len(set(row.tolist())) == top_k for row in ids.reshape(-1, top_k)), "a token picks an expert twice"
    assert torch.allclose(weights.sum(dim=-1), torch.ones(ep, tokens)), "the weights are renormalised over the picks"
    out = _reference(DISPATCH)(torch.zeros(ep, tokens, 1, dtype=torch.bfloat16), ids, weights)
    assert dispatch_w["axes"]["num_recv"] == combine_w["axes"]["num_recv"] == out["recv_src"].numel()
    assert torch.equal(_blob(combine_w, "token_rows"), out["token_rows"])
    assert torch.equal(_blob(combine_w, "recv_topk_weights"), out["recv_topk_weights"])
    # Every token reaches a rank, every row belongs to one token; some token is sent to two ranks or more.
    rows = out["token_rows"]
    sent = rows >= 0
    assert sent.any(dim=-1).all()
    assert torch.equal(torch.sort(rows[sent]).values, torch.arange(out["recv_src"].numel(), dtype=torch.int32))
    assert (sent.sum(dim=-1) > 1).any()
