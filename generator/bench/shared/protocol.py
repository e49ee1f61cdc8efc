"""Messages between the trusted bench process and a worker process, over a pair of pipes.

A message is a JSON header and an optional binary payload (tensors packed with safetensors):
16 bytes of lengths (header, payload; little-endian uint64), then the header, then the payload.
Tensors travel as safetensors bytes because its parser is built for untrusted input (no pickle).

The reading side gives limits: a message longer than them, a header that is not a JSON object (or
nested past the decoder's depth limit, or holding a number too large for a float), a payload that does not parse, or
an operation other than the one expected is a `ProtocolError`; the trusted side turns it into that
solution's RUNTIME_ERROR and goes on. Values are read out of a header only through `number`,
`numbers`, `digests` and `text`, which bound them. The trusted side's writes have a deadline too:
a worker that stops reading its pipe is a Timeout, never a hang.

`digest` is the commitment a worker makes to a call's output before the trusted side says which calls
it will check; the trusted side recomputes it over what is revealed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

import torch

MAX_HEADER = 1 << 20  # a header carries a log or a few numbers; 1 MiB is plenty
MAX_TEXT = 8000  # characters of a worker's log kept in a trace


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed message of the expected kind."""


class Timeout(Exception):
    """No whole message arrived before the deadline."""


class Closed(ProtocolError):
    """The other side closed its end (it exited or was killed)."""


def pack(tensors: dict[str, torch.Tensor]) -> bytes:
    from safetensors.torch import save

    if not tensors:
        return b""
    # safetensors refuses tensors that share memory; a sampler's calls share one input set, so its inputs revealed
    # for several calls are one tensor: each later one a copy.
    out, storages = {}, set()
    for k, v in tensors.items():
        t = v.detach().to("cpu").contiguous()
        storage = t.untyped_storage().data_ptr()
        out[k] = t.clone() if storage in storages else t
        storages.add(storage)
    return save(out)


def unpack(data: bytes) -> dict[str, torch.Tensor]:
    from safetensors.torch import load

    if not data:
        return {}
    try:
        return load(data)
    except Exception as exc:  # noqa: BLE001 - any parse failure of untrusted bytes is a protocol error
        raise ProtocolError(f"a tensor payload that does not parse ({type(exc).__name__}: {exc})") from None


def digest(value: Any) -> str:
    """A commitment to one output: SHA-256 over its dtype, shape and bytes ("" if not a tensor). SHA-256
    rather than BLAKE2: hosts with SHA instructions hash it about twice as fast (1.7 vs 0.85 GB/s measured
    here), and on a GPU the digests of large outputs are most of the harness's work."""
    if type(value) is not torch.Tensor:  # noqa: E721 - subclasses are refused (guards.py)
        return ""
    t = value.detach().to("cpu").contiguous()
    h = hashlib.sha256()
    h.update(f"{t.dtype}|{tuple(t.shape)}|".encode())
    if t.numel():
        h.update(t.reshape(-1).view(torch.uint8).numpy().data)
    return h.hexdigest()


_HASHERS: Optional[ThreadPoolExecutor] = None
STAGE_BYTES = 512 * 2**20  # device outputs copied to page-locked host memory this much at a time


def digest_rows(rows: list[list[Any]]) -> list[list[str]]:
    """digest() of every value of every row. Large batches are hashed on a few threads (hashlib releases
    the GIL on large buffers), and device tensors are first copied to page-locked host memory, all of a
    stage at once with one synchronisation, instead of one blocking pageable copy each."""
    global _HASHERS
    flat = [v for row in rows for v in row]
    if sum(map(_nbytes, flat)) < 4 * 2**20 or len(flat) < 2:
        hashed = [digest(v) for v in flat]
    else:
        if _HASHERS is None:
            _HASHERS = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1), thread_name_prefix="kt-digest")
        hashed = []
        for stage in _stages(flat):
            hashed += list(_HASHERS.map(digest, _to_host(stage)))
    out, k = [], 0
    for row in rows:
        out.append(hashed[k:k + len(row)])
        k += len(row)
    return out


