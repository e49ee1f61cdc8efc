"""Read the dataset folder once into typed records (load stage).

One pass over the files; each record is parsed, normalised from other dialects, checked
against its JSON Schema and turned into an immutable record that remembers its file and
line. Nothing here raises on bad data: problems become diagnostics on the Dataset.
"""

from __future__ import annotations

import gc
import json
import os
import re
from pathlib import Path
from typing import Any, Iterator, Optional

from ..formats import dialects, flashinfer_trace
from ..model.dataset import Dataset
from ..model.diagnostics import ERROR, WARNING, Diagnostic
from ..model.kinds import KIND_OF_FOLDER
from ..model.layout import CANONICAL, Folder
from ..model.records import (AgentTrace, CallingRecord, Definition, EinsumCascade, HardwareSpec, Solution, Source, Trace,
                      Workload)
from ..model.schema_check import schema_diagnostics

# The dataset of this checkout (what the tests read). Commands default to ./dataset of the current
# folder instead (cli.py), so an installed kerneltrace never checks its own copy by mistake.
DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "dataset"

# The folders read, in order, and where their files sit (model/layout.py owns the patterns).
LAYOUT = CANONICAL
# Files anywhere that are not data (editor and OS clutter, docs).
IGNORED_NAMES = {".DS_Store", "README.md", ".gitkeep", ".gitattributes"}


class _NotJSON(ValueError):
    """NaN, Infinity or -Infinity: Python's json reads them, JSON (and every other reader) does not."""


def _reject_constant(name: str) -> Any:
    raise _NotJSON(name)


