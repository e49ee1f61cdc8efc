"""Input helpers the Triton cases share (torch imported inside the functions: see __init__)."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def bf16(t):
    import torch
    return t.to(torch.bfloat16)


def paged_inputs(d, g, seed, lens, sm_scale_as_tensor, kv_heads=None):
    """A paged KV cache of the given sequence lengths, laid out by the workload generator's allocator.
    kv_heads: fewer KV heads than the definition's, with its group of query heads per KV head (the kernels
    read both counts from the shapes; each KV head is programs of its own, which the interpreter pays for,
    and the compile check keeps the real counts); the axes returned then name the head counts used."""
    import numpy as np
    import torch
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from generator.workloadgen import core

    ax = d["axes"]
    hq, hk, D, ps = (ax[n]["value"] for n in ("num_qo_heads", "num_kv_heads", "head_dim", "page_size"))
    if kv_heads is not None:
        hq, hk = hq // hk * kv_heads, kv_heads
    layout = core.paged_kv(core.rng(seed), np.asarray(lens), ps)
    num_pages = layout["num_pages"]
    batch = len(lens)
    q = bf16(torch.randn(batch, hq, D, generator=g) * 2.0)
    k_cache = bf16(torch.randn(num_pages, ps, hk, D, generator=g))
    v_cache = bf16(torch.randn(num_pages, ps, hk, D, generator=g))
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
    if kv_heads is not None:
        axes.update(num_qo_heads=hq, num_kv_heads=hk)
    return axes, inputs


TORCH_DTYPE_NAMES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16", "int32": "int32",
                     "int64": "int64", "float8_e4m3": "float8_e4m3fn", "uint8": "uint8", "int8": "int8"}


def check_against(outputs: dict, expected: dict, d: dict, axes: dict, what: str) -> None:
    """Every output present, of the definition's dtype and shape, and close to `expected`
    (tests/tolerances.py; integer outputs exactly)."""
    import torch

    from tolerances import assert_close
    assert set(outputs) == set(d["outputs"]), f"{what}: returned {sorted(outputs)}"
    all_axes = {n: a["value"] for n, a in d["axes"].items() if a["type"] == "const"}
    all_axes.update(axes)
    for name, spec in d["outputs"].items():
        value = outputs[name]
        assert isinstance(value, torch.Tensor), f"{what}: {name} is not a tensor"
        want_dtype = getattr(torch, TORCH_DTYPE_NAMES[spec["dtype"]])
        assert value.dtype == want_dtype, f"{what}: {name} has dtype {value.dtype}"
        assert tuple(value.shape) == tuple(all_axes[a] for a in spec["shape"]), f"{what}: {name} has shape {value.shape}"
        assert_close(value, expected[name], spec["dtype"], f"{what}: {name}")


def check_forced(label: str, d: dict, axes: dict, expected: dict, setting: str, values, call) -> float:
    """Run the solution again with `setting` forced to each of `values` (split counts, tilings: launch
    paths its heuristic does not take on the small inputs), each result checked against `expected` as
    check_against does; `call(value)` runs it and returns its output dict. Returns the seconds spent."""
    spent = 0.0
    for value in values:
        t0 = time.perf_counter()
        outputs = call(value)
        spent += time.perf_counter() - t0
        check_against(outputs, expected, d, axes, f"{d['name']} [{label}] {setting}={value}")
    if values:
        print(f"  {label}: {setting} {tuple(values)} forced: interpreter {spent:.2f} s, matches the reference")
    return spent


def paged_decode_shape_args(d, batch: int, ctx: int, cache_dtype=None) -> tuple:
    """Empty tensors of a paged decode at `batch` sequences of `ctx` tokens each (full pages, in order), shaped by
    the definition's heads, head size and page size: (q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len),
    for the compile checks, which only read shapes and dtypes."""
    import torch

    hq, hk, D, ps = (d["axes"][n]["value"] for n in ("num_qo_heads", "num_kv_heads", "head_dim", "page_size"))
    pages_per_seq = ctx // ps
    num_pages = batch * pages_per_seq
    cache = torch.empty(num_pages, ps, hk, D, dtype=cache_dtype or torch.bfloat16)
    return (torch.empty(batch, hq, D, dtype=torch.bfloat16), cache, cache,
            torch.arange(0, num_pages + 1, pages_per_seq, dtype=torch.int32),
            torch.arange(num_pages, dtype=torch.int32), torch.full((batch,), ps, dtype=torch.int32))
