"""The honest twin of works_between_its_marks: the same CPU work (WORK_MS of CPU time) inside the call, then the answer."""
import time

from rmsnorm import compute

WORK_MS = "{{work_ms}}"


def run(input, weight, eps):
    end = time.thread_time() + WORK_MS / 1e3
    while time.thread_time() < end:
        pass
    return compute(input, weight, eps)
