"""One Dataset from the files of a dataset folder: each file read (or taken from the cache, or from the
helper process) and joined in layout order, so that nothing depends on file-system or process order."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from ..model.dataset import Dataset
from ..model.diagnostics import ERROR, Diagnostic
from ..model.kinds import KIND_OF_FOLDER
from ..model.records import Source
from .cache import LoadCache, stamp
from .loaders import read_one
from .parallel import file_size, helper_pool, read_share, second_half, worth_a_helper
from .reading import FileLoad
from .walk import LAYOUT, check_top_level, files_in, report_dialects


class DatasetBuilder:
    def __init__(self, root: Path, cache: Optional[LoadCache] = None):
        self.ds = Dataset(root=root)
        self.root = root
        # (top-level folder, dialect) -> (first record, note -> how many records); and the record count
        self.dialect_notes: dict[tuple[str, str], tuple[Source, dict[str, int]]] = {}
        self.dialect_records: dict[tuple[str, str], int] = {}
        self.flashinfer_seen = False  # a FlashInfer-Trace record read: solutions default to its DPS
        self.walk = FileLoad()  # what the walk itself finds (stray files, unknown folders, dialects)
        self.cache = cache

    def run(self) -> Dataset:
        # Layout order: definitions first so that nothing depends on file-system order.
        seen = set()
        for folder in LAYOUT.folders.values():
            if folder.loaded:
                rels = files_in(self.root, folder, self.walk)
                seen.update(rels)
                self.read_all(rels, KIND_OF_FOLDER[folder.name].name)
        if self.cache is not None:
            for rel in set(self.cache.files) - seen:  # deleted (or no longer read)
                self.cache.changed[rel] = (self.cache.files.pop(rel)[1], None)
        report_dialects(self.root, self.dialect_notes, self.dialect_records, self.walk)
        check_top_level(self.root, self.walk)
        self.join(self.walk)
        return self.ds

    def read_file(self, rel: str, kind: str, given: Optional[FileLoad] = None,
                  stamped: Optional[tuple] = None) -> None:
        """Read one file (or take what it gave from the cache when it has not changed, or `given`, what
        a helper process read of it, with the stamp the file had before the helper read it) and join it.
        The stamp is taken before reading: an edit while it is read is seen at the next load."""
        if given is None and self.cache is not None:
            stamped = stamp(os.path.join(self.root, rel), self.flashinfer_seen)
        held = self.cache.files.get(rel) if self.cache is not None else None
        if given is None and stamped is not None and held is not None and held[0] == stamped:
            got = held[1]
        else:
            got = given if given is not None else read_one(self.root, rel, kind, self.flashinfer_seen)
            if self.cache is not None:
                if stamped is not None:
                    self.cache.files[rel] = (stamped, got)
                self.cache.changed[rel] = (held[1] if held is not None else None, got)
        self.join(got)

    def read_all(self, rels: list[str], kind: str) -> None:
        """Read and join `rels` in order. Many megabytes of traces are read in two processes: a helper
        reads the second half while this one reads the first (traces read alike whatever came before)."""
        stamps = {rel: stamp(os.path.join(self.root, rel), self.flashinfer_seen) for rel in rels}
        todo = [rel for rel in rels if self.cache is None or rel not in self.cache.files
                or self.cache.files[rel][0] != stamps[rel]]
        sizes = [file_size(os.path.join(self.root, rel)) for rel in todo]
        helped: dict[str, FileLoad] = {}
        if not worth_a_helper(kind, sizes):
            for rel in rels:
                self.read_file(rel, kind)
            return
        second = second_half(todo, sizes)
        in_second = set(second)
        with helper_pool() as pool:
            pending = pool.apply_async(read_share, (str(self.root), second))
            for rel in rels:
                if rel in in_second and not helped:
                    helped = dict(zip(second, pending.get()))  # the first file of the second half: wait for it
                self.read_file(rel, kind, helped.get(rel), stamps[rel])

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
