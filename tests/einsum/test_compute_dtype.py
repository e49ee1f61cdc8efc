"""The rate a contraction's FLOPs count at: `compute_dtype`, and the check that no contraction counts at a rate
wider than the data it multiplies (issue 37: FP4 GEMMs and MoEs had been counted at the float32 rate).

Expected numbers are worked out in the comments from the shapes, not from the code under test."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.einsum import CascadeProblem, count, load_cascade, precision_problems, workload_counts
from generator.einsum.speed_of_light import speed_of_light
from generator.load import DEFAULT_DATASET, load
from generator.model.records import HardwareSpec, Source
from generator.validate import validate_path

from dataset_factory import EINSUM, write_dataset

# e2m1 x e2m1: both operands packed codes (two a byte) with one 8-bit scale per 32 values, as the FP4 MoE
# cascades were written: an element-wise Dequantize into 32-bit intermediates, then the product.
FP4_MATMUL = """
workload:
  rank_sizes: {M: {{ M }}, N: {{ N }}, K: {{ K }}, KP: {{ K // 2 }}, S: {{ K // 32 }}}
  einsums:
  - name: DequantizeA
    tensor_accesses:
    - {name: A, projection: {M: m, KP: k // 2}}
    - {name: A_scale, projection: {M: m, S: k // 32}}
    - {name: a, projection: [m, k], output: true}
  - name: DequantizeB
    tensor_accesses:
    - {name: B, projection: {N: n, KP: k // 2}}
    - {name: B_scale, projection: {N: n, S: k // 32}}
    - {name: b, projection: [n, k], output: true}
  - name: Matmul
    tensor_accesses:
    - {name: a, projection: [m, k]}
    - {name: b, projection: [n, k]}
    - {name: C, projection: [m, n], output: true}
  bits_per_value: {Intermediates: 32}
"""
DTYPES = {"A": "uint8", "A_scale": "uint8", "B": "uint8", "B_scale": "uint8", "C": "bfloat16"}
SIZES = {"M": 1024, "N": 2048, "K": 4096}


def fixed(compute_dtype: str = "float4_e2m1") -> str:
    """The planted cascade as it should be: the decode a view (a copy), the product on the stated unit."""
    return (FP4_MATMUL.replace("  - name: DequantizeA\n", "  - name: DequantizeA\n    is_copy_operation: true\n")
            .replace("  - name: DequantizeB\n", "  - name: DequantizeB\n    is_copy_operation: true\n")
            .replace("  - name: Matmul\n", f"  - name: Matmul\n    compute_dtype: {compute_dtype}\n"))


def machine(peaks: dict[str, float]) -> HardwareSpec:
    data = {"name": "test", "kind": "gpu", "peak_tflops": peaks, "memory_bandwidth_gb_s": 8000.0, "source": "test"}
    return HardwareSpec.from_data(data, Source("hardware/test.json"))


BLACKWELL = machine({"float4_e2m1": 9000, "float8_e4m3": 4500, "bfloat16": 2250, "float32": 75})
HOPPER = machine({"float8_e4m3": 1978.9, "bfloat16": 989.4, "float32": 66.9})


def test_planted_fp4_matmul_counted_at_float32_fails():
    cascade = load_cascade(FP4_MATMUL, SIZES)
    matmul = next(e for e in count(cascade, DTYPES).einsums if e.name == "Matmul")
    assert (matmul.kind, matmul.dtype) == ("contraction", "float32")  # what the FP4 MoE cascades did
    [p] = precision_problems(cascade, DTYPES)
    assert p.pointer == "/workload/einsums/2"
    assert p.message.startswith("Einsum 'Matmul' counts its FLOPs at the float32 rate")
    assert "a 8, b 8" in p.message  # the codes' bytes, traced back through the dequantisation
    assert "compute_dtype" in p.hint and "float4_e2m1" in p.hint


@pytest.mark.parametrize("stated", ["float32", "bfloat16"])
def test_a_stated_rate_wider_than_the_operands_fails_too(stated):
    [p] = precision_problems(load_cascade(fixed(stated), SIZES), DTYPES)
    assert p.pointer == "/workload/einsums/2/compute_dtype"
    assert f"at the {stated} rate (its compute_dtype)" in p.message


def test_fp4_matmul_at_the_fp4_rate():
    cascade = load_cascade(fixed(), SIZES)
    assert precision_problems(cascade, DTYPES) == []
    c = count(cascade, DTYPES)
    assert [(e.name, e.kind, e.flops) for e in c.einsums] == [
        ("DequantizeA", "copy", 0), ("DequantizeB", "copy", 0),
        ("Matmul", "contraction", 2 * 1024 * 2048 * 4096)]  # the decode costs bytes, not float32 work
    assert c.einsums[2].dtype == "float4_e2m1"
    # 2 * 1024 * 2048 * 4096 = 17.18 GFLOP at 9,000 TFLOP/s = 1.909 us; at Hopper's FP8 fallback 8.68 us.
    flops = 2 * 1024 * 2048 * 4096
    on_b = speed_of_light(c, BLACKWELL)
    assert on_b.compute_s == pytest.approx(flops / 9000e12) and on_b.compute_dtype == "float4_e2m1"
    on_h = speed_of_light(c, HOPPER)
    assert on_h.compute_s == pytest.approx(flops / 1978.9e12) and on_h.compute_dtype == "float8_e4m3"
    # Bytes: A 1024 x 2048 + B 2048 x 2048 codes, 1024 x 128 + 2048 x 128 scales, C 1024 x 2048 x 2.
    assert c.bytes == 1024 * 2048 + 2048 * 2048 + (1024 + 2048) * 128 + 1024 * 2048 * 2


@pytest.mark.parametrize("text, message", [
    (EINSUM.replace("  - name: Square\n", "  - name: Square\n    compute_dtype: bfloat16\n"),
     "Einsum 'Square' states compute_dtype bfloat16, but it is no contraction"),
    (FP4_MATMUL.replace("  - name: Matmul\n", "  - name: Matmul\n    compute_dtype: fp4\n"), "'fp4'"),
])
def test_compute_dtype_is_checked(text, message):
    with pytest.raises(CascadeProblem) as info:
        load_cascade(text, {"batch_size": 2, "hidden_size": 8, **SIZES})
    assert any(message in p.message for p in info.value.problems), [p.message for p in info.value.problems]


# The factory's rmsnorm: a contraction whose multiplicand is bfloat16 data, counted at float32 because a float32
# scalar (eps, as an NVFP4 GEMM's alpha) is among its inputs.
MIXED = ("workload:\n"
         "  rank_sizes: {B: {{ batch_size }}, H: {{ hidden_size }}}\n"
         "  einsums:\n"
         "  - name: Widen\n"
         "    tensor_accesses:\n"
         "    - {name: input, projection: [b, h]}\n"
         "    - {name: x, projection: [b, h], output: true}\n"
         "  - name: Mix\n"
         "    tensor_accesses:\n"
         "    - {name: x, projection: {B: b, H: g}}\n"
         "    - {name: weight, projection: [h]}\n"
         "    - {name: eps, projection: []}\n"
         "    - {name: output, projection: [b, h], output: true}\n")


def test_validate_names_the_einsum_and_its_line(tmp_path: Path):
    [d] = validate_path(write_dataset(tmp_path / "bad", einsum=MIXED))
    assert (d.file, d.line, d.pointer, d.severity) == ("einsums/norm/rmsnorm_h128.yaml", 8, "/workload/einsums/1",
                                                       "error")
    assert d.message.startswith("Einsum 'Mix' counts its FLOPs at the float32 rate (the dtype of the tensors it "
                                "reads), but the data it multiplies is narrower")
    assert "x 16" in d.message
    good = MIXED.replace("  - name: Mix\n", "  - name: Mix\n    compute_dtype: bfloat16\n")
    assert validate_path(write_dataset(tmp_path / "good", einsum=good)) == []


# -- the dataset ----------------------------------------------------------------------------------------------
FP4_TAGS = {"quantization:nvfp4", "quantization:mxfp4", "quantization:mxfp8"}


@pytest.fixture(scope="module")
def ds():
    return load(DEFAULT_DATASET)


def test_no_fp4_workload_counts_its_products_at_float32(ds):
    """Every workload of every NVFP4/MXFP4/MXFP8 definition: no contraction at the float32 rate, and on B200 the
    compute time is counted at a tensor-core rate (which dtype decides is what `kerneltrace roofline` prints)."""
    fp4 = sorted(n for n, d in ds.definitions.items() if FP4_TAGS & set(d.tags) and n in ds.einsums)
    assert len(fp4) >= 30
    deciding, cache = {}, {}
    for name in fp4:
        d = ds.definitions[name]
        for w in ds.workloads_by_definition[name]:
            c = workload_counts(ds, d, w.axes, cache)
            assert [e.name for e in c.einsums if e.kind == "contraction" and e.dtype == "float32"] == [], name
            if any(e.kind == "contraction" for e in c.einsums):
                deciding.setdefault(name, set()).add(speed_of_light(c, ds.hardware["B200"]).compute_dtype)
    assert len(deciding) >= 25  # the GEMMs and MoEs (the quantisers have no contraction)
    assert {n: s for n, s in deciding.items() if "float32" in s} == {}
    assert deciding["gemm_nvfp4_n4096_k4096"] == deciding["moe_nvfp4_routed_topk8_e32_h7168_i2048"] == {"float4_e2m1"}
    assert deciding["trtllm_fp4_block_scale_moe_mxfp8_topk4_e32_h3072_i3072"] == {"float8_e4m3"}
    assert deciding["trtllm_fp4_block_scale_moe_topk8_e64_h4096_i1536"] == {"bfloat16"}  # bfloat16 activations


def test_fp4_moe_floors_by_hand(ds):
    # trtllm_fp4_block_scale_moe e64 h4096 i1536 at 2,048 tokens: rows = 2,048 x 8 = 16,384; Gemm1 16,384 x 3,072
    # x 4,096 MACs, Gemm2 16,384 x 4,096 x 1,536, both bfloat16 activations x e2m1 weights at 2,250 TFLOP/s:
    # 2 x 3.092e11 / 2.25e15 = 0.2749 ms (it was 8.26 ms at the float32 rate).
    name = "trtllm_fp4_block_scale_moe_topk8_e64_h4096_i1536"
    [w] = [w for w in ds.workloads_by_definition[name] if w.axes["seq_len"] == 2048]
    s = speed_of_light(workload_counts(ds, ds.definitions[name], w.axes), ds.hardware["B200"])
    macs = 16384 * 3072 * 4096 + 16384 * 4096 * 1536
    assert (s.bound, s.compute_dtype) == ("compute", "bfloat16")
    assert s.t_sol_s == pytest.approx(2 * macs / 2250e12, rel=0.01)  # + routing and SwiGLU at float32: < 1 %
    # The NVFP4 MoE's Gemm1 sums over the hidden size only: rows x 4,096 x 7,168 MACs at 2,048 tokens (the
    # per-expert alpha had made it sum over the 32 local experts as well).
    name = "moe_nvfp4_routed_topk8_e32_h7168_i2048"
    [w] = [w for w in ds.workloads_by_definition[name] if w.axes["seq_len"] == 2048]
    c = workload_counts(ds, ds.definitions[name], w.axes)
    assert {e.name: e.macs for e in c.einsums if e.kind == "contraction"} == {
        "Gemm1": 2048 * 4096 * 7168, "Gemm2": 2048 * 7168 * 2048}
