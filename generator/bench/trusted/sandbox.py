"""Start a worker process in a bubblewrap sandbox, read its log with a bounded tail, and kill it.

Inside the sandbox (`bwrap`): its own PID, network, IPC and mount namespaces; a root holding only
/usr, the few files of /etc a Python process needs (ETC), the Python installation and the `generator`
package, all read-only; a private /tmp and /dev/shm (tmpfs of TMP_BYTES and SHM_BYTES, gone with the
process: the only places it can write); /dev, /proc, and on CUDA the GPU device nodes; limits on file
size, processes, System V shared memory and (CPU) memory; no environment of the bench's, not even in
its PID 1 (bwrap itself). A bench running as root hands each worker a host user of its own
(WORKER_UIDS, no capabilities): the kernel never enforces the process limit for root, and a worker
that is root inside could write /dev and the sandbox's root. sandboxed/enter.py sets the limits and drops to
that user. Where a memory cgroup can be made (cgroup.py), the worker lives in one capped at its share
of the machine, which counts the pages no rlimit does (tmpfs, System V segments, memfds, pinned memory), and where a
CPU accounting cgroup can be made, in one that counts the CPU time of all its threads (cpufloor.py). It cannot see the
dataset, the traces, the home folder or the bench's files, and cannot reach the network. Every
process it starts lives in its PID namespace, which the kernel tears down when the worker goes
(--die-with-parent ties that to the bench: a kill -9 of the bench kills the sandbox too).

Where bwrap is missing or refused (no user namespaces: some containers, Ubuntu's AppArmor
setting), the worker runs as a plain child process instead: its own session and process group,
SIGKILL when the bench dies (PR_SET_PDEATHSIG), a private temporary folder; but it can read files
the bench can read and reach the network, and a grandchild that leaves its process group can
outlive it. The trace says which (`environment.sandbox`), and the bench prints a warning.
KERNELTRACE_SANDBOX=none forces the plain mode (tests of it), =bwrap makes a missing bwrap an error.
"""

from __future__ import annotations

import collections
import ctypes
import itertools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import Optional

from ...model.errors import KernelTraceError
from ..shared.protocol import printable
from . import cgroup

LOG_TAIL = 4000
PACKAGE_ROOT = Path(__file__).resolve().parents[3]  # the folder holding generator/
INSIDE_PACKAGE = "/kt"  # where generator/ appears inside the sandbox


