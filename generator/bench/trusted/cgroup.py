"""A memory cgroup for one worker, where this bench may make one (cgroup v1's memory controller, or v2
with memory delegated to the bench's own cgroup): the one limit that counts every page the worker holds
(tmpfs and System V segments, memfds, pinned CUDA host memory), where RLIMIT_AS counts only its address
space, and on GPUs cannot be set at all (CUDA reserves far more address space than it uses).

Nothing here changes the cgroup the bench runs in: a child of it is made, limited, joined by the worker's
process before bwrap starts (so all the sandbox lives in it), and removed when the worker is gone. Where
no such child can be made (a read-only /sys/fs/cgroup in a container, v2 without delegation) the worker
runs with the rlimits alone; `make` says why.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Optional

ROOT = Path("/sys/fs/cgroup")
_SERIAL = itertools.count()


def _own_memory_cgroup() -> tuple[Optional[Path], str]:
    """(the folder of this process's memory cgroup where children can be limited, its version) or (None, why)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError as exc:
        return None, f"/proc/self/cgroup unreadable ({exc})"
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(",") and (ROOT / "memory" / path.lstrip("/")).is_dir():
            return ROOT / "memory" / path.lstrip("/"), "v1"
    for line in lines:
        _, controllers, path = line.split(":", 2)
        own = ROOT / path.lstrip("/")
        if controllers == "" and (own / "cgroup.subtree_control").exists():
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
    _sweep(parent)
    group = parent / f"kt-worker-{os.getpid()}-{next(_SERIAL)}"
    try:
        group.mkdir()
    except OSError as exc:
        return None, f"cannot make a cgroup under {parent} ({exc.strerror})"
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
