"""Outputs taken out of a worker's device memory by the trusted process (CUDA IPC), the moment a batch ends.

On a GPU, the commitment a worker makes to its outputs (protocol.digest: copied to the host and hashed)
is most of the harness's work in a batch and varies by milliseconds a call between batches: the first
H100 runs charged that noise to 20 us kernels as thousands of us. Here the worker instead answers a
batch with a handle to each output's device memory (`describe`, in the worker); the trusted process
opens it (`Capture`, in runner.py's process) and copies the outputs it chose to check into memory of its
own as soon as the answer arrives, before it sends anything else. A worker that changes an output after
that changes nothing we read; one that is still writing it (a kernel it did not wait for) shares the
device with the copy, and that time shows in the batch's wall clock, which now holds no hashing. The
choice of checked calls is made in this process and never sent: the worker cannot learn it.

Everything in a descriptor is untrusted: the handle may not open, the range may lie outside what it
maps, the dtype and shape may not be the ones asked for. Each is a ProtocolError (the pair's
RUNTIME_ERROR), or, for dtype and shape, the comparison's INCORRECT_* verdict.

The driver API is reached through ctypes (libcuda is what every CUDA process on the machine loads):
torch exposes IPC only through its multiprocessing reductions, whose reference counting needs a shared
/dev/shm that the sandbox does not have.
"""

from __future__ import annotations

import ctypes
import math
import sys
import time
from typing import Any, Optional

import torch

from .inputs import TORCH_DTYPES
from .protocol import ProtocolError

HANDLE_BYTES = 64  # CU_IPC_HANDLE_SIZE
MAX_ELEMENTS = 1 << 40
_LAZY_ENABLE_PEER_ACCESS = 1


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


class CaptureUnavailable(Exception):
    """CUDA IPC does not work here (no libcuda, a sandbox or allocator that refuses it)."""


_DRIVER: Optional[ctypes.CDLL] = None


def _driver() -> ctypes.CDLL:
    global _DRIVER
    if _DRIVER is None:
        try:
            _DRIVER = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise CaptureUnavailable(f"libcuda.so.1 does not load ({exc})") from None
    return _DRIVER


def _fn(name: str):
    lib = _driver()
    for symbol in (name + "_v2", name):
        f = getattr(lib, symbol, None)
        if f is not None:
            f.restype = ctypes.c_int
            return f
    raise CaptureUnavailable(f"libcuda has no {name}")


def _check(code: int, what: str) -> None:
    if code != 0:
        raise CaptureUnavailable(f"{what} failed (CUDA driver error {code})")


def address_range(ptr: int) -> tuple[int, int]:
    """(base, size) of the allocation holding device address `ptr`."""
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    _check(_fn("cuMemGetAddressRange")(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr)),
           "cuMemGetAddressRange")
    return base.value, size.value


def handle_bytes(handle: _Handle) -> bytes:
    """All 64 bytes (the c_char array's .value and bytes() of it stop at the first NUL: the first GPU run's
    probe failed on exactly that)."""
    return ctypes.string_at(ctypes.addressof(handle), HANDLE_BYTES)


def make_handle(raw: bytes) -> _Handle:
    handle = _Handle()
    ctypes.memmove(ctypes.addressof(handle), raw, HANDLE_BYTES)
    return handle


# -- the worker's side (untrusted: it only describes) ---------------------------------------------------
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
        handle = _Handle()
        _check(_fn("cuIpcGetMemHandle")(ctypes.byref(handle), ctypes.c_uint64(base)), "cuIpcGetMemHandle")
        _EXPORTED[base] = handle_bytes(handle).hex()
    return [_EXPORTED[base], ptr - base, t.numel() * t.element_size(), dtype, list(t.shape)], t


def forget() -> None:
    """Drop the handles taken so far (after the allocator returned its memory to the driver)."""
    _EXPORTED.clear()


# -- the trusted side ---------------------------------------------------------------------------------
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
                _check(_fn("cuIpcOpenMemHandle")(ctypes.byref(ptr), make_handle(raw), ctypes.c_uint(_LAZY_ENABLE_PEER_ACCESS)),
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
        close = _fn("cuIpcCloseMemHandle")
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
