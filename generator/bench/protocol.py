"""Messages between the trusted bench process and a worker process, over a pair of pipes.

A message is a JSON header and an optional binary payload (tensors packed with safetensors):
16 bytes of lengths (header, payload; little-endian uint64), then the header, then the payload.
Tensors travel as safetensors bytes because its parser is built for untrusted input (no pickle).

The reading side gives limits: a message longer than them, a header that is not a JSON object, a
payload that does not parse, or an operation other than the one expected is a `ProtocolError`; the
trusted side turns it into that solution's RUNTIME_ERROR and goes on.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any, Optional

import torch

MAX_HEADER = 1 << 20  # a header carries a log or a few numbers; 1 MiB is plenty


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed message of the expected kind."""


class Timeout(Exception):
    """No whole message arrived before the deadline."""


class Closed(ProtocolError):
    """The other side closed its end (it exited or was killed)."""


def pack(tensors: dict[str, torch.Tensor]) -> bytes:
    from safetensors.torch import save

    return save({k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}) if tensors else b""


def unpack(data: bytes) -> dict[str, torch.Tensor]:
    from safetensors.torch import load

    if not data:
        return {}
    try:
        return load(data)
    except Exception as exc:  # noqa: BLE001 - any parse failure of untrusted bytes is a protocol error
        raise ProtocolError(f"a tensor payload that does not parse ({type(exc).__name__}: {exc})") from None


def send(fd: int, header: dict, payload: bytes = b"") -> None:
    head = json.dumps(header).encode("utf-8")
    data = struct.pack("<QQ", len(head), len(payload)) + head
    _write_all(fd, data)
    if payload:
        _write_all(fd, payload)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: Optional[float]) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout()
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise Timeout()
        chunk = os.read(fd, min(n - got, 1 << 22))
        if not chunk:
            raise Closed("the process closed its message pipe (it exited or was killed)")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(fd: int, expect: Optional[tuple[str, ...]] = None, *, deadline: Optional[float] = None,
         max_payload: int = 1 << 34) -> tuple[dict, bytes]:
    """One message; `expect`: the operations allowed here (anything else is a ProtocolError)."""
    lengths = _read_exact(fd, 16, deadline)
    head_len, payload_len = struct.unpack("<QQ", lengths)
    if head_len > MAX_HEADER:
        raise ProtocolError(f"a message header of {head_len} bytes (at most {MAX_HEADER})")
    if payload_len > max_payload:
        raise ProtocolError(f"a payload of {payload_len} bytes where at most {max_payload} can be expected")
    try:
        header = json.loads(_read_exact(fd, head_len, deadline).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"a message header that is not JSON ({exc})") from None
    if not isinstance(header, dict) or not isinstance(header.get("op"), str):
        raise ProtocolError(f"a message that is not an object with an 'op': {str(header)[:200]}")
    if expect is not None and header["op"] not in expect:
        raise ProtocolError(f"message {header['op']!r} where {' or '.join(map(repr, expect))} was due "
                            "(forged, duplicated or out of order)")
    payload = _read_exact(fd, payload_len, deadline) if payload_len else b""
    return header, payload


def number(header: dict, key: str) -> float:
    """A finite, non-negative number from an untrusted header."""
    value: Any = header.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 <= value < float("inf")):
        raise ProtocolError(f"{key!r} is {str(value)[:50]}, not a finite non-negative number")
    return float(value)
