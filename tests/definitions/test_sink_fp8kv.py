"""gpt-oss decode attention with sinks over an FP8 KV cache (tests/reference_cases/sink_fp8kv.py): the committed
definitions (siblings in dataset/families/) are their bfloat16 twins with the
caches as float8 codes plus two scales, and mistakes planted in the references fail the independent check on
exactly the sets that should catch them (test_references.py runs the references themselves).
"""

from __future__ import annotations

import pytest

from reference_cases import sink_fp8kv
from reference_check import assert_planted_mistake_fails, definition_named

FULL, SWA = sink_fp8kv.name(0), sink_fp8kv.name(sink_fp8kv.WINDOW)


def test_a_sink_fp8kv_kernel_is_its_bfloat16_twin_with_codes_and_scales():
    for window in (0, sink_fp8kv.WINDOW):
        d = definition_named(sink_fp8kv.name(window))
        t = definition_named(sink_fp8kv.twin(window))
        assert d["axes"] == t["axes"] and d["outputs"] == t["outputs"] and d["constraints"] == t["constraints"]
        assert list(d["inputs"]) == [*t["inputs"], "k_scale", "v_scale"]
        assert {n: s["dtype"] for n, s in d["inputs"].items() if s["dtype"] != t["inputs"].get(n, {}).get("dtype")} \
            == {"k_cache": "float8_e4m3", "v_cache": "float8_e4m3", "k_scale": "float32", "v_scale": "float32"}
        # The reference is the twin's with the signature's two scales and the dequantising conversions.
        twin_lines = [line for line in t["reference"].splitlines() if "def run(" not in line]
        missing = [line for line in twin_lines if line not in d["reference"].splitlines()
                   and ".to(torch.float32, memory_format=torch.contiguous_format)" not in line]
        assert not missing, missing
        assert f"window = {window}  #" in d["reference"]


PLANTED = [
    # The sink left out of the denominator: set 2's sinks are -30 (no effect), where it is moot.
    (FULL, "denom = exp_sum + torch.exp(sink - row_max)", "denom = exp_sum", [0, 1]),
    (SWA, "denom = exp_sum + torch.exp(sink - row_max)", "denom = exp_sum", [0, 1]),
    # The sink multiplied by sm_scale like the logits.
    (FULL, "sink = sinks.to(torch.float32)", "sink = sinks.to(torch.float32) * scale", [0, 1]),
    # The value scale applied twice (once more after the weighted sum): every set has v_scale != 1.
    (FULL, "output = output / denom[:, :, None]", "output = output * v_scale / denom[:, :, None]", [0, 1, 2]),
    (SWA, "output = output / denom[:, :, None]", "output = output * v_scale / denom[:, :, None]", [0, 1, 2]),
    # The key scale applied twice: set 2 has k_scale = 1.0 (a checkpoint without scales), where it is moot.
    (SWA, "contiguous_format) * k_scale", "contiguous_format) * k_scale * k_scale", [0, 1]),
    # The value scale dropped.
    (FULL, "contiguous_format) * v_scale", "contiguous_format)", [0, 1, 2]),
    # The window one key too wide or too narrow: sets 1 and 2 have sequences longer than 128 (130, 300, 129).
    (SWA, "torch.clamp(kv_len - window, min=0)", "torch.clamp(kv_len - window - 1, min=0)", [1, 2]),
    (SWA, "torch.clamp(kv_len - window, min=0)", "torch.clamp(kv_len - window + 1, min=0)", [1, 2]),
]


@pytest.mark.parametrize("name, right, wrong, failing", PLANTED, ids=[f"{p[0]}-{i}" for i, p in enumerate(PLANTED)])
def test_planted_sink_fp8kv_mistakes_fail(name, right, wrong, failing, one_torch_thread):
    assert_planted_mistake_fails(name, right, wrong, failing)
