"""Writing a config's table as Parquet shards with fixed settings (same rows, same bytes).

Shards and row groups are cut by the rows' estimated size, never by time or memory, so the
split only depends on the data. Settings are spelled out instead of left to pyarrow's
defaults, which may change between versions; files carry no timestamps (the footer names the
pyarrow version, so byte-identical output assumes the same pyarrow).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

SHARD_BYTES = 256 * 1024 * 1024  # estimated uncompressed bytes per file
ROW_GROUP_BYTES = 32 * 1024 * 1024  # the Hub's viewer and `datasets` read one row group at a time
WRITER_SETTINGS: Mapping[str, Any] = {
    "version": "2.6",
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "data_page_version": "1.0",
    "data_page_size": 1024 * 1024,
    "store_schema": True,  # keeps the Arrow JSON extension type for `datasets`
    "write_page_index": False,
    "use_compliant_nested_type": True,
}


def shard_name(config_name: str, index: int, count: int) -> str:
    """Path of one shard relative to the export root: `<config>/train-00000-of-00001.parquet`."""
    return f"{config_name}/train-{index:05d}-of-{count:05d}.parquet"


def write_config(name: str, table: pa.Table, sizes: Sequence[int], root: Path,
                 shard_bytes: int = SHARD_BYTES, row_group_bytes: int = ROW_GROUP_BYTES) -> list[str]:
    """Write the table (rows already sorted) under `root/<name>/`; returns the shard paths, relative.
    `sizes` holds each row's estimated size. A table without rows writes nothing."""
    shards = list(_runs(sizes, 0, len(sizes), shard_bytes))
    paths = []
    for index, (start, stop) in enumerate(shards):
        rel = shard_name(name, index, len(shards))
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(str(target), table.schema, **WRITER_SETTINGS) as writer:
            for g_start, g_stop in _runs(sizes, start, stop, row_group_bytes):
                writer.write_table(table.slice(g_start, g_stop - g_start), row_group_size=g_stop - g_start)
        paths.append(rel)
    return paths


def _runs(sizes: Sequence[int], start: int, stop: int, limit: int) -> Iterator[tuple[int, int]]:
    """Consecutive [begin, end) runs of rows of at most `limit` estimated bytes (at least one row each)."""
    begin, total = start, 0
    for i in range(start, stop):
        if i > begin and total + sizes[i] > limit:
            yield begin, i
            begin, total = i, 0
        total += sizes[i]
    if begin < stop:
        yield begin, stop
