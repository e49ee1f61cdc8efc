"""The kerneltrace Triton solutions, checked on the CPU.

Each solution under dataset/solutions/kerneltrace/ is run under Triton's CPU interpreter
(TRITON_INTERPRET=1) on small, coherent, seeded inputs and compared with its definition's reference
(read with plain json, the reference exec'd) using the tolerances of tests/tolerances.py, as test_references.py.
The interpreter must be switched on before triton is first imported, and other test modules of the same
pytest process may import triton (or torch may pull it in) without it, so the checks run in a fresh
subprocess, one for all the solutions (torch and triton imported once), each solution's part of its output
checked by its own test: this file doubles as the worker script
(`python tests/test_triton_solutions.py interp NAME...`).

A second check compiles every kernel launch the solutions make at realistic serving shapes (decode and
prefill sizes, every block-size branch) ahead of time for an H100 (sm_90a) with Triton's own compiler
and ptxas, without a GPU (`... compile NAME...`): it catches code the interpreter accepts but the GPU
compiler rejects, and tile configurations that do not fit in the 227 KiB of shared memory of an SM.

A missing triton fails these tests; nothing here is skipped.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import pytest

from tolerances import assert_close  # no torch at import: safe on the pytest side

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "dataset"
SOLUTIONS = DATASET / "solutions" / "kerneltrace"

# definition name -> definition type
DEFINITIONS = {
    "rmsnorm_h4096": "norm",
    "fused_add_rmsnorm_h4096": "norm",
    "silu_and_mul_i14336": "activation",
    "rope_llama3_h32_kv8_d128": "rope",
    "gemm_n6144_k4096": "gemm",
    "gqa_paged_decode_h32_kv8_d128_ps16": "gqa",
    "gqa_paged_decode_h32_kv8_d128_ps1": "gqa",
    "moe_routing_softmax_topk8_e128": "routing",
}

SHARED_SMEM_LIMIT = 232448  # bytes of shared memory one H100 block may use (227 KiB)


def solution_path(name: str) -> Path:
    return SOLUTIONS / DEFINITIONS[name] / name / f"{name}_triton.json"


def definition_path(name: str) -> Path:
    return DATASET / "definitions" / DEFINITIONS[name] / f"{name}.json"


# ==================================================================================================
# pytest side: no torch, no triton imported here.
# ==================================================================================================

def _run_worker(mode: str, interpret: bool, timeout: int = 1800) -> dict[str, str]:
    """One worker process checks every solution in `mode` (torch and triton are imported once, not once
    per solution); returns each solution's part of its output, the lines after its '=== NAME' line."""
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, without its warning
    # One torch thread: the worker's tensors are small, and on a 2-core host shared with other jobs
    # intra-op threads mostly wait for each other (see test_references.one_torch_thread).
    env.setdefault("OMP_NUM_THREADS", "1")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), mode, *DEFINITIONS], cwd=str(ROOT), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    parts, name = {}, None
    for line in proc.stdout.splitlines(keepends=True):
        if line.startswith("=== ") and line[4:].strip() in DEFINITIONS:
            name = line[4:].strip()
            parts[name] = ""
        elif name is not None:
            parts[name] += line
    parts["(worker)"] = f"[{mode} worker: exit {proc.returncode}, {time.perf_counter() - t0:.1f} s]\n{proc.stdout[-3000:]}"
    return parts


@pytest.fixture(scope="module")
def interpreter_runs() -> dict[str, str]:
    return _run_worker("interp", interpret=True)


@pytest.fixture(scope="module")
def compile_runs() -> dict[str, str]:
    return _run_worker("compile", interpret=False)


def assert_worker_passed(runs: dict[str, str], name: str) -> None:
    assert name in runs, f"the worker stopped before {name}:\n{runs['(worker)']}"
    print(runs[name])
    assert runs[name].rstrip().endswith("ALL OK"), f"{name} failed:\n{runs[name][-6000:]}"


def _params():
    return [pytest.param(name, id=name) for name in DEFINITIONS]


