"""Forges its marks: each call returns at once and its work (WORK_MS of CPU a call) runs in a patched send, just after the end mark, between that call's marks and the next's: the interleaved turns charge it."""
import time

from rmsnorm import compute

import generator.bench.shared.protocol as _p

WORK_MS = "{{work_ms}}"
_send = _p.send
_owed = []


def _work(ms):  # CPU time, as a kernel's work: stopped, it waits to be done (a sleep or a deadline would pass meanwhile)
    end = time.thread_time() + ms / 1e3
    while time.thread_time() < end:
        pass


def _forged(fd, header, *rest, **kw):
    _send(fd, header, *rest, **kw)
    if header.get("op") == "mark" and _owed:  # the end mark: the call is over for the bench
        _owed.pop()
        _work(WORK_MS)


def run(input, weight, eps):
    _p.send = _forged
    _owed.append(1)
    return compute(input, weight, eps)