def _line_of_constant(text: str, name: str) -> int:
    """Line (1-based) of the first bare `name` token in `text`, skipping string literals."""
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|(' + re.escape(name) + ")", text):
        if m.group(1):
            return text.count("\n", 0, m.start()) + 1
    return 1


class _Loader:
    def __init__(self, root: Path):
        self.ds = Dataset(root=root)
        self.root = root
        # (top-level folder, dialect) -> (first record, note -> how many records); and the record count
        self.dialect_notes: dict[tuple[str, str], tuple[Source, dict[str, int]]] = {}
        self.dialect_records: dict[tuple[str, str], int] = {}
        self.flashinfer_seen = False  # a FlashInfer-Trace record read: solutions default to its DPS

    # -- reporting -------------------------------------------------------------------------
    def report(self, path: str, line: int, pointer: str, severity: str, message: str, hint: str = "") -> None:
        self.ds.load_diagnostics.append(Diagnostic(path, line, pointer, severity, message, hint))

    # -- reading ---------------------------------------------------------------------------
    def read_text(self, rel: str) -> Optional[str]:
        try:
            with open(self.root / rel, encoding="utf-8") as f:
                return f.read()
        except UnicodeDecodeError as e:
            self.report(rel, 0, "", ERROR, f"file is not UTF-8 text ({e.reason} at byte {e.start})",
                        "save the file as UTF-8")
        except OSError as e:
            self.report(rel, 0, "", ERROR, f"cannot read file: {e.strerror}", "check the file's permissions")
        return None

    def parse(self, rel: str, text: str, line: int = 1) -> tuple[bool, Any]:
        try:
            return True, json.loads(text, parse_constant=_reject_constant)
        except _NotJSON as e:
            self.report(rel, line + _line_of_constant(text, e.args[0]) - 1, "", ERROR,
                        f"invalid JSON: {e.args[0]} is not a JSON value",
                        "write a finite number, or null (JSON has no NaN or Infinity)")
        except json.JSONDecodeError as e:
            self.report(rel, line + e.lineno - 1, "", ERROR, f"invalid JSON: {e.msg} (column {e.colno})",
                        "fix the JSON syntax (a trailing comma or a missing quote is the usual cause)")
        except RecursionError:
            self.report(rel, line, "", ERROR, "invalid JSON: nested too deeply", "flatten the structure")
        return False, None

    def json_document(self, rel: str) -> Iterator[tuple[Any, Source]]:
        """The one JSON value of a .json file, with its source (keeps the text to locate fields)."""
        text = self.read_text(rel)
        if text is None:
            return
        ok, data = self.parse(rel, text)
        if ok:
            yield data, Source(rel, 1, text)

    def json_lines(self, rel: str) -> Iterator[tuple[Any, Source, str]]:
        """Each non-blank line of a .jsonl file: the parsed value, its source, its text."""
        text = self.read_text(rel)
        if text is None:
            return
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            ok, data = self.parse(rel, line, number)
            if ok:
                yield data, Source(rel, number), line

    # -- records ---------------------------------------------------------------------------
    def checked(self, kind: str, norm: dialects.Normalised, source: Source) -> bool:
        """Schema-check a normalised value; True if it may become a record."""
        if norm.dialect:
            # one warning per folder and dialect, at its first record, reported when the walk ends:
            # a dataset in another dialect is hundreds of records that all say the same
            key = (source.path.split("/")[0], norm.dialect)
            counts = self.dialect_notes.setdefault(key, (source, {}))[1]
            for note in dict.fromkeys(norm.notes):
                counts[note] = counts.get(note, 0) + 1
            self.dialect_records[key] = self.dialect_records.get(key, 0) + 1
            if norm.dialect == dialects.FLASHINFER_TRACE:
                self.flashinfer_seen = True
        problems = schema_diagnostics(kind, norm.data, source)
        self.ds.load_diagnostics.extend(problems)
        return not problems

    def reject(self, kind: str, data: Any, key: str = "name") -> None:
        if isinstance(data, dict) and isinstance(data.get(key), str):
            self.ds.rejected[kind].add(data[key])

    def add_unique(self, index: dict, name: str, record: Any, kind: str) -> None:
        if name in index:
            first = index[name].source
            self.report(record.source.path, record.source.line_of("/name"), "/name", ERROR,
                        f"duplicate {kind} name '{name}' (first defined in {first.path}:{first.line_of('/name')})",
                        f"give each {kind} a unique name")
            return
        index[name] = record

    def load_definition(self, rel: str) -> None:
        stem = Path(rel).stem
        for raw, source in self.json_document(rel):
            norm = dialects.normalise_definition(raw, stem)
            if norm.dialect and source.text is not None:
                source = Source(source.path, source.line)  # the text no longer matches the data
            if self.checked("definition", norm, source):
                self.add_unique(self.ds.definitions, norm.data["name"], Definition.from_data(norm.data, source),
                                "definition")
            else:
                self.reject("definition", norm.data)

    def load_workloads(self, rel: str) -> None:
        for raw, source, _ in self.json_lines(rel):
            norm = dialects.normalise_workload(raw)
            if self.checked("workload", norm, source):
                self.ds.workloads.append(Workload.from_data(norm.data, source))
            elif isinstance(norm.data, dict):
                self.reject("workload", norm.data.get("workload"), key="uuid")

    def load_solution(self, rel: str) -> None:
        for raw, source in self.json_document(rel):
            norm = dialects.normalise_solution(
                raw, flashinfer=self.flashinfer_seen or flashinfer_trace.foreign_pattern(rel) is not None)
            if norm.dialect:
                source = Source(source.path, source.line)
            if self.checked("solution", norm, source):
                self.add_unique(self.ds.solutions, norm.data["name"], Solution.from_data(norm.data, source),
                                "solution")
            else:
                self.reject("solution", norm.data)

    def load_traces(self, rel: str) -> None:
        for raw, source, line in self.json_lines(rel):
            norm = dialects.normalise_trace(raw)
            if self.checked("trace", norm, source):
                self.ds.traces.append(Trace.from_data(norm.data, source, None if norm.dialect else line))

    def load_model(self, rel: str) -> None:
        for raw, source in self.json_document(rel):
            if self.checked("model", dialects.Normalised(raw), source):
                stem = Path(rel).stem
                self.ds.models[stem] = CallingRecord.from_data(stem, raw, source)

    def load_hardware(self, rel: str) -> None:
        for raw, source in self.json_document(rel):
            if self.checked("hardware", dialects.Normalised(raw), source):
                self.add_unique(self.ds.hardware, raw["name"], HardwareSpec.from_data(raw, source), "hardware")
            else:
                self.reject("hardware", raw)

    def load_agent_trace(self, rel: str) -> None:
        where = LAYOUT["agent_traces"].fields(rel)
        for raw, source in self.json_document(rel):
            if self.checked("agent_trace", dialects.Normalised(raw), source):
                self.ds.agent_traces.append(AgentTrace.from_data(where["author"], where["solution"], raw, source))

    def load_einsum(self, rel: str) -> None:
        text = self.read_text(rel)
        if text is not None:
            where = LAYOUT["einsums"].fields(rel)
            cascade = EinsumCascade(where["definition"], where["type"], text, Source(rel, 1, text))
            self.ds.einsums[cascade.definition] = cascade

    # -- walking ---------------------------------------------------------------------------
    def run(self) -> Dataset:
        # Layout order: definitions first so that nothing depends on file-system order.
        for folder in LAYOUT.folders.values():
            if folder.loaded:
                load_one = getattr(self, LOADERS[KIND_OF_FOLDER[folder.name].name])
                for rel in self.files_in(folder):
                    load_one(rel)
        self.report_dialects()
        self.check_top_level()
        return self.ds

    def report_dialects(self) -> None:
        for (folder, dialect), (first, notes) in self.dialect_notes.items():
            n = self.dialect_records[(folder, dialect)]
            what = "written in the" if n == 1 else f"this and {n - 1} more record(s) in {folder}/ are written in the"
            said = "; ".join(note + (f" ({count} records)" if count > 1 else "") for note, count in notes.items())
            self.report(first.path, first.line, "", WARNING, f"{what} {dialect} dialect; read as canonical" +
                        (f" ({said})" if said else ""),
                        f"run 'kerneltrace import {first.path if n == 1 else self.root} --dataset NEW_DATASET' to "
                        f"rewrite {'it' if n == 1 else 'them'} in the canonical format")

    def files_in(self, folder: Folder) -> list[str]:
        base = self.root / folder.name
        if not base.is_dir():
            return []
        found = []
        foreign_layouts: dict[str, list[str]] = {}  # FlashInfer-Trace pattern -> files read in it
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name in IGNORED_NAMES or name.startswith("."):
                    continue
                rel = Path(dirpath, name).relative_to(self.root).as_posix()
                if not name.endswith(folder.suffix):
                    self.report(rel, 0, "", WARNING, f"unexpected file in {folder.name}/ (not {folder.suffix}); ignored",
                                f"files here are laid out as {folder.pattern}")
                elif len(Path(rel).parts) - 1 != folder.depth:
                    foreign = flashinfer_trace.foreign_pattern(rel)
                    if foreign is None:
                        self.report(rel, 0, "", ERROR, f"file is at the wrong depth for {folder.name}/; not loaded",
                                    f"move it to {folder.pattern}")
                    else:
                        foreign_layouts.setdefault(foreign, []).append(rel)
                        found.append(rel)
                else:
                    found.append(rel)
        for pattern, files in foreign_layouts.items():  # one warning per layout, not one per file
            self.report(files[0], 0, "", WARNING,
                        f"{folder.name}/ is laid out as FlashInfer-Trace's {pattern} ({len(files)} file(s)); read "
                        f"in place", f"'kerneltrace import {self.root} --dataset NEW_DATASET' rewrites it as "
                        f"{folder.pattern}")
        return found

    def check_top_level(self) -> None:
        if not self.root.is_dir():
            what = "dataset path is not a folder" if self.root.exists() else "dataset folder does not exist"
            self.report(str(self.root), 0, "", ERROR, what,
                        "pass --dataset DIR pointing at a folder with definitions/, workloads/, ...")
            return
        for entry in sorted(os.listdir(self.root)):
            if entry in LAYOUT.folders or entry in IGNORED_NAMES or entry.startswith("."):
                continue
            self.report(entry, 0, "", WARNING, f"unknown entry '{entry}' at the dataset root; ignored",
                        "known folders: " + ", ".join(LAYOUT.folders))


# Record kind -> the _Loader method that reads one of its files.
LOADERS = {
    "definition": "load_definition", "workload": "load_workloads", "solution": "load_solution",
    "trace": "load_traces", "model": "load_model", "hardware": "load_hardware",
    "agent_trace": "load_agent_trace", "einsum": "load_einsum",
}


def load(root: Path | str = Path("dataset")) -> Dataset:
    """Load the dataset at `root` into typed records; problems go to `Dataset.load_diagnostics`."""
    # Loading makes millions of small, acyclic, long-lived containers; the cyclic collector
    # would walk them again and again as the heap grows, so cost would grow faster than the
    # data. Pause it while loading, then freeze the records out of its reach (refcounting
    # still frees them).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        ds = _Loader(Path(root)).run()
        gc.freeze()
        return ds
    finally:
        if was_enabled:
            gc.enable()
