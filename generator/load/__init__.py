"""Read the dataset folder once into typed records (load stage).

One pass over the files; each record is parsed, normalised from other dialects, checked
against its JSON Schema and turned into an immutable record that remembers its file and
line. Nothing here raises on bad data: problems become diagnostics on the Dataset.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import re
from dataclasses import dataclass, field
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


@dataclass
class FileLoad:
    """What reading one file gave, before it joins the Dataset: kept whole so that a LoadCache can
    join it again without reading the file (serve's quick rebuilds), with the same outcome."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    appended: dict[str, list] = field(default_factory=dict)  # Dataset list attribute -> records
    # (Dataset dict attribute, key, record, kind whose names must be unique or "" to overwrite)
    keyed: list[tuple[str, str, Any, str]] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (kind, name)
    # (top-level folder, dialect) -> (first record, note -> how many records, how many records)
    dialects: dict[tuple[str, str], tuple[Source, dict[str, int], int]] = field(default_factory=dict)
    flashinfer: bool = False  # a FlashInfer-Trace record read: later solutions default to its DPS

    def definitions(self) -> set[str]:
        """The definitions this file's records belong to (for scoping a rebuild)."""
        out = set()
        for attr, records in self.appended.items():
            out.update(r.definition for r in records if hasattr(r, "definition"))
        for attr, key, record, _ in self.keyed:
            if attr == "definitions":
                out.add(key)
            elif hasattr(record, "definition"):
                out.add(record.definition)
        return out


class LoadCache:
    """Files already read, by path, with the (mtime, size) they had: `load(root, cache)` reads only
    files that are new or changed since the last load with this cache. `changed` holds, after each
    load, {path: (what it gave before or None, what it gives now or None)} for the files re-read or gone."""

    def __init__(self) -> None:
        self.root: Optional[Path] = None
        self.files: dict[str, tuple[tuple, FileLoad]] = {}
        self.changed: dict[str, tuple[Optional[FileLoad], Optional[FileLoad]]] = {}


def _stamp(path: str, flashinfer: bool) -> Optional[tuple]:
    try:
        st = os.stat(path)
    except OSError:
        return None  # unreadable: read it (and report why) every time
    return (st.st_mtime_ns, st.st_size, st.st_ino, flashinfer)


# Above this many bytes of trace files to read, a second process reads half of them (1,000 definitions
# x 10 solutions x 50 workloads is 300 MB); below it, a process start costs more than it saves.
PARALLEL_BYTES = 32 * 2**20


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _read_share(root: str, rels: list[str]) -> list[FileLoad]:
    """In a helper process: what each of these trace files gives."""
    loader = _Loader(Path(root))
    return [loader.read_one(rel, loader.load_traces) for rel in rels]


class _Loader:
    def __init__(self, root: Path, cache: Optional[LoadCache] = None):
        self.ds = Dataset(root=root)
        self.root = root
        # (top-level folder, dialect) -> (first record, note -> how many records); and the record count
        self.dialect_notes: dict[tuple[str, str], tuple[Source, dict[str, int]]] = {}
        self.dialect_records: dict[tuple[str, str], int] = {}
        self.flashinfer_seen = False  # a FlashInfer-Trace record read: solutions default to its DPS
        self.walk = self.out = FileLoad()  # what the walk itself finds; the file being read, while read
        self.cache = cache

    # -- reporting -------------------------------------------------------------------------
    def report(self, path: str, line: int, pointer: str, severity: str, message: str, hint: str = "") -> None:
        self.out.diagnostics.append(Diagnostic(path, line, pointer, severity, message, hint))

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
            first, counts, n = self.out.dialects.get(key, (source, {}, 0))
            for note in dict.fromkeys(norm.notes):
                counts[note] = counts.get(note, 0) + 1
            self.out.dialects[key] = (first, counts, n + 1)
            if norm.dialect == dialects.FLASHINFER_TRACE:
                self.out.flashinfer = self.flashinfer_seen = True
        problems = schema_diagnostics(kind, norm.data, source)
        self.out.diagnostics.extend(problems)
        return not problems

    def reject(self, kind: str, data: Any, key: str = "name") -> None:
        if isinstance(data, dict) and isinstance(data.get(key), str):
            self.out.rejected.append((kind, data[key]))

    def append(self, attr: str, record: Any) -> None:
        self.out.appended.setdefault(attr, []).append(record)

    def keyed(self, attr: str, name: str, record: Any, unique_kind: str = "") -> None:
        self.out.keyed.append((attr, name, record, unique_kind))

    def read_file(self, rel: str, load_one, given: Optional[FileLoad] = None, stamp: Optional[tuple] = None) -> None:
        """Read one file (or take what it gave from the cache when it has not changed, or `given`, what
        a helper process read of it, with the stamp the file had before the helper read it) and join it.
        The stamp is taken before reading: an edit while it is read is seen at the next load."""
        if given is None and self.cache is not None:
            stamp = _stamp(os.path.join(self.root, rel), self.flashinfer_seen)
        held = self.cache.files.get(rel) if self.cache is not None else None
        if given is None and stamp is not None and held is not None and held[0] == stamp:
            got = held[1]
        else:
            got = given if given is not None else self.read_one(rel, load_one)
            if self.cache is not None:
                if stamp is not None:
                    self.cache.files[rel] = (stamp, got)
                self.cache.changed[rel] = (held[1] if held is not None else None, got)
        self.join(got)

    def read_one(self, rel: str, load_one) -> FileLoad:
        self.out = got = FileLoad()
        try:
            load_one(rel)
        finally:
            self.out = self.walk
        return got

    def read_all(self, rels: list[str], load_one, kind: str) -> None:
        """Read and join `rels` in order. Many megabytes of traces are read in two processes: a helper
        reads the second half while this one reads the first (traces read alike whatever came before)."""
        stamps = {rel: _stamp(os.path.join(self.root, rel), self.flashinfer_seen) for rel in rels}
        todo = [rel for rel in rels if self.cache is None or rel not in self.cache.files
                or self.cache.files[rel][0] != stamps[rel]]
        sizes = [_size(os.path.join(self.root, rel)) for rel in todo]
        helped: dict[str, FileLoad] = {}
        if kind != "trace" or sum(sizes) < PARALLEL_BYTES or _cpus() < 2 or \
                "fork" not in multiprocessing.get_all_start_methods():
            for rel in rels:
                self.read_file(rel, load_one)
            return
        half, total = 0, 0
        while half < len(todo) and total < sum(sizes) / 2:
            total += sizes[half]
            half += 1
        second = todo[half:]
        in_second = set(second)
        with multiprocessing.get_context("fork").Pool(1) as pool:
            pending = pool.apply_async(_read_share, (str(self.root), second))
            for rel in rels:
                if rel in in_second and not helped:
                    helped = dict(zip(second, pending.get()))  # the first file of the second half: wait for it
                self.read_file(rel, load_one, helped.get(rel), stamps[rel])

    def join(self, got: FileLoad) -> None:
        ds = self.ds
        ds.load_diagnostics.extend(got.diagnostics)
        for attr, records in got.appended.items():
            getattr(ds, attr).extend(records)
        for attr, name, record, unique_kind in got.keyed:
            if unique_kind:
                self.add_unique(getattr(ds, attr), name, record, unique_kind)
            else:
                getattr(ds, attr)[name] = record
        for kind, name in got.rejected:
            ds.rejected[kind].add(name)
        for key, (first, counts, n) in got.dialects.items():
            held = self.dialect_notes.setdefault(key, (first, {}))[1]
            for note, count in counts.items():
                held[note] = held.get(note, 0) + count
            self.dialect_records[key] = self.dialect_records.get(key, 0) + n
        self.flashinfer_seen = self.flashinfer_seen or got.flashinfer

    def add_unique(self, index: dict, name: str, record: Any, kind: str) -> None:
        if name in index:
            first = index[name].source
            self.ds.load_diagnostics.append(Diagnostic(
                record.source.path, record.source.line_of("/name"), "/name", ERROR,
                f"duplicate {kind} name '{name}' (first defined in {first.path}:{first.line_of('/name')})",
                f"give each {kind} a unique name"))
            return
        index[name] = record

    def load_definition(self, rel: str) -> None:
        stem = Path(rel).stem
        for raw, source in self.json_document(rel):
            norm = dialects.normalise_definition(raw, stem)
            if norm.dialect and source.text is not None:
                source = Source(source.path, source.line)  # the text no longer matches the data
            if self.checked("definition", norm, source):
                self.keyed("definitions", norm.data["name"], Definition.from_data(norm.data, source), "definition")
            else:
                self.reject("definition", norm.data)

    def load_workloads(self, rel: str) -> None:
        for raw, source, _ in self.json_lines(rel):
            norm = dialects.normalise_workload(raw)
            if self.checked("workload", norm, source):
                self.append("workloads", Workload.from_data(norm.data, source))
            elif isinstance(norm.data, dict):
                self.reject("workload", norm.data.get("workload"), key="uuid")

    def load_solution(self, rel: str) -> None:
        for raw, source in self.json_document(rel):
            norm = dialects.normalise_solution(
                raw, flashinfer=self.flashinfer_seen or flashinfer_trace.foreign_pattern(rel) is not None)
            if norm.dialect:
                source = Source(source.path, source.line)
            if self.checked("solution", norm, source):
                self.keyed("solutions", norm.data["name"], Solution.from_data(norm.data, source), "solution")
            else:
                self.reject("solution", norm.data)

    def load_traces(self, rel: str) -> None:
        for raw, source, line in self.json_lines(rel):
            norm = dialects.normalise_trace(raw)
            if self.checked("trace", norm, source):
                self.append("traces", Trace.from_data(norm.data, source, None if norm.dialect else line))

    def load_model(self, rel: str) -> None:
        for raw, source in self.json_document(rel):
            if self.checked("model", dialects.Normalised(raw), source):
                stem = Path(rel).stem
                self.keyed("models", stem, CallingRecord.from_data(stem, raw, source))

    def load_hardware(self, rel: str) -> None:
        for raw, source in self.json_document(rel):
            if self.checked("hardware", dialects.Normalised(raw), source):
                self.keyed("hardware", raw["name"], HardwareSpec.from_data(raw, source), "hardware")
            else:
                self.reject("hardware", raw)

    def load_agent_trace(self, rel: str) -> None:
        where = LAYOUT["agent_traces"].fields(rel)
        for raw, source in self.json_document(rel):
            if self.checked("agent_trace", dialects.Normalised(raw), source):
                self.append("agent_traces", AgentTrace.from_data(where["author"], where["solution"], raw, source))

    def load_einsum(self, rel: str) -> None:
        text = self.read_text(rel)
        if text is not None:
            where = LAYOUT["einsums"].fields(rel)
            cascade = EinsumCascade(where["definition"], where["type"], text, Source(rel, 1, text))
            self.keyed("einsums", cascade.definition, cascade)

    # -- walking ---------------------------------------------------------------------------
    def run(self) -> Dataset:
        # Layout order: definitions first so that nothing depends on file-system order.
        seen = set()
        for folder in LAYOUT.folders.values():
            if folder.loaded:
                load_one = getattr(self, LOADERS[KIND_OF_FOLDER[folder.name].name])
                rels = self.files_in(folder)
                seen.update(rels)
                self.read_all(rels, load_one, KIND_OF_FOLDER[folder.name].name)
        if self.cache is not None:
            for rel in set(self.cache.files) - seen:  # deleted (or no longer read)
                self.cache.changed[rel] = (self.cache.files.pop(rel)[1], None)
        self.report_dialects()
        self.check_top_level()
        self.join(self.walk)  # what the walk itself found (stray files, unknown folders, dialects)
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
            folder_rel = Path(dirpath).relative_to(self.root).as_posix()  # once per folder: 16,000 files at scale
            depth = folder_rel.count("/") + 1
            for name in sorted(filenames):
                if name in IGNORED_NAMES or name.startswith("."):
                    continue
                rel = f"{folder_rel}/{name}"
                if not name.endswith(folder.suffix):
                    self.report(rel, 0, "", WARNING, f"unexpected file in {folder.name}/ (not {folder.suffix}); ignored",
                                f"files here are laid out as {folder.pattern}")
                elif depth != folder.depth:
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


def load(root: Path | str = Path("dataset"), cache: Optional[LoadCache] = None) -> Dataset:
    """Load the dataset at `root` into typed records; problems go to `Dataset.load_diagnostics`.
    With a `cache`, files unchanged since its last load are not read again (see LoadCache)."""
    # Loading makes millions of small, acyclic, long-lived containers; the cyclic collector
    # would walk them again and again as the heap grows, so cost would grow faster than the
    # data. Pause it while loading, then freeze the records out of its reach (refcounting
    # still frees them).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if cache is not None:
            if cache.root != Path(root).resolve():
                cache.root, cache.files = Path(root).resolve(), {}
            cache.changed = {}
        ds = _Loader(Path(root), cache).run()
        gc.freeze()
        return ds
    finally:
        if was_enabled:
            gc.enable()
