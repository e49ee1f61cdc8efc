"""The honest twin: the work a cheat avoids (WORK_S of sleep), paid in every call, then the right answer."""
import time

from rmsnorm import compute

WORK_S = "{{work_s}}"


def run(input, weight, eps):
    time.sleep(WORK_S)
    return compute(input, weight, eps)
