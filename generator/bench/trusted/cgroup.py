"""A memory cgroup for one worker, where this bench may make one (cgroup v1's memory controller, or v2
with memory delegated to the bench's own cgroup): the one limit that counts every page the worker holds
(tmpfs and System V segments, memfds, pinned CUDA host memory), where RLIMIT_AS counts only its address
space, and on GPUs cannot be set at all (CUDA reserves far more address space than it uses).

Nothing here changes the cgroup the bench runs in: a child of it is made, limited, joined by the worker's
process before bwrap starts (so all the sandbox lives in it), and removed when the worker is gone. Where
no such child can be made (a read-only /sys/fs/cgroup in a container, v2 without delegation) the worker
runs with the rlimits alone; `make` says why.

The worker also gets a CPU accounting cgroup where one can be made (`make_cpu`: cgroup v1's cpuacct, or any
v2 cgroup, whose cpu.stat counts CPU time whether or not a controller is delegated): its usage counts every
thread of every process of the sandbox whenever it runs, which the trusted side reads around each batch
(cpufloor.py). It is the v2 memory group itself where that is the one made.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from pathlib import Path
from typing import Optional

ROOT = Path("/sys/fs/cgroup")
_SERIAL = itertools.count()


def _own_cgroups() -> tuple[list[tuple[list[str], str]], str]:
    """This process's cgroups, one per line of /proc/self/cgroup: (its controllers, [] for v2; its path under the
    mount), or ([], why not)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError as exc:
        return [], f"/proc/self/cgroup unreadable ({exc})"
    entries = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        entries.append((controllers.split(",") if controllers else [], path.lstrip("/")))
    return entries, ""


def _own_memory_cgroup() -> tuple[Optional[Path], str]:
    """(the folder of this process's memory cgroup where children can be limited, its version) or (None, why)."""
    entries, why = _own_cgroups()
    if why:
        return None, why
    for controllers, path in entries:
        if "memory" in controllers and (ROOT / "memory" / path).is_dir():
            return ROOT / "memory" / path, "v1"
    for controllers, path in entries:
        own = ROOT / path
        if not controllers and (own / "cgroup.subtree_control").exists():
            try:
                delegated = "memory" in (own / "cgroup.subtree_control").read_text().split()
            except OSError:
                delegated = False
            if delegated:
                return own, "v2"
            return None, f"cgroup v2 without the memory controller delegated to {own}"
    return None, "no memory cgroup controller mounted"


def make(limit: int) -> tuple[Optional[Path], str]:
    """A fresh child memory cgroup capped at `limit` bytes (swap included where the kernel counts it
    apart), or (None, why not)."""
    parent, version = _own_memory_cgroup()
    if parent is None:
        return None, version
    group, why = _child(parent, "a cgroup")
    if group is None:
        return None, why
    files = ([("memory.limit_in_bytes", limit), ("memory.memsw.limit_in_bytes", limit)] if version == "v1"
             else [("memory.max", limit), ("memory.swap.max", 0)])
    for name, value in files:
        if not (group / name).exists() and name != files[0][0]:
            continue  # no swap accounting on this kernel: nothing to cap
        try:
            (group / name).write_text(str(value))
        except OSError as exc:
            remove(group)
            return None, f"cannot set {group / name} ({exc.strerror})"
    return group, ""


def _child(parent: Path, what: str) -> tuple[Optional[Path], str]:
    """A fresh child cgroup of `parent` named for this process (the empty ones of killed benches swept first), or
    (None, why not)."""
    _sweep(parent)
    group = parent / f"kt-worker-{os.getpid()}-{next(_SERIAL)}"
    try:
        group.mkdir()
    except OSError as exc:
        return None, f"cannot make {what} under {parent} ({exc.strerror})"
    return group, ""


def _sweep(parent: Path) -> None:
    """Remove the empty cgroups a bench killed with -9 left (it never reached Worker.kill): those
    named for a process that no longer runs. One still holding a process stays."""
    for group in parent.glob("kt-worker-*-*"):
        pid = group.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                group.rmdir()
            except OSError:
                pass