def _pdeathsig() -> None:
    """In the child before exec: SIGKILL when the parent dies (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _limits(device: str, processes: int) -> None:
    """In an unsandboxed worker's child before exec: file size, processes (never enforced for root),
    and on the CPU the address space. A worker over them fails its own call (MemoryError, EAGAIN, EFBIG)."""
    import resource

    wanted = [(resource.RLIMIT_FSIZE, FILE_BYTES), (resource.RLIMIT_NPROC, processes + PROCESSES)]
    if device == "cpu":
        wanted.append((resource.RLIMIT_AS, memory_bytes()))
    for which, value in wanted:
        try:
            soft, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value if hard == resource.RLIM_INFINITY else hard))
        except (ValueError, OSError):
            pass


def _statuses(*paths: str):
    """The status files of the processes now running, or of those paths (one that ends while read is left out)."""
    for path in paths or (f"/proc/{pid}/status" for pid in os.listdir("/proc") if pid.isdigit()):
        try:
            with open(path) as f:
                yield dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:
            continue


def _user_processes() -> int:
    """Threads of this user now (RLIMIT_NPROC counts them all, across the machine)."""
    uid = str(os.getuid())
    return sum(int(fields.get("Threads", "1").strip() or 1) for fields in _statuses()
               if fields.get("Uid", "").split()[:1] == [uid])


# What a worker needs of /etc: the dynamic linker's cache (torch's and the driver's libraries, and
# Triton's `ldconfig -p` lookup of libcuda), the alternatives behind /usr/bin/cc (Triton compiles its
# launcher on GPUs), and the user and group names Python asks for. Nothing else: no shadow file, no
# host keys, no package manager or network configuration.
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "passwd", "group", "nsswitch.conf",
       "localtime")
TMP_BYTES = 256 << 20  # the private /tmp of a worker (a tmpfs: memory; Triton's cache fits)
SHM_BYTES = 64 << 20  # its /dev/shm (a tmpfs) and, apart, its System V shared memory (Docker's default size)
FILE_BYTES = 1 << 30  # largest file a worker may write (RLIMIT_FSIZE)
PROCESSES = 4096  # processes and threads of the worker's user beyond those running when it starts
# A pair's two workers take turns: the one waiting for its next batch must not keep cores busy. OpenMP's worker
# threads spin after a parallel region (libgomp: about a millisecond to a whole time slice; Intel's: 200 ms) and on a
# host with few cores they starve the other worker's threads, whose parallel regions then wait for a time slice at
# each barrier: calls 30x to 300x slower in whole batches, seen on the 2-core CPU host (issue 37's disturbed traces).
QUIET_THREADS = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}
WORKER_UIDS = range(0x7FFF0000, 0x7FFF0000 + 65536)  # host users for workers of a root bench (no names)


def memory_bytes() -> int:
    """A worker's memory: its address space on the CPU (RLIMIT_AS; not on GPUs, where CUDA reserves far
    more than it uses), and with its tmpfs its memory cgroup's limit where one can be made. Derived from the memory this bench may use (the machine's, or its cgroup's limit when lower): an
    eighth (at least 2 GiB) stays the bench's, and the rest is halved because two workers live at once
    (the next starts while one runs); each worker's tmpfs pages are memory too and come off its share."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    total = min([total] + _cgroup_memory_limits())
    share = (total - max(2 << 30, total // 8)) // 2 - TMP_BYTES - SHM_BYTES
    return max(share, 1 << 30)


def _cgroup_memory_limits() -> list[int]:
    """The memory limits of this process's cgroup (v1 and v2, where they are mounted where they say)."""
    found = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            files = [f"/sys/fs/cgroup{path}/memory.max", f"/sys/fs/cgroup/unified{path}/memory.max"]
        elif "memory" in controllers.split(","):
            files = [f"/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"]
        else:
            continue
        for name in files:
            try:
                found.append(int(Path(name).read_text().strip()))
            except (OSError, ValueError):  # absent, unreadable, or "max"
                pass
    return found


def _worker_user() -> Optional[int]:
    """A host uid for the next worker where the bench runs as root (None otherwise): one no process
    has now and this bench has not handed out, so its process limit counts that worker alone; in a
    container whose user namespace maps few ids, the highest free one it maps. A root without
    CAP_SETUID/CAP_SETGID, or mapping only itself, leaves the worker root: its process limit then does
    not hold (the kernel's rule for root)."""
    if os.geteuid() != 0:
        return None
    me = next(_statuses(f"/proc/{os.getpid()}/status"), {})
    if int(me.get("CapEff", "0").strip() or 0, 16) & 0xC0 != 0xC0:  # CAP_SETGID (6) and CAP_SETUID (7)
        return None
    busy = set(_HANDED_OUT)
    for fields in _statuses():
        busy.update(int(u) for u in fields.get("Uid", "").split())
    uids, gids = _mapped("uid_map"), _mapped("gid_map")
    candidates = itertools.chain(WORKER_UIDS, (u for lo, hi in uids for u in range(hi - 1, max(lo, 1000) - 1, -1)))
    uid = next((u for u in candidates if u not in busy and _inside(uids, u) and _inside(gids, u)), None)
    if uid is not None:
        _HANDED_OUT.add(uid)
    return uid


def _mapped(name: str) -> list[tuple[int, int]]:
    """The ids this process's user namespace maps, as [low, high) ranges (all of them outside any namespace)."""
    try:
        rows = [line.split() for line in Path(f"/proc/self/{name}").read_text().splitlines()]
        return [(int(r[0]), int(r[0]) + int(r[2])) for r in rows if len(r) == 3]
    except (OSError, ValueError):
        return [(0, 1 << 32)]


def _inside(ranges: list[tuple[int, int]], n: int) -> bool:
    return any(lo <= n < hi for lo, hi in ranges)


_HANDED_OUT: set = set()


def _device_groups(device: str) -> list[int]:
    """Groups of the GPU's device nodes that the world may not open (a driver set to mode 0660, group
    video): the worker's user joins them, or CUDA finds no device. Never root's group."""
    if not device.startswith("cuda"):
        return []
    gids = set()
    for node in list(Path("/dev").glob("nvidia*")) + list(Path("/dev/dri").glob("*")):
        try:
            st = node.stat()
        except OSError:
            continue
        if stat.S_ISCHR(st.st_mode) and st.st_mode & 0o006 != 0o006 and st.st_gid != 0:
            gids.add(st.st_gid)
    return sorted(gids)


def _binds(device: str) -> list[str]:
    args = ["--ro-bind", "/usr", "/usr", "--dir", "/etc"]
    for name in ETC:
        if os.path.lexists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for name in ("bin", "lib", "lib64", "sbin"):
        p = Path("/" + name)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    # The private /tmp comes before the Python binds: bwrap mounts in order, so a tmpfs laid later would
    # hide a virtual environment that lives under /tmp (the interpreter then fails to exec).
    args += ["--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    prefixes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.executable).resolve().parent.parent}
    made = {Path("/"), Path("/tmp")}
    for prefix in sorted(prefixes):
        if not str(prefix).startswith("/usr"):
            args += _parents(prefix, made) + ["--ro-bind", str(prefix), str(prefix)]
    inside = Path(INSIDE_PACKAGE) / "generator"
    args += _parents(inside, made) + ["--ro-bind", str(PACKAGE_ROOT / "generator"), str(inside)]
    # bwrap's /dev is an unsized tmpfs, writable only by the sandbox's root (not the worker's user);
    # its /dev/shm is a folder on it, so a sized tmpfs replaces it.
    args += ["--dev", "/dev", "--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm", "--proc", "/proc"]
    if device.startswith("cuda"):
        for node in sorted(Path("/dev").glob("nvidia*")):
            args += ["--dev-bind", str(node), str(node)]
        if Path("/dev/dri").is_dir():
            args += ["--dev-bind", "/dev/dri", "/dev/dri"]
        if Path("/sys").is_dir():
            args += ["--ro-bind", "/sys", "/sys"]
    # Last (nothing can be mounted under them after): the sandbox's root and /dev are unsized tmpfs of
    # bwrap's, which the worker owns where bwrap runs unprivileged. Device nodes stay writable.
    return args + ["--remount-ro", "/dev", "--remount-ro", "/"]


def _parents(path: Path, made: set) -> list[str]:
    """Folders above a bind point, made traversable: bwrap makes missing ones 0700, which the worker's
    own user could not enter (a Python under /root, the package at /kt)."""
    args = []
    for folder in reversed(path.parents):
        if folder not in made:
            args += ["--perms", "0755", "--dir", str(folder)]
        made.add(folder)
    return args


def _entry(device: str) -> list[str]:
    """sandboxed/enter.py and its SPEC: the limits, and the user to become (see sandboxed/enter.py)."""
    uid = _worker_user()
    # A worker of its own uid starts with no process of it; an unprivileged bench's user already runs some.
    processes = PROCESSES if uid is not None else _user_processes() + PROCESSES
    limits = {"RLIMIT_FSIZE": FILE_BYTES, "RLIMIT_NPROC": processes}
    if device == "cpu":
        limits["RLIMIT_AS"] = memory_bytes()
    spec = {"limits": limits, "uid": uid, "gid": uid, "groups": _device_groups(device),
            "sysctl": {"/proc/sys/kernel/shmmax": SHM_BYTES, "/proc/sys/kernel/shmall": SHM_BYTES // os.sysconf("SC_PAGE_SIZE")}}
    return [sys.executable, "-I", "-S", f"{INSIDE_PACKAGE}/generator/bench/sandboxed/enter.py", json.dumps(spec)]


def bwrap_command(argv: list[str], device: str) -> list[str]:
    # A root bench creates no user namespace: sandboxed/enter.py must be able to become a host user other than root
    # (in a namespace of bwrap's making only root is mapped). Unprivileged, bwrap needs one.
    if os.geteuid() == 0:
        namespaces = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    else:
        namespaces = ["--unshare-all"]
    # The absolute path: the sandbox is started with an environment of its own, whose PATH may not hold it.
    return ([shutil.which("bwrap") or "bwrap", *namespaces, "--die-with-parent", "--new-session", "--clearenv"]
            + _binds(device)
            + ["--chdir", "/tmp", "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp",
               "--setenv", "USER", "kt-worker", "--setenv", "LOGNAME", "kt-worker",  # getpass.getuser(): no passwd entry
               "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "PYTHONPATH", INSIDE_PACKAGE,
               "--setenv", "PYTHONUNBUFFERED", "1", "--setenv", "PYTHONHASHSEED", "0"]
            + [a for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "TRITON_INTERPRET")
               if k in os.environ for a in ("--setenv", k, os.environ[k])]
            + [a for k, v in QUIET_THREADS.items() for a in ("--setenv", k, v)]
            + ["--", *_entry(device), *argv])


@lru_cache(maxsize=None)
def sandbox_mode(device: str = "cpu") -> tuple[str, str]:
    """("bwrap", "") where bubblewrap works here, else ("none", why)."""
    forced = os.environ.get("KERNELTRACE_SANDBOX", "").strip().lower()
    if forced == "none":
        return "none", "KERNELTRACE_SANDBOX=none"
    why = ""
    if shutil.which("bwrap") is None:
        why = "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    else:
        try:
            # The bench's interpreter importing the package, as the worker's user: a Python it cannot read
            # (a folder of mode 0700) is found here, with sandboxed/enter.py's reason, not at the first solution.
            probe = subprocess.run(bwrap_command([sys.executable, "-S", "-c", "import generator"], device),
                                   capture_output=True, timeout=60)
            if probe.returncode != 0:
                said = probe.stderr.decode("utf-8", "replace").strip()[:600]
                why = (f"bwrap is installed but the sandbox did not start here ({said})" if "kerneltrace sandbox:" in said
                       else f"bwrap is installed but refused to start a sandbox here ({said}); this host does not "
                            "allow user namespaces (a container without them, or kernel.apparmor_restrict_unprivileged_userns=1)")
        except (OSError, subprocess.SubprocessError) as exc:
            why = f"bwrap could not be run ({exc})"
    if why and forced == "bwrap":
        raise KernelTraceError(f"KERNELTRACE_SANDBOX=bwrap but {why}")
    return ("none", why) if why else ("bwrap", "")


class Tail:
    """Reads a pipe until it closes, keeping only the last LOG_TAIL bytes (a solution that prints
    400 MB costs the bench 4 KB)."""

    def __init__(self, fd: int):
        self.chunks: collections.deque = collections.deque()
        self.size = 0
        self.total = 0
        self.thread = threading.Thread(target=self._pump, args=(fd,), daemon=True)
        self.thread.start()

    def _pump(self, fd: int) -> None:
        try:
            while True:
                data = os.read(fd, 65536)
                if not data:
                    break
                self.total += len(data)
                self.chunks.append(data)
                self.size += len(data)
                while self.size - len(self.chunks[0]) >= LOG_TAIL:
                    self.size -= len(self.chunks.popleft())
        except OSError:
            pass
        finally:
            os.close(fd)

    def text(self) -> str:
        data = b"".join(self.chunks)[-LOG_TAIL:]
        more = f"[{self.total - len(data)} earlier bytes of output not kept]\n" if self.total > len(data) else ""
        return more + printable(data.decode("utf-8", errors="replace")).strip()


class Worker:
    """One `python -m generator.bench.sandboxed.worker` process; messages go over two pipes (fds 3 and 4 inside)."""

    def __init__(self, device: str, mode: str):
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        log_r, log_w = os.pipe()
        self.tmp: Optional[str] = None
        argv = [sys.executable, "-m", "generator.bench.sandboxed.worker", "3", "4"]
        self.sandboxed = mode == "bwrap"
        if mode == "bwrap":
            # bwrap itself is the sandbox's PID 1, readable there as /proc/1/environ: it gets no environment
            # of ours (--clearenv and --setenv give the worker its own).
            cmd, env = bwrap_command(argv, device), {"PATH": "/usr/bin:/bin"}
        else:
            self.tmp = tempfile.mkdtemp(prefix="kt-worker-")
            cmd = argv
            env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELTRACE")}
            env.update(PYTHONPATH=str(PACKAGE_ROOT), PYTHONUNBUFFERED="1", PYTHONHASHSEED="0",
                       TMPDIR=self.tmp, HOME=self.tmp, **QUIET_THREADS)
        # The child sees the two message pipes as fds 3 and 4 whatever their numbers are here.
        fds = {3: to_child_r, 4: from_child_w}

        # Sandboxed, the command sets the limits itself (sandboxed/enter.py, after bwrap as root has laid it out).
        processes = None if self.sandboxed else _user_processes()
        # Where a memory cgroup can be made, it caps every page of the worker, its tmpfs included.
        self.cgroup, self.cgroup_why = cgroup.make(memory_bytes() + TMP_BYTES + SHM_BYTES)
        # Where a CPU accounting cgroup can be made, it counts the CPU time of every thread of the sandbox (cpufloor.py).
        self.cpu_group, self.cpu_why = cgroup.make_cpu(self.cgroup)
        groups = [g for g in (self.cgroup, self.cpu_group) if g is not None]

        def setup() -> None:
            _pdeathsig()
            for group in dict.fromkeys(groups):
                cgroup.join(group)
            if processes is not None:
                _limits(device, processes)
            for target, source in fds.items():
                os.dup2(source, target + 100)
            for target in fds:
                os.dup2(target + 100, target)
                os.close(target + 100)
                os.set_inheritable(target, True)

        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log_w, stderr=log_w, env=env,
                                         cwd=self.tmp or "/", start_new_session=True, preexec_fn=setup,
                                         pass_fds=(3, 4), close_fds=True)  # nothing else of ours leaks in
        except BaseException:
            self._remove_cgroups()
            for fd in (to_child_r, self.to_child, self.from_child, from_child_w, log_r, log_w):
                os.close(fd)
            raise
        for fd in (to_child_r, from_child_w, log_w):
            os.close(fd)
        os.set_blocking(self.to_child, False)  # the trusted side's writes have deadlines (protocol.send)
        self.log = Tail(log_r)

    def kill(self) -> None:
        """Kill the worker and close its pipes. Called again (a failed pair's Remote, then the runner), it closes
        nothing more: its fd numbers may belong by then to another worker's pipes (a second bench's, in a thread)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        fds, self.to_child, self.from_child = (self.to_child, self.from_child), -1, -1
        for fd in fds:
            if fd < 0:
                continue
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.thread.join(timeout=5)
        self._remove_cgroups()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def _remove_cgroups(self) -> None:
        for group in dict.fromkeys(g for g in (self.cgroup, self.cpu_group) if g is not None):
            cgroup.remove(group)
        self.cgroup = self.cpu_group = None

    def cpu_ms(self, settle_s: float = 0.0) -> Optional[tuple[float, dict[str, float], Optional[float]]]:
        """(the CPU time in ms every thread of this worker's sandbox has used so far, {thread id: its own}, that of
        every process of the host: None where unknown, cgroup.host_usage_ms), or None without a CPU cgroup;
        `settle_s`: cgroup.usage_ms's wait for its threads to stop first."""
        total = cgroup.usage_ms(self.cpu_group, settle_s)
        if total is None:
            return None
        return total, cgroup.threads_ms(self.cpu_group), cgroup.host_usage_ms(self.cpu_group)

    def how_it_ended(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "still running"
        if code < 0:
            return f"killed by signal {-code}"
        if code > 128 and self.sandboxed:  # bwrap reports its child's death by signal N as exit 128 + N
            return f"killed by signal {code - 128} (exit code {code})"
        return f"exit code {code}"
