"""Trace records and files: make_trace builds the record of a pair's result; locked appends with a unique key, what is already done (for --resume), merging.

Every write to a trace file happens under an exclusive lock (flock on the file's folder), so two
benches writing the same dataset at once neither tear nor lose each other's lines. A trace's key,
(solution, workload uuid, hardware), is unique in its file: writing a key that is there replaces that
line (the newest measurement wins, as in `merge`), so concurrent --resume runs cannot duplicate it.
A line is appended with one write(); a half-written last line (a kill during a write) is cut back to
the last newline before the next write, under the same lock.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

from ...model.errors import KernelTraceError
from ...model.fileio import dump_line, write_atomic
from ...model.layout import CANONICAL
from ...model.status import TraceStatus
from ..shared import protocol
from .environment import provenance

if TYPE_CHECKING:
    from .plan import Pair


def trace_path(root: Path, author: str, type_: str, definition: str) -> Path:
    return root / CANONICAL.trace_file(author, type_, definition)


def _repair_tail(fd: int) -> int:
    """Truncate a partial last line; return how many bytes were cut."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0
    os.lseek(fd, size - 1, os.SEEK_SET)
    if os.read(fd, 1) == b"\n":
        return 0
    # Walk back to the previous newline (lines are small; read in chunks).
    pos, chunk = size, 65536
    while pos > 0:
        start = max(0, pos - chunk)
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, pos - start)
        nl = data.rfind(b"\n")
        if nl >= 0:
            keep = start + nl + 1
            os.ftruncate(fd, keep)
            return size - keep
        pos = start
    os.ftruncate(fd, 0)
    return size


@contextlib.contextmanager
def locked(path: Path):
    """Hold the exclusive lock of the folder `path` is in (created if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _append(path: Path, data: bytes) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        cut = _repair_tail(fd)
        os.write(fd, data)  # no fsync: a kill -9 loses nothing written; a power cut is not our case
    finally:
        os.close(fd)
    return cut


def append_line(path: Path, record: dict) -> int:
    """Append one JSON record as a line, under the lock; return bytes of a broken tail cut first."""
    with locked(path):
        return _append(path, (json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))


def write_trace(path: Path, record: dict) -> str:
    """Write one trace under the lock: "added", or "replaced" when its key was already in the file."""
    line = json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"  # never a line no reader can load
    key = trace_key(record)
    needle = json.dumps(key[1]).encode("utf-8")  # the workload uuid as it appears in a line
    with locked(path):
        data = path.read_bytes() if path.is_file() else b""
        # Parse only lines that mention the uuid: a trace file can hold thousands of lines.
        if needle not in data or not any(_key_or_none(_parse(raw)) == key
                                         for raw in data.splitlines() if needle in raw):
            _append(path, line.encode("utf-8"))
            return "added"
        existing = list(read_traces(path))
        _rewrite(path, [record if _key_or_none(r) == key else r for r in existing])
        return "replaced"


def _parse(raw: bytes):
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def _rewrite(path: Path, records: list[dict]) -> None:
    write_atomic(path, "".join(dump_line(r) + "\n" for r in records))


def _key_or_none(record):
    try:
        return trace_key(record)
    except (KeyError, TypeError, AttributeError):
        return None


def trace_key(record: dict) -> tuple[str, str, str]:
    return (record["solution"], record["workload"]["uuid"], record["evaluation"]["environment"]["hardware"])


def read_traces(path: Path) -> Iterator[dict]:
    """Records of a trace file; a line that does not parse (a torn tail) is skipped."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def repair_tails(root: Path) -> list[tuple[Path, int]]:
    """Cut the torn last line of every trace file under `root` (each under its lock); (path, bytes cut)."""
    cut = []
    for path in sorted(root.glob(CANONICAL["traces"].glob)):
        with locked(path):
            fd = os.open(path, os.O_RDWR)
            try:
                n = _repair_tail(fd)
            finally:
                os.close(fd)
        if n:
            cut.append((path, n))
    return cut


def done_keys(root: Path) -> set[tuple[str, str, str]]:
    keys = set()
    for path in sorted(root.glob(CANONICAL["traces"].glob)):
        for record in read_traces(path):
            try:
                keys.add(trace_key(record))
            except (KeyError, TypeError):
                continue
    return keys


@dataclass
class MergeSummary:
    files: int = 0
    added: int = 0
    replaced: int = 0
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)


