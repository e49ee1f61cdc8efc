"""Mistakes planted in the references of the serving-family definitions (reference_cases/serving_families.py)
fail their independent checks, on exactly the input sets that should catch them: the checks have teeth.

The same machinery as test_references.py's PLANTED list (kept here so that these definitions' plants live
beside each other); each entry says why the sets it names catch it and the others do not.
"""

from __future__ import annotations

import pytest
import torch
from test_references import DEFINITION_FILES, InputSets, check_outputs, load_definition

PLANTED = [
    # The value scale dropped: every set has v_scale != 1.
    ("gqa_paged_decode_fp8kv_h32_kv8_d128_ps16", "[:kv_len].to(torch.float32) * v_scale", "[:kv_len].to(torch.float32)",
     [0, 1, 2]),
    # The key scale dropped: set 2 has k_scale = 1.0 (vLLM's value for a checkpoint without scales), where it is moot.
    ("gqa_paged_decode_fp8kv_h32_kv8_d128_ps16", "[:kv_len].to(torch.float32) * k_scale", "[:kv_len].to(torch.float32)",
     [0, 1]),
    # The base-2 lse merged in natural log: wrong wherever both parts carry weight (every set).
    ("merge_state_h32_d128", "s_merged = s_max + torch.log2(denom)", "s_merged = s_max + torch.log(denom)", [0, 1, 2]),
    # The parts' weights swapped: wrong unless the two lse are equal; set 2's are equal or one ulp apart (even
    # weights), where swapping them is harmless.
    ("merge_state_h32_d128", "v_a.to(torch.float32) * (w_a / denom)", "v_a.to(torch.float32) * (w_b / denom)",
     [0, 1]),
    # The prefix left out of the sequence's length: it attends to its first own_len tokens only.
    ("gqa_cascade_decode_h32_kv8_d128_ps16", "kv_len = shared.numel() * page_size + own_len", "kv_len = own_len",
     [0, 1, 2]),
    # The repetition penalty's two branches swapped (positive logits multiplied): every set has a seen token with a
    # positive logit in a row whose repetition penalty is not 1.
    ("logits_penalties_v128256", "torch.where(row > 0, row / r, row * r)", "torch.where(row > 0, row * r, row / r)",
     [0, 1, 2]),
    # The presence penalty charged for prompt tokens too: the prompts hold tokens the outputs do not (set 0's one
    # row, whose presence penalty is 0.5, included).
    ("logits_penalties_v128256", "presence_penalties[b].to(torch.float32) * in_output.to(torch.float32)",
     "presence_penalties[b].to(torch.float32) * seen.to(torch.float32)", [0, 1, 2]),
    # min_p taken as an absolute probability threshold instead of relative to the most likely token's.
    ("min_p_logits_v128256", "threshold = probs.max() * min_p[b].to(torch.float32)",
     "threshold = min_p[b].to(torch.float32)", [0, 1, 2]),
    # Ties with the threshold filtered too: only the min_p = 1.0 row (sets 1 and 2) keeps a token exactly at it.
    ("min_p_logits_v128256", "torch.where(probs < threshold,", "torch.where(probs <= threshold,", [1, 2]),
]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("name, right, wrong, failing", PLANTED, ids=[f"{p[0]}-{i}" for i, p in enumerate(PLANTED)])
def test_planted_reference_mistakes_fail(name, right, wrong, failing):
    [path] = [p for p in DEFINITION_FILES if p.stem == name]
    d = load_definition(path)
    assert d["reference"].count(right) == 1, f"{name}: the planted mistake no longer applies; plant another"
    planted = InputSets({**d, "reference": d["reference"].replace(right, wrong)})
    caught = []
    for index in range(len(planted.case.sizes)):
        axes, inputs, expected = planted[index]
        try:
            check_outputs(planted.reference_outputs(index), planted.definition, axes, expected, "planted reference")
        except AssertionError:
            caught.append(index)
    assert caught == failing, f"{name} with {wrong!r}: the check fails on sets {caught}, expected {failing}"


def test_the_bench_check_allows_no_error_where_the_expected_value_is_infinite():
    """A masked logit (-inf, min_p_logits_v128256's filtered tokens) must come back -inf: rtol * |inf| once allowed
    any finite value there, so a min-p kernel that filtered nothing passed."""
    from generator.bench.check import compare

    d = {"name": "masked", "outputs": {"o": {"shape": ["n"], "dtype": "float32"}}}
    expected = {"o": torch.tensor([float("-inf"), 1.0, float("-inf")])}
    axes = {"n": 3}
    assert compare(d, {"o": expected["o"].clone()}, expected, axes).ok
    assert compare(d, {"o": torch.tensor([float("-inf"), 1.00001, float("-inf")])}, expected, axes).ok
    for wrong in ([0.0, 1.0, float("-inf")], [-1e30, 1.0, float("-inf")], [float("inf"), 1.0, float("-inf")]):
        assert not compare(d, {"o": torch.tensor(wrong)}, expected, axes).ok, wrong
