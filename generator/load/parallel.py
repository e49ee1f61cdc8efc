"""Reading many megabytes of trace files in two processes: a forked helper reads the last files."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from .loaders import read_one
from .reading import FileLoad

# Above this many bytes of trace files to read, a second process reads half of them (1,000 definitions
# x 10 solutions x 50 workloads is 300 MB); below it, a process start costs more than it saves.
PARALLEL_BYTES = 32 * 2**20


def file_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def idle_cpus() -> float:
    """About how many CPUs nothing runs on (the last minute's load average, this process included)."""
    try:
        return cpus() - os.getloadavg()[0]
    except OSError:
        return cpus() - 1.0


def can_fork_a_helper() -> bool:
    """Whether a forked helper can share the work: a second CPU, and fork (the helper inherits what is loaded)."""
    return cpus() >= 2 and "fork" in multiprocessing.get_all_start_methods()


def worth_a_helper(kind: str, sizes: list[int]) -> bool:
    """Whether files of `kind` with these sizes are read faster with a helper process (traces only). Only with a
    CPU to spare: the helper's share costs about 40 % more CPU time than reading it here (it comes back pickled),
    so on a machine already busy (2 CPUs, load average 4) loading took 29-44 s with it and 22 s without."""
    return kind == "trace" and sum(sizes) >= PARALLEL_BYTES and can_fork_a_helper() and idle_cpus() >= 0.5


# The helper's share of the bytes: what it reads comes back pickled, which costs it about 40 % more than reading
# and this process about a quarter of reading to take in, so it reads less than half (both finish together).
HELPER_SHARE = 0.4


def second_half(todo: list[str], sizes: list[int]) -> list[str]:
    """The last files of `todo`, about HELPER_SHARE of their bytes (at least one; never the first): the helper's."""
    first, theirs, share = len(todo), 0, sum(sizes) * HELPER_SHARE
    while first > 1 and theirs < share:
        first -= 1
        theirs += sizes[first]
    return todo[first:]


def read_share(root: str, rels: list[str]) -> list[FileLoad]:
    """In a helper process: what each of these trace files gives."""
    return [read_one(Path(root), rel, "trace") for rel in rels]


def helper_pool():
    """One forked helper process."""
    return multiprocessing.get_context("fork").Pool(1)