def _slot(n: int) -> int:
    """Bytes a value of n bytes takes in the stage: each value starts 64-aligned, so any dtype can view it."""
    return -(-n // 64) * 64


def _nbytes(v: Any) -> int:
    return v.numel() * v.element_size() if type(v) is torch.Tensor else 0  # noqa: E721


def _stages(values: list[Any]) -> list[list[Any]]:
    stages: list[list[Any]] = [[]]
    size = 0
    for v in values:
        n = _slot(_nbytes(v))  # as _to_host lays them out
        if stages[-1] and size + n > STAGE_BYTES:
            stages.append([])
            size = 0
        stages[-1].append(v)
        size += n
    return stages


_STAGING: Optional[torch.Tensor] = None  # page-locked host bytes, made once per process (prepare_staging)


def prepare_staging() -> None:
    """Make the page-locked stage before any batch: allocating it inside a batch cost a fresh worker ~0.2 s a
    batch on the H100 (the reference's worker, warm, did not pay it), which the outside bound charged."""
    global _STAGING
    if _STAGING is None:
        _STAGING = torch.empty(STAGE_BYTES, dtype=torch.uint8, pin_memory=True)


def _to_host(values: list[Any]) -> list[Any]:
    if not any(type(v) is torch.Tensor and v.is_cuda for v in values):  # noqa: E721
        return values
    prepare_staging()
    out, at = [], 0
    for v in values:
        if type(v) is torch.Tensor and v.is_cuda:  # noqa: E721
            n = _nbytes(v)
            if at + n > STAGE_BYTES:  # one value larger than a stage: a copy of its own
                out.append(v.detach().to("cpu"))
                continue
            host = _STAGING[at:at + n].view(v.dtype).view(v.shape) if n else torch.empty(v.shape, dtype=v.dtype)
            host.copy_(v.detach(), non_blocking=True)
            out.append(host)
            at += _slot(n)
        else:
            out.append(v)
    torch.cuda.synchronize()
    return out


def send(fd: int, header: dict, payload: bytes = b"", deadline: Optional[float] = None) -> None:
    """Write one message; with a deadline (the trusted side's writes, on a non-blocking fd), a reader
    that stops reading makes this a Timeout instead of a hang."""
    head = json.dumps(header).encode("utf-8")
    data = struct.pack("<QQ", len(head), len(payload)) + head
    _write_all(fd, data, deadline)
    if payload:
        _write_all(fd, payload, deadline)


def _write_all(fd: int, data: bytes, deadline: Optional[float] = None) -> None:
    if fd < 0:  # a killed worker's pipe (sandbox.Worker.kill): as a write to a closed pipe
        raise BrokenPipeError("the process's message pipe was closed when it was killed")
    view = memoryview(data)
    while view:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout()
            _, ready, _ = select.select([], [fd], [], left)
            if not ready:
                raise Timeout()
        try:
            n = os.write(fd, view[:1 << 20])
        except BlockingIOError:
            continue
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: Optional[float]) -> bytes:
    if fd < 0:  # a killed worker's pipe (sandbox.Worker.kill)
        raise Closed("the process's message pipe was closed when it was killed")
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
    raw = _read_exact(fd, head_len, deadline)
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:  # the decoder's own depth limit: a header nested hundreds deep
        raise ProtocolError("a message header nested too deep") from None
    except (UnicodeDecodeError, ValueError) as exc:  # ValueError: not JSON, or an integer of thousands of digits
        raise ProtocolError(f"a message header that is not JSON we accept ({str(exc)[:200]})") from None
    if not isinstance(header, dict) or not isinstance(header.get("op"), str):
        raise ProtocolError(f"a message that is not an object with an 'op': {str(header)[:200]}")
    if expect is not None and header["op"] not in expect:
        raise ProtocolError(f"message {header['op']!r} where {' or '.join(map(repr, expect))} was due "
                            "(forged, duplicated or out of order)")
    payload = _read_exact(fd, payload_len, deadline) if payload_len else b""
    return header, payload


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number a worker may send")


def _as_number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProtocolError(f"{what} is {_short(value)}, not a number")
    try:
        x = float(value)
    except OverflowError:
        raise ProtocolError(f"{what} is an integer too large for a float") from None
    if not (0 <= x < float("inf")):
        raise ProtocolError(f"{what} is {_short(value)}, not a finite non-negative number")
    return x


def _short(value: Any) -> str:
    try:
        return repr(value)[:50]
    except Exception:  # noqa: BLE001 - repr of a huge int raises ValueError
        return f"a {type(value).__name__}"


def number(header: dict, key: str) -> float:
    """A finite, non-negative number from an untrusted header."""
    return _as_number(header.get(key), repr(key))


def numbers(header: dict, key: str, n: int) -> list[float]:
    """Exactly n finite, non-negative numbers from an untrusted header."""
    values = header.get(key)
    if not isinstance(values, list) or len(values) != n:
        raise ProtocolError(f"{key!r} is not a list of {n} numbers")
    return [_as_number(v, f"{key!r}[{i}]") for i, v in enumerate(values)]


def digests(header: dict, n: int, outputs: int) -> list[list[str]]:
    """n lists of `outputs` digests (hex strings) from an untrusted header."""
    values = header.get("digests")
    ok = isinstance(values, list) and len(values) == n and all(
        isinstance(row, list) and len(row) == outputs and all(isinstance(d, str) and len(d) <= 64 for d in row)
        for row in values)
    if not ok:
        raise ProtocolError(f"'digests' is not {n} lists of {outputs} digests")
    return values


def rows(header: dict, key: str, n: int, width: int) -> list[list]:
    """n lists of `width` items from an untrusted header (the items are checked where they are used)."""
    values = header.get(key)
    if not (isinstance(values, list) and len(values) == n and all(isinstance(r, list) and len(r) == width for r in values)):
        raise ProtocolError(f"{key!r} is not {n} lists of {width} items")
    return values


# What a terminal acts on rather than shows: C0 controls but newline and tab (escape sequences start with ESC;
# a carriage return overwrites the line shown), DEL, C1 controls (CSI, OSC as one byte) and the bidirectional
# overrides that reorder what is shown.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(s: str) -> str:
    """`s` without the characters a terminal would act on (anything a solution wrote, before it is shown)."""
    return _CONTROL.sub("", s)


def text(value: Any, limit: int = MAX_TEXT) -> str:
    """A worker's text (a log) made safe to store and show: a string, its last `limit` characters, valid UTF-8
    (lone surrogates and other unencodable characters replaced), no control characters (printable)."""
    s = value if isinstance(value, str) else ""
    return printable(s[-limit:].encode("utf-8", "replace").decode("utf-8"))
