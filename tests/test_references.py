"""Every definition's reference, and every baseline solution, checked on the CPU.

The references are the mathematical specification of the dataset, so they are checked here against
an *independent* formulation of the same mathematics (a different algorithm, float64, library calls
the references are not allowed to use), on several seeded input sets at small sizes of the var axes.
The baseline solutions are checked the same way and against the reference.

The files are read with plain `json`, not with the project's loader, so that this test does not depend
on the generator package: it checks the data, not the code that reads it.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

import torch  # the test extra installs it; a missing torch must fail, not skip
import torch.nn.functional as F  # noqa: E402  (the independent formulations may use it; references may not)

DATASET = Path(__file__).resolve().parent.parent / "dataset"
DEFINITION_FILES = sorted((DATASET / "definitions").glob("*/*.json"))
SOLUTION_FILES = sorted((DATASET / "solutions").glob("*/*/*/*.json"))
WORKLOAD_FILES = sorted((DATASET / "workloads").glob("*/*.jsonl"))

TORCH_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float8_e4m3": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2,
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "bool": torch.bool,
}

# Tolerances for comparing an output with the float64 independent result, by the output's dtype:
# (rtol, atol as a fraction of the largest |expected| value).
# - float16: 10 mantissa bits; one rounding of the exact value is off by at most half an ulp,
#   2**-11 ~ 4.9e-4 relative, and two independently rounded results (reference vs. solution) by at most
#   one ulp, 2**-10 ~ 9.8e-4; rtol 1e-3 covers both. float32 accumulation over K = 4096 adds about
#   sqrt(K) * 2**-24 ~ 4e-6 of the output scale, covered by atol 1e-4 * scale (near-zero outputs).
# - bfloat16: 7 mantissa bits; one ulp is at most 2**-7 ~ 7.8e-3 relative, so rtol 1e-2; atol as for
#   float16 but a little looser, 1e-3 * scale, for the few outputs that cancel to near zero.
# - float32 (the GQA lse): computed in float32 from float16 inputs; errors are a few float32 ulps of
#   values of order 1-10, so rtol 1e-5 and atol 1e-5 * scale.
TOLERANCE = {"float16": (1e-3, 1e-4), "bfloat16": (1e-2, 1e-3), "float32": (1e-5, 1e-5)}


def assert_close(actual, expected, dtype: str, what: str) -> None:
    rtol, atol_rel = TOLERANCE[dtype]
    expected = expected.to(torch.float64)
    actual64 = actual.to(torch.float64)
    assert torch.isfinite(actual64).all(), f"{what}: non-finite values"
    scale = expected.abs().max().item() or 1.0
    atol = atol_rel * scale
    excess = (actual64 - expected).abs() - (atol + rtol * expected.abs())
    worst = excess.max().item()
    assert worst <= 0, (f"{what}: exceeds rtol={rtol} atol={atol:.3g} by {worst:.3g} "
                        f"(max abs err {(actual64 - expected).abs().max().item():.3g}, scale {scale:.3g})")


# --------------------------------------------------------------------------------------------------
# Loading definitions and code with nothing but json and exec.
# --------------------------------------------------------------------------------------------------

def load_definition(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def exec_function(code: str, filename: str, name: str = "run") -> Callable:
    namespace: dict = {"__name__": f"kerneltrace_test_{Path(filename).stem}"}
    exec(compile(code, filename, "exec"), namespace)
    assert callable(namespace.get(name)), f"{filename} defines no top-level function {name}()"
    return namespace[name]


def as_output_dict(result, definition: dict) -> dict:
    names = list(definition["outputs"])
    if isinstance(result, dict):
        return result
    if isinstance(result, (tuple, list)):
        assert len(result) == len(names), f"returned {len(result)} values for outputs {names}"
        return dict(zip(names, result))
    assert len(names) == 1, f"returned one value for outputs {names}"
    return {names[0]: result}


def clone_inputs(inputs: dict) -> dict:
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def assert_inputs_unchanged(before: dict, after: dict, who: str) -> None:
    for name, value in before.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(value.view(torch.uint8) if value.dtype == torch.float8_e4m3fn else value,
                               after[name].view(torch.uint8) if value.dtype == torch.float8_e4m3fn
                               else after[name]), f"{who} modified its input {name!r}"


# --------------------------------------------------------------------------------------------------
# Input makers and independent formulations, one per definition.
# --------------------------------------------------------------------------------------------------

def fp8(values, scale=1.0):
    """float8_e4m3 tensor from float32 values times scale, clamped to +-448 (the e4m3fn range).

    In place on the float32 temporary: these tensors are large and fresh allocations are slow."""
    return values.mul_(scale).clamp_(-448.0, 448.0).to(torch.float8_e4m3fn)


def uniform(shape, low, high, g):
    return low + (high - low) * torch.rand(shape, generator=g)


@dataclass
class Case:
    sizes: list  # var-axis values, one dict per input set (at least 3)
    make_inputs: Callable  # (axes, generator, set_index) -> {input name: value}
    expected: Callable  # (axes, inputs) -> {output name: float64 tensor}


# GEMM: C = A @ B.T, independently as F.linear in float64.
def gemm_inputs(ax, g, i):
    return {"A": torch.randn(ax["M"], ax["K"], generator=g).half(),
            "B": torch.randn(ax["N"], ax["K"], generator=g).half()}


def gemm_expected(ax, x):
    return {"C": F.linear(x["A"].double(), x["B"].double())}


# Block-scaled FP8 GEMM, independently as a real kernel does it: integer-like partial sums per
# (K group, N group) block first, then scaled by the two scales of the block, all in float64.
def qgemm_inputs(ax, g, i):
    M, N, K, Ng, Kg = ax["M"], ax["N"], ax["K"], ax["N_group"], ax["K_group"]
    return {"A": fp8(torch.randn(M, K, generator=g), 64), "B": fp8(torch.randn(N, K, generator=g), 64),
            # Scales spread over a factor of 16 so that a scale applied to the wrong block shows.
            "A_scale": uniform((M, Kg), 0.25, 4.0, g) / 64, "B_scale": uniform((Ng, Kg), 0.25, 4.0, g) / 64}


def qgemm_expected(ax, x):
    M, N, K, Ng, Kg = ax["M"], ax["N"], ax["K"], ax["N_group"], ax["K_group"]
    a = x["A"].double().view(M, Kg, K // Kg)  # [m, j, kk]
    b = x["B"].double().view(Ng, N // Ng, Kg, K // Kg)  # [i, nn, j, kk]
    partial = torch.einsum("mjk,injk->minj", a, b)  # per-block dot products
    c = torch.einsum("minj,mj,ij->min", partial, x["A_scale"].double(), x["B_scale"].double())
    return {"C": c.reshape(M, N)}


# Grouped GEMM: C[g] = A[g] @ B[g], independently as a Python loop over the groups.
def ggemm_inputs(ax, g, i):
    return {"A": torch.randn(ax["G"], ax["M"], ax["K"], generator=g).half(),
            "B": torch.randn(ax["G"], ax["K"], ax["N"], generator=g).half()}


def ggemm_expected(ax, x):
    return {"C": torch.stack([x["A"][j].double() @ x["B"][j].double() for j in range(ax["G"])])}


# FP8 grouped GEMM with per-K-group scales: loop over groups, block partial sums, then scales.
def qggemm_inputs(ax, g, i):
    G, M, N, K, Kg = ax["G"], ax["M"], ax["N"], ax["K"], ax["K_group"]
    return {"A": fp8(torch.randn(G, M, K, generator=g), 64), "B": fp8(torch.randn(G, K, N, generator=g), 64),
            "A_scale": uniform((G, M, Kg), 0.25, 4.0, g) / 64, "B_scale": uniform((G, Kg, N), 0.25, 4.0, g) / 64}


def qggemm_expected(ax, x):
    G, M, N, K, Kg = ax["G"], ax["M"], ax["N"], ax["K"], ax["K_group"]
    out = []
    for j in range(G):
        a = x["A"][j].double().view(M, Kg, K // Kg)  # [m, group, kk]
        b = x["B"][j].double().view(Kg, K // Kg, N)  # [group, kk, n]
        partial = torch.einsum("mgk,gkn->mgn", a, b)
        out.append(torch.einsum("mgn,mg,gn->mn", partial, x["A_scale"][j].double(), x["B_scale"][j].double()))
    return {"C": torch.stack(out)}


# RMSNorm, independently with F.rms_norm in float64. The sets vary how eps is passed (Python float,
# 0-d tensor) and one uses small inputs so that eps changes the result noticeably.
def rmsnorm_inputs(ax, g, i):
    B, H = ax["batch_size"], ax["hidden_size"]
    x_scale, eps = [(3.0, 1e-5), (1.0, torch.tensor(1e-6, dtype=torch.float32)), (0.05, 1e-2)][i % 3]
    return {"input": (torch.randn(B, H, generator=g) * x_scale).half(),
            "weight": (1.0 + 0.5 * torch.randn(H, generator=g)).half(), "eps": eps}


def rmsnorm_expected(ax, x):
    eps = float(x["eps"])
    return {"output": F.rms_norm(x["input"].double(), (ax["hidden_size"],), x["weight"].double(), eps=eps)}


# GQA, independently with F.scaled_dot_product_attention in float64 on K/V heads expanded so that
# query head h reads KV head h // H_r; lse as torch.logsumexp of the scaled logits over ln 2.
def gqa_inputs(ax, g, i):
    B, Q, KV, Hq, Hk, Dqk, Dvo = (ax[n] for n in ("B", "Q", "KV", "H_qo", "H_kv", "D_qk", "D_vo"))
    sharpness = [1.0, 3.0, 0.5][i % 3]  # peakier or flatter softmax
    return {"q": (torch.randn(B, Q, Hq, Dqk, generator=g) * sharpness).half(),
            "k": torch.randn(B, KV, Hk, Dqk, generator=g).half(),
            "v": torch.randn(B, KV, Hk, Dvo, generator=g).half()}


def gqa_expected(ax, x):
    B, KV, Hq, Hk = ax["B"], ax["KV"], ax["H_qo"], ax["H_kv"]
    r = Hq // Hk

    def expand(t):  # [B, KV, H_kv, D] -> [B, H_qo, KV, D], head h = kv_head * r + j
        return t.double().unsqueeze(3).expand(B, KV, Hk, r, t.shape[-1]).reshape(B, KV, Hq, t.shape[-1]).transpose(1, 2)

    q = x["q"].double().transpose(1, 2)  # [B, H_qo, Q, D]
    k, v = expand(x["k"]), expand(x["v"])
    out = F.scaled_dot_product_attention(q, k, v)  # default scale 1/sqrt(D_qk), no mask
    logits = (q @ k.transpose(-1, -2)) / math.sqrt(ax["D_qk"])
    lse = torch.logsumexp(logits, dim=-1) / math.log(2.0)  # [B, H_qo, Q]
    return {"out": out.transpose(1, 2), "lse": lse.transpose(1, 2)}


CASES = {
    "gemm_n_4096_k_4096": Case([{"M": 1}, {"M": 3}, {"M": 8}], gemm_inputs, gemm_expected),
    "quantized_gemm_n4096_k4096_ng128_kg128": Case([{"M": 1}, {"M": 4}, {"M": 8}], qgemm_inputs, qgemm_expected),
    "grouped_gemm_n4096_k4096": Case([{"G": 1, "M": 2}, {"G": 2, "M": 3}, {"G": 1, "M": 1}],
                                     ggemm_inputs, ggemm_expected),
    "quantized_grouped_gemm_n4096_k4096_kg128": Case([{"G": 1, "M": 2}, {"G": 2, "M": 3}, {"G": 1, "M": 1}],
                                                     qggemm_inputs, qggemm_expected),
    "rmsnorm_d4096": Case([{"batch_size": 1}, {"batch_size": 3}, {"batch_size": 8}], rmsnorm_inputs,
                          rmsnorm_expected),
    "gqa_hr4_dqk128_dvo128": Case([{"B": 1, "Q": 1, "KV": 9, "H_kv": 1}, {"B": 2, "Q": 5, "KV": 7, "H_kv": 2},
                                   {"B": 3, "Q": 16, "KV": 4, "H_kv": 2}], gqa_inputs, gqa_expected),
}


def all_axes(definition: dict, var_sizes: dict) -> dict:
    axes = {n: a["value"] for n, a in definition["axes"].items() if a["type"] == "const"}
    axes.update(var_sizes)
    if definition["name"].startswith("gqa_"):  # H_qo follows from the constraint H_qo == H_kv * H_r
        axes.setdefault("H_qo", axes["H_kv"] * axes["H_r"])
    return axes


_CACHE: dict = {}


def input_set(definition: dict, index: int):
    """(axes, inputs, expected) of one seeded input set; cached so solutions reuse the references' sets."""
    key = (definition["name"], index)
    if key not in _CACHE:
        case = CASES[definition["name"]]
        axes = all_axes(definition, case.sizes[index])
        for constraint in definition.get("constraints", []):
            assert eval(constraint, {}, dict(axes)), f"test sizes {axes} break constraint {constraint!r}"
        g = torch.Generator().manual_seed(1000 * index + 17)
        inputs = case.make_inputs(axes, g, index)
        assert list(inputs) == list(definition["inputs"]), "test input maker out of step with the definition"
        _CACHE[key] = (axes, inputs, case.expected(axes, inputs))
    return _CACHE[key]


