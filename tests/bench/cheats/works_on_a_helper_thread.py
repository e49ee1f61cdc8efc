"""Hides its work on a helper thread: each call returns at once and a thread it started when loaded (so none a call leaves) does the work (HELPER_WORK_MS of CPU a call) beside the main thread's harness work, which it hid behind in the CPU-time floor."""
import queue
import threading
import time

import torch
from rmsnorm import compute

HELPER_WORK_MS = "{{helper_work_ms}}"
_owed = queue.SimpleQueue()


_a = torch.randn(48, 48)


def _work(ms):  # CPU time in torch's small matmuls, which release the GIL: the main thread's calls do not wait on it
    end = time.thread_time() + ms / 1e3
    while time.thread_time() < end:
        torch.mm(_a, _a)


def _helper():
    while True:
        _owed.get()
        _work(HELPER_WORK_MS)


threading.Thread(target=_helper, name="helper", daemon=True).start()


def run(input, weight, eps):
    _owed.put(1)
    return compute(input, weight, eps)
