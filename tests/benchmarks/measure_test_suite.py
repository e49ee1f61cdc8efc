"""Wall time, CPU time and peak memory of the test suite, one test file at a time.

    python tests/benchmarks/measure_test_suite.py [tests/test_x.py ...]
    python tests/benchmarks/measure_test_suite.py --whole

Each file runs in a pytest process of its own (as `python -m pytest -q -p no:cacheprovider FILE`), so
the figures of one file do not include what another left behind. Peak memory is the largest resident
set of any one process of the file's tree (pytest and the workers it waits for), as /usr/bin/time -v
reports it: wait4's rusage. CPU time (user + system) says how much work a file is when the host is
shared and wall times stretch. Prints one line per file, largest peak first, and the totals.

`--whole` runs the README's test command once (`python -m pytest`, with the xdist workers of
pyproject's addopts) and samples, every 0.5 s, the memory of its whole process tree: the summed
proportional set size (PSS: shared pages such as torch's libraries divided among the processes that
map them, so the sum is what the machine spends) and the summed RSS (shared pages counted once per
process, an upper bound). wait4's peak is one process's; two workers and the sandboxed bench
workers beside them are what must fit the machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def measure(path: Path) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB, exit status) of one file's pytest run."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited between listdir and read
            kids.setdefault(int(stat[1]), []).append(int(entry))
    return kids


def _tree_memory(root: int) -> tuple[int, int]:
    """(summed PSS, summed RSS) in KiB of `root` and all its descendants."""
    kids, stack, pss, rss = _children(), [root], 0, 0
    while stack:
        pid = stack.pop()
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            pass  # exited, or a kernel thread without a memory map
        stack += kids.get(pid, [])
    return pss, rss


def whole() -> int:
    """Run the README's test command once; print its wall time, CPU time and tree memory peaks."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT)
    peak_pss = peak_rss = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        pss, rss = _tree_memory(proc.pid)
        peak_pss, peak_rss = max(peak_pss, pss), max(peak_rss, rss)
        time.sleep(0.5)
    wall = time.perf_counter() - t0
    print(f"whole suite: exit {os.waitstatus_to_exitcode(status)}, wall {wall:.1f} s, "
          f"CPU {usage.ru_utime + usage.ru_stime:.1f} s (processes waited for), "
          f"peak tree PSS {peak_pss / 2**20:.2f} GiB, peak tree RSS {peak_rss / 2**20:.2f} GiB, "
          f"largest one process {usage.ru_maxrss / 2**20:.2f} GiB; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> int:
    if argv == ["--whole"]:
        return whole()
    files = [Path(a).resolve() for a in argv] or sorted((ROOT / "tests").rglob("test_*.py"))
    rows = []
    for path in files:
        wall, cpu, peak, code = measure(path)
        rows.append((peak, wall, cpu, code, path.name))
        print(f"  measured {path.name}: {wall:.1f} s", file=sys.stderr)
    print(f"{'file':34} {'peak MiB':>9} {'wall s':>8} {'cpu s':>8}  exit")
    for peak, wall, cpu, code, name in sorted(rows, reverse=True):
        print(f"{name:34} {peak:9.0f} {wall:8.1f} {cpu:8.1f}  {code}")
    print(f"{'all (one after another)':34} {max(r[0] for r in rows):9.0f} {sum(r[1] for r in rows):8.1f} "
          f"{sum(r[2] for r in rows):8.1f}  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