_REFERENCE_OUTPUTS: dict = {}


def reference_outputs(definition: dict, index: int) -> dict:
    """The reference's outputs on one input set (cached: the solutions are compared with them too)."""
    key = (definition["name"], index)
    if key not in _REFERENCE_OUTPUTS:
        axes, inputs, expected = input_set(definition, index)
        run = exec_function(definition["reference"], f"{definition['name']}.reference")
        before = clone_inputs(inputs)
        outputs = as_output_dict(run(*inputs.values()), definition)
        assert_inputs_unchanged(before, inputs, "the reference")
        _REFERENCE_OUTPUTS[key] = outputs
    return _REFERENCE_OUTPUTS[key]


def check_outputs(outputs: dict, definition: dict, axes: dict, expected: dict, who: str, reference=None) -> None:
    assert set(outputs) == set(definition["outputs"]), f"{who} returned {sorted(outputs)}"
    for name, spec in definition["outputs"].items():
        value = outputs[name]
        assert isinstance(value, torch.Tensor), f"{who}: output {name} is {type(value).__name__}"
        assert tuple(value.shape) == tuple(axes[a] for a in spec["shape"]), f"{who}: {name} has shape {value.shape}"
        assert value.dtype == TORCH_DTYPES[spec["dtype"]], f"{who}: {name} has dtype {value.dtype}"
        assert_close(value, expected[name], spec["dtype"], f"{who}: {name} vs independent")
        if reference is not None:
            assert_close(value, reference[name], spec["dtype"], f"{who}: {name} vs reference")


