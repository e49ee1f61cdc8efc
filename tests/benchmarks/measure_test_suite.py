"""Wall time, CPU time and peak memory of the test suite, one test file at a time.

    python tests/benchmarks/measure_test_suite.py [tests/test_x.py ...]

Each file runs in a pytest process of its own (as `python -m pytest -q -p no:cacheprovider FILE`), so
the figures of one file do not include what another left behind. Peak memory is the largest resident
set of any one process of the file's tree (pytest and the workers it waits for), as /usr/bin/time -v
reports it: wait4's rusage. CPU time (user + system) says how much work a file is when the host is
shared and wall times stretch. Prints one line per file, largest peak first, and the totals.
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


def main(argv: list[str]) -> int:
    files = [Path(a).resolve() for a in argv] or sorted((ROOT / "tests").glob("test_*.py"))
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
