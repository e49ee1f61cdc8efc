"""The library contenders (generator/contenders/libraries/), checked on the CPU like our own solutions.

Every contender library_contenders() returns for the bundled dataset is one of a family's siblings:
the same call, differing only in const axes and baked-in constants. So one sibling per family and
distinct reference text (comments and the eps literal aside) is run, the one with the smallest const
axes: torch-ops on the CPU, liger-kernel's and fla-core's Triton kernels under Triton's interpreter
(TRITON_INTERPRET=1, with tests/interp_gaps.py), on the first input set of its reference case
(tests/reference_cases/) and compared with its reference (tests/tolerances.py). Norms also run on rows
scaled down to where eps matters (the weight, 1-D, is not scaled). Planted mistakes (a wrong eps, the
1 + w offset dropped, the state layout conversion dropped, the bias dropped) must fail the same check.

As tests/dataset/test_triton_solutions.py, the checks run in one subprocess (the interpreter must be on before
triton is imported); this file doubles as the worker (`python tests/contenders/test_library_contenders.py NAME...`).
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "dataset"
sys.path.insert(0, str(ROOT))

from generator.contenders.libraries import FAMILIES, REJECTED, library_contenders  # noqa: E402
from generator.model.contender_kinds import LIBRARY_AUTHORS  # noqa: E402

NORM_FAMILIES = {"rmsnorm", "fused_add_rmsnorm", "qk_rmsnorm", "allreduce_fused_add_rmsnorm", "rmsnorm_eps_input"}


@lru_cache(maxsize=1)
def contenders():
    from generator.load import load
    ds = load(DATASET)
    solutions, skipped = library_contenders(ds)
    return ds, solutions, skipped


def _reference_key(reference: str) -> str:
    text = re.sub(r"#.*", "", reference)
    return re.sub(r"eps = [0-9.eE+-]+", "eps = EPS", text)


@lru_cache(maxsize=1)
def representatives() -> dict[str, str]:
    """Checked definition -> its family's name: per family and distinct reference text, the sibling with the
    smallest const axes."""
    ds, solutions, _ = contenders()
    groups: dict = {}
    for family in FAMILIES:
        for s in solutions:
            d = ds.definitions[s["definition"]]
            if s["author"] == family.author and family.pattern.match(d.name):
                groups.setdefault((family.name, _reference_key(d.reference)), []).append(d)
    return {min(ds_, key=lambda d: (math.prod(d.const_axes.values()), d.name)).name: fam for (fam, _), ds_ in groups.items()}


# Planted mistakes: (definition's family, what, source edit) that must make the check fail.
PLANTED = [
    ("rmsnorm", "eps 10x too large", ("EPS = ", "EPS = 10 * ")),
    ("fused_add_rmsnorm", "eps 10x too large", ("EPS = ", "EPS = 10 * ")),
    ("rmsnorm", "Gemma's 1 + w offset dropped", ("OFFSET = 1.0", "OFFSET = 0.0")),
    ("qk_rmsnorm", "Gemma's 1 + w offset dropped", ("OFFSET = 1.0", "OFFSET = 0.0")),
    ("rmsnorm_eps_input", "the call's eps ignored (1e-3 baked in)", ("float(eps)", "1e-3")),
    ("gelu_tanh_and_mul", "gate and up swapped", ("gate, up = ", "up, gate = ")),
    ("rope", "cos and sin halves swapped", ("cos, sin = rows[:, :half], rows[:, half:]",
                                            "sin, cos = rows[:, :half], rows[:, half:]")),
    ("gdn_decode", "the k-last state read as fla's default [K, V]", ("state_v_first=True", "state_v_first=False")),
    ("gdn_mtp", "the gate computed without dt_bias", ("dt_bias=dt_bias", "dt_bias=None")),
    ("gemm_fp8_rowwise", "the bias dropped", (", bias=bias", "")),
    ("softmax_temperature", "the softmax over the batch instead of the vocabulary", ("dim=-1)", "dim=0)")),
    ("softmax_temperature", "the logits times the temperature", ("logits / temperature", "logits * temperature")),
    ("silu_and_mul", "gate and up swapped", ("input.to(torch.float32)", "input.roll(input.shape[1] // 2, 1).to(torch.float32)")),
]


def planted_targets() -> list[tuple[str, str, tuple]]:
    """(definition, what, edit) for each planted mistake: the first representative whose source has the text."""
    _, solutions, _ = contenders()
    source = {s["definition"]: s["sources"][0]["content"] for s in solutions}
    out = []
    for family, what, (old, new) in PLANTED:
        name = next((n for n, f in representatives().items() if f == family and old in source[n]), None)
        assert name is not None, f"no {family} representative has {old!r} to plant '{what}' in"
        out.append((name, what, (old, new)))
    return out


# ==================================================================================================
# pytest side
# ==================================================================================================

def test_at_least_80_definitions_have_a_library_contender_with_its_dependency():
    ds, solutions, skipped = contenders()
    assert len({s["definition"] for s in solutions}) >= 80
    assert len({s["name"] for s in solutions}) == len(solutions), "two contenders share a name"
    for s in solutions:
        package = LIBRARY_AUTHORS[s["author"]]
        deps = s["spec"]["dependencies"]
        pinned = [d for d in deps if re.split(r"[<>=!~]", d)[0] == package]
        assert pinned and re.search(r">=[\d.]+", pinned[0]), f"{s['name']}: no version range for {package}: {deps}"
        if package != "torch":  # a library's next minor version may change its call: an upper bound too
            assert "<" in pinned[0], f"{s['name']}: {pinned[0]} has no upper bound"
        targets = s["spec"]["target_hardware"]
        assert ("cpu" in targets) == (s["spec"]["language"] == "python"), f"{s['name']}: cpu only for torch ops"
        assert s["definition"] in ds.definitions and s["description"]
        compile(s["sources"][0]["content"], s["name"], "exec")
    assert all(why for _, why in skipped)
    assert REJECTED and all(isinstance(v, str) and v for v in REJECTED.values())


def test_a_solution_whose_dependency_is_missing_is_skipped_with_the_reason(tmp_path):
    """The plan skips it (listed with the others it skips), it never becomes a pair that fails on an ImportError."""
    import copy

    from generator.bench.trusted.plan import make_plan
    from generator.load import load

    from dataset_factory import SOLUTION, write_dataset

    solution = copy.deepcopy(SOLUTION)
    solution["spec"]["dependencies"] = ["torch", "liger-kernel>=0.8.5,<0.9"]
    ds = load(write_dataset(tmp_path / "ds", solution=solution))
    versions = {"torch": "2.13.0", "liger-kernel": "0.8.5"}
    assert make_plan(ds, "cpu", version_of=versions.get).pairs  # met: the pairs are planned

    for have, why in ((None, "needs liger-kernel>=0.8.5,<0.9, which is not installed here"),
                      ("0.9.0", "needs liger-kernel>=0.8.5,<0.9, but liger-kernel 0.9.0 is installed here")):
        plan = make_plan(ds, "cpu", version_of={**versions, "liger-kernel": have}.get)
        assert not plan.pairs
        assert [(s, w.split(" (")[0]) for s, w in plan.skipped] == [("rmsnorm_h128_torch", why)]


def test_dependency_ranges_are_read_as_pip_reads_them():
    from generator.bench.trusted.dependencies import satisfies, unmet
    assert satisfies("2.13.0+cpu", ">=2.6") and not satisfies("2.5.1", ">=2.6")
    assert satisfies("0.8.5", "<0.9") and not satisfies("0.9", "<0.9") and not satisfies("0.10.0", "<0.9")
    assert satisfies("0.6.0", "~=0.6.0") and not satisfies("0.7.0", "~=0.6.0") and satisfies("2.13.1", "==2.13.*")
    assert unmet(["a-pkg>=1.0"], {"a-pkg": "1.2"}.get) is None
    assert "cannot read" in unmet(["a-pkg>>1"], {"a-pkg": "1.2"}.get)


@pytest.fixture(scope="module")
def worker_runs() -> dict[str, str]:
    names = list(representatives())
    env = dict(os.environ, TRITON_INTERPRET="1", OMP_NUM_THREADS="1", TRITON_DEFAULT_FP_FUSION="1")
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), *names], cwd=str(ROOT), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
    parts, name = {}, None
    for line in proc.stdout.splitlines(keepends=True):
        if line.startswith("=== "):
            name = line[4:].strip()
            parts[name] = ""
        elif name is not None:
            parts[name] += line
    parts["(worker)"] = f"[exit {proc.returncode}]\n{proc.stdout[-3000:]}"
    return parts


def _part(runs, key):
    assert key in runs, f"the worker stopped before {key}:\n{runs['(worker)']}"
    print(runs[key])
    return runs[key]


@pytest.mark.parametrize("name", sorted(representatives()))
def test_library_contender_matches_its_reference(name, worker_runs):
    assert _part(worker_runs, name).rstrip().endswith("ALL OK")


@pytest.mark.parametrize("name,what", [(n, w) for n, w, _ in planted_targets()])
def test_planted_mistake_fails_the_check(name, what, worker_runs):
    assert _part(worker_runs, f"planted {name}: {what}").rstrip().endswith("FAILS, as it must")


# ==================================================================================================
# Worker side (a subprocess with TRITON_INTERPRET=1)
# ==================================================================================================

def load_run(name: str, source: str):
    folder = Path(tempfile.mkdtemp(prefix=f"kt_lib_{name}_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    (folder / "main.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"kt_lib_{abs(hash((name, source)))}", folder / "main.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run


def input_sets(d: dict, family: str):
    """The first input set of the definition's reference case; for norms also its rows scaled by 1e-3, where
    the mean of squares is near eps (a wrong eps shows there)."""
    import torch

    from reference_cases import CASES
    from reference_check import all_axes
    case = CASES[d["name"]]
    axes = all_axes(d, case.sizes[0])
    inputs = case.make_inputs(axes, torch.Generator().manual_seed(17), 0)
    yield "set 0", axes, inputs
    if family in NORM_FAMILIES:
        small = {k: (v * 1e-3).to(v.dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() and v.dim() > 1
                 else v for k, v in inputs.items()}
        yield "set 0 scaled 1e-3", axes, small


def check(name: str, family: str, source: str) -> None:
    from triton_cases.common import check_against
    d = json.loads(next((DATASET / "definitions").glob(f"*/{name}.json")).read_text(encoding="utf-8"))
    namespace: dict = {}
    exec(compile(d["reference"], f"{name}.reference", "exec"), namespace)
    run = load_run(name, source)
    for label, axes, inputs in input_sets(d, family):
        expected = namespace["run"](*inputs.values())
        check_against(run(*inputs.values()), expected, d, axes, f"{name} [{label}]")
        print(f"  {label} {axes}: matches")


def worker(names: list[str]) -> None:
    import liger_kernel.ops.fused_add_rms_norm  # noqa: F401  (imported before the gaps are filled)
    import liger_kernel.ops.geglu  # noqa: F401
    import liger_kernel.ops.rms_norm  # noqa: F401
    import liger_kernel.ops.rope  # noqa: F401
    import liger_kernel.ops.swiglu  # noqa: F401
    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule  # noqa: F401
    from interp_gaps import install
    install(("liger_kernel", "fla"))
    _, solutions, _ = contenders()
    source = {s["definition"]: s["sources"][0]["content"] for s in solutions}
    families = representatives()
    jobs = [(n, None, None) for n in names] + [(n, w, e) for n, w, e in planted_targets() if n in names]
    for name, what, edit in jobs:
        print(f"=== {name}" if what is None else f"=== planted {name}: {what}", flush=True)
        code = source[name] if edit is None else source[name].replace(*edit)
        try:
            check(name, families[name], code)
        except Exception:  # noqa: BLE001 - reported to the pytest side
            if what is None:
                traceback.print_exc(file=sys.stdout)
            else:
                print(f"  {traceback.format_exc().strip().splitlines()[-1][:300]}\nFAILS, as it must")
            continue
        print("ALL OK" if what is None else "PASSES: the check does not catch this mistake")
        sys.stdout.flush()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the helper modules
    worker(sys.argv[1:])
