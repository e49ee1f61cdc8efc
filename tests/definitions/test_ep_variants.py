"""The EP8 dispatch / combine (tests/reference_cases/ep_variants.py, rendered from dataset/families/): the MiniMax-M2 FP8 dispatch is DeepSeek-V3's with another hidden size (its reference differs in a comment line), and
mistakes planted in the FP8 dispatch's reference fail its check (collective_fusion.py's formulation)."""

from __future__ import annotations

import pytest

from reference_cases import ep_variants
from reference_check import InputSets, check_outputs


def test_variants_keep_their_templates_mathematics():
    """The siblings (dataset/families/ep_variants_*.json): the MiniMax-M2 FP8 dispatch is DeepSeek-V3's with another
    hidden size, its reference differing in the comment that names the expert count's source; the EP8 combines are
    the EP4 template's reference, inputs and outputs."""
    t = ep_variants._load("definitions", ep_variants.FP8_DISPATCH)
    mm = ep_variants._load("definitions", "ep_dispatch_fp8_ep8_e256_topk8_h3072")
    assert mm["reference"] == t["reference"].replace("n_routed_experts of deepseek-ai/DeepSeek-V3",
                                                     "num_local_experts of MiniMaxAI/MiniMax-M2")
    assert {n: s["shape"] for n, s in mm["inputs"].items()} == {n: s["shape"] for n, s in t["inputs"].items()}
    changed = {a for a, s in mm["axes"].items() if s.get("value") != t["axes"][a].get("value")}
    assert changed == {"hidden_size", "num_scale_blocks"}
    c = ep_variants._load("definitions", ep_variants.COMBINE)
    for name in ("ep_combine_ep8_topk8_h7168", "ep_combine_ep8_topk8_h3072"):
        d = ep_variants._load("definitions", name)
        assert d["reference"] == c["reference"] and d["inputs"] == c["inputs"] and d["outputs"] == c["outputs"]


PLANTED = [
    # The scales taken from the destination rank's tokens instead of travelling with the values: every set.
    ("recv_x_scale.append(x_scale[src][sent])", "recv_x_scale.append(x_scale[dst % ep_size][sent])", [0, 1, 2]),
    # 128 experts (16 per rank) instead of 256: every set's picks land on the wrong ranks.
    ("num_experts = 256  #", "num_experts = 128  #", [0, 1, 2]),
]


@pytest.mark.parametrize("right, wrong, failing", PLANTED)
def test_planted_dispatch_mistakes_fail(right, wrong, failing):
    d = ep_variants._load("definitions", ep_variants.FP8_DISPATCH)
    assert d["reference"].count(right) == 1
    planted = InputSets({**d, "reference": d["reference"].replace(right, wrong)})
    caught = []
    for index in range(3):
        axes, _, expected = planted[index]
        try:
            check_outputs(planted.reference_outputs(index), planted.definition, axes, expected, "planted")
        except (AssertionError, RuntimeError, IndexError):
            caught.append(index)
    assert caught == failing


@pytest.mark.parametrize("dispatch, combine", [("ep_dispatch_fp8_ep8_e256_topk8_h7168", "ep_combine_ep8_topk8_h7168"),
                                               ("ep_dispatch_fp8_ep8_e256_topk8_h3072", "ep_combine_ep8_topk8_h3072")])
def test_each_combine_workload_takes_what_the_dispatch_of_its_step_delivers(dispatch, combine):
    import torch
    from test_collective_fusion import _blob, _workloads

    ns: dict = {}
    exec(compile(ep_variants._load("definitions", dispatch)["reference"], dispatch, "exec"), ns)
    combines = {(w["axes"]["num_tokens"], w["seed"]): w for w in _workloads(combine)}
    dispatches = _workloads(dispatch)
    assert len(dispatches) == len(combines) >= 3
    for w in dispatches:
        c = combines[(w["axes"]["num_tokens"], w["seed"])]
        ids, weights = _blob(w, "topk_ids"), _blob(w, "topk_weights")
        ep, tokens, _ = ids.shape
        out = ns["run"](torch.zeros(ep, tokens, 1, dtype=torch.float8_e4m3fn), torch.ones(ep, tokens, 1), ids, weights)
        assert w["axes"]["num_recv"] == c["axes"]["num_recv"] == out["recv_src"].numel()
        assert torch.equal(_blob(c, "token_rows"), out["token_rows"])
        assert torch.equal(_blob(c, "recv_topk_weights"), out["recv_topk_weights"])
