"""sandbox.py: the bench's bubblewrap sandbox starts the interpreter the bench runs under, wherever it lives, sizes
what a worker may write and hold, and is required on a GPU run (the CPU run without it warns and says so)."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from generator.bench import run_bench
from generator.bench.trusted.sandbox import sandbox_mode
from generator.model.errors import KernelTraceError

from planted import FAST, kt_temp_folders, private_tempdir

ROOT = Path(__file__).resolve().parents[2]


def test_the_sandbox_runs_the_python_of_a_virtual_environment_under_tmp():
    """The sandbox lays a private /tmp: a venv under the host's /tmp (as CI jobs make them) must still be
    bound inside it, or every worker fails to exec its interpreter."""
    mode, why = sandbox_mode()
    if mode != "bwrap":
        pytest.skip(f"no working bubblewrap here: {why}")
    venv = Path(tempfile.mkdtemp(prefix="kt-venv-", dir="/tmp"))
    venv.chmod(0o755)  # as `python -m venv` leaves it (mkdtemp's 0700 would shut the worker's own user out)
    try:
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
        probe = ("import subprocess, sys\n"
                 "from generator.bench.trusted.sandbox import bwrap_command\n"
                 "r = subprocess.run(bwrap_command([sys.executable, '-c', 'import sys; print(sys.prefix)'], 'cpu'),\n"
                 "                   capture_output=True, text=True)\n"
                 "print(r.returncode, r.stdout.strip(), r.stderr.strip())\n")
        out = subprocess.run([str(venv / "bin/python"), "-c", probe], cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
        assert out.returncode == 0, out.stderr
        code, _, rest = out.stdout.strip().partition(" ")
        assert code == "0", rest
        assert rest.split()[0] == str(venv.resolve())  # the sandboxed interpreter is the venv's
    finally:
        shutil.rmtree(venv, ignore_errors=True)


# --- The sandbox's limits, each tried by a solution that means to pass it (issue 38, item 5) ---------
# One probe runs inside the real sandbox (bwrap_command, as the bench's Worker starts it) with the limits
# shrunk so that passing them is cheap, and reports how far each attempt got.
PROBE = r'''
import ctypes, json, os, sys, threading
CAP = int(sys.argv[1])
out = {"uid": os.getuid()}
if sys.argv[4] == "threads only":
    sys.argv[2] = "0"
# Memory: one allocation past the address-space limit (calloc: no page is touched if it is granted).
try:
    block = bytearray(int(sys.argv[2])); del block; out["allocated"] = True
except MemoryError:
    out["allocated"] = False
# Threads until the kernel refuses one (each waits; small stacks keep them inside the memory limit).
threading.stack_size(64 << 10)
stop, threads = threading.Event(), []
try:
    while len(threads) < CAP:
        t = threading.Thread(target=stop.wait); t.start(); threads.append(t)
except RuntimeError:
    pass
out["threads"] = len(threads)
stop.set()
for t in threads:
    t.join()
if sys.argv[4] == "threads only":
    print(json.dumps(out))
    sys.exit(0)
# Processes until fork fails (each child waits for the pipe to close, then leaves).
r, w = os.pipe()
children = 0
try:
    while children < CAP:
        if os.fork() == 0:
            os.close(w); os.read(r, 1); os._exit(0)
        children += 1
except OSError:
    pass
os.close(w)
out["processes"] = children
# Every filesystem: where can a file be made, and how much goes into each such place.
def fill(folder):
    written = 0
    try:
        with open(os.path.join(folder, "kt-fill"), "wb", buffering=0) as f:
            chunk = b"x" * (1 << 20)
            while written < CAP << 20:
                written += f.write(chunk)
    except OSError:
        pass
    return written
mounts = [line.split()[1] for line in open("/proc/self/mounts")]
places = sorted(set(mounts) | {"/", "/dev", "/etc", "/usr", "/kt", "/root", "/var", "/run", "/home",
                               os.path.dirname(sys.executable)})
out["written"] = {p: fill(p) for p in places if os.path.isdir(p) and not p.startswith(("/proc", "/sys"))}
out["written"] = {p: n for p, n in out["written"].items() if n or os.path.exists(os.path.join(p, "kt-fill"))}
# System V shared memory: one segment past the cap, then segments of half the cap until refused.
libc = ctypes.CDLL(None, use_errno=True)
size = int(sys.argv[3])
out["shm_over"] = libc.shmget(0, ctypes.c_size_t(size + 4096), 0o1600) != -1
segments = 0
while segments < 8 and libc.shmget(0, ctypes.c_size_t(size // 2), 0o1600) != -1:
    segments += 1
out["shm_halves"] = segments
print(json.dumps(out))
'''
SMALL = {"PROCESSES": 64, "TMP_BYTES": 8 << 20, "SHM_BYTES": 8 << 20}
MEMORY = 768 << 20
CAP = 400  # how far each attempt goes before it stops by itself (an unbounded sandbox gets here)


def _probe(monkeypatch, parts="all"):
    from generator.bench.trusted import sandbox

    mode, why = sandbox_mode()
    if mode != "bwrap":
        pytest.skip(f"bubblewrap is missing or refused here, so the sandbox's limits cannot be tried: {why}")
    for name, value in SMALL.items():
        monkeypatch.setattr(sandbox, name, value)
    monkeypatch.setattr(sandbox, "memory_bytes", lambda: MEMORY)
    cmd = sandbox.bwrap_command([sys.executable, "-c", PROBE, str(CAP), str(MEMORY + (256 << 20)),
                                 str(sandbox.SHM_BYTES), parts], "cpu")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def probed():
    with pytest.MonkeyPatch.context() as mp:
        yield _probe(mp)


def test_a_worker_cannot_start_more_threads_or_processes_than_its_limit(probed):
    """4,485 threads started against a limit of 4,185 when the bench ran as root: the kernel never
    enforces RLIMIT_NPROC for root, so a root bench's worker runs as a host user of its own."""
    if os.geteuid() == 0:
        assert probed["uid"] != 0
    limit = SMALL["PROCESSES"]
    assert probed["threads"] < limit  # the probe's own main thread counts too
    assert probed["processes"] < limit


