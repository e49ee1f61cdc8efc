"""Export stage: the dataset as a Hub-ready folder (Parquet + dataset card), or in the
FlashInfer-Trace layout that flashinfer-bench loads.

`export_dataset(dataset_root, out_dir)` loads and validates the dataset, refuses one with
errors, gathers every table and file in memory, writes them into a hidden sibling of
`out_dir` and swaps that into place: never a half-written export. The same dataset gives
byte-identical files (sorted rows, fixed Parquet settings, no timestamps; the Parquet footer
names the pyarrow version).

Hub layout:

    README.md                                  dataset card; `configs:` lists the data files
    kerneltrace_inputs.py                      makes a workload's inputs (generator/bench/shared/inputs.py, torch only)
    <config>/train-00000-of-00001.parquet      one folder per config (shards when large)
    blob/workloads/<type>/<definition>/*.safetensors   captured inputs, referenced by path
    .kerneltrace-export                        marks the folder as an export (safe to replace)
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Mapping

from ..bench.shared import inputs as inputs_module
from ..model.dataset import Dataset
from ..model.errors import KernelTraceError
from ..model.repo_id import DEFAULT_REPO_ID, check_repo_id
from ..validate import load_valid
from .card import INPUTS_MODULE, CardInput, render_card
from .flashinfer import build_flashinfer_trace
from .parquet import SHARD_BYTES, write_config
from .staging import MARKER, check_target, staged
from .tables import CONFIG_NAMES, CONFIGS, record_from_row

__all__ = ["export_dataset", "ExportSummary", "FORMATS", "DEFAULT_REPO_ID", "CONFIG_NAMES", "MARKER",
           "record_from_row"]

FORMATS = ("hub", "flashinfer-trace")


@dataclass(frozen=True)
class ExportSummary:
    format: str
    out_dir: Path
    counts: Mapping[str, int]  # rows per config (hub) or records per kind (flashinfer-trace); plus "blobs"
    files: tuple[str, ...]  # every file written, relative to out_dir, sorted
    skipped: tuple[str, ...] = ()  # records the format cannot express: "<source>:<line>: <why>"

    def format_human(self) -> str:
        counts = ", ".join(f"{n} {kind}" for kind, n in self.counts.items())
        text = f"exported {counts} to {self.out_dir} ({self.format}, {len(self.files)} files)"
        if self.skipped:
            text += f"\n{len(self.skipped)} record(s) left out (the {self.format} format cannot express them):"
            text += "".join(f"\n  {s}" for s in self.skipped)
        return text


def export_dataset(dataset_root: Path | str, out_dir: Path | str, fmt: str = "hub",
                   repo_id: str = DEFAULT_REPO_ID, *, shard_bytes: int = SHARD_BYTES) -> ExportSummary:
    """Export the dataset at `dataset_root` into `out_dir` as `fmt` ('hub' or 'flashinfer-trace').

    `repo_id` is the Hub repository the card's examples load from. `shard_bytes` bounds the
    estimated uncompressed size of one Parquet file. Raises KernelTraceError when the dataset
    has errors or `out_dir` cannot be replaced safely; then nothing is written.
    """
    if fmt not in FORMATS:
        raise KernelTraceError(f"unknown export format '{fmt}'; choose one of {', '.join(FORMATS)}")
    check_repo_id(repo_id)
    if shard_bytes < 1:
        raise KernelTraceError("shard size must be at least 1 byte")
    root, out = Path(dataset_root), Path(out_dir)
    ds = _load_valid(root)
    target = check_target(out, root)
    blobs = _blob_paths(ds)
    try:
        with staged(target, fmt) as tmp:
            if fmt == "hub":
                counts, skipped = _write_hub(ds, tmp, repo_id, shard_bytes, len(blobs)), ()
            else:
                counts, skipped = _write_flashinfer(ds, tmp)
            for rel in blobs:
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(root / rel, tmp / rel)
            files = tuple(sorted([p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file()] + [MARKER]))
    except OSError as e:  # disk full, permissions, a blob removed meanwhile: the old export stays as it was
        where = f" ({e.filename})" if e.filename else ""
        raise KernelTraceError(f"cannot write the export to {out}: {e.strerror or e}{where}") from e
    return ExportSummary(fmt, target, {**counts, "blobs": len(blobs)}, files, skipped)


def _load_valid(root: Path) -> Dataset:
    ds = load_valid(root, "exporting")
    if not ds.definitions:
        raise KernelTraceError(f"the dataset at {root} has no definitions; there is nothing to export")
    return ds


def _blob_paths(ds: Dataset) -> list[str]:
    """Safetensors files the workloads read, relative to the dataset root (validated to exist)."""
    paths = set()
    for w in ds.workloads:
        for spec in w.inputs.values():
            if spec.get("type") == "safetensors":
                rel = PurePosixPath(spec["path"])
                if rel.is_absolute() or ".." in rel.parts:
                    raise KernelTraceError(f"{w.source.path}:{w.source.line}: blob path {spec['path']} leaves the "
                                           f"dataset folder; run 'kerneltrace validate'")
                paths.add(rel.as_posix())
    return sorted(paths)


def _write_hub(ds: Dataset, tmp: Path, repo_id: str, shard_bytes: int, blob_count: int) -> dict[str, int]:
    tables = {cfg.name: cfg.table(ds) for cfg in CONFIGS}  # gather everything first, then write
    data_files = {name: write_config(name, table, sizes, tmp, shard_bytes) for name, (table, sizes) in tables.items()}
    counts = {name: table.num_rows for name, (table, _) in tables.items()}
    card = render_card(ds, CardInput(repo_id, counts, data_files, blob_count))
    (tmp / "README.md").write_text(card, encoding="utf-8", newline="\n")
    # The module that makes the workloads' inputs, beside the data it reads (the card shows it in use).
    shutil.copyfile(Path(inputs_module.__file__), tmp / INPUTS_MODULE)
    return counts


def _write_flashinfer(ds: Dataset, tmp: Path) -> tuple[dict[str, int], tuple[str, ...]]:
    result = build_flashinfer_trace(ds)
    for rel, text in sorted(result.files.items()):
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text, encoding="utf-8", newline="\n")
    return result.counts, tuple(result.skipped)
