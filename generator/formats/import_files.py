"""The files side of `kerneltrace import`: reading the input files into records, writing the
dataset files (atomic, never overwriting different content, lines appended), copying blobs and
reporting per file what was not carried over. importer.py decides what goes where."""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..model.fileio import dump_document, dump_line, write_atomic
from ..model.schemas import DEFINITION_TYPES

SUFFIXES = (".json", ".jsonl")
_IGNORED = {".DS_Store", ".gitkeep", ".gitattributes"}


@dataclass
class _Item:
    """One record read from an input file."""

    raw: Any
    kind: str  # definition | solution | workload | trace | benchmark | model
    path: Path  # the input file
    line: int  # 1-based line of a .jsonl record, 1 for a .json document
    arg: int  # index of the PATH argument it came from
    type_hint: Optional[str] = None
    data: Any = None
    dialect: Optional[str] = None
    notes: list[str] = field(default_factory=list)
    ok: bool = True

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.path.suffix == ".jsonl" else str(self.path)


@dataclass
class _Target:
    """What goes into one dataset file."""

    rel: str
    lines: bool  # .jsonl (append lines) or .json (one document)
    items: list[_Item] = field(default_factory=list)


def _kind(obj: Any) -> Optional[str]:
    if not isinstance(obj, dict):
        return None
    if "kernel_id" in obj or ("compiled" in obj and "source" in obj):
        return "benchmark"
    if "framework" in obj and "kernels" in obj:
        return "model"
    if "spec" in obj and "sources" in obj:
        return "solution"
    if isinstance(obj.get("evaluation"), dict):
        return "trace"
    if "workload" in obj and "definition" in obj:
        return "workload"
    if any(k in obj for k in ("op_type", "op", "axes", "inputs", "input", "reference", "reference_code", "code")):
        return "definition"
    return None


def _describe(obj: Any) -> str:
    if isinstance(obj, dict):
        keys = ", ".join(list(obj)[:6]) or "no fields"
        return f"an object with {keys}"
    return {list: "a list", str: "a string", bool: "true or false", type(None): "null"}.get(type(obj), "a number")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