def test_as_root_the_process_limit_holds_only_because_the_worker_is_not_root(monkeypatch):
    """The planted counterpart: the same sandbox with the worker left root passes the limit."""
    if os.geteuid() != 0:
        pytest.skip("the bench runs unprivileged here: its worker is never root")
    from generator.bench.trusted import sandbox

    monkeypatch.setattr(sandbox, "_worker_user", lambda: None)
    out = _probe(monkeypatch, "threads only")
    assert out["uid"] == 0 and out["threads"] == CAP


def test_a_worker_writes_only_to_its_sized_tmp_and_shm(probed):
    """/dev/shm was an unsized tmpfs (300 MiB written; only /tmp was capped): every place a worker can
    make a file is a tmpfs of its own size, and writing past it fails."""
    written = probed["written"]
    assert set(written) == {"/tmp", "/dev/shm"}, written
    assert 0 < written["/tmp"] <= SMALL["TMP_BYTES"]
    assert 0 < written["/dev/shm"] <= SMALL["SHM_BYTES"]


def test_a_worker_cannot_hold_shared_memory_past_its_cap(probed):
    """System V segments live outside any filesystem and outside the address space once detached: the
    sandbox's IPC namespace caps one segment and all of them at SHM_BYTES."""
    assert not probed["shm_over"]
    assert probed["shm_halves"] == 2


def test_a_worker_cannot_allocate_past_its_memory_limit(probed):
    assert probed["allocated"] is False


