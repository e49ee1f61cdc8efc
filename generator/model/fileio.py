"""How the generator writes dataset files: one JSON style, and never a half-written file; and the one YAML
loader it reads them with."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Union

import yaml

# libyaml's safe loader where PyYAML is built with it (several times faster: cascades are read per workload,
# recipes on every workloads run), else the pure-Python one; both safe, same data.
SAFE_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Read once: os.umask can only be read by setting it, which would race with other threads.
_UMASK = os.umask(0)
os.umask(_UMASK)


def dump_document(value: Any) -> str:
    """A .json file's text: two-space indent, UTF-8 kept as is, one final newline."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def dump_line(value: Any) -> str:
    """One record of a .jsonl file, without its newline."""
    return json.dumps(value, ensure_ascii=False)


def write_atomic(path: Path, data: Union[str, bytes]) -> None:
    """Replace `path` by `data` (str is written as UTF-8, newlines as given) so that a reader or a
    crash sees the old file or the new one, never part of it: a temporary file in the same folder,
    flushed to disk, then renamed over the target. The file gets the mode a plain open() gives."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it private (0600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