def test_every_triton_solution_is_present_and_well_formed():
    for name in DEFINITIONS:
        path = solution_path(name)
        assert path.is_file(), f"missing {path.relative_to(ROOT)}"
        assert definition_path(name).is_file(), f"missing definition {definition_path(name).relative_to(ROOT)}"
        sol = json.loads(path.read_text(encoding="utf-8"))
        assert sol["name"] == path.stem and sol["definition"] == name and sol["author"] == "kerneltrace"
        spec = sol["spec"]
        assert spec["language"] == "triton" and spec["target_hardware"] == ["H100_SXM"]
        assert spec["entry_point"] == "main.py::run" and spec["destination_passing_style"] is False
        assert spec["dependencies"] == ["torch", "triton"]
        assert [s["path"] for s in sol["sources"]] == ["main.py"]


def test_triton_is_importable():
    """The solutions need triton; a missing triton must fail, not skip."""
    proc = subprocess.run([sys.executable, "-c", "import triton, triton.language; print(triton.__version__)"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"triton is not importable:\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("name", _params())
def test_triton_solution_matches_reference_under_interpreter(name, interpreter_runs):
    assert_worker_passed(interpreter_runs, name)


@pytest.mark.parametrize("name", _params())
def test_triton_solution_compiles_for_h100(name, compile_runs):
    assert_worker_passed(compile_runs, name)


# ==================================================================================================
# Worker side (a subprocess): imports torch and triton.
# ==================================================================================================

def load_solution_module(name: str):
    """Write the solution's sources to a folder and import its entry file (triton.jit reads the source)."""
    sol = json.loads(solution_path(name).read_text(encoding="utf-8"))
    file, function = sol["spec"]["entry_point"].split("::")
    folder = Path(tempfile.mkdtemp(prefix=f"kt_{name}_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for src in sol["sources"]:
        target = folder / src["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(src["content"], encoding="utf-8")
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(f"kt_triton_{name}", folder / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert callable(getattr(module, function, None)), f"{file} defines no {function}()"
    return module, getattr(module, function)


def reference_function(definition: dict):
    namespace: dict = {"__name__": f"kt_reference_{definition['name']}"}
    exec(compile(definition["reference"], f"{definition['name']}.reference", "exec"), namespace)
    return namespace["run"]


# ---------------------------------------------------------------------------------- input makers
# Each returns a list of (label, axes, inputs) with inputs in the definition's order.

def _bf16(t):
    import torch
    return t.to(torch.bfloat16)


def inputs_rmsnorm(d, g):
    import torch
    H = d["axes"]["hidden_size"]["value"]
    sets = []
    for batch in (3, 8):
        x = _bf16(torch.randn(batch, H, generator=g) * 2.0)
        w = _bf16(1.0 + 0.1 * torch.randn(H, generator=g))
        sets.append((f"batch_size={batch}", {"batch_size": batch}, {"hidden_states": x, "weight": w}))
    return sets


def inputs_fused_add_rmsnorm(d, g):
    import torch
    H = d["axes"]["hidden_size"]["value"]
    sets = []
    for batch in (3, 8):
        x = _bf16(torch.randn(batch, H, generator=g))
        r = _bf16(torch.randn(batch, H, generator=g) * 3.0)
        w = _bf16(1.0 + 0.1 * torch.randn(H, generator=g))
        sets.append((f"batch_size={batch}", {"batch_size": batch}, {"hidden_states": x, "residual": r, "weight": w}))
    return sets


def inputs_silu_and_mul(d, g):
    import torch
    width = d["axes"]["gate_up_size"]["value"]
    sets = []
    for tokens in (2, 5):
        x = _bf16(torch.randn(tokens, width, generator=g) * 3.0)
        sets.append((f"num_tokens={tokens}", {"num_tokens": tokens}, {"input": x}))
    return sets


def llama3_cos_sin_cache(max_position, head_dim=128):
    """The cache as vLLM's Llama3RotaryEmbedding builds it (rope_theta 500000, factor 8, 1, 4, 8192)."""
    import torch
    inv_freq = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    wavelen = 2 * math.pi / inv_freq
    smooth = (8192 / wavelen - 1) / (4 - 1)
    scaled = torch.where(wavelen < 8192 / 4, inv_freq,
                         torch.where(wavelen > 8192 / 1, inv_freq / 8, (1 - smooth) * inv_freq / 8 + smooth * inv_freq))
    angles = torch.arange(max_position, dtype=torch.float64)[:, None] * scaled[None, :]
    return torch.cat([angles.cos(), angles.sin()], dim=-1).to(torch.float32)


def inputs_rope(d, g):
    import torch
    hq = d["axes"]["num_qo_heads"]["value"]
    hk = d["axes"]["num_kv_heads"]["value"]
    D = d["axes"]["head_dim"]["value"]
    sets = []
    for tokens, max_position in ((3, 40), (6, 9000)):
        positions = torch.randint(0, max_position, (tokens,), generator=g, dtype=torch.int64)
        q = _bf16(torch.randn(tokens, hq, D, generator=g))
        k = _bf16(torch.randn(tokens, hk, D, generator=g))
        cache = llama3_cos_sin_cache(max_position, D)
        sets.append((f"num_tokens={tokens} max_position={max_position}",
                     {"num_tokens": tokens, "max_position": max_position},
                     {"positions": positions, "q": q, "k": k, "cos_sin_cache": cache}))
    return sets


def inputs_gemm(d, g):
    import torch
    sets = []
    # The launcher works for any N, K: the interpreter runs the real N x K only once (below); these
    # smaller N, K cover every block-size branch (M <= 16, 32, 64, 128, 512, larger) and an uneven K.
    for M, N, K in ((1, 64, 256), (20, 96, 128), (37, 96, 200), (100, 128, 192), (130, 160, 256), (600, 272, 128)):
        A = _bf16(torch.randn(M, K, generator=g))
        B = _bf16(torch.randn(N, K, generator=g) / math.sqrt(K))
        sets.append((f"M={M} N={N} K={K} (small N, K)", {"M": M, "N": N, "K": K}, {"A": A, "B": B}))
    N = d["axes"]["N"]["value"]
    K = d["axes"]["K"]["value"]
    A = _bf16(torch.randn(1, K, generator=g))
    B = _bf16(torch.randn(N, K, generator=g) / math.sqrt(K))
    sets.append((f"M=1 N={N} K={K} (the definition's shape)", {"M": 1, "N": N, "K": K}, {"A": A, "B": B}))
    return sets


def paged_inputs(d, g, seed, lens, sm_scale_as_tensor):
    import numpy as np
    import torch
    sys.path.insert(0, str(ROOT))
    from generator.workloadgen import core

    ax = d["axes"]
    hq, hk, D, ps = (ax[n]["value"] for n in ("num_qo_heads", "num_kv_heads", "head_dim", "page_size"))
    layout = core.paged_kv(core.rng(seed), np.asarray(lens), ps)
    num_pages = layout["num_pages"]
    batch = len(lens)
    q = _bf16(torch.randn(batch, hq, D, generator=g) * 2.0)
    k_cache = _bf16(torch.randn(num_pages, ps, hk, D, generator=g))
    v_cache = _bf16(torch.randn(num_pages, ps, hk, D, generator=g))
    sm_scale = 1.0 / math.sqrt(D)
    inputs = {
        "q": q, "k_cache": k_cache, "v_cache": v_cache,
        "kv_indptr": torch.from_numpy(layout["kv_indptr"]).to(torch.int32),
        "kv_indices": torch.from_numpy(layout["kv_indices"]).to(torch.int32),
        "kv_last_page_len": torch.from_numpy(layout["kv_last_page_len"]).to(torch.int32),
        "sm_scale": torch.tensor(sm_scale, dtype=torch.float32) if sm_scale_as_tensor else sm_scale,
    }
    axes = {"batch_size": batch, "num_pages": num_pages, "len_indptr": batch + 1,
            "num_kv_indices": int(layout["kv_indptr"][-1])}
    return axes, inputs


def inputs_paged_decode(d, g):
    ps = d["axes"]["page_size"]["value"]
    lens_sets = ([1, 17, 70], [16, 33, 5, 48, 2], [600]) if ps == 16 else ([5, 33, 1], [12, 2, 40, 7, 64], [600])
    sets = []
    for i, lens in enumerate(lens_sets):
        axes, inputs = paged_inputs(d, g, 100 + i, lens, sm_scale_as_tensor=(i == 1))
        sets.append((f"kv_len={lens} page_size={ps}", axes, inputs))
    return sets


def inputs_routing(d, g):
    import torch
    E = d["axes"]["num_experts"]["value"]
    sets = []
    x = _bf16(torch.randn(37, E, generator=g) * 2.0)
    sets.append(("num_tokens=37 (random bf16 logits)", {"num_tokens": 37}, {"router_logits": x}))
    # Coarse logits: many exact ties, including across the top-8 boundary (lower id must win).
    x = _bf16(torch.round(torch.randn(5, E, generator=g) * 2.0) / 2.0)
    sets.append(("num_tokens=5 (tied logits)", {"num_tokens": 5}, {"router_logits": x}))
    x = _bf16(torch.randn(1, E, generator=g) * 4.0)
    sets.append(("num_tokens=1", {"num_tokens": 1}, {"router_logits": x}))
    return sets


INPUTS = {
    "rmsnorm_h4096": inputs_rmsnorm,
    "fused_add_rmsnorm_h4096": inputs_fused_add_rmsnorm,
    "silu_and_mul_i14336": inputs_silu_and_mul,
    "rope_llama3_h32_kv8_d128": inputs_rope,
    "gemm_n6144_k4096": inputs_gemm,
    "gqa_paged_decode_h32_kv8_d128_ps16": inputs_paged_decode,
    "gqa_paged_decode_h32_kv8_d128_ps1": inputs_paged_decode,
    "moe_routing_softmax_topk8_e128": inputs_routing,
}

TORCH_DTYPE_NAMES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16", "int32": "int32",
                     "int64": "int64"}


def check_against(outputs: dict, expected: dict, d: dict, axes: dict, what: str) -> None:
    import torch
    assert set(outputs) == set(d["outputs"]), f"{what}: returned {sorted(outputs)}"
    all_axes = {n: a["value"] for n, a in d["axes"].items() if a["type"] == "const"}
    all_axes.update(axes)
    for name, spec in d["outputs"].items():
        value = outputs[name]
        assert isinstance(value, torch.Tensor), f"{what}: {name} is not a tensor"
        want_dtype = getattr(torch, TORCH_DTYPE_NAMES[spec["dtype"]])
        assert value.dtype == want_dtype, f"{what}: {name} has dtype {value.dtype}"
        assert tuple(value.shape) == tuple(all_axes[a] for a in spec["shape"]), f"{what}: {name} has shape {value.shape}"
        assert_close(value, expected[name], spec["dtype"], f"{what}: {name}")  # integer outputs: exactly


def clone_inputs(inputs: dict) -> dict:
    import torch
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def assert_unchanged(before: dict, after: dict, what: str) -> None:
    import torch
    for k, v in before.items():
        if isinstance(v, torch.Tensor):
            assert torch.equal(v, after[k]), f"{what} modified its input {k}"


def worker_interp(name: str) -> None:
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    import torch
    import triton  # noqa: F401  (a missing triton fails here)

    d = json.loads(definition_path(name).read_text(encoding="utf-8"))
    reference = reference_function(d)
    module, run = load_solution_module(name)
    g = torch.Generator().manual_seed(sum(map(ord, name)))
    total = 0.0
    for index, (label, axes, inputs) in enumerate(INPUTS[name](d, g)):
        before = clone_inputs(inputs)
        t0 = time.perf_counter()
        outputs = run(*inputs.values())
        elapsed = time.perf_counter() - t0
        total += elapsed
        assert_unchanged(before, inputs, "the solution")
        expected = reference(*inputs.values())
        check_against(outputs, expected, d, axes, f"{name} [{label}]")
        print(f"  {label}: interpreter {elapsed:.2f} s, matches the reference")
        extra = EXTRA_CHECKS.get(name)
        if extra is not None:
            total += extra(module, index, label, axes, inputs, outputs, expected, d)
    print(f"{name}: interpreter time {total:.2f} s in all")
    print("ALL OK")


# Extra checks that reach the solutions' inner launchers (block-size / split choices the small inputs
# would not take by themselves). Each returns the interpreter seconds it spent.

def extra_gemm(module, index, label, axes, inputs, outputs, expected, d):
    exact = inputs["A"].double() @ inputs["B"].double().T  # against float64 too, not only the reference
    assert_close(outputs["C"], exact, "bfloat16", f"gemm [{label}] vs float64")
    return 0.0


def extra_paged_decode(module, index, label, axes, inputs, outputs, expected, d):
    # Split-K paths the heuristic does not take on these short contexts: 3 splits of the first set leave
    # programs with no tokens (its 1-token sequence); 7 splits of 600 tokens end in a partial block.
    forced = {0: (3,), 2: (7,)}.get(index, ())
    spent = 0.0
    for splits in forced:
        t0 = time.perf_counter()
        out, lse = module.paged_decode(*inputs.values(), num_splits=splits)
        spent += time.perf_counter() - t0
        check_against({"output": out, "lse": lse}, expected, d, axes, f"{d['name']} [{label}] num_splits={splits}")
    if forced:
        print(f"  {label}: num_splits {forced} forced: interpreter {spent:.2f} s, matches the reference")
    return spent


def extra_routing(module, index, label, axes, inputs, outputs, expected, d):
    spent = 0.0
    for block_t in (4, 16):  # the prefill tilings, with a partial last tile
        t0 = time.perf_counter()
        outputs = module.softmax_topk(inputs["router_logits"], block_t=block_t)
        spent += time.perf_counter() - t0
        check_against(outputs, expected, d, axes, f"routing [{label}] block_t={block_t}")
    print(f"  {label}: block_t 4 and 16 forced: interpreter {spent:.2f} s, match the reference")
    return spent


EXTRA_CHECKS = {
    "gemm_n6144_k4096": extra_gemm,
    "gqa_paged_decode_h32_kv8_d128_ps16": extra_paged_decode,
    "gqa_paged_decode_h32_kv8_d128_ps1": extra_paged_decode,
    "moe_routing_softmax_topk8_e128": extra_routing,
}


# ---------------------------------------------------------------------------------- compile check

def compile_shapes(name: str, d: dict):
    """Realistic serving shapes (CPU tensors, never executed) that take every launch branch."""
    import torch
    bf = torch.bfloat16
    ax = {n: a.get("value") for n, a in d["axes"].items()}
    if name in ("rmsnorm_h4096", "fused_add_rmsnorm_h4096"):
        for b in (1, 4096):
            x = torch.empty(b, ax["hidden_size"], dtype=bf)
            w = torch.empty(ax["hidden_size"], dtype=bf)
            yield (x, w) if name == "rmsnorm_h4096" else (x, torch.empty_like(x), w)
    elif name == "silu_and_mul_i14336":
        yield (torch.empty(256, ax["gate_up_size"], dtype=bf),)
    elif name == "rope_llama3_h32_kv8_d128":
        t = 2048
        yield (torch.zeros(t, dtype=torch.int64), torch.empty(t, 32, 128, dtype=bf), torch.empty(t, 8, 128, dtype=bf),
               torch.empty(8192, 128, dtype=torch.float32))
    elif name == "gemm_n6144_k4096":
        B = torch.empty(ax["N"], ax["K"], dtype=bf)
        for m in (1, 32, 64, 128, 512, 8192):
            yield (torch.empty(m, ax["K"], dtype=bf), B)
    elif name.startswith("gqa_paged_decode"):
        ps = ax["page_size"]
        for batch, ctx in ((1, 32768 if ps == 16 else 4096), (64, 2048)):
            pages_per_seq = ctx // ps
            num_pages = batch * pages_per_seq
            cache = torch.empty(num_pages, ps, 8, 128, dtype=bf)
            yield (torch.empty(batch, 32, 128, dtype=bf), cache, cache,
                   torch.arange(0, num_pages + 1, pages_per_seq, dtype=torch.int32),
                   torch.arange(num_pages, dtype=torch.int32), torch.full((batch,), ps, dtype=torch.int32),
                   1.0 / math.sqrt(128))
    elif name == "moe_routing_softmax_topk8_e128":
        for t in (1, 4096, 16384):
            yield (torch.empty(t, 128, dtype=bf),)
    else:
        raise AssertionError(name)


def ptxas_usage(ptx: str, kernel_name: str):
    """(registers per thread, spill-store bytes) that Triton's bundled ptxas reports for sm_90a."""
    import re
    from triton.backends.nvidia.compiler import get_ptxas
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx, encoding="utf-8")
        proc = subprocess.run([get_ptxas(90).path, "-arch=sm_90a", "-v", str(src), "-o", str(Path(tmp) / "k.o")],
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"ptxas failed on {kernel_name}:\n{proc.stderr[-3000:]}"
    regs = re.search(r"Used (\d+) registers", proc.stderr)
    spills = re.search(r"(\d+) bytes spill stores", proc.stderr)
    return (int(regs.group(1)) if regs else None), (int(spills.group(1)) if spills else 0)


def worker_compile(name: str) -> None:
    assert os.environ.get("TRITON_INTERPRET", "0") != "1", "the compile check needs the real compiler"
    import triton
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    launches = []

    def record(self, *args, grid, warmup, **kwargs):
        names = [p.name for p in self.params]
        bound = dict(zip(names, args))
        options = {}
        for k, v in kwargs.items():
            if k in names:
                bound[k] = v
            else:
                options[k] = v
        launches.append((self, bound, options))

    JITFunction.run = record  # launches are recorded, never executed (there is no GPU here)
    d = json.loads(definition_path(name).read_text(encoding="utf-8"))
    _, run = load_solution_module(name)
    for args in compile_shapes(name, d):
        run(*args)
    assert launches, "the solution launched no kernel"

    target = GPUTarget("cuda", 90, 32)
    seen = set()
    for fn, bound, options in launches:
        signature, constexprs, attrs = {}, {}, {}
        for i, p in enumerate(fn.params):
            value = bound[p.name]
            if p.is_constexpr:
                signature[p.name] = "constexpr"
                constexprs[(i,)] = value
                continue
            # Triton's own argument specialisation (as its launcher does on a GPU): integers equal to 1
            # become constants, 16-divisible integers and 16-byte aligned pointers get tt.divisibility.
            kind, attr = native_specialize_impl(CUDABackend, value, False, not p.do_not_specialize,
                                                not p.do_not_specialize_on_alignment)
            signature[p.name] = kind
            if kind == "constexpr":
                constexprs[(i,)] = attr
            elif isinstance(attr, str):
                attrs[(i,)] = CUDABackend.parse_attr(attr)
        key = (fn.__name__, tuple(sorted(signature.items())), tuple(sorted(constexprs.items())),
               tuple(sorted(attrs)), tuple(sorted(options.items())))
        if key in seen:
            continue
        seen.add(key)
        t0 = time.perf_counter()
        kernel = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options)
        shared = kernel.metadata.shared
        regs, spills = ptxas_usage(kernel.asm["ptx"], kernel.metadata.name)
        consts = ", ".join(f"{fn.params[k[0]].name}={v}" for k, v in constexprs.items()
                           if fn.params[k[0]].is_constexpr)
        print(f"  {fn.__name__}({consts}) {options}: sm_90a cubin {len(kernel.asm['cubin'])} B, "
              f"shared memory {shared} B, {regs} registers/thread, {spills} B spilled, "
              f"{time.perf_counter() - t0:.1f} s")
        assert shared <= SHARED_SMEM_LIMIT, f"{fn.__name__} needs {shared} B of shared memory"
    print("ALL OK")


if __name__ == "__main__":
    mode, names = sys.argv[1], sys.argv[2:]
    check = {"interp": worker_interp, "compile": worker_compile}[mode]
    for which in names:  # each solution's failure is reported in its own part; the others still run
        print(f"=== {which}", flush=True)
        try:
            check(which)
        except Exception:
            traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()
