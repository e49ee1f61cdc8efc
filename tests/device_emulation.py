"""The dynamic half of tests/dataset/test_reference_devices.py: a reference run with every input tensor on a second
device, emulated on the CPU (tests/dataset/test_references.py runs it for every definition on its first input set).

A wrapper tensor (OnDevice) holds the CPU data and says it is on "meta", and a dispatch mode (OtherDevice)
runs each op on the CPU data, turns `device=<meta>` into the CPU and wraps the results. An op that mixes a
wrapped tensor with a plain (default-device) tensor of one or more dimensions raises, as on a GPU (a 0-dim
CPU tensor is let through: CUDA ops take those too), and every output must be wrapped. Values are real, so
data-dependent references (indptr bounds, `.item()`, boolean masks) run as they are; the outputs must equal
the plain CPU run's bit for bit (the emulation changes nothing). A plain "meta" tensor, made by torch
internals from Python data (`x[[0, 2]]`) without passing the dispatcher, has no values: the emulation stops
there with an error that says so. Neither the meta device alone (no values) nor a TorchFunctionMode that
watches devices on the CPU (both devices are "cpu") would tell the two apart.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from reference_check import as_output_dict, exec_function

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


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.uint8) if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else t


def run_on_other_device(reference: str, d: dict, axes: dict, inputs: dict, plain: dict | None = None) -> None:
    """Run `reference` on `inputs` on the CPU (unless `plain` holds that run's outputs) and on the emulated
    device; raise OffDevice or AssertionError when it leaves the inputs' device, or when the two runs differ."""
    run = exec_function(reference, f"{d['name']}.reference")
    if plain is None:
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
