"""`kerneltrace kit prepare`: fill the kit folder here, where the package registry can be reached."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from .steps import ARCHIVE, MAX_OUT_FILES, git

# What the bench imports (cli -> bench -> load -> model.schemas) that the GPU image lacks: jsonschema and
# its own dependencies, and orjson (load reads JSON with it). The image has (TOOLCHAIN.md, "The GPU machine we measured on"): torch, triton,
# numpy, safetensors, jinja2, pyyaml, tqdm, pandas, pyarrow, pytest, hypothesis, setuptools,
# huggingface_hub. mkdocs, mkdocs-material, pygments and datasets
# are missing there too, but only `build`, `serve` and `export` import them, never the bench.
# typing_extensions too: referencing needs one with TypeVar(default=...) on Python < 3.13, and the image's
# copy (torch's) is of no known version (a 3.12 venv without it fails `import jsonschema`).
# The pure-Python kernel libraries the library contenders call (generator/contenders/libraries/): liger-kernel
# and fla-core (py3-none-any wheels; they need torch and triton, which the image has, and fla-core einops).
KERNEL_LIBRARIES = ("liger-kernel", "fla-core", "einops")
# orjson by a floor, not this machine's version: 3.8 has no wheel for CPython 3.12 (3.9.3 is the first); load reads
# alike with any version (load/reading.py gives json whatever orjson might read otherwise).
KIT_PACKAGES = ("jsonschema", "referencing", "rpds-py", "jsonschema-specifications", "attrs", "typing-extensions",
                "orjson>=3.9.3", *KERNEL_LIBRARIES)
ON_THE_IMAGE = frozenset({"torch", "triton", "numpy", "safetensors", "jinja2", "markupsafe", "pyyaml", "tqdm",
                          "pandas", "pyarrow", "pytest", "hypothesis", "setuptools", "huggingface-hub"})
# pip matches manylinux_2_N exactly: offer the common ones (rpds-py ships manylinux_2_17 wheels).
DEFAULT_PLATFORMS = ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_28_x86_64",
                     "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64")
DEFAULT_PYTHON = "3.12"


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
ROOT = KIT.parent if (KIT.parent / "generator" / "kit" / "__init__.py").is_file() else Path.cwd()
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
    repo = Path(__file__).resolve().parents[2]
    manifest = {
        "python": python, "platforms": list(platforms), "downloaded": download,
        "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "prepared_from_commit": git(repo, "describe", "--always", "--dirty"),
        "wheels": [{"file": w.name, "bytes": w.stat().st_size, "sha256": sha(w)} for w in report.wheels],
        "bwrap": ({"file": "bin/bwrap", "from": bwrap_source, "version": bwrap_version,
                   "sha256": sha(report.bwrap)} if report.bwrap else None),
        "notes": report.notes,
    }
    (kit / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    (kit / "README.txt").write_text(README.format(py=python.replace(".", ""), plat=", ".join(platforms[:2]),
                                                  archive=ARCHIVE, n=MAX_OUT_FILES), encoding="utf-8")


