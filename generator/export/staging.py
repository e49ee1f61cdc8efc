"""Where an export is written: built in a hidden sibling folder, then swapped into place.

The output folder is either the previous export, whole, or the new one, whole; a failure
while writing leaves it untouched. A folder is only replaced when it is empty or carries the
marker file an earlier export left (so a mistyped --out never deletes someone's files).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..model.errors import KernelTraceError

MARKER = ".kerneltrace-export"


def check_target(out_dir: Path, dataset_root: Path) -> Path:
    """The resolved folder to write; raises if writing there could destroy something."""
    out = out_dir.expanduser().resolve()
    root = dataset_root.expanduser().resolve()
    if out == root or root in out.parents or out in root.parents:
        raise KernelTraceError(f"--out {out_dir} overlaps the dataset folder {dataset_root}; "
                               f"export to a folder outside it, e.g. --out export/")
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise KernelTraceError(f"--out {out_dir} exists and is not a folder; remove it or pick another path")
        if any(out.iterdir()) and not (out / MARKER).is_file():
            raise KernelTraceError(f"--out {out_dir} is not empty and is not an earlier export (it has no {MARKER} "
                                   f"file); pick an empty or new folder, or remove it first")
    return out


@contextmanager
def staged(out: Path, fmt: str) -> Iterator[Path]:
    """A fresh folder next to `out` to write into; on a clean exit it replaces `out`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        yield tmp
        (tmp / MARKER).write_text(json.dumps({"generator": "kerneltrace", "format": fmt}) + "\n", encoding="utf-8")
        _make_readable(tmp)
        _swap(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _make_readable(folder: Path) -> None:
    # mkdtemp makes the folder private (0700); the export is meant to be shared like any folder.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(folder, 0o777 & ~umask)


def _swap(new: Path, out: Path) -> None:
    if not (out.exists() or out.is_symlink()):
        os.rename(new, out)
        return
    old = new.with_name(new.name[: -len(".partial")] + ".old")
    os.rename(out, old)
    try:
        os.rename(new, out)
    except BaseException:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)
