"""The run's first steps on the GPU machine: install the kit's wheels, describe the machine and probe the sandbox."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import zipfile
from pathlib import Path
from typing import Sequence

from .prepare import wheel_distribution
from .probes import CHECKED_IMPORTS, DISTRIBUTIONS, ENV_PROBE, SANDBOX_PROBE, VERSIONS_PROBE
from .steps import Run, Step, git

SYSTEM_BWRAP = "/usr/bin/bwrap"  # where the bench's workers find bwrap (they run with PATH=/usr/bin:/bin)


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
    r.env_note(f"repository: {r.repo} (commit {git(r.repo, 'describe', '--always', '--dirty') or 'unknown: no git'})")
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


