"""The bench's bubblewrap sandbox starts the interpreter the bench runs under, wherever it lives."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from generator.bench.sandbox import sandbox_mode

ROOT = Path(__file__).resolve().parents[1]


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
                 "from generator.bench.sandbox import bwrap_command\n"
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
