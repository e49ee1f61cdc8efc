"""Every definition's reference must run on the device of its inputs, not only on the CPU.

The bench runs each reference in a worker on the device under test (`cuda` on a GPU machine), with every
input tensor on that device. A tensor the reference creates without `device=` lands on the CPU (torch's
default): on a GPU the reference then either returns a CPU output or raises (a CPU mask applied to CUDA
logits). On the CPU such a reference passes every other check. Two checks here, neither needs a GPU:

Static: each reference is parsed with `ast` and every call is flagged that
- creates a tensor from sizes or data (torch.zeros, empty, ones, full, arange, tensor, randn, ...) without a
  `device=` keyword, or with a literal CPU device (`device="cpu"`, `device=torch.device("cpu")`);
- passes a literal CPU device to a `*_like` factory, to `x.new_*` or to `.to(...)`;
- moves a tensor to the host or to a named device (`.cpu()`, `.numpy()`, `.cuda()`).
The `*_like` factories and `x.new_*` take the device of their tensor and are not flagged. Any non-literal
`device=` (`device=q.device`, `device=device`) is taken as the inputs' device: what it evaluates to is
not checked here, but by the dynamic check.

Dynamic (tests/device_emulation.py, run for every definition by tests/dataset/test_references.py on the input set it
already holds): the reference runs with every input tensor on a second device, emulated on the CPU, and
must give the plain CPU run's outputs bit for bit, on that device. test_the_emulated_device_bites below
shows that the emulation catches a reference that leaves the device.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import torch
from device_emulation import OffDevice, run_on_other_device

from reference_cases import CASES
from reference_check import all_axes

DATASET = Path(__file__).resolve().parents[2] / "dataset"
DEFINITION_FILES = sorted((DATASET / "definitions").glob("*/*.json"))

# Factories that make a new tensor from sizes or data: on the default device unless given `device=`.
FACTORIES = frozenset({
    "zeros", "ones", "empty", "full", "arange", "range", "linspace", "logspace", "eye", "tensor", "as_tensor",
    "asarray", "scalar_tensor", "empty_strided", "rand", "randn", "randint", "randperm",
    "tril_indices", "triu_indices", "from_numpy", "frombuffer", "Generator",
    "hann_window", "hamming_window", "bartlett_window", "blackman_window", "kaiser_window",
})
# Factories that make a tensor like another one (its device unless told otherwise).
LIKE_FACTORIES = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
                            "randint_like"})
HOST_METHODS = frozenset({"cpu", "numpy", "cuda"})


def _is_cpu_literal(node: ast.expr) -> bool:
    """`"cpu"`, `"cpu:0"`, `torch.device("cpu")`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split(":")[0] == "cpu"
    if isinstance(node, ast.Call) and _torch_name(node.func) == "device" and node.args:
        return _is_cpu_literal(node.args[0])
    return False


def _torch_name(func: ast.expr, torch_names: frozenset = frozenset({"torch"})) -> str | None:
    """The name X of a call to `torch.X` (or `<alias of torch>.X`)."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in torch_names:
        return func.attr
    return None


def device_findings(source: str) -> list[str]:
    """Each call of `source` that creates or moves a tensor off the inputs' device, as 'line N: text'."""
    tree = ast.parse(source)
    torch_names = {"torch"}
    imported: dict[str, str] = {}  # local name -> torch factory name, from `from torch import zeros as z`
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            torch_names |= {a.asname or a.name for a in node.names if a.name == "torch"}
        elif isinstance(node, ast.ImportFrom) and node.module == "torch":
            imported |= {a.asname or a.name: a.name for a in node.names}
    torch_names = frozenset(torch_names)

    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    findings = []
    for node in calls:
        name = _torch_name(node.func, torch_names)
        if name is None and isinstance(node.func, ast.Name):
            name = imported.get(node.func.id)
        device = next((k.value for k in node.keywords if k.arg == "device"), None)
        # `**kwargs` may carry a device: not flagged for a missing one.
        splat = any(k.arg is None for k in node.keywords)
        text = ast.get_source_segment(source, node) or ast.dump(node)
        problem = None
        if name in FACTORIES:
            if device is None and not splat:
                problem = f"torch.{name} without device="
            elif device is not None and _is_cpu_literal(device):
                problem = f"torch.{name} on the CPU"
        elif name in LIKE_FACTORIES or (isinstance(node.func, ast.Attribute) and node.func.attr.startswith("new_")):
            if device is not None and _is_cpu_literal(device):
                problem = "a tensor made on the CPU"
        elif isinstance(node.func, ast.Attribute) and node.func.attr in HOST_METHODS:
            problem = f".{node.func.attr}()"
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            if any(_is_cpu_literal(a) for a in node.args) or (device is not None and _is_cpu_literal(device)):
                problem = ".to() the CPU"
        if problem:
            findings.append(f"line {node.lineno}: {problem}: {text.splitlines()[0]}")
    return findings


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", DEFINITION_FILES, ids=lambda p: p.stem)
def test_reference_creates_its_tensors_on_the_inputs_device(path):
    findings = device_findings(_load(path)["reference"])
    assert not findings, (f"{path.relative_to(DATASET.parent)}: the reference makes tensors on the default "
                          "device, not its inputs' (give them device=<an input>.device):\n  " + "\n  ".join(findings))


