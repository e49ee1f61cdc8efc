"""The honest twin of sampler_tables_once: builds its tables (WORK_S) in every call, then draws right."""
import time

from top_k import draw

WORK_S = "{{work_s}}"


def run(probs, top_k):
    time.sleep(WORK_S)
    return draw(probs, top_k)
