"""One run of the kit on the GPU machine: its clock, logs, steps, child processes and packing."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, TextIO

from ..model.layout import CANONICAL

MAX_OUT_FILES = 8  # what the device tool brings back from $OUT
ARCHIVE = "kit-results.tar.gz"
LOG_CAP = 4 * 2**20  # a log in --out is cut to its head and tail past this size (files come back up to 16 MiB)
STEP_FLOOR_S = 3.0  # a step with less time than this left is skipped


def git(repo: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


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
            traces = self.work / CANONICAL["traces"].name
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


def cap_in_place(path: Path) -> None:
    if path.is_file() and path.stat().st_size > LOG_CAP:
        path.write_bytes(_capped_bytes(path))

