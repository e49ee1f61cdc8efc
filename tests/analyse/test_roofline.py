"""Speed-of-light numbers against hand computations.

Every expected number below is worked out in the comment beside it from the definition's shapes,
not from the code under test.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from generator.analyse.roofline import peak_tflops, roofline_rows, sol_percent, sol_score, speed_of_light, trace_sol
from generator.einsum import count, load_cascade, parse_cascade, workload_counts
from generator.load import DEFAULT_DATASET, load
from generator.model.records import HardwareSpec, Source

from dataset_factory import write_dataset


@pytest.fixture(scope="module")
def ds():
    return load(DEFAULT_DATASET)


def hw(name="test", peaks=None, bandwidth=100.0):
    """A made-up machine: 1 TFLOPS bfloat16, 0.5 TFLOPS float32, 100 GB/s unless told."""
    peaks = peaks or {"bfloat16": 1.0, "float32": 0.5}
    data = {"name": name, "kind": "gpu", "peak_tflops": peaks, "memory_bandwidth_gb_s": bandwidth, "source": "test"}
    return HardwareSpec.from_data(data, Source(f"hardware/{name}.json"))


GEMM = """
workload:
  rank_sizes: {M: {{ M }}, N: {{ N }}, K: {{ K }}}
  einsums:
  - name: Matmul
    tensor_accesses:
    - {name: A, projection: [m, k]}
    - {name: B, projection: [n, k]}
    - {name: C, projection: [m, n], output: true}