def _trace_files(folder: Path) -> Iterator[tuple[Path, Path]]:
    """(file, path relative to the traces root) for every trace file in a shard folder, which may be
    a dataset-like folder (with traces/) or a copy of a traces/ folder itself."""
    traces = CANONICAL["traces"]
    base = folder / traces.name if (folder / traces.name).is_dir() else folder
    below = traces.glob.split("/", 1)[1]  # the pattern below traces/: <author>/<type>/<definition>.jsonl
    for path in sorted(base.glob(below)):
        yield path, path.relative_to(base)


def merge(dataset: Path, folders: Iterable[Path]) -> MergeSummary:
    """Fold shard outputs into dataset/traces: one trace per (solution, workload, hardware), the newest
    timestamp winning. Each touched file is rewritten atomically (temporary file, then rename)."""
    summary = MergeSummary()
    incoming: dict[Path, list[dict]] = {}
    for folder in folders:
        if not folder.is_dir():
            summary.skipped.append(f"{folder}: not a folder")
            continue
        for path, rel in _trace_files(folder):
            incoming.setdefault(rel, []).extend(read_traces(path))
    for rel, records in sorted(incoming.items()):
        target = dataset / CANONICAL["traces"].name / rel
        existing = list(read_traces(target)) if target.is_file() else []
        by_key: dict = {}
        order: list = []
        for record in existing:
            key = trace_key(record)
            if key not in by_key:
                order.append(key)
            by_key[key] = record
        changed = False
        for record in records:
            try:
                key = trace_key(record)
            except (KeyError, TypeError):
                summary.skipped.append(f"{rel}: a line without solution/workload/hardware")
                continue
            old = by_key.get(key)
            if old is None:
                by_key[key] = record
                order.append(key)
                summary.added += 1
                changed = True
            elif record["evaluation"].get("timestamp", "") > old["evaluation"].get("timestamp", ""):
                by_key[key] = record
                summary.replaced += 1
                changed = True
            else:
                summary.unchanged += 1
        if changed:
            with locked(target):
                _rewrite(target, [by_key[k] for k in order])
            summary.files += 1
    return summary


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@functools.lru_cache(maxsize=1)
def process_provenance() -> dict:
    return provenance()


def make_trace(pair: "Pair", result: dict, environment: dict) -> dict:
    # log is "" rather than null when there is nothing to say: the FlashInfer-Trace dialect has no
    # null log, so exports round-trip exactly. No seed: the inputs came from secret seeds.
    # Every trace says how it was produced: environment.provenance (run_bench makes one per run; a caller
    # that brings none gets this process's). The FlashInfer-Trace export keeps it and the import reads it back.
    if "provenance" not in environment:
        environment = {**environment, "provenance": process_provenance()}
    evaluation = {"status": result["status"], "log": protocol.text(result.get("log") or "", 16000),
                  "correctness": result.get("correctness"), "performance": result.get("performance"),
                  "environment": environment, "timestamp": _now()}
    status = TraceStatus(result["status"])
    if not status.carries_performance:
        evaluation["performance"] = None
    if not status.carries_correctness:
        evaluation["correctness"] = None
    return storable({"definition": pair.definition.name, "workload": dict(pair.workload.data["workload"]),
                     "solution": pair.solution.name, "evaluation": evaluation})


def storable(record: dict) -> dict:
    """`record`, or, where its performance holds a number JSON or the trace schema refuses (not finite, not
    positive: what a solution's own clock could report), the record as a RUNTIME_ERROR saying so: one record never
    makes the trace store unloadable. A problem anywhere else is the bench's own (KernelTraceError, nothing
    written)."""
    from ...model.records import Source
    from ...model.schema_check import schema_diagnostics

    ev = record["evaluation"]
    try:
        json.dumps(record, allow_nan=False)
        found = schema_diagnostics("trace", record, Source("<bench>"))
    except ValueError:
        found = None  # NaN or an infinity somewhere
    if found == []:
        return record
    rest = {**record, "evaluation": {**ev, "performance": None}}
    try:
        json.dumps(rest, allow_nan=False)
    except ValueError:
        found = [None]
    if found is None:
        why = "a time that is not a finite number"
    elif all(d is not None and d.pointer.startswith("/evaluation/performance") for d in found):
        why = "; ".join(f"{d.pointer.rsplit('/', 1)[-1]}: {d.message}" for d in found[:3])
    else:
        raise KernelTraceError(f"kerneltrace bench made a trace of {record['solution']} that cannot be stored "
                               f"({[d.message for d in found if d is not None] or 'a number that is not finite'}): "
                               "a bug of the bench; nothing was written")
    return {**record, "evaluation": {**ev, "status": TraceStatus.RUNTIME_ERROR, "correctness": None,
                                     "performance": None, "log": protocol.text(
        f"its reported timing cannot be a measurement ({why}); the result is not stored as PASSED\n{ev['log']}",
        16000)}}