def _own_cpu_cgroup() -> tuple[Optional[Path], str]:
    """(the folder of this process's CPU accounting cgroup, its version) or (None, why)."""
    entries, why = _own_cgroups()
    if why:
        return None, why
    for controllers, path in entries:
        if "cpuacct" in controllers:
            for mount in ("cpuacct", "cpu,cpuacct", "cpuacct,cpu"):
                if (ROOT / mount / path / "cpuacct.usage").exists():
                    return ROOT / mount / path, "v1"
    for controllers, path in entries:
        for mount in (ROOT, ROOT / "unified"):
            if not controllers and (mount / path / "cgroup.procs").exists():
                return mount / path, "v2"
    return None, "no cpuacct (v1) or v2 cgroup mounted"


def make_cpu(memory: Optional[Path]) -> tuple[Optional[Path], str]:
    """A fresh child cgroup that counts the CPU time of whatever joins it, or (None, why not). `memory`: the
    worker's memory cgroup, which is the one to use where it is a v2 cgroup (v2 counts CPU in every group)."""
    if memory is not None and (memory / "cpu.stat").exists():
        return memory, ""
    parent, version = _own_cpu_cgroup()
    if parent is None:
        return None, version
    group, why = _child(parent, "a CPU accounting cgroup")
    if group is None:
        return None, why
    if usage_ms(group) is None:
        remove(group)
        return None, f"the cgroup made under {parent} does not report its CPU time"
    return group, ""


def usage_ms(group: Optional[Path], settle_s: float = 0.0) -> Optional[float]:
    """CPU time (ms) used by every thread ever in `group` (v1 cpuacct.usage in ns, v2 cpu.stat usage_usec), or
    None where it cannot be read. `settle_s`: first wait up to that long for its threads to stop running, since a
    running thread's latest slice is counted only when it stops (or at the next tick, up to 10 ms later)."""
    if group is None:
        return None
    deadline = time.monotonic() + settle_s
    while settle_s and _running(group) and time.monotonic() < deadline:
        time.sleep(50e-6)
    try:
        if (group / "cpuacct.usage").exists():
            return int((group / "cpuacct.usage").read_text()) / 1e6
        for line in (group / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e3
    except (OSError, ValueError):
        return None
    return None


def host_usage_ms(group: Optional[Path]) -> Optional[float]:
    """CPU time (ms) of every process of the host, where `group` (a worker's CPU cgroup) was made in the root cgroup,
    which counts them all; else None (a nested cgroup counts only its own part of the host)."""
    if group is None or not _counts_the_host(group.parent):
        return None
    return usage_ms(group.parent)


@functools.lru_cache(maxsize=None)
def _counts_the_host(parent: Path) -> bool:
    """Whether `parent` is the root cgroup (none above it reports CPU time): fixed for the process, so asked once, not
    at every batch's two readings."""
    return usage_ms(parent.parent) is None


def _tids(group: Path) -> list[str]:
    try:
        return (group / ("tasks" if (group / "tasks").exists() else "cgroup.threads")).read_text().split()
    except OSError:
        return []


def threads_ms(group: Optional[Path]) -> dict[str, float]:
    """{thread id: CPU ms it has used} for each thread now in `group` (/proc/<tid>/schedstat); a thread that ended is
    not there (its time is in usage_ms only)."""
    out = {}
    for tid in _tids(group) if group is not None else ():
        try:
            out[tid] = int(Path(f"/proc/{tid}/schedstat").read_text().split()[0]) / 1e6
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return out


def _running(group: Path) -> bool:
    """Whether a thread of `group` is running or ready to run (state R in /proc/<tid>/stat)."""
    for tid in _tids(group):
        try:
            stat = Path(f"/proc/{tid}/stat").read_text()
        except OSError:
            continue  # gone meanwhile
        if stat[stat.rfind(")") + 2:][:1] == "R":
            return True
    return False


def join(group: Path) -> None:
    """In the worker's child before exec: move this process into `group` (its children follow).
    Raises OSError where it cannot: a worker is never started outside the cgroup it was given."""
    with open(group / "cgroup.procs", "w") as f:
        f.write(str(os.getpid()))


def remove(group: Optional[Path], wait: float = 2.0) -> None:
    """Remove a worker's cgroup once its processes are gone (the PID namespace's teardown takes a moment)."""
    if group is None:
        return
    deadline = time.monotonic() + wait
    while True:
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return  # left behind, empty soon: harmless, and named for whoever cleans up
            time.sleep(0.02)
