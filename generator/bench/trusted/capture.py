"""Outputs taken out of a worker's device memory by the trusted process (CUDA IPC), the moment a batch ends.

On a GPU, the commitment a worker makes to its outputs (protocol.digest: copied to the host and hashed)
is most of the harness's work in a batch and varies by milliseconds a call between batches: the first
H100 runs charged that noise to 20 us kernels as thousands of us. Here the worker instead answers a
batch with a handle to each output's device memory (sandboxed/handles.py); the trusted process
opens it (`Capture`, in runner.py's process) and copies the outputs it chose to check into memory of its
own as soon as the answer arrives, before it sends anything else. A worker that changes an output after
that changes nothing we read; one that is still writing it (a kernel it did not wait for) shares the
device with the copy, and that time shows in the batch's wall clock, which now holds no hashing. The
choice of checked calls is made in this process and never sent: the worker cannot learn it.

Everything in a descriptor is untrusted: the handle may not open, the range may lie outside what it
maps, the dtype and shape may not be the ones asked for. Each is a ProtocolError (the pair's
RUNTIME_ERROR), or, for dtype and shape, the comparison's INCORRECT_* verdict.

The driver's calls are shared/cuda_ipc.py's; the worker's half (`describe`) is sandboxed/handles.py.
"""

from __future__ import annotations

import ctypes
import math
import sys
import time
from typing import Any

import torch

from ..shared.cuda_ipc import (
    HANDLE_BYTES,
    LAZY_ENABLE_PEER_ACCESS,
    CaptureUnavailable,
    address_range,
    check_call,
    driver_function,
    make_handle,
)
from ..shared.inputs import TORCH_DTYPES
from ..shared.protocol import ProtocolError

MAX_ELEMENTS = 1 << 40


class _Raw:
    """A device byte range as __cuda_array_interface__, for torch.as_tensor (no copy)."""

    def __init__(self, ptr: int, n: int):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (ptr, False), "version": 3,
                                         "strides": None}


class Capture:
    """The trusted process's view of one worker's device memory: handles opened once, closed with the worker."""

    def __init__(self, device: str):
        self.device = torch.device(device)
        torch.zeros(1, device=self.device)  # a current context on this thread for the driver calls
        self.opened: dict[str, tuple[int, int]] = {}  # handle hex -> (mapped base, mapped size)
        self.open_s = 0.0  # seconds spent opening handles (host-side driver work, not the worker's time)

    def _open(self, handle_hex: str) -> tuple[int, int]:
        if handle_hex not in self.opened:
            try:
                raw = bytes.fromhex(handle_hex)
            except ValueError:
                raise ProtocolError("an output handle that is not hex") from None
            if len(raw) != HANDLE_BYTES:
                raise ProtocolError(f"an output handle of {len(raw)} bytes (a CUDA IPC handle has {HANDLE_BYTES})")
            ptr = ctypes.c_uint64()
            started = time.perf_counter()
            try:
                check_call(driver_function("cuIpcOpenMemHandle")(ctypes.byref(ptr), make_handle(raw), ctypes.c_uint(LAZY_ENABLE_PEER_ACCESS)),
                       "cuIpcOpenMemHandle")
                base, size = address_range(ptr.value)
            except CaptureUnavailable as exc:
                raise ProtocolError(f"an output handle that does not open here ({exc})") from None
            finally:
                self.open_s += time.perf_counter() - started
            self.opened[handle_hex] = (ptr.value, size)
        return self.opened[handle_hex]

    def read(self, desc: Any) -> torch.Tensor:
        """A copy, in this process's memory, of the output a descriptor points at (an empty tensor: no handle).
        The copy is queued on this process's stream; `sync` waits for it."""
        if not (isinstance(desc, list) and len(desc) == 5 and isinstance(desc[0], str)
                and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in desc[1:3])
                and isinstance(desc[3], str) and isinstance(desc[4], list)
                and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < MAX_ELEMENTS for x in desc[4])):
            raise ProtocolError("an output descriptor that is not [handle, offset, bytes, dtype, shape]")
        handle, offset, nbytes, dtype_name, shape = desc
        dtype = TORCH_DTYPES.get(dtype_name)
        if dtype is None:
            raise ProtocolError(f"an output of dtype {dtype_name[:40]!r}, which no definition uses")
        numel = math.prod(shape)
        if numel * dtype.itemsize != nbytes or numel > MAX_ELEMENTS:
            raise ProtocolError(f"an output descriptor of {nbytes} bytes for shape {shape[:8]} of {dtype_name}")
        if numel == 0:
            return torch.empty(shape, dtype=dtype, device=self.device)
        if len(handle) != 2 * HANDLE_BYTES:
            raise ProtocolError(f"an output handle of {len(handle)} hex digits (a CUDA IPC handle has {2 * HANDLE_BYTES})")
        base, size = self._open(handle)
        if offset + nbytes > size:
            raise ProtocolError(f"an output range [{offset}, {offset + nbytes}) outside the {size} bytes its handle maps")
        view = torch.as_tensor(_Raw(base + offset, nbytes), device=self.device)
        return view.clone().view(dtype).view(shape)

    def sync(self) -> None:
        torch.cuda.synchronize(self.device)

    def close(self) -> None:
        close = driver_function("cuIpcCloseMemHandle")
        for base, _ in self.opened.values():
            close(ctypes.c_uint64(base))
        self.opened.clear()


# -- the run's choice (runner.py) ----------------------------------------------------------------------
def give_up(opts: Any, *remotes: Any) -> None:
    """The trusted reference's outputs did not copy out: the rest of the run commits by digest."""
    opts.capture = "digest"
    for remote in remotes:
        if remote is not None and remote.capture is not None:
            try:
                remote.capture.close()
            except CaptureUnavailable:
                pass
            remote.capture = None
    print("kerneltrace bench: copying a reference's outputs out of its worker failed; the rest of this run "
          "commits outputs by digest", file=sys.stderr)


def attach(remote: Any, opts: Any) -> None:
    """Give a worker's trusted side a capture when the run copies outputs out (opts.capture == "ipc")."""
    if opts.device != "cpu" and opts.capture == "ipc":
        remote.capture = Capture(opts.device)