def test_the_memory_limit_is_derived_from_the_machine_with_room_for_the_bench(monkeypatch):
    """32 GiB was the limit on a 25 GB machine: the limit now comes from the machine (or the bench's
    cgroup), and two workers with their tmpfs stay under it."""
    from generator.bench.trusted import sandbox

    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    mine = sandbox.memory_bytes()
    assert 2 * (mine + sandbox.TMP_BYTES + sandbox.SHM_BYTES) < physical or mine == 1 << 30
    monkeypatch.setattr(sandbox, "_cgroup_memory_limits", lambda: [16 << 30])
    assert 2 * (sandbox.memory_bytes() + sandbox.TMP_BYTES + sandbox.SHM_BYTES) <= 14 << 30


def test_the_cuda_sandbox_keeps_the_gpu_binds_and_no_address_space_limit():
    """CUDA reserves far more address space than it uses: a GPU worker gets no RLIMIT_AS, and keeps
    /sys and the device nodes (none on this machine; the command must still start)."""
    from generator.bench.trusted import sandbox

    mode, why = sandbox_mode("cuda")
    cmd = sandbox.bwrap_command([sys.executable, "-c", "import os; print(os.getuid())"], "cuda")
    assert cmd[cmd.index("/sys") - 1] == "--ro-bind"
    import json

    spec = json.loads(cmd[cmd.index("--") + 5])
    assert "RLIMIT_AS" not in spec["limits"] and "RLIMIT_NPROC" in spec["limits"]
    nodes = sorted(str(p) for p in Path("/dev").glob("nvidia*"))
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--dev-bind" and cmd[i + 1].startswith("/dev/nvidia")] == nodes
    if mode != "bwrap":
        pytest.skip(f"bubblewrap is missing or refused here, so the CUDA sandbox cannot start: {why}")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_a_root_bench_in_a_container_picks_a_user_its_namespace_maps(monkeypatch):
    """A container's root often maps only 0..65535: the worker's user comes from there; a namespace
    mapping root alone leaves the worker root (the process limit cannot hold then, and nothing fails)."""
    from generator.bench.trusted import sandbox

    if os.geteuid() != 0:
        assert sandbox._worker_user() is None
        return
    monkeypatch.setattr(sandbox, "_mapped", lambda name: [(0, 65536)])
    uid = sandbox._worker_user()
    assert 1000 <= uid < 65536 and uid != sandbox._worker_user()
    monkeypatch.setattr(sandbox, "_mapped", lambda name: [(0, 1)])
    assert sandbox._worker_user() is None


MEMFD_PROBE = r'''
import os, sys
held, total, chunk = [], 0, b"x" * (16 << 20)
while total < int(sys.argv[1]):
    fd = os.memfd_create("kt"); os.write(fd, chunk); held.append(fd); total += len(chunk)
print("held", total)
'''


def test_memory_outside_the_address_space_is_capped_by_the_workers_cgroup(monkeypatch):
    """memfds hold memory no address space counts (and on GPUs there is no RLIMIT_AS at all): where a
    memory cgroup can be made, the worker lives in one capped at its share, and passing it kills the
    worker. The planted counterpart, the same sandbox outside the cgroup, holds it all."""
    from generator.bench.trusted import cgroup, sandbox

    mode, why = sandbox_mode()
    if mode != "bwrap":
        pytest.skip(f"bubblewrap is missing or refused here, so the sandbox's limits cannot be tried: {why}")
    group, why = cgroup.make(128 << 20)
    if group is None:
        pytest.skip(f"no memory cgroup can be made here, so the worker runs with rlimits alone: {why}")
    monkeypatch.setattr(sandbox, "memory_bytes", lambda: MEMORY)
    cmd = sandbox.bwrap_command([sys.executable, "-c", MEMFD_PROBE, str(256 << 20)], "cpu")
    try:
        capped = subprocess.run(cmd, capture_output=True, text=True, timeout=120, preexec_fn=lambda: cgroup.join(group))
    finally:
        cgroup.remove(group)
    assert not group.exists()
    assert capped.returncode != 0 and "held" not in capped.stdout
    free = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert free.stdout.strip() == f"held {256 << 20}", free.stderr[-2000:]


