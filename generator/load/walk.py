"""Walking a dataset folder: which files of each layout folder are read (the canonical layout or one of
FlashInfer-Trace's, detected per file), and the warnings about the folder itself and the dialects read."""

from __future__ import annotations

import os
from pathlib import Path

from ..formats import flashinfer_trace
from ..model.diagnostics import ERROR, WARNING
from ..model.layout import CANONICAL, Folder
from ..model.records import Source
from .reading import FileLoad

# The folders read, in order, and where their files sit (model/layout.py owns the patterns).
LAYOUT = CANONICAL
# Files anywhere that are not data (editor and OS clutter, docs).
IGNORED_NAMES = {".DS_Store", "README.md", ".gitkeep", ".gitattributes"}


def files_in(root: Path, folder: Folder, walk: FileLoad) -> list[str]:
    """The files of `folder` to read, in order; what is out of place is reported to `walk`."""
    base = root / folder.name
    if not base.is_dir():
        return []
    found = []
    foreign_layouts: dict[str, list[str]] = {}  # FlashInfer-Trace pattern -> files read in it
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        folder_rel = Path(dirpath).relative_to(root).as_posix()  # once per folder: 16,000 files at scale
        depth = folder_rel.count("/") + 1
        for name in sorted(filenames):
            if name in IGNORED_NAMES or name.startswith("."):
                continue
            rel = f"{folder_rel}/{name}"
            if not name.endswith(folder.suffix):
                walk.report(rel, 0, "", WARNING, f"unexpected file in {folder.name}/ (not {folder.suffix}); ignored",
                            f"files here are laid out as {folder.pattern}")
            elif depth != folder.depth:
                foreign = flashinfer_trace.foreign_pattern(rel)
                if foreign is None:
                    walk.report(rel, 0, "", ERROR, f"file is at the wrong depth for {folder.name}/; not loaded",
                                f"move it to {folder.pattern}")
                else:
                    foreign_layouts.setdefault(foreign, []).append(rel)
                    found.append(rel)
            else:
                found.append(rel)
    for pattern, files in foreign_layouts.items():  # one warning per layout, not one per file
        walk.report(files[0], 0, "", WARNING,
                    f"{folder.name}/ is laid out as FlashInfer-Trace's {pattern} ({len(files)} file(s)); read "
                    f"in place", f"'kerneltrace import {root} --dataset NEW_DATASET' rewrites it as "
                    f"{folder.pattern}")
    return found


def check_top_level(root: Path, walk: FileLoad) -> None:
    if not root.is_dir():
        what = "dataset path is not a folder" if root.exists() else "dataset folder does not exist"
        walk.report(str(root), 0, "", ERROR, what,
                    "pass --dataset DIR pointing at a folder with definitions/, workloads/, ...")
        return
    for entry in sorted(os.listdir(root)):
        if entry in LAYOUT.folders or entry in IGNORED_NAMES or entry.startswith("."):
            continue
        walk.report(entry, 0, "", WARNING, f"unknown entry '{entry}' at the dataset root; ignored",
                    "known folders: " + ", ".join(LAYOUT.folders))


def report_dialects(root: Path, notes_of: dict[tuple[str, str], tuple[Source, dict[str, int]]],
                    records_of: dict[tuple[str, str], int], walk: FileLoad) -> None:
    """One warning per (top-level folder, dialect) read, at its first record."""
    for (folder, dialect), (first, notes) in notes_of.items():
        n = records_of[(folder, dialect)]
        what = "written in the" if n == 1 else f"this and {n - 1} more record(s) in {folder}/ are written in the"
        said = "; ".join(note + (f" ({count} records)" if count > 1 else "") for note, count in notes.items())
        walk.report(first.path, first.line, "", WARNING, f"{what} {dialect} dialect; read as canonical" +
                    (f" ({said})" if said else ""),
                    f"run 'kerneltrace import {first.path if n == 1 else root} --dataset NEW_DATASET' to "
                    f"rewrite {'it' if n == 1 else 'them'} in the canonical format")
