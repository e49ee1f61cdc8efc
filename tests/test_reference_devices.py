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

Dynamic: the reference runs on its first test input set (tests/reference_cases) with every input tensor
on a second device, emulated on the CPU: a wrapper tensor (OnDevice) holds the CPU data and says it is on
"meta", and a dispatch mode (OtherDevice) runs each op on the CPU data, turns `device=<meta>` into the CPU
and wraps the results. An op that mixes a wrapped tensor with a plain (default-device) tensor of one or more
dimensions raises, as on a GPU (a 0-dim CPU tensor is let through: CUDA ops take those too), and every
output must be wrapped. Values are real, so data-dependent references (indptr bounds, `.item()`, boolean
masks) run as they are; the outputs must equal the plain CPU run's bit for bit (the emulation changes
nothing). A plain "meta" tensor, made by torch internals from Python data (`x[[0, 2]]`) without passing
the dispatcher, has no values: the emulation stops there with an error that says so. Neither the meta
device alone (no values) nor a TorchFunctionMode that watches devices on the CPU (both devices are "cpu")
would tell the two apart.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import torch
from test_references import all_axes, as_output_dict, exec_function
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from reference_cases import CASES

DATASET = Path(__file__).resolve().parent.parent / "dataset"
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


# --------------------------------------------------------------------------------------------------
# Dynamic: the reference on a second device, emulated on the CPU.
# --------------------------------------------------------------------------------------------------

OTHER = torch.device("meta")  # stands for the inputs' device: any device but the default one
FROM_DATA = frozenset({torch.tensor, torch.as_tensor, torch.asarray})


class OffDevice(Exception):
    """A reference mixed a tensor on the default device with the inputs' device."""


class OnDevice(torch.Tensor):
    """A CPU tensor that says it is on OTHER; its ops run under OtherDevice (see the module docstring)."""

    @staticmethod
    def __new__(cls, elem: torch.Tensor):
        t = torch.Tensor._make_wrapper_subclass(cls, elem.shape, strides=elem.stride(),
                                                 storage_offset=elem.storage_offset(), dtype=elem.dtype,
                                                 device=OTHER, requires_grad=False)
        t.elem = elem
        return t

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"{func} on an OnDevice tensor outside OtherDevice")


def _is_other(a) -> bool:
    return isinstance(a, torch.device) and a.type == OTHER.type


def _wrap_new(o):
    return OnDevice(o) if isinstance(o, torch.Tensor) and not isinstance(o, OnDevice) else o


class OtherDevice(TorchDispatchMode):
    """Runs every op on the CPU data of its OnDevice arguments, OTHER as a device argument made the CPU,
    and wraps the results of ops that had either; raises OffDevice on a plain tensor of one or more
    dimensions among OnDevice arguments."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        wrapped = [a for a in flat if isinstance(a, OnDevice)]
        stray = [a for a in flat if isinstance(a, torch.Tensor) and not isinstance(a, OnDevice) and a.device == OTHER]
        if stray:
            raise RuntimeError(f"{func}: a {OTHER.type} tensor made by torch internals from Python data "
                               "(list indexing?): the emulated device cannot run it")
        if wrapped:
            plain = [a for a in flat if isinstance(a, torch.Tensor) and not isinstance(a, OnDevice) and a.dim() > 0]
            if plain:
                raise OffDevice(f"{func}: a tensor on the default device ({plain[0].device}, shape "
                                f"{tuple(plain[0].shape)}) with tensors on the inputs' device")

        def unwrap(a):
            return a.elem if isinstance(a, OnDevice) else torch.device("cpu") if _is_other(a) else a

        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
        moved_off = kwargs.get("device") is not None and not _is_other(kwargs["device"])  # .cpu(), .to("cpu")
        if moved_off or (not wrapped and not any(_is_other(a) for a in flat)):
            return out
        same = {id(a.elem): a for a in wrapped}  # in-place ops return their argument
        return tree_map(lambda o: same.get(id(o)) if id(o) in same else _wrap_new(o), out)


class FromDataOnOtherDevice(TorchFunctionMode):
    """torch.tensor(data, device=OTHER) and the like make their tensor below the dispatcher: made on the
    CPU here and wrapped."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        device = kwargs.get("device")
        if func in FROM_DATA and device is not None and _is_other(torch.device(device)):
            return _wrap_new(func(*args, **{**kwargs, "device": "cpu"}))
        return func(*args, **kwargs)


def first_input_set(d: dict) -> tuple[dict, dict]:
    """(axes, inputs) of the definition's first input set in tests/test_references.py."""
    case = CASES[d["name"]]
    axes = all_axes(d, case.sizes[0])
    inputs = case.make_inputs(axes, torch.Generator().manual_seed(17), 0)
    assert list(inputs) == list(d["inputs"])
    return axes, inputs


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.uint8) if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else t


def run_on_other_device(reference: str, d: dict, axes: dict, inputs: dict) -> None:
    """Run `reference` on `inputs` on the CPU and on the emulated device; raise OffDevice or AssertionError
    when it leaves the inputs' device, or when the two runs differ."""
    run = exec_function(reference, f"{d['name']}.reference")
    torch.manual_seed(0)
    plain = as_output_dict(run(*inputs.values()), d)
    moved = [OnDevice(v.clone()) if isinstance(v, torch.Tensor) else v for v in inputs.values()]
    torch.manual_seed(0)
    with OtherDevice(), FromDataOnOtherDevice():
        outputs = as_output_dict(run(*moved), d)
    off = [name for name, v in outputs.items() if not isinstance(v, OnDevice)]
    assert not off, f"outputs {off} are not on the inputs' device"
    for name, v in outputs.items():
        torch.testing.assert_close(_bits(v.elem), _bits(plain[name]), rtol=0, atol=0, equal_nan=True,
                                   msg=lambda m: f"{name}: the emulated run differs from the CPU run: {m}")


@pytest.mark.parametrize("path", DEFINITION_FILES, ids=lambda p: p.stem)
def test_reference_runs_on_the_inputs_device(path, one_torch_thread):
    d = _load(path)
    run_on_other_device(d["reference"], d, *first_input_set(d))


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
