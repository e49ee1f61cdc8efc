"""The GPU kit: everything one offline GPU machine needs to run the CUDA tests, the harness benchmark and
the bench in one call, and to bring the results back in a few files.

`kerneltrace kit prepare --out .kit` runs here (where the package registry can be reached): it downloads
the wheels the bench imports that the GPU image lacks (for the target Python and platform), copies the
bubblewrap binary, and writes run.py, run.sh and README.txt into the kit folder. On the GPU machine, from
the repository root, `python3 .kit/run.py --budget-s 480 --out "$OUT"` (or `bash .kit/run.sh ...`):

1. installs the wheels into <kit>/site (`pip install --no-index --no-deps --target`) and puts it and the
   repository root on PYTHONPATH (nothing is installed into the machine's Python), <kit>/bin on PATH;
2. writes env.txt (nvidia-smi, Python, torch, triton, CUDA, the GPU, bwrap and the sandbox probe) and sets
   KERNELTRACE_SANDBOX=bwrap only where the probe started a sandboxed torch that sees the device;
3. runs the tests that need CUDA, tests/benchmarks/bench_harness.py, then `kerneltrace bench --resume`
   into a work folder (traces are appended as pairs finish);
4. always (a failed step, a spent budget, SIGTERM) packs the traces and logs into one kit-results.tar.gz
   and leaves at most 8 files in --out.

Every step's time limit comes from the one --budget-s, so the run ends before the device command's limit.
This module imports only the standard library: it runs before the kit's wheels are installed.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence, TextIO

# What the bench imports (cli -> bench -> load -> model.schemas) that the GPU image lacks: jsonschema and
# its own dependencies. The image has (TOOLCHAIN.md, "The GPU machine we measured on"): torch, triton,
# numpy, safetensors, jinja2, pyyaml, tqdm, pandas, pyarrow, pytest, hypothesis, setuptools,
# huggingface_hub. mkdocs, mkdocs-material, pygments and datasets
# are missing there too, but only `build`, `serve` and `export` import them, never the bench.
# typing_extensions too: referencing needs one with TypeVar(default=...) on Python < 3.13, and the image's
# copy (torch's) is of no known version (a 3.12 venv without it fails `import jsonschema`).
KIT_PACKAGES = ("jsonschema", "referencing", "rpds-py", "jsonschema-specifications", "attrs", "typing-extensions")
ON_THE_IMAGE = frozenset({"torch", "triton", "numpy", "safetensors", "jinja2", "markupsafe", "pyyaml", "tqdm",
                          "pandas", "pyarrow", "pytest", "hypothesis", "setuptools", "huggingface-hub"})
# Modules the bench path imports, checked on the machine (env.txt says which copy is used).
CHECKED_IMPORTS = ("jsonschema", "referencing", "rpds", "jsonschema_specifications", "attrs", "typing_extensions",
                   "jinja2", "yaml", "tqdm", "numpy", "safetensors", "torch", "triton", "pytest")
DISTRIBUTIONS = {"rpds": "rpds-py", "jsonschema_specifications": "jsonschema-specifications", "yaml": "pyyaml",
                 "typing_extensions": "typing-extensions"}
# pip matches manylinux_2_N exactly: offer the common ones (rpds-py ships manylinux_2_17 wheels).
DEFAULT_PLATFORMS = ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_28_x86_64",
                     "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64")
DEFAULT_PYTHON = "3.12"

MAX_OUT_FILES = 8  # what the device tool brings back from $OUT
ARCHIVE = "kit-results.tar.gz"
LOG_CAP = 4 * 2**20  # a log in --out is cut to its head and tail past this size (files come back up to 16 MiB)
STEP_FLOOR_S = 3.0  # a step with less time than this left is skipped
SYSTEM_BWRAP = "/usr/bin/bwrap"  # where the bench's workers find bwrap (they run with PATH=/usr/bin:/bin)


# ==================================================================================================
# prepare (here, with the registry)
# ==================================================================================================

@dataclass
class PrepareReport:
    kit: Path
    wheels: list[Path] = field(default_factory=list)
    bwrap: Optional[Path] = None
    notes: list[str] = field(default_factory=list)

    def format(self) -> str:
        lines = [f"kit in {self.kit}:"]
        for p in sorted(q for q in self.kit.rglob("*") if q.is_file() and "site" not in q.relative_to(self.kit).parts):
            lines.append(f"  {p.relative_to(self.kit).as_posix():60s} {p.stat().st_size:>10,d} bytes")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _pins(names: Sequence[str]) -> list[str]:
    """name==version of what is installed here (the versions the tests here ran with), else the bare name."""
    from importlib import metadata

    out = []
    for name in names:
        if any(c in name for c in "=<>!~"):
            out.append(name)
            continue
        try:
            out.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(name)
    return out


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_requirements(wheel: Path) -> list[str]:
    """The distributions a wheel's METADATA requires outside extras (markers ignored: a conservative list)."""
    with zipfile.ZipFile(wheel) as z:
        meta = next((n for n in z.namelist() if n.endswith(".dist-info/METADATA")), None)
        text = z.read(meta).decode("utf-8", "replace") if meta else ""
    needs = []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        spec = line.split(":", 1)[1].strip()
        if re.search(r"extra\s*==", spec):
            continue
        needs.append(_canonical(re.split(r"[\s;<>=!~\[(]", spec, maxsplit=1)[0]))
    return needs