def first_input_set(d: dict) -> tuple[dict, dict]:
    """(axes, inputs) of the definition's first input set in tests/dataset/test_references.py."""
    case = CASES[d["name"]]
    axes = all_axes(d, case.sizes[0])
    inputs = case.make_inputs(axes, torch.Generator().manual_seed(17), 0)
    assert list(inputs) == list(d["inputs"])
    return axes, inputs


PLANTED = '''
import torch
from torch import arange as ar


def run(x, indptr):
    n = x.shape[0]
    ok = torch.zeros(n, 4, dtype=torch.float32, device=x.device)
    also_ok = torch.zeros_like(x) + x.new_zeros(n) + torch.full((n,), 1.0, **{"device": x.device})
    a = torch.zeros(n, 4, dtype=torch.float32)
    b = torch.arange(n)[None, :] < indptr[1:, None]
    c = torch.tensor([1.0, 2.0])
    d = torch.empty(n, device="cpu")
    e = torch.full((n,), float("-inf"), device=torch.device("cpu"))
    f = torch.ones(n, n).tril()
    g = x.cpu()
    h = x.numpy()
    i = x.to("cpu")
    j = torch.zeros_like(x, device="cpu")
    k = ar(n)
    return {"y": ok}
'''


def test_the_check_bites():
    """A reference with every kind of mistake: each is flagged, on its line; the right calls are not."""
    lines = [int(f.split(":")[0].split()[1]) for f in device_findings(PLANTED)]
    source_lines = PLANTED.splitlines()
    expected = [n for n, line in enumerate(source_lines, 1)
                if line.strip()[:1] in "abcdefghijk" and line.strip()[1:4] == " = "]
    assert len(expected) == 11
    assert sorted(lines) == expected, "\n".join(device_findings(PLANTED))


def test_the_emulated_device_bites():
    """Planted in a real reference: a CPU tensor mixed with the inputs', a CPU output; and right calls
    (device= an input's, torch.tensor with it, list and mask indexing of an input) that must pass."""
    [path] = [p for p in DEFINITION_FILES if p.stem == "moe_sum_topk8_h2048"]
    d = _load(path)
    ref = d["reference"]
    right = "output = torch.zeros(num_tokens, hidden_size, dtype=torch.float32, device=input.device)"
    assert ref.count(right) == 1, "moe_sum_topk8_h2048 changed: plant elsewhere"
    axes, inputs = first_input_set(d)
    run_on_other_device(ref, d, axes, inputs)
    with pytest.raises(OffDevice, match="default device"):
        run_on_other_device(ref.replace(right, right.replace(", device=input.device", "")), d, axes, inputs)
    out = 'return {"output": output.to(torch.bfloat16)}'
    assert ref.count(out) == 1
    with pytest.raises(AssertionError, match="not on the inputs' device"):
        run_on_other_device(ref.replace(out, 'return {"output": output.to(torch.bfloat16).clone().cpu()}'),
                            d, axes, inputs)
    also_right = right + ("\n    output += torch.tensor(0.0, device=input.device)"
                          "\n    output[x[:, 0, 0] > 0] += torch.arange(hidden_size, device=input.device) * 0.0")
    run_on_other_device(ref.replace(right, also_right), d, axes, inputs)
