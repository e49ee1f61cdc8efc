"""The worker's side of outputs copied out on CUDA (trusted/capture.py): a handle to each output's device memory.

Untrusted, as everything in the worker: it only describes where an output lies; the trusted process checks each
descriptor, copies what it chose to check, and reads nothing else of it.
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional

from ..shared.cuda_ipc import Handle, address_range, check_call, driver_function, handle_bytes
from ..shared.inputs import TORCH_DTYPES

_EXPORTED: dict[int, str] = {}  # allocation base -> its handle (hex): one driver call per allocation


def describe(value: Any) -> tuple[Optional[list], Any]:
    """([handle hex, offset, bytes, dtype name, shape] of a device tensor's elements (no handle: an empty one);
    the tensor described, made contiguous first: the caller keeps it alive until the trusted side has read it)."""
    t = value.detach()
    if not t.is_cuda:  # a reference may build an output on the host (a solution's is refused before, guards.py)
        t = t.to("cuda")
    if not t.is_contiguous():
        t = t.contiguous()
    dtype = next((k for k, v in TORCH_DTYPES.items() if v == t.dtype), str(t.dtype))
    if t.numel() == 0:
        return ["", 0, 0, dtype, list(t.shape)], t
    ptr = t.data_ptr()
    base, _ = address_range(ptr)
    if base not in _EXPORTED:
        handle = Handle()
        check_call(driver_function("cuIpcGetMemHandle")(ctypes.byref(handle), ctypes.c_uint64(base)), "cuIpcGetMemHandle")
        _EXPORTED[base] = handle_bytes(handle).hex()
    return [_EXPORTED[base], ptr - base, t.numel() * t.element_size(), dtype, list(t.shape)], t


def forget() -> None:
    """Drop the handles taken so far (after the allocator returned its memory to the driver)."""
    _EXPORTED.clear()