def wheel_distribution(wheel: Path) -> str:
    return _canonical(wheel.name.split("-")[0])


def prepare(kit: Path, *, python: str = DEFAULT_PYTHON, platforms: Sequence[str] = DEFAULT_PLATFORMS,
            download: bool = True, extra: Sequence[str] = (), bwrap: Optional[str] = None,
            log: Callable[[str], None] = print) -> PrepareReport:
    """Fill `kit`: wheels/ (downloaded for `python` and `platforms` unless download=False), bin/bwrap,
    run.py, run.sh, README.txt, manifest.json."""
    kit = kit.resolve()
    report = PrepareReport(kit)
    wheels = kit / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    packages = list(KIT_PACKAGES) + list(extra)
    if download:
        for old in wheels.glob("*.whl"):  # one version of each: two would stop the install there
            old.unlink()
        version = python.replace(".", "")
        cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
               "--only-binary=:all:", "--python-version", version, "--implementation", "cp",
               "--abi", f"cp{version}", "--abi", "abi3", "--abi", "none"]
        for plat in platforms:
            cmd += ["--platform", plat]
        cmd += ["--dest", str(wheels), *_pins(packages)]
        log("downloading: " + " ".join(_pins(packages)) + f" (cp{version}, {', '.join(platforms)})")
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"pip download failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
    else:
        report.notes.append("--no-download: wheels/ was left as it is (" +
                            (", ".join(p.name for p in sorted(wheels.glob("*.whl"))) or "empty") + ")")
    report.wheels = sorted(wheels.glob("*.whl"))
    have = {wheel_distribution(w) for w in report.wheels}
    if download:
        missing = [p for p in packages if _canonical(re.split(r"[<>=!~]", p)[0]) not in have]
        if missing:
            raise RuntimeError(f"pip download left out {', '.join(missing)}")
    for w in report.wheels:
        for need in wheel_requirements(w):
            if need not in have and need not in ON_THE_IMAGE:
                report.notes.append(f"{w.name} requires {need}, which is neither in the kit nor known to be on "
                                    "the GPU image: add it with --extra if the machine lacks it")
    dups = sorted({d for d in (wheel_distribution(w) for w in report.wheels)
                   if sum(wheel_distribution(x) == d for x in report.wheels) > 1})
    if dups:
        report.notes.append(f"more than one wheel of {', '.join(dups)}: the install there would fail")

    source = bwrap if bwrap is not None else shutil.which("bwrap")
    target = kit / "bin" / "bwrap"
    if source:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        target.chmod(0o755)
        report.bwrap = target
    else:
        report.notes.append("no bwrap found here (apt-get install bubblewrap): the kit has no sandbox binary, "
                            "so the bench there runs unsandboxed unless the machine has bwrap")
    _write_launchers(kit)
    _write_manifest(kit, report, python=python, platforms=platforms, download=download, bwrap_source=source)
    return report


RUN_PY = '''\
#!/usr/bin/env python3
"""Written by `kerneltrace kit prepare`: the kit's run step. From the repository root:

    python3 .kit/run.py --budget-s 480 --out "$OUT"        (see README.txt and --help)
"""
import sys
from pathlib import Path

KIT = Path(__file__).resolve().parent
ROOT = KIT.parent if (KIT.parent / "generator" / "kit.py").is_file() else Path.cwd()
sys.path.insert(0, str(ROOT))
from generator.kit import run_main  # noqa: E402  (stdlib only: runs before the wheels are installed)

sys.exit(run_main(sys.argv[1:], kit=KIT, repo=ROOT))
'''

RUN_SH = '''\
#!/usr/bin/env bash
# Written by `kerneltrace kit prepare`: runs the kit's run.py with the machine's python3 (or $PYTHON).
# Usage, from the repository root: bash .kit/run.sh --budget-s 480 --out "$OUT"
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "${PYTHON:-python3}" "$here/run.py" "$@"
'''

README = """\
KernelTrace GPU kit (written by `kerneltrace kit prepare`; not committed: .kit/ is git-ignored)

wheels/    what the bench imports that the offline GPU image lacks, for cp{py} on {plat}
bin/bwrap  the bubblewrap binary from the machine that prepared the kit (the bench's sandbox)
run.py     the run step (run.sh calls it with python3); manifest.json says what went in

On the GPU machine, from the repository root (the device tool's `carry` must name ".kit"):

    python3 .kit/run.py --budget-s 480 --out "$OUT"      # device command timeout_s: 540 or more

It installs the wheels into .kit/site (no network, nothing installed into the machine's Python),
writes $OUT/env.txt, runs the CUDA tests, tests/benchmarks/bench_harness.py --device cuda and
`kerneltrace bench --device cuda --breadth-first --budget-s <what is left> --resume`, and packs the
traces and logs into $OUT/{archive} (at most {n} files in $OUT), also when a step fails or the budget
runs out. Pass bench options after `--`, e.g. `-- --definitions rmsnorm_h4096`. --help lists the rest.
"""


def _write_launchers(kit: Path) -> None:
    (kit / "run.py").write_text(RUN_PY, encoding="utf-8")
    (kit / "run.py").chmod(0o755)
    (kit / "run.sh").write_text(RUN_SH, encoding="utf-8")
    (kit / "run.sh").chmod(0o755)