# --------------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------------

def test_dataset_has_definitions():
    assert DEFINITION_FILES, f"no definitions under {DATASET / 'definitions'}"


@pytest.mark.parametrize("path", DEFINITION_FILES, ids=lambda p: p.stem)
def test_reference_is_plain_step_by_step_pytorch(path):
    d = load_definition(path)
    assert d["name"] == path.stem and d["type"] == path.parent.name
    ref = d["reference"]
    assert "torch.nn.functional" not in ref and not re.search(r"\bF\.", ref), "the reference must not use F.*"
    run = exec_function(ref, f"{d['name']}.reference")
    assert list(inspect.signature(run).parameters) == list(d["inputs"]), \
        "run() must take the inputs in the order of 'inputs'"


@pytest.mark.parametrize("index", range(3))
@pytest.mark.parametrize("path", DEFINITION_FILES, ids=lambda p: p.stem)
def test_reference_matches_independent_formulation(path, index):
    d = load_definition(path)
    # Every definition must be checked: a definition without an independent formulation fails.
    assert d["name"] in CASES, f"no independent check for {d['name']}: add one to CASES in {Path(__file__).name}"
    axes, inputs, expected = input_set(d, index)
    check_outputs(reference_outputs(d, index), d, axes, expected, "reference")


def _solutions():
    for path in SOLUTION_FILES:
        sol = json.loads(path.read_text(encoding="utf-8"))
        if sol["spec"]["language"] == "python":
            yield pytest.param(path, id=path.stem)


