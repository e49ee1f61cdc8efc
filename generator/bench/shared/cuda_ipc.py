"""The CUDA driver's IPC calls, through ctypes, for both sides of an output copied out of a worker (CUDA IPC).

The worker takes a handle to each output's allocation (sandboxed/handles.py); the trusted process opens it and
copies the outputs it chose (trusted/capture.py). The driver API is reached through ctypes (libcuda is what every
CUDA process on the machine loads): torch exposes IPC only through its multiprocessing reductions, whose reference
counting needs a shared /dev/shm that the sandbox does not have.
"""

from __future__ import annotations

import ctypes
from typing import Optional

HANDLE_BYTES = 64  # CU_IPC_HANDLE_SIZE
LAZY_ENABLE_PEER_ACCESS = 1  # cuIpcOpenMemHandle's flag


class Handle(ctypes.Structure):
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


def driver_function(name: str):
    lib = _driver()
    for symbol in (name + "_v2", name):
        f = getattr(lib, symbol, None)
        if f is not None:
            f.restype = ctypes.c_int
            return f
    raise CaptureUnavailable(f"libcuda has no {name}")


def check_call(code: int, what: str) -> None:
    if code != 0:
        raise CaptureUnavailable(f"{what} failed (CUDA driver error {code})")


def address_range(ptr: int) -> tuple[int, int]:
    """(base, size) of the allocation holding device address `ptr`."""
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    check_call(driver_function("cuMemGetAddressRange")(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr)),
           "cuMemGetAddressRange")
    return base.value, size.value


def handle_bytes(handle: Handle) -> bytes:
    """All 64 bytes (the c_char array's .value and bytes() of it stop at the first NUL: the first GPU run's
    probe failed on exactly that)."""
    return ctypes.string_at(ctypes.addressof(handle), HANDLE_BYTES)


def make_handle(raw: bytes) -> Handle:
    handle = Handle()
    ctypes.memmove(ctypes.addressof(handle), raw, HANDLE_BYTES)
    return handle
