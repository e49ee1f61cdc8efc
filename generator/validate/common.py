"""Shared pieces of the checks: making diagnostics from records, and small predicates."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any, Optional

from ..model.diagnostics import ERROR, WARNING, Diagnostic


def diag(record: Any, pointer: str, severity: str, message: str, hint: str = "") -> Diagnostic:
    """A diagnostic located at `pointer` inside `record` (anything with a `.source`)."""
    src = record.source
    return Diagnostic(src.path, src.line_of(pointer), pointer, severity, message, hint)


def error(record: Any, pointer: str, message: str, hint: str = "") -> Diagnostic:
    return diag(record, pointer, ERROR, message, hint)


def warning(record: Any, pointer: str, message: str, hint: str = "") -> Diagnostic:
    return diag(record, pointer, WARNING, message, hint)


def orphan_error(ds: Any, record: Any, what: str) -> Optional[Diagnostic]:
    """The error for a record whose definition does not exist; None if it exists, or if it
    was rejected by its schema (that error is reported where the definition is)."""
    if ds.is_known("definition", record.definition):
        return None
    return error(record, "/definition", f"{what} of unknown definition '{record.definition}' (orphan)",
                 "add the definition, or fix the name")


def path_parts(record: Any) -> tuple[str, ...]:
    return PurePosixPath(record.source.path).parts


def bad_relative_path(path: str) -> str:
    """Why `path` is not a safe relative path inside a folder, or '' if it is."""
    p = PurePosixPath(path)
    if "\\" in path:
        return "uses '\\'; write paths with '/'"
    if p.is_absolute() or re.match(r"^[A-Za-z]:", path):
        return "is absolute; write it relative to its folder"
    if ".." in p.parts:
        return "contains '..'; it must stay inside its folder"
    if not p.parts or path.endswith("/"):
        return "is empty or names a folder"
    return ""
