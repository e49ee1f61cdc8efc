"""serve's cache of files already read: a load with it reads only the files that are new or changed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from .reading import FileLoad


class LoadCache:
    """Files already read, by path, with the (mtime, size) they had: `load(root, cache)` reads only
    files that are new or changed since the last load with this cache. `changed` holds, after each
    load, {path: (what it gave before or None, what it gives now or None)} for the files re-read or gone."""

    def __init__(self) -> None:
        self.root: Optional[Path] = None
        self.files: dict[str, tuple[tuple, FileLoad]] = {}
        self.changed: dict[str, tuple[Optional[FileLoad], Optional[FileLoad]]] = {}


def stamp(path: str, flashinfer: bool) -> Optional[tuple]:
    """What says a file is unchanged; None for a file that cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None  # unreadable: read it (and report why) every time
    return (st.st_mtime_ns, st.st_size, st.st_ino, flashinfer)