@pytest.mark.parametrize("path", list(_solutions()))
def test_python_solution_matches_reference(path):
    sol = json.loads(path.read_text(encoding="utf-8"))
    def_path = DATASET / "definitions" / path.parent.parent.name / f"{sol['definition']}.json"
    assert def_path.is_file(), f"solution names definition {sol['definition']!r}, not found at {def_path}"
    d = load_definition(def_path)
    assert d["name"] in CASES, f"no independent check for {d['name']}: add one to CASES in {Path(__file__).name}"
    assert not sol["spec"].get("destination_passing_style", False), "only value-returning solutions are run here"
    file, function = sol["spec"]["entry_point"].split("::")
    sources = {s["path"]: s["content"] for s in sol["sources"]}
    assert file in sources, f"entry point file {file} is not among the sources"
    run = exec_function(sources[file], f"{sol['name']}/{file}", function)
    for index in range(len(CASES[d["name"]].sizes)):
        axes, inputs, expected = input_set(d, index)
        before = clone_inputs(inputs)
        outputs = as_output_dict(run(*inputs.values()), d)
        assert_inputs_unchanged(before, inputs, sol["name"])
        check_outputs(outputs, d, axes, expected, f"{sol['name']} (set {index})", reference_outputs(d, index))


@pytest.mark.parametrize("path", WORKLOAD_FILES, ids=lambda p: p.stem)
def test_workloads_fit_their_definition(path):
    d = load_definition(DATASET / "definitions" / path.parent.name / f"{path.stem}.json")
    var_axes = {n for n, a in d["axes"].items() if a["type"] == "var"}
    consts = {n: a["value"] for n, a in d["axes"].items() if a["type"] == "const"}
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(lines) >= 3
    for record in lines:
        w = record["workload"]
        assert record["definition"] == d["name"]
        assert set(w["axes"]) == var_axes and all(isinstance(v, int) and v > 0 for v in w["axes"].values())
        assert list(w["inputs"]) == list(d["inputs"])
        for name, spec in w["inputs"].items():
            assert spec["type"] == ("scalar" if not d["inputs"][name]["shape"] else "random"), name
        for constraint in d.get("constraints", []):
            assert eval(constraint, {}, {**consts, **w["axes"]}), f"{w['uuid']} breaks {constraint!r}"