def test_a_workers_cgroup_is_made_and_removed_with_it():
    """The Worker the bench starts joins its cgroup, kill() leaves no cgroup behind, and those of a
    bench killed with -9 are swept when the next worker's is made."""
    from generator.bench.trusted import cgroup, sandbox

    mode, why = sandbox_mode()
    if mode != "bwrap":
        pytest.skip(f"bubblewrap is missing or refused here: {why}")
    parent = cgroup._own_memory_cgroup()[0]
    stale = Path(parent or "/nonexistent") / "kt-worker-999999999-0"  # a bench killed with -9 left it
    if parent is not None:
        stale.mkdir()
    w = sandbox.Worker("cpu", mode)
    group = w.cgroup
    assert not stale.exists()
    try:
        if group is None:
            pytest.skip(f"no memory cgroup can be made here: {w.cgroup_why}")
        assert str(w.proc.pid) in (group / "cgroup.procs").read_text().split()
        name = "memory.limit_in_bytes" if (group / "memory.limit_in_bytes").exists() else "memory.max"
        limit = int((group / name).read_text())
        assert limit <= sandbox.memory_bytes() + sandbox.TMP_BYTES + sandbox.SHM_BYTES
        # Its CPU accounting cgroup (the CPU-time floor, cpufloor.py) counts the sandbox's CPU: starting Python and
        # torch takes far more than 10 ms of it before the worker says hello.
        cpu = w.cpu_group
        if cpu is not None:
            assert str(w.proc.pid) in (cpu / "cgroup.procs").read_text().split()
            select.select([w.from_child], [], [], 120)
            assert w.cpu_ms(settle_s=0.05)[0] > 10
    finally:
        w.kill()
    assert not group.exists()
    if cpu is None:
        pytest.skip(f"no CPU accounting cgroup can be made here (the CPU-time floor is not applied): {w.cpu_why}")
    assert not cpu.exists()


def test_an_unprivileged_bench_gets_the_same_limits(monkeypatch):
    """A bench run by an ordinary user: bwrap makes a user namespace, the worker keeps that user (whose
    process limit the kernel enforces), and the sandbox's root and /dev, which that user owns there,
    are read-only. Tried here as uid 65534 with the system's Python (the probe needs only its stdlib)."""
    from generator.bench.trusted import sandbox

    python = Path("/usr/bin/python3")
    if os.geteuid() != 0 or not shutil.which("setpriv") or not python.exists() or not shutil.which("bwrap"):
        pytest.skip("needs root (to become uid 65534), setpriv, /usr/bin/python3 and bwrap")
    for name, value in SMALL.items():
        monkeypatch.setattr(sandbox, name, value)
    monkeypatch.setattr(sandbox, "memory_bytes", lambda: MEMORY)
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setattr(sys, "prefix", "/usr")
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    nobody = sum(int(f.get("Threads", "1")) for f in sandbox._statuses() if f.get("Uid", "").split()[:1] == ["65534"])
    monkeypatch.setattr(sandbox, "_user_processes", lambda: nobody)
    with monkeypatch.context() as m:
        m.setattr(os, "geteuid", lambda: 65534)
        cmd = sandbox.bwrap_command([str(python), "-c", PROBE, str(CAP), str(MEMORY + (256 << 20)),
                                     str(SMALL["SHM_BYTES"]), "all"], "cpu")
    out = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--", *cmd],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0 and "kerneltrace sandbox" not in out.stderr:
        pytest.skip(f"this host refuses bwrap to an unprivileged user: {out.stderr.strip()[-300:]}")
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    got = json.loads(out.stdout)
    assert got["uid"] == 65534 and got["threads"] < SMALL["PROCESSES"] and got["processes"] < SMALL["PROCESSES"]
    assert set(got["written"]) == {"/tmp", "/dev/shm"}, got["written"]
    assert got["allocated"] is False


def test_without_bubblewrap_the_bench_warns_runs_and_says_so(bench_root, unsandboxed, capsys, tmp_path):
    with private_tempdir(tmp_path / "tmp") as tmp:
        summary = run_bench(bench_root, timing=FAST, progress=False)
    [o] = summary.outcomes
    assert o.status == "PASSED" and o.record["evaluation"]["environment"]["sandbox"] == "none"
    assert "WITHOUT the bubblewrap sandbox" in capsys.readouterr().err
    assert not kt_temp_folders(tmp), "the unsandboxed worker's temporary folder was left behind"


