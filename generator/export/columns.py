"""The machinery of the Hub tables: a config is a list of `Column`s that turn records into one Arrow table.

Each config is a list of `Column`s. A column either carries one field of the record (`path`,
the keys that lead to it) or is a convenience value computed from the record and the dataset
(`derive`), which the record itself does not hold. Flat fields get flat Arrow types; nested
objects whose keys differ from row to row (axes, inputs, outputs, workload inputs, the
evaluation) are Arrow JSON columns (`pa.json_()`), which `datasets` reads back as the exact
dicts. Optional fields are null when the record omits them, so `record_from_row` (tables.py)
rebuilds the record with exactly the keys it had (`$schema`, an editor hint, is not exported).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

import pyarrow as pa

from ..model.dataset import Dataset

JSON = pa.json_()
STRING_LIST = pa.list_(pa.string())
SOURCE_FILES = pa.list_(pa.struct([pa.field("path", pa.string()), pa.field("content", pa.string())]))
EDITOR_KEYS = ("$schema",)
_MISSING = object()


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str
    path: Optional[tuple[str, ...]] = None  # where the value sits in the record; None: derived
    optional: bool = False  # the record may omit the field (null in the column)
    derive: Optional[Callable[[Any, Dataset], Any]] = None  # (record, dataset) -> value
    drop_nulls: bool = False  # a struct column: nulls stand for keys the record omits

    def __post_init__(self) -> None:
        object.__setattr__(self, "_json", self.type == JSON)  # asked once per cell: keep it cheap

    @property
    def is_json(self) -> bool:
        return self._json

    @property
    def is_convenience(self) -> bool:
        return self.path is None

    def value(self, record: Any, ds: Dataset) -> Any:
        if self.derive is not None:
            return self.derive(record, ds)
        value = _get(record.data, self.path)
        if value is _MISSING:
            return None
        return dump_json(value) if self._json else _plain(value)

    def type_name(self) -> str:
        """The type as the card shows it."""
        if self.is_json:
            return "json"
        if pa.types.is_struct(self.type):
            return "struct<" + ", ".join(f"{f.name}: {f.type}" for f in self.type).replace("double", "float64") + ">"
        if pa.types.is_list(self.type) and pa.types.is_struct(self.type.value_type):
            fields = ", ".join(f"{f.name}: {f.type}" for f in self.type.value_type)
            return f"list<struct<{fields}>>"
        return str(self.type).replace("list<item: ", "list<").replace("double", "float64")


@dataclass(frozen=True)
class Config:
    name: str
    doc: str  # what one row is
    columns: tuple[Column, ...]
    records: Callable[[Dataset], Iterable[Any]]
    sort_key: Callable[[Any], tuple]
    constants: Mapping[str, Any]  # top-level fields every record of this kind carries with a fixed value

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.type, nullable=c.optional or c.is_convenience) for c in self.columns])

    def table(self, ds: Dataset) -> tuple[pa.Table, list[int]]:
        """One row per record, sorted (the sort key ends in the source location: a total order),
        and each row's estimated size in bytes (to cut shards and row groups by)."""
        records = sorted(self.records(ds), key=self.sort_key)
        sizes = [0] * len(records)
        arrays = []
        for c in self.columns:
            values = [c.value(r, ds) for r in records]
            for i, v in enumerate(values):
                sizes[i] += _size(v)
            arrays.append(pa.array(values, type=c.type))
        return pa.Table.from_arrays(arrays, schema=self.schema), sizes


# -- helpers -------------------------------------------------------------------------------

def dump_json(value: Any) -> str:
    """Compact JSON that keeps key order (input order is the kernel's interface)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_jsonable)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _size(value: Any) -> int:
    """Estimated bytes of one cell (characters stand for bytes: an estimate, but a stable one)."""
    if type(value) is str:
        return len(value)
    if type(value) is list:
        return 4 + sum(_size(v) for v in value)
    if type(value) is dict:
        return sum(_size(v) for v in value.values())
    return 8


def _plain(value: Any) -> Any:
    if type(value) in (str, int, float, bool, list) or value is None:
        return value
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _get(data: Mapping, path: tuple[str, ...]) -> Any:
    for key in path:
        if not (type(data) is dict or isinstance(data, Mapping)) or key not in data:
            return _MISSING
        data = data[key]
    return data


def _source_path(r: Any, ds: Dataset) -> str:  # noqa: ARG001 - a column's derive signature
    return r.source.path


def _source_line(r: Any, ds: Dataset) -> int:  # noqa: ARG001 - a column's derive signature
    return r.source.line


SOURCE_PATH = Column("source_path", pa.string(), "File the record comes from, relative to the dataset root "
                     "(`dataset/` in the KernelTrace repository).", derive=_source_path)
SOURCE_LINE = Column("source_line", pa.int64(), "Line of that file (JSON Lines files hold one record per line).",
                     derive=_source_line)
