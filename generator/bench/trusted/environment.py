"""Where a run happens, named as the dataset's hardware specs name it."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import subprocess
import uuid
from pathlib import Path

from ...model.records import BENCH_TOOL


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_hardware_name(threads: int) -> str:
    """e.g. CPU_AMD_EPYC_2T: the CPU model and the threads torch used (CPU results scale with both)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "_", cpu_model()).strip("_")
    return f"CPU_{slug}_{threads}T"


def gpu_hardware_name(device_name: str, ds=None) -> str:
    """The name the dataset's hardware specs give the GPU torch calls `device_name` (a spec's `aliases` list the
    names torch reports: the one owner of that mapping), else the name itself as a word: a GPU with no spec gets
    no speed-of-light floor and is filed under its own name until someone adds its spec."""
    spec = ds.hardware_spec(device_name) if ds is not None else None
    return spec.name if spec is not None else re.sub(r"[^A-Za-z0-9]+", "_", device_name).strip("_")


def describe(device: str, ds=None) -> dict:
    """The trace's evaluation.environment for runs on `device` (the GPU named by the hardware specs of `ds`)."""
    import torch

    libs = {"torch": torch.__version__, "python": platform.python_version()}
    # Versions from the installed metadata: importing triton here would cost seconds and load its
    # compiler into a process that never runs a kernel.
    for lib in ("triton", "numpy"):
        try:
            libs[lib] = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            libs[lib] = None
    env = {"cpu": cpu_model()}
    if device.startswith("cuda"):
        name = torch.cuda.get_device_name(torch.device(device))
        libs["cuda"] = torch.version.cuda
        env["hardware"] = gpu_hardware_name(name, ds)
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30, check=True)
            env["driver"] = out.stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            pass
    else:
        env["hardware"] = cpu_hardware_name(torch.get_num_threads())
    env["libs"] = libs
    return env


def _git(*args: str) -> str | None:
    """Output of a git command in the checkout this package runs from; None where it is not one (an
    installed wheel), git is missing or slow."""
    root = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def provenance(environ=None) -> dict:
    """evaluation.environment.provenance of one bench run's traces: measured by this bench, its version, the
    commit of the checkout it runs from (and whether generator/ had uncommitted changes), an id shared by the
    run's traces, and the GitHub Actions workflow run when it runs in one (GITHUB_REPOSITORY, GITHUB_RUN_ID)."""
    from ... import __version__

    environ = os.environ if environ is None else environ
    record: dict = {"kind": "measured", "tool": BENCH_TOOL, "version": __version__}
    commit = _git("rev-parse", "HEAD")
    if commit and re.fullmatch(r"[0-9a-f]{7,40}", commit):
        record["commit"] = commit
        status = _git("status", "--porcelain", "--untracked-files=no", "--", "generator")
        if status is not None:
            record["dirty"] = bool(status)
    record["run_id"] = uuid.uuid4().hex
    if environ.get("GITHUB_RUN_ID") and environ.get("GITHUB_REPOSITORY"):
        ci = {"repository": environ["GITHUB_REPOSITORY"], "run_id": environ["GITHUB_RUN_ID"]}
        if environ.get("GITHUB_RUN_ATTEMPT"):
            ci["run_attempt"] = environ["GITHUB_RUN_ATTEMPT"]
        record["ci"] = ci
    return record
