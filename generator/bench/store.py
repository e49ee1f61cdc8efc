"""Trace files: atomic appends, what is already done (for --resume), and merging shard outputs.

A trace line is written with one write() on a file opened for appending, after a repair step that
cuts a half-written last line (left by a kill during an earlier write) back to the last newline: a
killed run never leaves a line that does not parse, and everything before it survives.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator


def trace_path(root: Path, author: str, type_: str, definition: str) -> Path:
    return root / "traces" / author / type_ / f"{definition}.jsonl"


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


def append_line(path: Path, record: dict) -> int:
    """Append one JSON record as a line; return bytes of a broken tail that had to be cut first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        cut = _repair_tail(fd)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return cut


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


def done_keys(root: Path) -> set[tuple[str, str, str]]:
    keys = set()
    for path in sorted((root / "traces").glob("*/*/*.jsonl")):
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
    base = folder / "traces" if (folder / "traces").is_dir() else folder
    for path in sorted(base.glob("*/*/*.jsonl")):
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
        target = dataset / "traces" / rel
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
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_text("".join(json.dumps(by_key[k], ensure_ascii=False) + "\n" for k in order), encoding="utf-8")
            tmp.replace(target)
            summary.files += 1
    return summary
