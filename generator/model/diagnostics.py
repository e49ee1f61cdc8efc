"""Diagnostics: problems found in the dataset, as data (never exceptions).

A diagnostic names the file, the line, the JSON pointer of the field, what is wrong and how
to fix it. Validation collects all of them, sorts them and prints them once.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Iterable

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, order=True)
class Diagnostic:
    file: str  # relative to the dataset root, '/'-separated
    line: int  # 1-based; 0 when the problem is about the file as a whole
    pointer: str  # JSON pointer inside the record, '' for the whole record
    severity: str
    message: str
    hint: str = ""
    schema_path: str = ""

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def format_human(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = f" {pointer_to_path(self.pointer)}" if self.pointer else ""
        text = f"{where}:{field} {self.severity}: {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    def format_github(self, prefix: str = "") -> str:
        # Workflow command syntax: properties are escaped differently from the message. `prefix` is the
        # dataset folder relative to the repository root, so annotations land on the pull request's lines.
        level = "error" if self.is_error else "warning"
        props = f"file={_gh_escape_prop(prefix + self.file)}"
        if self.line:
            props += f",line={self.line}"
        title = pointer_to_path(self.pointer) if self.pointer else "kerneltrace"
        props += f",title={_gh_escape_prop(title)}"
        body = self.message + (f" Hint: {self.hint}" if self.hint else "")
        return f"::{level} {props}::{_gh_escape_data(body)}"


def pointer_to_path(pointer: str) -> str:
    """'/axes/M/type' -> '$.axes.M.type' (the form people read in messages)."""
    if not pointer:
        return "$"
    out = "$"
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


def make_pointer(*parts: object) -> str:
    """JSON pointer from path parts: make_pointer('axes', 'M') -> '/axes/M'."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _gh_escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_escape_prop(s: str) -> str:
    return _gh_escape_data(s).replace(":", "%3A").replace(",", "%2C")


def sort_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    return sorted(set(diags), key=lambda d: (d.file, d.line, d.pointer, d.severity, d.message))


def count_errors(diags: Iterable[Diagnostic]) -> int:
    return sum(1 for d in diags if d.is_error)


def format_report(diags: list[Diagnostic], fmt: str = "human", github_prefix: str = "") -> str:
    """Render diagnostics as 'human', 'json' or 'github' text (`github_prefix`: see format_github)."""
    if fmt == "json":
        return json.dumps([asdict(d) for d in diags], indent=2)
    if fmt == "github":
        return _printable("\n".join(d.format_github(github_prefix) for d in diags))
    lines = [d.format_human() for d in diags]
    errors = count_errors(diags)
    lines.append(f"{errors} error(s), {len(diags) - errors} warning(s)")
    return _printable("\n".join(lines))


def _printable(text: str) -> str:
    # Lone surrogates (from JSON escapes like "\ud800", or file names that are not UTF-8)
    # cannot be written to a UTF-8 stream; show them as escapes instead of failing.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