def _git(repo: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _write_manifest(kit: Path, report: PrepareReport, *, python: str, platforms: Sequence[str], download: bool,
                    bwrap_source: Optional[str]) -> None:
    def sha(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    bwrap_version = ""
    if report.bwrap:
        try:
            bwrap_version = subprocess.run([str(report.bwrap), "--version"], capture_output=True, text=True,
                                           timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            bwrap_version = f"could not run: {exc}"
    repo = Path(__file__).resolve().parents[1]
    manifest = {
        "python": python, "platforms": list(platforms), "downloaded": download,
        "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "prepared_from_commit": _git(repo, "describe", "--always", "--dirty"),
        "wheels": [{"file": w.name, "bytes": w.stat().st_size, "sha256": sha(w)} for w in report.wheels],
        "bwrap": ({"file": "bin/bwrap", "from": bwrap_source, "version": bwrap_version,
                   "sha256": sha(report.bwrap)} if report.bwrap else None),
        "notes": report.notes,
    }
    (kit / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    (kit / "README.txt").write_text(README.format(py=python.replace(".", ""), plat=", ".join(platforms[:2]),
                                                  archive=ARCHIVE, n=MAX_OUT_FILES), encoding="utf-8")


# ==================================================================================================
# run (on the GPU machine: standard library only, Python >= 3.10)
# ==================================================================================================

# Loaded into the test step's pytest with -p: keeps the tests that are about CUDA (a skipif whose
# condition or reason names CUDA, a `cuda` marker, or "cuda" in the test's name).
PYTEST_PLUGIN = '''\
"""Written by the GPU kit: keep only the tests about CUDA in the files given."""
import re

_CUDA = re.compile(r"cuda|gpu", re.IGNORECASE)


def _about_cuda(item):
    if _CUDA.search(item.name) or item.get_closest_marker("cuda") is not None:
        return True
    for mark in item.iter_markers("skipif"):
        words = [str(a) for a in mark.args] + [str(v) for v in mark.kwargs.values()]
        if any(_CUDA.search(w) for w in words):
            return True
    return False


def pytest_collection_modifyitems(session, config, items):
    keep = [i for i in items if _about_cuda(i)]
    drop = [i for i in items if not _about_cuda(i)]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
'''

ENV_PROBE = r'''
import importlib, os, platform, sys
print(f"python: {sys.version.split()[0]} ({platform.python_implementation()}) at {sys.executable}")
print(f"platform: {platform.platform()}; cpus: {os.cpu_count()}")
try:
    import torch
    line = f"torch: {torch.__version__} (CUDA build {torch.version.cuda}, cuda available: {torch.cuda.is_available()}"
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        line += (f", {torch.cuda.device_count()} device(s), device 0: {p.name}, sm_{p.major}{p.minor}, "
                 f"{p.multi_processor_count} SMs, {p.total_memory / 2**30:.1f} GiB")
    print(line + ")")
except Exception as exc:
    print(f"torch: not importable ({type(exc).__name__}: {exc})")
from importlib import metadata
for arg in sys.argv[1:]:
    name, _, dist = arg.partition("=")
    try:
        m = importlib.import_module(name)
    except Exception as exc:
        print(f"  {name}: NOT IMPORTABLE ({type(exc).__name__}: {exc})")
        continue
    try:
        version = metadata.version(dist or name)
    except Exception:
        version = "?"
    print(f"  {name} {version} from {getattr(m, '__file__', '?')}")
'''

SANDBOX_PROBE = r'''
import subprocess, sys, time
from generator.bench.sandbox import bwrap_command, sandbox_mode
device, limit = sys.argv[1], float(sys.argv[2])
mode, why = sandbox_mode(device)
print(f"bench sandbox_mode({device!r}): {mode}" + (f" ({why})" if why else ""))
if mode != "bwrap":
    print("SANDBOX: none")
    sys.exit(0)
code = ("import torch; print('inside the sandbox: torch', torch.__version__, 'cuda', torch.cuda.is_available(), "
        "torch.cuda.device_count())")
r = subprocess.run(bwrap_command([sys.executable, "-c", code], device), capture_output=True, text=True, timeout=limit)
print(r.stdout.strip())
if r.returncode != 0:
    print(f"sandboxed torch failed (exit {r.returncode}): {r.stderr.strip()[-1500:]}")
    print("SANDBOX: none")
    sys.exit(0)
if device.startswith("cuda") and " cuda True " not in r.stdout + " ":
    print("the sandboxed torch sees no CUDA device")
    print("SANDBOX: none")
    sys.exit(0)
# The bench's own worker, started as the bench starts it (its environment, its way of finding bwrap).
try:
    from generator.bench.sandbox import Worker
    w = Worker(device, "bwrap")
except FileNotFoundError as exc:
    print(f"the bench's Worker could not start bwrap: {exc}")
    print("WORKER: bwrap not found")
    print("SANDBOX: none")
    sys.exit(0)
except Exception as exc:
    print(f"the bench's Worker did not start: {type(exc).__name__}: {exc}")
    print("SANDBOX: none")
    sys.exit(0)
t = time.monotonic()
while w.proc.poll() is None and time.monotonic() - t < 2:
    time.sleep(0.2)
ended = w.proc.poll()
w.kill()
if ended not in (None, 0):
    print(f"the bench's sandboxed worker ended at start ({w.how_it_ended()}): {w.log.text()[-1500:]}")
    print("SANDBOX: none")
else:
    print("the bench's sandboxed worker started")
    print("SANDBOX: bwrap")
'''


class Stopped(Exception):
    """SIGTERM or SIGINT reached the kit: pack what there is and stop."""


@dataclass
class Step:
    name: str
    status: str = "not run"  # ok, failed (exit N), timed out, skipped: why, stopped
    seconds: float = 0.0
    limit: float = 0.0
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok" or self.status.startswith("skipped")

    def line(self) -> str:
        when = f"{self.seconds:6.1f} s of {self.limit:.0f} s" if self.limit else f"{self.seconds:6.1f} s"
        return f"{self.name:8s} {self.status:32s} {when}" + (f"  {self.detail}" if self.detail else "")


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help=f"where the results go ($OUT of the device tool): env.txt, summary.txt, the logs and "
                        f"{ARCHIVE}; at most {MAX_OUT_FILES} files")
    p.add_argument("--budget-s", type=float, required=True, metavar="S",
                   help="seconds the whole run may take; every step's limit comes from it (leave the device "
                        "command a minute more)")
    p.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu to try the kit out")
    p.add_argument("--dataset", type=Path, default=None, metavar="DIR", help="dataset folder (default: <repo>/dataset)")
    p.add_argument("--work", type=Path, default=None, metavar="DIR",
                   help="the bench's output folder (traces/ under it; kept between runs, so --resume skips "
                        "finished pairs); default: <tmp>/kerneltrace-kit-work")
    p.add_argument("--skip", default="", metavar="STEPS",
                   help="comma-separated steps to leave out: tests, harness, bench")
    p.add_argument("--tests", choices=["cuda", "files"], default="cuda",
                   help="cuda: only the tests about CUDA in the test files that have any (default); files: "
                        "those files whole")
    p.add_argument("--tests-s", type=float, default=None, metavar="S", help="cap on the tests (default: 20%% of the budget)")
    p.add_argument("--harness-s", type=float, default=None, metavar="S",
                   help="cap on the harness benchmark (default: 15%% of the budget)")
    p.add_argument("--harness", default="tests/benchmarks/bench_harness.py", metavar="SCRIPT",
                   help="the harness benchmark script, relative to the repository (default: %(default)s)")
    p.add_argument("--pair-timeout", type=float, default=120.0, metavar="S",
                   help="the bench's --timeout per workload (default: 120; bench options after -- win)")
    p.add_argument("--sandbox", choices=["auto", "bwrap", "none"], default="auto",
                   help="auto: KERNELTRACE_SANDBOX=bwrap where the probe works, else unsandboxed with the reason "
                        "recorded; bwrap: require it (the bench fails without); none: never sandbox")


def run_main(argv: Sequence[str], *, kit: Path, repo: Optional[Path] = None) -> int:
    argv = list(argv)
    bench_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, bench_args = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(prog="run.py", description="Run the GPU kit: CUDA tests, harness benchmark, bench; "
                                "pack the results. Bench options go after --.")
    add_run_arguments(p)
    args = p.parse_args(argv)
    return run_kit(kit, repo=repo, bench_args=bench_args, **{k: v for k, v in vars(args).items()})


def cuda_test_files(repo: Path) -> list[str]:
    """The test files with tests that need CUDA (a skipif on CUDA, a cuda marker), relative to `repo`."""
    pattern = re.compile(r"skipif\([^\n]*cuda|mark\.cuda\b|requires_cuda|needs_cuda", re.IGNORECASE)
    return [p.relative_to(repo).as_posix() for p in sorted((repo / "tests").glob("test_*.py"))
            if pattern.search(p.read_text(encoding="utf-8", errors="replace"))]


class Run:
    """One run of the kit: the clock, the logs, the steps, the packing."""

    def __init__(self, kit: Path, repo: Path, out: Path, work: Path, budget_s: float):
        self.kit, self.repo, self.out, self.work = kit, repo, out, work
        self.t0 = time.monotonic()
        self.budget = budget_s
        # Kept back for packing (and for killing what runs over): 5 % of the budget, 5 to 20 s.
        self.reserve = max(5.0, min(20.0, 0.05 * budget_s))
        self.steps: list[Step] = []
        self.env = dict(os.environ)
        self.child: Optional[subprocess.Popen] = None
        self.lock = threading.Lock()
        out.mkdir(parents=True, exist_ok=True)
        work.mkdir(parents=True, exist_ok=True)
        self.kit_log: TextIO = open(out / "kit.log", "a", encoding="utf-8")

    # -- clock and log ----------------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def left(self) -> float:
        return self.budget - self.elapsed()

    def say(self, text: str) -> None:
        line = f"[kit {self.elapsed():6.1f}s] {text}"
        try:
            print(line, flush=True)
        except OSError:  # a closed stdout must not cost the results
            pass
        if not self.kit_log.closed:
            self.kit_log.write(line + "\n")
            self.kit_log.flush()

    def env_note(self, text: str) -> None:
        with open(self.out / "env.txt", "a", encoding="utf-8") as f:
            f.write(text.rstrip("\n") + "\n")

    # -- processes --------------------------------------------------------------------------------
    def call(self, cmd: Sequence[str], limit: float, log: Optional[Path] = None, *,
             env: Optional[dict] = None) -> tuple[Optional[int], str]:
        """Run cmd in its own process group for at most `limit` s; (exit code or None if killed, output).
        Output goes to `log` (appended, streamed) when given, else is returned."""
        sink = open(log, "a", encoding="utf-8") if log else subprocess.PIPE
        if log:
            sink.write(f"$ {' '.join(map(str, cmd))}\n")
            sink.flush()
        try:
            proc = subprocess.Popen([str(c) for c in cmd], cwd=str(self.repo), env=env or self.env,
                                    stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                    text=True, start_new_session=True)
        except OSError as exc:
            if log:
                sink.write(f"could not start: {exc}\n")
                sink.close()
            return 127, f"could not start: {exc}"
        with self.lock:
            self.child = proc
        try:
            out, _ = proc.communicate(timeout=max(0.1, limit))
            code: Optional[int] = proc.returncode
        except subprocess.TimeoutExpired:
            self.kill(proc)
            out, code = (proc.communicate()[0] if not log else ""), None
        except Stopped:
            self.kill(proc)
            raise
        finally:
            with self.lock:
                self.child = None
            if log:
                sink.close()
        return code, out or ""

    def kill(self, proc: subprocess.Popen, grace: float = 5.0) -> None:
        """SIGTERM to the process group, SIGKILL after `grace` s (the bench's workers die with it)."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def step(self, name: str, limit: float) -> Step:
        s = Step(name, limit=max(0.0, limit))
        self.steps.append(s)
        return s

    def timed(self, s: Step, cmd: Sequence[str], log: Path) -> Optional[int]:
        if s.limit < STEP_FLOOR_S:
            s.status = f"skipped: budget spent ({self.left():.0f} s left)"
            self.say(f"{s.name}: {s.status}")
            return None
        self.say(f"{s.name}: start, limit {s.limit:.0f} s, log {log.name}")
        t = time.monotonic()
        s.status = "stopped"
        try:
            code, _ = self.call(cmd, s.limit, log)
        finally:
            s.seconds = time.monotonic() - t
        s.status = "ok" if code == 0 else ("timed out (killed)" if code is None else f"failed (exit {code})")
        self.say(f"{s.name}: {s.status} after {s.seconds:.1f} s")
        return code

    # -- packing ----------------------------------------------------------------------------------
    def pack(self) -> Path:
        """Write --out/kit-results.tar.gz: the bench's traces, the logs, env.txt, summary, manifest."""
        archive = self.out / ARCHIVE
        part = self.out / (ARCHIVE + ".part")
        with tarfile.open(part, "w:gz") as tar:
            root = "kerneltrace-kit"
            traces = self.work / "traces"
            if traces.is_dir():
                for f in sorted(traces.rglob("*")):
                    if f.is_file():
                        tar.add(str(f), arcname=f"{root}/traces/{f.relative_to(traces).as_posix()}")
            for f in sorted(self.out.iterdir()):
                if f.is_file() and f.name not in (ARCHIVE, part.name):
                    _add_capped(tar, f, f"{root}/{f.name}")
            for f in (self.work / "tests.xml", self.kit / "manifest.json"):
                if f.is_file():
                    tar.add(str(f), arcname=f"{root}/{f.name}")
        os.replace(part, archive)
        return archive


def _add_capped(tar: tarfile.TarFile, path: Path, arcname: str) -> None:
    data = _capped_bytes(path)
    info = tarfile.TarInfo(arcname)
    info.size, info.mtime, info.mode = len(data), int(path.stat().st_mtime), 0o644
    tar.addfile(info, io.BytesIO(data))


def _capped_bytes(path: Path) -> bytes:
    size = path.stat().st_size
    with open(path, "rb") as f:
        if size <= LOG_CAP:
            return f.read()
        head = f.read(LOG_CAP // 16)
        f.seek(size - (LOG_CAP - LOG_CAP // 16))
        tail = f.read()
    return head + f"\n[... {size - len(head) - len(tail)} bytes cut by the kit ...]\n".encode() + tail


def _cap_in_place(path: Path) -> None:
    if path.is_file() and path.stat().st_size > LOG_CAP:
        path.write_bytes(_capped_bytes(path))


def _bench_flags(r: Run, python: str) -> set[str]:
    """The bench options this checkout's CLI knows (from `bench --help`)."""
    code, out = r.call([python, "-m", "generator.cli", "bench", "--help"], min(60.0, max(1.0, r.left() - r.reserve)))
    return set(re.findall(r"--[a-z][a-z0-9-]*", out)) if code == 0 else set()


VERSIONS_PROBE = r'''
import json, sys
from importlib import metadata
found = {}
for name in sys.argv[1:]:
    try:
        found[name] = metadata.version(name)
    except Exception:
        found[name] = None
print(json.dumps(found))
'''


def _version_key(version: str) -> tuple[int, ...]:
    """The leading numbers of a version (4.16.0 -> (4, 16, 0)); enough to order these releases."""
    return tuple(int(x) for x in re.findall(r"\d+", version.split("+")[0])[:4])


def install_wheels(r: Run, python: str) -> Step:
    wheels = sorted((r.kit / "wheels").glob("*.whl"))
    site = r.kit / "site"
    s = r.step("install", min(120.0, r.left() - r.reserve))
    shutil.rmtree(site, ignore_errors=True)  # a site carried from elsewhere may hold another Python's builds
    site.mkdir(parents=True, exist_ok=True)
    if not wheels:
        s.status = "skipped: the kit has no wheels"
        r.say(f"install: {s.status}")
        return s
    log = r.out / "kit.log"
    t = time.monotonic()
    # The machine's own copy wins where it is as new as the kit's: the kit fills gaps, it does not shadow.
    code, out = r.call([python, "-c", VERSIONS_PROBE, *(wheel_distribution(w) for w in wheels)], min(60.0, s.limit))
    theirs = json.loads(out.strip().splitlines()[-1]) if code == 0 and out.strip() else {}
    kept = []
    for w in wheels:
        dist, version = wheel_distribution(w), w.name.split("-")[1]
        have = theirs.get(dist)
        if have and _version_key(have) >= _version_key(version):
            r.say(f"install: {dist} {have} is on the machine (the kit has {version}): the machine's is used")
        else:
            kept.append(w)
    skipped_here = len(wheels) - len(kept)
    wheels = kept
    if not wheels:
        s.status, s.seconds = "ok", time.monotonic() - t
        s.detail = f"nothing to install: the machine has all {skipped_here} distribution(s)"
        r.say(f"install: {s.detail}")
        return s
    r.kit_log.flush()
    code, out = r.call([python, "-m", "pip", "--version"], min(60.0, s.limit))
    if code == 0:
        code, out = r.call([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-index", "--no-deps",
                            "--no-compile", "--no-cache-dir", "--target", str(site), *map(str, wheels)], s.limit)
        how = "pip"
    else:  # no pip there: a wheel is a zip laid out for site-packages (scripts and .data are not needed here)
        how = "unzip (no pip)"
        try:
            for w in wheels:
                with zipfile.ZipFile(w) as z:
                    z.extractall(site)
            code, out = 0, ""
        except (OSError, zipfile.BadZipFile) as exc:
            code, out = 1, str(exc)
    s.seconds = time.monotonic() - t
    with open(log, "a", encoding="utf-8") as f:
        f.write(out)
    s.status = "ok" if code == 0 else ("timed out (killed)" if code is None else f"failed (exit {code})")
    s.detail = f"{len(wheels)} wheel(s) into {site} with {how}" + (
        f"; {skipped_here} left to the machine's own copies" if skipped_here else "")
    r.say(f"install: {s.status}: {s.detail}")
    return s


def describe_environment(r: Run, python: str, device: str, sandbox: str) -> str:
    """env.txt; returns the sandbox mode the bench will be told ("bwrap", "none" or "" for its own choice)."""
    s = r.step("env", min(180.0, r.left() - r.reserve))
    t = time.monotonic()
    r.say("env: describing the machine into env.txt")
    r.env_note(f"# KernelTrace GPU kit, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    r.env_note(f"repository: {r.repo} (commit {_git(r.repo, 'describe', '--always', '--dirty') or 'unknown: no git'})")
    r.env_note(f"kit: {r.kit}; work folder: {r.work}; budget {r.budget:.0f} s; device {device}")
    manifest = r.kit / "manifest.json"
    if manifest.is_file():
        m = json.loads(manifest.read_text(encoding="utf-8"))
        r.env_note(f"kit prepared {m.get('prepared_at')} from {m.get('prepared_from_commit') or '?'}; wheels: "
                   + (", ".join(w["file"] for w in m.get("wheels", [])) or "none"))

    def section(title: str, cmd: Sequence[str], limit: float = 30.0) -> str:
        code, out = r.call(cmd, min(limit, max(1.0, r.left() - r.reserve)))
        status = "" if code == 0 else (" [timed out]" if code is None else f" [exit {code}]")
        r.env_note(f"\n## {title}{status}\n{out.rstrip()}")
        return out

    if shutil.which("nvidia-smi", path=r.env.get("PATH")):
        section("nvidia-smi", ["nvidia-smi"])
        section("nvidia-smi --query-gpu", ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                                           "power.limit", "--format=csv"])
    else:
        r.env_note("\n## nvidia-smi\nnot found on PATH")
    section("python, torch, the bench's imports", [python, "-c", ENV_PROBE, *(f"{m}={DISTRIBUTIONS.get(m, m)}" for m in CHECKED_IMPORTS)], 120.0)
    bwrap = shutil.which("bwrap", path=r.env.get("PATH"))
    if bwrap:
        section(f"bwrap ({bwrap})", [bwrap, "--version"])
        if shutil.which("ldd"):
            section("ldd bwrap", ["ldd", bwrap])
    else:
        r.env_note("\n## bwrap\nnot found (the kit's bin/ has none and the machine has none)")

    mode = ""
    if sandbox == "none":
        r.env_note("\n## sandbox\n--sandbox none: KERNELTRACE_SANDBOX=none, solutions run unsandboxed")
        mode = "none"
    else:
        probe_env = {k: v for k, v in r.env.items() if k != "KERNELTRACE_SANDBOX"}

        def probe() -> tuple[bool, str]:
            code, out = r.call([python, "-c", SANDBOX_PROBE, device, "120"],
                               min(180.0, max(1.0, r.left() - r.reserve)), env=probe_env)
            r.env_note("\n## sandbox probe (the bench's own check, torch inside bwrap, the bench's Worker)"
                       + ("" if code == 0 else f" [{'timed out' if code is None else f'exit {code}'}]")
                       + f"\n{out.rstrip()}")
            return code == 0 and "SANDBOX: bwrap" in out, out

        works, out = probe()
        kit_bwrap = r.kit / "bin" / "bwrap"
        if not works and "WORKER: bwrap not found" in out and kit_bwrap.is_file():
            # The bench starts its workers with PATH=/usr/bin:/bin, where the kit's bin/ is not: as root on a
            # machine with no bwrap of its own (a lent machine, given back bare), put the kit's copy there.
            target = Path(SYSTEM_BWRAP)
            if hasattr(os, "geteuid") and os.geteuid() == 0 and not target.exists():
                try:
                    shutil.copy2(kit_bwrap, target)
                    target.chmod(0o755)
                    r.env_note(f"copied the kit's bwrap to {target} (the bench's workers look for it on "
                               "/usr/bin:/bin only); probing again")
                    works, out = probe()
                except OSError as exc:
                    r.env_note(f"could not copy the kit's bwrap to {target}: {exc}")
        if works:
            mode = "bwrap"
            r.env_note("=> KERNELTRACE_SANDBOX=bwrap: every solution runs in the sandbox, or the bench stops")
        elif sandbox == "bwrap":
            mode = "bwrap"
            r.env_note("=> the probe failed but --sandbox bwrap was asked for: KERNELTRACE_SANDBOX=bwrap, so the "
                       "bench will refuse to run")
        else:
            r.env_note("=> the sandbox does not work here (see above): KERNELTRACE_SANDBOX left unset, so the bench "
                       "runs solutions WITHOUT the sandbox and its traces record environment.sandbox = \"none\"")
    s.seconds = time.monotonic() - t
    s.status = "ok"
    s.detail = f"sandbox: {mode or 'bench default'}"
    r.say(f"env: done, {s.detail}")
    return mode


def run_kit(kit: Path, *, out: Path, budget_s: float, repo: Optional[Path] = None, device: str = "cuda",
            dataset: Optional[Path] = None, work: Optional[Path] = None, skip: str = "", tests: str = "cuda",
            tests_s: Optional[float] = None, harness_s: Optional[float] = None,
            harness: str = "tests/benchmarks/bench_harness.py", pair_timeout: float = 120.0, sandbox: str = "auto",
            bench_args: Sequence[str] = ()) -> int:
    """The run step (see the module's docstring). Returns 0 when every step that ran passed, else 1."""
    kit = kit.resolve()
    repo = (repo or Path.cwd()).resolve()
    out = out.resolve()
    import tempfile
    work = (work or Path(tempfile.gettempdir()) / "kerneltrace-kit-work").resolve()
    dataset = (dataset or repo / "dataset").resolve()
    skipped = {x.strip() for x in skip.split(",") if x.strip()}
    unknown = skipped - {"tests", "harness", "bench"}
    if unknown:
        print(f"run.py: --skip: unknown step(s) {', '.join(sorted(unknown))} (use tests, harness, bench)", file=sys.stderr)
        return 2
    r = Run(kit, repo, out, work, budget_s)
    python = sys.executable
    floor = 0.0 if "bench" in skipped else 0.35 * budget_s  # kept for the bench while the tests and the harness run

    def on_signal(signum, frame):  # noqa: ARG001
        raise Stopped(signal.Signals(signum).name)

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    stopper = threading.Event()
    packer: Optional[threading.Thread] = None
    try:
        r.say(f"kit {kit} on {device}, budget {budget_s:.0f} s (packing keeps {r.reserve:.0f} s), out {out}")
        bin_dir = kit / "bin"
        if (bin_dir / "bwrap").is_file():
            try:
                (bin_dir / "bwrap").chmod(0o755)  # a copy may lose its mode on the way
            except OSError:
                pass
        path_parts = [str(bin_dir), *filter(None, r.env.get("PATH", os.defpath).split(os.pathsep))]
        r.env["PATH"] = os.pathsep.join(path_parts)
        r.env["PYTHONPATH"] = os.pathsep.join([str(repo), str(kit / "site"),
                                               *filter(None, r.env.get("PYTHONPATH", "").split(os.pathsep))])
        r.env["PYTHONUNBUFFERED"] = "1"
        r.env.pop("KERNELTRACE_SANDBOX", None)

        install_wheels(r, python)
        mode = describe_environment(r, python, device, sandbox)
        if mode:
            r.env["KERNELTRACE_SANDBOX"] = mode

        # -- the tests that need CUDA ------------------------------------------------------------
        if "tests" in skipped:
            r.step("tests", 0).status = "skipped: --skip"
        else:
            files = cuda_test_files(repo)
            s = r.step("tests", min(tests_s if tests_s is not None else 0.2 * budget_s, r.left() - r.reserve - floor))
            if not files:
                s.status = "skipped: no test file has CUDA tests"
            else:
                plugin_dir = work / "pytest-plugin"
                plugin_dir.mkdir(parents=True, exist_ok=True)
                (plugin_dir / "kit_cuda_select.py").write_text(PYTEST_PLUGIN, encoding="utf-8")
                cmd = [python, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-o", "addopts=",
                       "-q", "-rs", "--junitxml", str(work / "tests.xml")]
                if tests == "cuda":
                    cmd += ["-p", "kit_cuda_select"]
                saved = r.env["PYTHONPATH"]
                r.env["PYTHONPATH"] = os.pathsep.join([saved, str(plugin_dir)])
                try:
                    code = r.timed(s, cmd + files, out / "tests.log")
                finally:
                    r.env["PYTHONPATH"] = saved
                s.detail = " ".join(files) + (" (the CUDA tests in them)" if tests == "cuda" else "")
                if code == 5:
                    s.status = "ok"
                    s.detail += ": no test selected"

        # -- the harness benchmark ---------------------------------------------------------------
        if "harness" in skipped:
            r.step("harness", 0).status = "skipped: --skip"
        elif not (repo / harness).is_file():
            r.step("harness", 0).status = f"skipped: {harness} is missing"
        else:
            s = r.step("harness", min(harness_s if harness_s is not None else 0.15 * budget_s,
                                      r.left() - r.reserve - floor))
            r.timed(s, [python, harness, "--device", device, "--json", str(out / "harness.json")], out / "harness.log")

        # -- the bench ---------------------------------------------------------------------------
        if "bench" in skipped:
            r.step("bench", 0).status = "skipped: --skip"
        else:
            s = r.step("bench", r.left() - r.reserve)
            # The bench's own budget ends a little before the kill, so that it can stop between pairs.
            grace = min(60.0, max(5.0, 0.1 * s.limit))
            known = _bench_flags(r, python)
            s.limit = r.left() - r.reserve
            cmd = [python, "-m", "generator.cli", "bench", "--dataset", str(dataset), "--device", device,
                   "--out", str(work), "--resume"]
            wanted = [["--breadth-first"], ["--budget-s", f"{max(1, int(s.limit - grace))}"]]
            if not any(a == "--timeout" or a.startswith("--timeout=") for a in bench_args):
                wanted.append(["--timeout", f"{pair_timeout:g}"])
            missing = []
            for flag in wanted:
                if flag[0] in known or not known:
                    cmd += flag
                else:
                    missing.append(flag[0])
            if missing:
                s.detail = (f"this checkout's bench has no {', '.join(missing)}: not passed (the kit's limit of "
                            f"{s.limit:.0f} s stops it)")
                r.say(f"bench: WARNING: {s.detail}")
            cmd += list(bench_args)
            stopper.clear()

            def repack() -> None:  # the traces so far, in case the whole command is killed from outside
                while not stopper.wait(60.0):
                    try:
                        r.pack()
                    except (OSError, tarfile.TarError):
                        pass

            packer = threading.Thread(target=repack, daemon=True)
            packer.start()
            try:
                r.timed(s, cmd, out / "bench.log")
            finally:
                stopper.set()
                packer.join(timeout=30)
                packer = None
            n = sum(1 for f in (work / "traces").rglob("*.jsonl") for line in open(f, encoding="utf-8") if line.strip()) \
                if (work / "traces").is_dir() else 0
            s.detail = (s.detail + "; " if s.detail else "") + f"{n} trace(s) in {work / 'traces'}"
    except Stopped as exc:
        r.say(f"stopped by {exc}: packing what there is")
        for s in r.steps:
            if s.status in ("not run", "stopped"):
                s.status = f"stopped ({exc})"
    except Exception as exc:  # the kit's own bug: still pack
        r.say(f"the kit failed: {type(exc).__name__}: {exc}")
        r.steps.append(Step("kit", status=f"failed: {type(exc).__name__}: {exc}"))
    finally:
        stopper.set()
        for sig, handler in old.items():
            signal.signal(sig, handler)
        with r.lock:
            if r.child is not None:
                r.kill(r.child)
        code = finish(r)
    return code


def finish(r: Run) -> int:
    """summary.txt, logs capped, the archive, the file count checked; the exit code."""
    lines = [f"KernelTrace GPU kit: {r.elapsed():.0f} s of a {r.budget:.0f} s budget"]
    lines += ["  " + s.line() for s in r.steps]
    failed = [s.name for s in r.steps if not s.ok]
    lines.append("result: " + ("every step that ran passed" if not failed else f"not ok: {', '.join(failed)}"))
    (r.out / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for line in lines:
        r.say(line)
    r.kit_log.close()
    for f in r.out.iterdir():
        if f.suffix in (".log", ".txt"):
            _cap_in_place(f)
    try:
        archive = r.pack()
        note = f"packed {archive.name} ({archive.stat().st_size:,d} bytes)"
    except (OSError, tarfile.TarError) as exc:
        note = f"could not pack the results: {exc}"
        failed.append("pack")
    files = [f for f in r.out.rglob("*") if f.is_file()]
    if len(files) > MAX_OUT_FILES:
        note += f"; WARNING: {len(files)} files in {r.out}, more than the {MAX_OUT_FILES} that come back"
    try:
        print(f"[kit {r.elapsed():6.1f}s] {note}; {len(files)} file(s) in {r.out}", flush=True)
    except OSError:
        pass
    with open(r.out / "summary.txt", "a", encoding="utf-8") as f:
        f.write(note + "\n")
    return 1 if failed else 0
