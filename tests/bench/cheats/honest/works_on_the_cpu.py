"""The honest twin of works_between_its_marks: WORK_MS of busy work on the CPU inside each call, then the answer."""
import time

from rmsnorm import compute

WORK_MS = "{{work_ms}}"


def run(input, weight, eps):
    # Until WORK_MS of wall time has passed, not of CPU time: its reported time is the work's however busy the host
    # (a CPU-time loop reported 1.7 ms for its 1 ms at a load of 6 on 2 cores), and it never does more CPU work than
    # the forger, whose WORK_MS is CPU time: the ratio judges the charge, not the host's load.
    end = time.perf_counter() + WORK_MS / 1e3
    while time.perf_counter() < end:
        pass
    return compute(input, weight, eps)