"""


def test_gemm_flops_and_bytes_by_hand():
    c = count(load_cascade(GEMM, {"M": 4, "N": 6, "K": 8}), {"A": "bfloat16", "B": "bfloat16", "C": "float32"})
    assert c.macs == 4 * 6 * 8 == 192
    assert c.flops == 2 * 4 * 6 * 8 == 384
    # (M*K + N*K) * 2 bytes in + M*N * 4 bytes out = (32 + 48) * 2 + 24 * 4 = 256
    assert c.bytes == 256
    assert c.intensity == pytest.approx(384 / 256)
    [e] = c.einsums
    assert (e.kind, e.dtype) == ("contraction", "bfloat16")
    s = speed_of_light(c, hw())
    assert s.compute_s == pytest.approx(384 / 1e12)  # bfloat16 peak 1 TFLOPS
    assert s.memory_s == pytest.approx(256 / 100e9)  # 2.56 ns
    assert (s.bound, s.t_sol_s) == ("memory", pytest.approx(2.56e-9))


def test_gemm_becomes_compute_bound_when_large():
    # M = N = K = 4096 in bfloat16: 2 * 4096^3 = 137.4 GFLOP; bytes 3 * 4096^2 * 2 = 100.7 MB.
    c = count(load_cascade(GEMM, {"M": 4096, "N": 4096, "K": 4096}), dict.fromkeys("ABC", "bfloat16"))
    assert c.flops == 2 * 4096**3 and c.bytes == 3 * 4096**2 * 2
    s = speed_of_light(c, hw(peaks={"bfloat16": 989.4, "float32": 66.9}, bandwidth=3350))
    assert s.bound == "compute" and s.t_sol_s == pytest.approx(2 * 4096**3 / 989.4e12)


def test_dataset_gemm_matches_formula(ds):
    d = ds.definitions["gemm_n4096_k4096"]
    c = workload_counts(ds, d, {"M": 1})
    assert c.flops == 2 * 1 * 4096 * 4096 == 33_554_432
    # (M*K + N*K) * 2 + M*N * 2 = (4096 + 16_777_216) * 2 + 8192
    assert c.bytes == 33_570_816


def test_gqa_decode_is_dominated_by_the_kv_cache(ds):
    d = ds.definitions["gqa_paged_decode_h32_kv8_d128_ps16"]
    axes = {"batch_size": 1, "num_pages": 2560, "len_indptr": 2, "num_kv_indices": 2048}
    c = workload_counts(ds, d, axes)
    by_name = {t.name: t for t in c.tensors}
    kv = 2048 * 16 * 8 * 128 * 2  # pages listed x page_size x kv heads x head_dim x bf16: 67_108_864 each
    assert by_name["k_cache"].bytes == kv and by_name["v_cache"].bytes == kv
    # q 32*128*2 = 8192, output 8192, lse 32*4 = 128, kv_indptr 2*4, kv_indices 2048*4, kv_last_page_len 4, sm_scale 4
    assert c.bytes == 2 * kv + 8192 + 8192 + 128 + 8 + 8192 + 4 + 4 == 134_242_448
    assert (by_name["k_cache"].bytes + by_name["v_cache"].bytes) / c.bytes > 0.999
    # QK and PV: 2 * 32768 tokens * 32 heads * 128 each; softmax 32768 * 32; log-sum-exp 2 * 32768 * 32
    assert c.flops == 2 * (2 * 32768 * 32 * 128) + 32768 * 32 + 2 * 32768 * 32 == 540_016_640
    # Intensity ~4 FLOP/B: memory-bound everywhere, the roofline's ridge is in the hundreds.
    for spec in ds.hardware.values():
        assert speed_of_light(c, spec).bound == "memory", spec.name
    h100 = speed_of_light(c, ds.hardware["H100_SXM"])
    assert h100.t_sol_s == pytest.approx(134_242_448 / 3350e9)  # 40.07 us


def test_rmsnorm_is_memory_bound(ds):
    d = ds.definitions["rmsnorm_h4096"]
    c = workload_counts(ds, d, {"batch_size": 8})
    # hidden_states 8*4096*2 + weight 4096*2 + output 8*4096*2
    assert c.bytes == 65_536 + 8192 + 65_536 == 139_264
    # sum of squares 2 * 8 * 4096 (square and add) + normalise 8 * 4096
    assert c.flops == 65_536 + 32_768 == 98_304
    assert c.intensity < 1
    for spec in ds.hardware.values():
        assert speed_of_light(c, spec).bound == "memory", spec.name


def test_fp8_block_scaled_gemm_counts_the_scales(ds):
    d = ds.definitions["gemm_fp8_block128_n2112_k7168"]
    c = workload_counts(ds, d, {"M": 4})
    by_name = {t.name: t.bytes for t in c.tensors if t.counted}
    assert by_name == {
        "A": 4 * 7168 * 1,  # float8: 28_672
        "B": 2112 * 7168 * 1,  # 15_138_816
        "A_scale": 4 * 56 * 4,  # [M, K / 128] float32: 896
        "B_scale": 17 * 56 * 4,  # [ceil(2112 / 128), 56] float32: 3808
        "C": 4 * 2112 * 2,  # bfloat16: 16_896
    }
    assert c.bytes == 15_189_088
    matmul, scale = c.einsums
    assert (matmul.kind, matmul.dtype, matmul.flops) == ("contraction", "float8_e4m3", 2 * 4 * 2112 * 7168)
    assert (scale.dtype, scale.flops) == ("float32", 2 * 4 * 2112 * 56)
    # On the H100 the FP8 product runs at 1978.9 TFLOPS and the scaling at the 66.9 TFLOPS FP32 rate.
    s = speed_of_light(c, ds.hardware["H100_SXM"])
    assert s.compute_s == pytest.approx(121_110_528 / 1978.9e12 + 946_176 / 66.9e12)
    # A100 has no FP8 units: the product falls back to its BF16 rate.
    assert dict(speed_of_light(c, ds.hardware["A100"]).dtypes)["float8_e4m3"] == "bfloat16"


def test_causal_prefill_counts_the_triangle(ds):
    d = ds.definitions["gqa_ragged_prefill_causal_h32_kv8_d128"]

    def qk_macs(total_q, total_kv, batch):
        c = workload_counts(ds, d, {"total_q": total_q, "total_kv": total_kv, "batch_size": batch,
                                    "len_indptr": batch + 1})
        return next(e.macs for e in c.einsums if e.name == "QK")

    per_pair = 32 * 128  # query heads x head_dim
    assert qk_macs(4, 4, 1) == (1 + 2 + 3 + 4) * per_pair  # query i sees keys 0..i
    assert qk_macs(8, 8, 2) == 2 * 10 * per_pair  # two sequences of 4
    assert qk_macs(2, 4, 1) == (3 + 4) * per_pair  # 2 new tokens behind 2 cached: see 3 and 4 keys
    # Non-causal dense GQA for comparison: every query meets every key.
    g = workload_counts(ds, ds.definitions["gqa_hr4_dqk128_dvo128"], {"B": 1, "Q": 4, "KV": 4, "H_qo": 32, "H_kv": 8})
    assert next(e.macs for e in g.einsums if e.name == "QK") == 16 * per_pair


def test_copies_and_persistent_tensors():
    text = """
workload:
  rank_sizes: {M: 8, K: 4}
  n_instances: 3
  bits_per_value: {All: 16}
  einsums:
  - name: Load
    is_copy_operation: true
    tensor_accesses:
    - {name: X, projection: [m, k]}
    - {name: Y, projection: [m, k], output: true}
  - name: Scale
    tensor_accesses:
    - {name: Y, projection: [m, k]}
    - {name: W, projection: [k], persistent: true}
    - {name: Z, projection: [m, k], output: true}
