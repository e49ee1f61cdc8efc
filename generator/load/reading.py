"""Reading one file: its text, its JSON values with their sources, the schema check, and what becomes of
each record, gathered into a FileLoad (nothing joins the Dataset here, and nothing raises on bad data)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import orjson

from ..formats import dialects
from ..model.diagnostics import ERROR, Diagnostic
from ..model.records import Source
from ..model.schema_check import schema_diagnostics


class _NotJSON(ValueError):
    """NaN, Infinity or -Infinity: Python's json reads them, JSON (and every other reader) does not."""


def _reject_constant(name: str) -> Any:
    raise _NotJSON(name)


# One decoder for every value (json.loads with a keyword argument builds a new one per call: a tenth of loading).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)

# orjson reads a value about twice as fast as json and gives the same value wherever it reads one, with two
# exceptions: an integer past 64 bits comes back as a float, and it reads values nested past json's recursion limit.
# So it reads text with no run of 19 digits and fewer than NESTED_FEW brackets; json reads the rest, and whatever
# orjson refuses (json says precisely what is wrong, or reads what orjson will not: 1e400, a lone surrogate).
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19
NESTED_FEW = 200  # brackets: far from json's recursion limit (about 1,000 deep)
# Deeper than this is refused whatever reads it: json's own limit moves with the process's recursion limit (inductor
# raises it to 2,000), and whether a dataset loads must not depend on what ran before in the process.
MAX_DEPTH = 500
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _nesting(text: str) -> int:
    """How deep `text`'s brackets nest, outside string literals (read only for text with NESTED_FEW or more)."""
    depth = deepest = 0
    for ch in _STRING.sub("", text):
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _orjson_reads_alike(text: str) -> bool:
    """Whether orjson reads `text` as json would (no run of 19 digits: no integer past 64 bits)."""
    return _LONG_NUMBER not in text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZERO)


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

    def report(self, path: str, line: int, pointer: str, severity: str, message: str, hint: str = "") -> None:
        self.diagnostics.append(Diagnostic(path, line, pointer, severity, message, hint))

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


class FileReader:
    """Reads one file of the dataset at `root` into `out`; a kind's loader (loaders.py) drives it."""

    def __init__(self, root: Path, flashinfer_seen: bool = False):
        self.root = root
        self.flashinfer_seen = flashinfer_seen  # a FlashInfer-Trace record read: solutions default to its DPS
        self.out = FileLoad()

    def report(self, path: str, line: int, pointer: str, severity: str, message: str, hint: str = "") -> None:
        self.out.report(path, line, pointer, severity, message, hint)

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

    def parse(self, rel: str, text: str, line: int = 1, fast: bool = False) -> tuple[bool, Any]:
        """`text`'s JSON value (True, value), or (False, None) with the error reported. `fast`: orjson may read it
        (_orjson_reads_alike)."""
        few = text.count("[") + text.count("{") < NESTED_FEW
        if fast and few:
            try:
                return True, orjson.loads(text)
            except orjson.JSONDecodeError:
                pass  # json's own message below (or its value)
        if not few and _nesting(text) > MAX_DEPTH:
            self.report(rel, line, "", ERROR, "invalid JSON: nested too deeply", "flatten the structure")
            return False, None
        try:
            if text.startswith("\ufeff"):  # json.loads says what is wrong with a byte-order mark
                return True, json.loads(text, parse_constant=_reject_constant)
            return True, _DECODER.decode(text)
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
        ok, data = self.parse(rel, text, fast=_orjson_reads_alike(text))
        if ok:
            yield data, Source(rel, 1, text)

    def json_lines(self, rel: str) -> Iterator[tuple[Any, Source, str]]:
        """Each non-blank line of a .jsonl file: the parsed value, its source, its text."""
        text = self.read_text(rel)
        if text is None:
            return
        fast = _orjson_reads_alike(text)  # once for the file: its lines are read alike when it is
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            ok, data = self.parse(rel, line, number, fast)
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
