"""The structured input distributions of generator/bench/shared/inputs.py against independent formulations:
the RoPE caches against the engines' formulas written out per frequency in numpy, block-FP8 values
against their scales, peaked probabilities and skewed router logits against what they promise; the seeds and blobs of a workload's
inputs, and a blob-only definition's rows drawn in a fresh order every call."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from generator.bench import run_bench
from generator.bench.shared import inputs as bench_inputs
from generator.bench.shared.inputs import distribution_of, draw, input_recipes, make_inputs

from dataset_factory import DEFINITION, WORKLOAD, dump, dump_lines, write_dataset
from planted import DATASET, FAST, text


def _cache(rows: int, dim: int, **rope) -> torch.Tensor:
    recipe = {"distribution": "rope_cos_sin", **distribution_of("c", {"dtype": "float32", "random": {
        "distribution": "rope_cos_sin", **rope}}), "dtype": "float32", "shape": [rows, dim], "seed": 0}
    return draw(recipe)


def _cos_sin(inv_freq: np.ndarray, rows: int, attention: float = 1.0) -> np.ndarray:
    t = np.arange(rows, dtype=np.float64)[:, None] * inv_freq[None, :]
    return np.concatenate([np.cos(t), np.sin(t)], axis=-1) * attention


def test_llama3_cache_is_the_llama3_scaling_of_the_config():
    # transformers' _compute_llama3_parameters, one frequency at a time (Llama-3.1-8B config.json).
    base, dim, factor, low, high, original = 500000.0, 128, 8.0, 1.0, 4.0, 8192
    expected = []
    for i in range(0, dim, 2):
        freq = 1.0 / base ** (i / dim)
        wavelen = 2 * math.pi / freq
        if wavelen < original / high:
            expected.append(freq)
        elif wavelen > original / low:
            expected.append(freq / factor)
        else:
            smooth = (original / wavelen - low) / (high - low)
            expected.append((1 - smooth) * freq / factor + smooth * freq)
    got = _cache(9000, dim, theta=base, rope_type="llama3", factor=factor, low_freq_factor=low,
                 high_freq_factor=high, original_max_position=original)
    assert got.dtype == torch.float32 and got.shape == (9000, 128)
    np.testing.assert_allclose(got.double().numpy(), _cos_sin(np.array(expected), 9000), atol=2e-7)
    # The scaling is there: not the plain cache of the same theta.
    plain = _cache(9000, dim, theta=base)
    assert (got - plain).abs().max() > 0.5


@pytest.mark.parametrize("mscale,mscale_all_dim,truncate,attention", [
    (1.0, 1.0, True, 1.0),  # DeepSeek-V3: mscale = mscale_all_dim = 1, so cos/sin are not scaled
    (1.0, 0.0, False, 0.1 * math.log(32.0) + 1.0),  # gpt-oss style: plain YaRN factor, no truncation
])
def test_yarn_cache_follows_the_correction_range_and_ramp(mscale, mscale_all_dim, truncate, attention):
    base, dim, factor, original, fast, slow = 10000.0, 64, 32.0, 4096, 32.0, 1.0

    def correction_dim(rotations):
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    lo, hi = correction_dim(fast), correction_dim(slow)
    if truncate:
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, dim - 1)
    expected = []
    for j in range(dim // 2):
        pos_freq = base ** (2 * j / dim)
        ramp = min(max((j - lo) / (hi - lo), 0.0), 1.0)
        keep = 1.0 - ramp  # share of the extrapolated (original) frequency
        expected.append((1.0 / (factor * pos_freq)) * (1 - keep) + (1.0 / pos_freq) * keep)
    got = _cache(5000, dim, theta=base, rope_type="yarn", factor=factor, original_max_position=original,
                 beta_fast=fast, beta_slow=slow, mscale=mscale, mscale_all_dim=mscale_all_dim, truncate=truncate)
    np.testing.assert_allclose(got.double().numpy(), _cos_sin(np.array(expected), 5000, attention), atol=3e-7)


def test_linear_rope_divides_positions_by_the_factor():
    got = _cache(100, 128, theta=1e6, rope_type="linear", factor=8.0)
    inv = 1.0 / 1e6 ** (np.arange(0, 128, 2) / 128)
    np.testing.assert_allclose(got.double().numpy(), _cos_sin(inv / 8.0, 100), atol=2e-7)


def test_fp8_blocks_span_the_range_and_scales_belong_to_the_same_draw():
    definition = {"axes": {"M": {"type": "var"}, "K": {"type": "const", "value": 320},
                           "KB": {"type": "const", "value": 3}},
                  "inputs": {"A": {"shape": ["M", "K"], "dtype": "float8_e4m3",
                                   "random": {"distribution": "fp8_blockwise", "block": [1, 128], "std": 2.0}},
                             "A_scale": {"shape": ["KB", "M"], "dtype": "float32",
                                         "random": {"distribution": "fp8_block_scale", "of": "A", "order": [1, 0]}}}}
    workload = {"axes": {"M": 5}, "inputs": {"A": {"type": "random"}, "A_scale": {"type": "random"}}, "seed": 11}
    made = make_inputs(definition, workload)
    q, scale = made["A"].float(), made["A_scale"].T  # [5, 320], [5, 3]
    for b in range(3):  # 128, 128 and a partial block of 64
        block = q[:, b * 128:(b + 1) * 128]
        assert (block.abs().amax(-1) == 448).all()
    # The real values: the generator of A, std 2 as its distribution says.
    recipe = input_recipes(definition, workload)
    assert recipe["A_scale"]["seed"] == recipe["A"]["seed"]
    x = 2.0 * torch.randn(5, 320, generator=torch.Generator().manual_seed(recipe["A"]["seed"]))
    amax = torch.stack([x[:, b * 128:(b + 1) * 128].abs().amax(-1) for b in range(3)], -1)
    assert torch.equal(scale, amax / 448)
    dequant = q * scale.repeat_interleave(128, -1)[:, :320]
    assert ((dequant - x).abs() <= x.abs() / 16 + 1e-3 * amax.max()).all()  # e4m3: 3 mantissa bits
    # A timing set (index 1) is a new draw, its scales again its own.
    other = make_inputs(definition, workload, index=1)
    assert not torch.equal(other["A"].float(), q) and (other["A"].float().abs().amax(-1) == 448).all()


def test_a_scale_whose_shape_is_not_the_block_grid_is_refused():
    definition = {"axes": {"M": {"type": "var"}, "KB": {"type": "const", "value": 2}},
                  "inputs": {"A": {"shape": ["M", "M"], "dtype": "float8_e4m3",
                                   "random": {"distribution": "fp8_blockwise", "block": [1, 128]}},
                             "S": {"shape": ["M", "KB"], "dtype": "float32",
                                   "random": {"distribution": "fp8_block_scale", "of": "A"}}}}
    with pytest.raises(ValueError, match="not the block grid"):
        input_recipes(definition, {"axes": {"M": 512}, "inputs": {"A": {"type": "random"}, "S": {"type": "random"}}})


def test_peaked_probs_keep_a_handful_where_softmax_of_randn_keeps_thousands():
    def kept(kind, **params):
        x = draw({"distribution": kind, **params, "dtype": "float32", "shape": [64, 128256], "seed": 5})
        assert (x >= 0).all() and torch.allclose(x.sum(-1), torch.ones(64), atol=1e-5)
        ordered = x.double().sort(-1, descending=True).values
        return (ordered.cumsum(-1) - ordered < 0.9).sum(-1)

    peaked = kept("power_law_probs", low=1.4, high=2.5)
    assert peaked.max() < 400 and peaked.median() < 30
    assert kept("softmax_normal", scale=3.0).min() > 1000


def test_peaked_probs_drawn_on_an_accelerator_are_the_same_rows_in_another_order():
    """The bench draws a sampler's probs per call on its device (ON_DEVICE): each row's permutation there is the argsort
    of uniform draws (the CPU's randperm loop took 1.1 s for 64 x 201088), the row's values the CPU's law. Run here
    through the device path on the CPU: the same exponents (the same values, sorted), every row a permutation of its own."""
    recipe = {"distribution": "power_law_probs", "low": 1.4, "high": 2.5, "dtype": "float32", "shape": [8, 3000], "seed": 4}
    assert "power_law_probs" in bench_inputs.ON_DEVICE
    cpu = draw(recipe)
    g = torch.Generator().manual_seed(4)
    device = bench_inputs._power_law_probs(g, (8, 3000), 1.4, 2.5, {"device": "cpu"}).float()
    assert torch.equal(cpu.sort(-1).values, device.sort(-1).values) and not torch.equal(cpu, device)
    top = device.argmax(-1)
    assert len(set(top.tolist())) > 4  # each row its own permutation, not one shared order


def test_router_logits_favour_the_same_hot_experts_for_every_token():
    logits = draw({"distribution": "skewed_logits", "alpha": 0.6, "dtype": "float32", "shape": [4096, 128], "seed": 2})
    counts = torch.bincount(logits.topk(8, -1).indices.flatten(), minlength=128).double()
    flat = draw({"distribution": "normal", "mean": 0.0, "std": 1.0, "dtype": "float32", "shape": [4096, 128],
                 "seed": 2})
    flat_counts = torch.bincount(flat.topk(8, -1).indices.flatten(), minlength=128).double()
    assert counts.max() / counts.mean() > 3 and flat_counts.max() / flat_counts.mean() < 1.5


def test_distribution_parameters_are_checked():
    with pytest.raises(ValueError, match="rope_type"):
        distribution_of("c", {"dtype": "float32", "random": {"distribution": "rope_cos_sin", "theta": 1.0,
                                                              "rope_type": "ntk"}})
    with pytest.raises(ValueError, match="missing theta"):
        distribution_of("c", {"dtype": "float32", "random": {"distribution": "rope_cos_sin"}})
    assert bench_inputs.default_distribution("probs", "float32")["distribution"] == "power_law_probs"


def test_inputs_are_seeded_and_sets_differ(tmp_path):
    root = write_dataset(tmp_path)
    d, w = DEFINITION, WORKLOAD["workload"]
    a, b = make_inputs(d, w, root, 0, "cpu"), make_inputs(d, w, root, 0, "cpu")
    c = make_inputs(d, w, root, 1, "cpu")
    assert torch.equal(a["input"], b["input"]) and not torch.equal(a["input"], c["input"])
    assert a["input"].dtype == torch.float16 and a["input"].shape == (4, 128) and a["eps"] == 1e-5
    blob_w = json.loads((root / "workloads/norm/rmsnorm_h128.jsonl").read_text().splitlines()[1])["workload"]
    blob = make_inputs(d, blob_w, root, 0, "cpu")
    assert torch.equal(blob["input"], make_inputs(d, blob_w, root, 2, "cpu")["input"])  # blobs do not vary


def test_special_input_distributions(tmp_path):
    d = {"name": "x", "axes": {"b": {"type": "const", "value": 3}, "v": {"type": "const", "value": 50}},
         "inputs": {"probs": {"shape": ["b", "v"], "dtype": "float32"},
                    "a_scale": {"shape": ["b"], "dtype": "float32"},
                    "q": {"shape": ["b", "v"], "dtype": "float8_e4m3"}}}
    w = {"axes": {}, "inputs": {k: {"type": "random"} for k in d["inputs"]}, "seed": 1}
    x = make_inputs(d, w, tmp_path, 0, "cpu")
    assert torch.allclose(x["probs"].sum(-1), torch.ones(3)) and (x["probs"] >= 0).all()
    assert (x["a_scale"] > 0).all()
    assert torch.isfinite(x["q"].float()).all()


def test_a_blob_only_definition_gives_every_call_fresh_rows(bench_root):
    """A definition whose inputs are all blobs (a captured routing) handed every call the same tensors, so computing
    once gained 13x-110x. Each call now takes the blob's rows (tokens) in a secret order of its own: an answer
    computed once is wrong for the next call, while an honest solution passes."""
    import shutil

    name = "moe_pack_bitmatrix_e32_topk4"
    root = bench_root
    for rel in (f"definitions/routing/{name}.json", f"einsums/routing/{name}.yaml"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATASET / rel, root / rel)
    lines = [json.loads(x) for x in (DATASET / f"workloads/routing/{name}.jsonl").read_text().splitlines()]
    [w] = sorted(lines, key=lambda w: -w["workload"]["axes"]["num_tokens"])[:1]
    blob = w["workload"]["inputs"]["topk_ids"]["path"]
    (root / blob).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATASET / blob, root / blob)
    dump_lines(root / f"workloads/routing/{name}.jsonl", [w])
    honest = json.loads((DATASET / f"solutions/baseline/routing/{name}/{name}_torch.json").read_text())
    body = honest["sources"][0]["content"]
    entry = honest["spec"]["entry_point"].split("::")[1]
    once = body + "\n" + text("computes_once", entry=entry)
    for sol, src, ep in (("honest_rows", body, entry), ("computes_once", once, "once")):
        data = json.loads(json.dumps(honest))
        data.update(name=sol, author="rows")
        data["sources"][0]["content"] = src
        data["spec"]["entry_point"] = data["spec"]["entry_point"].split("::")[0] + "::" + ep
        data["spec"]["target_hardware"] = ["cpu"]
        dump(root / f"solutions/rows/routing/{name}/{sol}.json", data)
    summary = run_bench(root, device="cpu", definitions=[name], timeout_s=30, timing=FAST, progress=False)
    got = {o.pair.solution.name: o for o in summary.outcomes}
    assert got["honest_rows"].status == "PASSED", got["honest_rows"].log[-400:]
    assert got["computes_once"].status == "INCORRECT_NUMERICAL", (got["computes_once"].status, got["computes_once"].log[-400:])


def test_a_seedless_input_is_drawn_once_per_workload_and_each_call_gets_its_own_copy(monkeypatch):
    """A rope cos/sin cache is the same for every seed (SEEDLESS): the worker draws it once per workload (a 32k-row
    cache cost 90 ms of every call) and hands each call a copy of the documented values; seeded inputs stay per call."""
    from generator.bench.sandboxed import worker

    drawn: list[str] = []
    monkeypatch.setattr(worker, "draw", lambda recipe, device: drawn.append(recipe["distribution"]) or draw(recipe, device))
    session = worker.Session({"device": "cpu", "output_names": ["o"]})
    session.order, session.fixed = ["cache", "x"], {}
    cache = {"distribution": "rope_cos_sin", **distribution_of("c", {"dtype": "float32", "random": {
        "distribution": "rope_cos_sin", "theta": 10000.0}}), "dtype": "float32", "shape": [64, 16]}
    x = {"distribution": "normal", "mean": 0.0, "std": 1.0, "dtype": "float32", "shape": [4]}
    calls = [session.inputs({"recipes": {"cache": {**cache, "seed": s}, "x": {**x, "seed": s}}}) for s in (1, 2, 3)]
    assert drawn.count("rope_cos_sin") == 1 and drawn.count("normal") == 3
    assert all(torch.equal(c[0], draw({**cache, "seed": 9})) for c in calls)
    assert len({c[0].data_ptr() for c in calls}) == 3 and not torch.equal(calls[0][1], calls[1][1])
    calls[0][0].zero_()  # a call that writes its copy changes no other call's
    assert torch.equal(calls[1][0], draw({**cache, "seed": 9}))