class Files:
    """Reading and writing for the importer (it sets items, failed, written, root, dry_run,
    workload_uuid, input_files and blobs)."""

    # -- messages ----------------------------------------------------------------------------
    def error(self, where: Any, message: str) -> None:
        print(f"{where}: error: {message}", file=sys.stderr)

    def fail(self, item: _Item, message: str) -> None:
        item.ok = False
        self.failed += 1
        self.error(item.where, message)

    # -- reading -----------------------------------------------------------------------------
    def collect(self, arg: int, path: Path) -> None:
        if not path.exists():
            self.failed += 1
            self.error(path, "no such file or folder")
            return
        if path.is_dir():
            files = []
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                files.extend(Path(dirpath, n) for n in sorted(filenames)
                             if n.endswith(SUFFIXES) and not n.startswith(".") and n not in _IGNORED)
            if not files:
                print(f"{path}: nothing to import (no .json or .jsonl files)")
            for f in files:
                self.read_file(arg, f)
        elif path.suffix in SUFFIXES:
            self.read_file(arg, path)
        else:
            self.failed += 1
            self.error(path, "not a .json or .jsonl file; kerneltrace import reads JSON records only")

    def read_file(self, arg: int, path: Path) -> None:
        self.input_files.append(path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            self.failed += 1
            self.error(path, f"not UTF-8 text ({e.reason} at byte {e.start}); save it as UTF-8")
            return
        except OSError as e:
            self.failed += 1
            self.error(path, f"cannot read: {e.strerror}")
            return
        hint = path.parent.name if path.parent.name in DEFINITION_TYPES else None
        if path.suffix == ".jsonl":
            for number, line in enumerate(text.splitlines(), start=1):
                if line.strip():
                    ok, value = self.parse(path, line, number)
                    if ok:
                        self.add(arg, path, number, value, hint)
            return
        ok, value = self.parse(path, text, 1)
        if not ok:
            return
        if isinstance(value, list) and value and all(_kind(v) in ("benchmark", "trace", "workload") for v in value):
            # a JSON list of result records (one benchmark run dumped as an array)
            for v in value:
                self.add(arg, path, 1, v, hint)
        else:
            self.add(arg, path, 1, value, hint)

    def parse(self, path: Path, text: str, line: int) -> tuple[bool, Any]:
        try:
            return True, json.loads(text)
        except json.JSONDecodeError as e:
            self.failed += 1
            self.error(f"{path}:{line + e.lineno - 1}",
                       f"invalid JSON: {e.msg} (column {e.colno}); fix the syntax (a trailing comma or a missing "
                       f"quote is the usual cause)")
        except RecursionError:
            self.failed += 1
            self.error(f"{path}:{line}", "invalid JSON: nested too deeply")
        return False, None

    def add(self, arg: int, path: Path, line: int, value: Any, hint: Optional[str]) -> None:
        kind = _kind(value)
        if kind is None:
            self.failed += 1
            where = f"{path}:{line}" if path.suffix == ".jsonl" else str(path)
            self.error(where, f"not a record kerneltrace import knows ({_describe(value)}); expected a definition, "
                              f"solution, workload, trace, benchmark result or kernel calling record")
            return
        self.items.append(_Item(value, kind, path, line, arg, hint))

    def copy_blobs(self) -> None:
        verb = "would copy" if self.dry_run else "copied"
        for dest, source in sorted(self.blobs.items()):
            path = self.root / dest
            data = source.read_bytes()
            if path.is_file() and path.read_bytes() == data:
                continue
            if path.exists():
                self.failed += 1
                self.error(path, f"refusing to overwrite it with {source}: it exists with different content")
                continue
            if not self.dry_run:
                write_atomic(path, data)
            self.written += 1
            print(f"{verb} {source} to {path}")

    # -- writing -----------------------------------------------------------------------------
    def write(self, targets: dict[str, _Target]) -> None:
        verb = "would write" if self.dry_run else "wrote"
        for rel in sorted(targets):
            target = targets[rel]
            path = self.root / rel
            if target.lines:
                text, added = self.merged_lines(path, target)
                if text is None:
                    if any(i.ok for i in target.items):
                        print(f"unchanged {path} (every line is already there)")
                    continue
                if not self.dry_run:
                    write_atomic(path, text)
                self.written += 1
                print(f"{verb} {path} ({added} line(s))")
            else:
                item = target.items[0]
                new = dump_document(item.data)
                for other in target.items[1:]:
                    if other.data != item.data:
                        self.fail(other, f"{rel} is also imported from {item.where} with different content; "
                                         f"not written twice")
                if path.exists() and not any(_same_file(path, i.path) for i in target.items):
                    try:
                        old = json.loads(path.read_text(encoding="utf-8"))
                        same = old == item.data
                    except (OSError, ValueError):
                        same = False
                    if same:
                        print(f"unchanged {path} (identical file exists)")
                        continue
                    for i in target.items:
                        if i.ok:
                            self.fail(i, f"refusing to overwrite {path}: it exists with different content; "
                                         f"remove or rename it first")
                    continue
                if path.exists():
                    try:
                        if path.read_text(encoding="utf-8") == new:
                            print(f"unchanged {path}")
                            continue
                    except (OSError, UnicodeDecodeError):
                        pass
                if not self.dry_run:
                    write_atomic(path, new)
                self.written += 1
                print(f"{verb} {path}")

    def merged_lines(self, path: Path, target: _Target) -> tuple[Optional[str], int]:
        """The new text of a .jsonl file: existing lines kept, new records appended (identical ones
        skipped). A workload uuid that exists with different content is refused. When the file is
        itself one of the inputs, its lines are rewritten in place as canonical lines."""
        in_place = [i for i in target.items if _same_file(path, i.path)]
        try:
            existing = path.read_text(encoding="utf-8") if path.exists() else ""
        except (OSError, UnicodeDecodeError) as e:
            for i in target.items:
                self.fail(i, f"cannot read {path} to append to it: {e}")
            return None, 0
        lines = existing.splitlines()
        changed = 0
        if in_place:
            by_line = {i.line: i for i in in_place}
            for number in range(1, len(lines) + 1):
                i = by_line.get(number)
                if i is not None and i.dialect:
                    lines[number - 1] = dump_line(i.data)
                    changed += 1
        seen: set[str] = set()  # existing records, as sorted-key JSON, to skip identical ones
        uuids: dict[str, Any] = {}
        for line in lines:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            seen.add(json.dumps(obj, sort_keys=True))
            if isinstance(obj, dict) and isinstance(obj.get("workload"), dict) and obj.get("evaluation") is None:
                uuids[obj["workload"].get("uuid")] = obj
        added = 0
        in_place_ids = {id(i) for i in in_place}
        for item in target.items:
            if id(item) in in_place_ids or not item.ok:
                continue
            key = json.dumps(item.data, sort_keys=True)
            if key in seen:
                continue  # identical line already there
            if item.kind == "workload":
                uuid = item.data["workload"]["uuid"]
                if uuid in uuids:
                    self.fail(item, f"refusing to change {path}: workload '{uuid}' exists there with different "
                                    f"content")
                    continue
                uuids[uuid] = item.data
            lines.append(dump_line(item.data))
            seen.add(key)
            added += 1
        if not added and not changed:
            return None, 0
        return "\n".join(lines) + "\n", added + changed

    # -- reporting ---------------------------------------------------------------------------
    def report_notes(self) -> None:
        by_file: dict[Path, dict[str, int]] = {}
        dialect_by_file: dict[Path, list[str]] = defaultdict(list)
        for item in self.items:
            notes = by_file.setdefault(item.path, {})
            if item.kind == "benchmark" and self.workload_uuid is None:
                continue  # not written at all; the skip message says why
            if item.dialect and item.dialect not in dialect_by_file[item.path]:
                dialect_by_file[item.path].append(item.dialect)
            for n in item.notes:
                notes[n] = notes.get(n, 0) + 1
        for path, notes in by_file.items():
            dialect = " and ".join(dialect_by_file[path]) or "canonical"
            if not notes:
                continue
            print(f"{path}: read as {dialect}; not carried over or changed:")
            for note, count in notes.items():
                print(f"  - {note}" + (f" ({count} records)" if count > 1 else ""))