def test_a_gpu_run_refuses_to_run_without_the_sandbox_unless_told_to(bench_root, monkeypatch):
    """The GPU run fails closed: without bubblewrap it stops before starting a worker, saying why and how to opt in
    (KERNELTRACE_SANDBOX=none, whose traces the site never ranks); the CPU run only warns (the test above)."""
    import generator.bench.trusted.run as bench
    from generator.bench.trusted import sandbox

    root = bench_root
    monkeypatch.setattr(bench, "_check_device", lambda device: None)
    monkeypatch.setattr(sandbox, "sandbox_mode", lambda device="cpu": ("none", "bubblewrap (bwrap) is not installed"))
    monkeypatch.setattr(sandbox, "Worker", lambda *a: pytest.fail("a worker started"))
    monkeypatch.delenv("KERNELTRACE_SANDBOX", raising=False)
    with pytest.raises(KernelTraceError, match="WITHOUT the bubblewrap sandbox.*KERNELTRACE_SANDBOX=none"):
        run_bench(root, device="cuda", progress=False)
    monkeypatch.setenv("KERNELTRACE_SANDBOX", "none")  # told to: it goes on (and here stops at the missing CUDA)
    monkeypatch.setattr(sandbox, "Worker", lambda *a: (_ for _ in ()).throw(KernelTraceError("no CUDA here")))
    with pytest.raises(KernelTraceError, match="no CUDA here"):
        run_bench(root, device="cuda", progress=False)


def test_the_sandbox_sizes_every_writable_filesystem_and_stays_under_the_machines_memory():
    """/tmp and /dev/shm are tmpfs of TMP_BYTES, /dev is read-only (bwrap's own /dev is an unsized tmpfs: 300 MiB
    were written to /dev/shm before), and a CPU worker's address space is under this machine's memory."""
    from generator.bench.trusted.sandbox import SHM_BYTES, TMP_BYTES, bwrap_command, memory_bytes, sandbox_mode

    total = next(int(x.split()[1]) * 1024 for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal"))
    assert memory_bytes() < total
    if sandbox_mode("cpu")[0] != "bwrap":
        pytest.skip("bubblewrap is missing or refused here")
    probe = "df -B1 --output=size,target /tmp /dev/shm | tail -2; (echo x > /dev/planted) 2>&1 || true"
    out = subprocess.run(bwrap_command(["/bin/sh", "-c", probe], "cpu"), capture_output=True, text=True, timeout=60).stdout
    sizes = {target: int(size) for size, target in (line.split() for line in out.splitlines()[:2])}
    assert sizes == {"/tmp": TMP_BYTES, "/dev/shm": SHM_BYTES} and "Read-only file system" in out, out


def test_killing_a_worker_twice_closes_no_other_workers_pipe():
    """A failed pair's Remote kills its worker and the runner kills it again: the second kill must not close the fd
    numbers the first freed, which a worker started in between (a second bench, in a thread) may hold by then (in
    test_cheats' two benches, a worker then found its pipe closed while waiting for its solution)."""
    from types import SimpleNamespace

    from generator.bench.trusted.sandbox import Worker

    worker = Worker.__new__(Worker)
    worker.proc = subprocess.Popen([sys.executable, "-c", ""], start_new_session=True)
    worker.to_child, worker.from_child = os.pipe()
    worker.log, worker.cgroup, worker.tmp = SimpleNamespace(thread=SimpleNamespace(join=lambda timeout: None)), None, None
    worker.cpu_group = None
    worker.kill()
    other = os.pipe()  # the lowest free numbers: the ones the kill freed
    try:
        worker.kill()
        for fd in other:
            os.fstat(fd)  # still open
    finally:
        for fd in other:
            os.close(fd)