"""
    cascade, problems = parse_cascade(__import__("yaml").safe_load(text))
    assert problems == []
    c = count(cascade)
    assert [(e.kind, e.macs) for e in c.einsums] == [("copy", 0), ("elementwise", 3 * 32)]
    by_name = {t.name: t for t in c.tensors}
    # X and Z: 32 values x 2 bytes x 3 instances; W persistent: 4 x 2 bytes once; Y intermediate: free.
    assert (by_name["X"].bytes, by_name["Z"].bytes, by_name["W"].bytes) == (192, 192, 8)
    assert not by_name["Y"].counted and c.bytes == 392


def test_sol_percent_and_score():
    assert sol_percent(10e-6, 0.020) == pytest.approx(50.0)  # 10 us of 20 us
    # SOL-ExecBench: 1 / (1 + (T - T_SOL) / (T_baseline - T_SOL)) = 1 / (1 + 10 / 40) = 0.8
    assert sol_score(0.020, 0.050, 10e-6) == pytest.approx(0.8)
    assert sol_score(0.050, 0.050, 10e-6) == pytest.approx(0.5)  # as fast as the baseline
    assert sol_score(0.010, 0.050, 10e-6) == pytest.approx(1.0)  # at the speed of light
    assert sol_score(0.020, 0.005, 10e-6) is None  # baseline faster than T_SOL: the model is off
    assert sol_score(0.020, None, 10e-6) is None
    assert sol_percent(10e-6, 0) is None


def test_trace_sol_on_the_factory_dataset(tmp_path: Path):
    ds = load(write_dataset(tmp_path / "ds"))
    [t] = ds.traces
    s = trace_sol(ds, t)
    # rmsnorm_h128, batch 4, float16: input 4*128*2 + weight 128*2 + eps 4 + output 4*128*2 = 2308 bytes
    # on test_cpu (50 GB/s, 1 TFLOPS float32): memory 46.16 ns > compute 512 / 1e12 s.
    assert s.hardware == "test_cpu" and s.bound == "memory"
    assert s.t_sol_s == pytest.approx(2308 / 50e9)
    assert s.sol_percent == pytest.approx(100 * 46.16e-9 / 20e-6)  # latency 0.02 ms
    assert s.sol_score == pytest.approx(1 / (1 + (20e-6 - 46.16e-9) / (50e-6 - 46.16e-9)))


def test_peak_fallback_to_wider_dtypes():
    assert peak_tflops({"bfloat16": 2.0, "float32": 1.0}, "float8_e4m3") == ("bfloat16", 2.0)
    assert peak_tflops({"float32": 1.0}, "float16") == ("float32", 1.0)
    with pytest.raises(KeyError):
        peak_tflops({"bfloat16": 1.0}, "float32")


def test_every_hardware_spec_cites_its_source(ds):
    assert {"H100_SXM", "H200", "B200", "A100", "CPU_AMD_EPYC_2T"} <= set(ds.hardware)
    for spec in ds.hardware.values():
        assert "float32" in spec.peak_tflops, spec.name  # element-wise work needs a rate
        assert len(spec.source_note) > 40, spec.name
    assert "Measured" in ds.hardware["CPU_AMD_EPYC_2T"].source_note
    assert ds.hardware["H100_SXM"].peak_tflops["bfloat16"] == 989.4
    assert ds.hardware["H200"].memory_bandwidth_gb_s == 4800


def test_roofline_table_covers_every_workload(ds):
    rows = roofline_rows(ds)
    with_cascade = [w for w in ds.workloads if w.definition in ds.einsums]
    assert len(rows) == len(with_cascade)
    bad = [(r.definition, r.workload, r.problem) for r in rows if r.counts is None]
    assert bad == []
    for r in rows:
        assert r.counts.bytes > 0 and math.isfinite(r.counts.intensity)
        assert {s.hardware for s in r.sol} == set(ds.hardware)


def test_definition_page_shows_the_speed_of_light_escaped(tmp_path: Path):
    from generator.analyse.roofline import sol_sections
    from generator.site.render import render_pages

    from dataset_factory import BLOB_WORKLOAD, EINSUM, WORKLOAD

    nasty = EINSUM.replace("workload:\n", "# ```` <script>alert(1)</script> | [x](http://evil)\nworkload:\n", 1)
    ds = load(write_dataset(tmp_path / "ds", einsum=nasty, workloads=[WORKLOAD, BLOB_WORKLOAD]))
    section = sol_sections(ds)["rmsnorm_h128"]
    assert section.hardware == ("test_cpu",)
    # Rows in workload order: batch 4 then batch 2; bytes 2308 and 4*... (2*128*2*2 + 256 + 4 = 1284).
    assert [(r.workload, r.bytes) for r in section.rows] == [("batch_size=4", "2.31kB"), ("batch_size=2", "1.28kB")]
    assert section.rows[0].cells == ("46.2 ns (memory)",)  # 2308 B / 50 GB/s
    page = render_pages(ds)[1].all()["definitions/rmsnorm_h128.html"].body  # per-item pages are HTML from data
    body = page[page.index('id="speed-of-light"'):]
    assert "<script>" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body  # the cascade stays code
    assert "<tr><td>batch_size=4</td><td>512</td><td>2.31kB</td><td>0.222</td><td>46.2 ns (memory)</td></tr>" in body
