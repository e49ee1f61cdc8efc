"""One loader per record kind, registered under the kind's name in the registry (model/kinds.py): each
reads one file of its kind with a FileReader. tests/model/test_kinds.py checks that every kind has one."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..formats import dialects, flashinfer_trace
from ..model.kinds import KIND
from ..model.records import (
    AgentTrace,
    CallingRecord,
    Definition,
    EinsumCascade,
    HardwareSpec,
    Solution,
    Source,
    Trace,
    Workload,
)
from .reading import FileLoad, FileReader
from .walk import LAYOUT

Loader = Callable[[FileReader, str], None]
# Record kind (model.kinds.KIND) -> the function that reads one of its files.
LOADERS: dict[str, Loader] = {}


def loads(kind: str) -> Callable[[Loader], Loader]:
    """Register the decorated function as the loader of `kind`, a name of the kind registry."""
    if kind not in KIND:
        raise ValueError(f"no record kind {kind!r} in model/kinds.py")

    def register(fn: Loader) -> Loader:
        LOADERS[kind] = fn
        return fn
    return register


def read_one(root: Path, rel: str, kind: str, flashinfer_seen: bool = False) -> FileLoad:
    """What the file `rel` (of `kind`) of the dataset at `root` gives."""
    reader = FileReader(root, flashinfer_seen)
    LOADERS[kind](reader, rel)
    return reader.out


@loads("definition")
def load_definition(r: FileReader, rel: str) -> None:
    stem = Path(rel).stem
    for raw, source in r.json_document(rel):
        norm = dialects.normalise_definition(raw, stem)
        if norm.dialect and source.text is not None:
            source = Source(source.path, source.line)  # the text no longer matches the data
        if r.checked("definition", norm, source):
            r.keyed("definitions", norm.data["name"], Definition.from_data(norm.data, source), "definition")
        else:
            r.reject("definition", norm.data)


@loads("workload")
def load_workloads(r: FileReader, rel: str) -> None:
    for raw, source, _ in r.json_lines(rel):
        norm = dialects.normalise_workload(raw)
        if r.checked("workload", norm, source):
            r.append("workloads", Workload.from_data(norm.data, source))
        elif isinstance(norm.data, dict):
            r.reject("workload", norm.data.get("workload"), key="uuid")


@loads("solution")
def load_solution(r: FileReader, rel: str) -> None:
    for raw, source in r.json_document(rel):
        norm = dialects.normalise_solution(
            raw, flashinfer=r.flashinfer_seen or flashinfer_trace.foreign_pattern(rel) is not None)
        if norm.dialect:
            source = Source(source.path, source.line)
        if r.checked("solution", norm, source):
            r.keyed("solutions", norm.data["name"], Solution.from_data(norm.data, source), "solution")
        else:
            r.reject("solution", norm.data)


@loads("trace")
def load_traces(r: FileReader, rel: str) -> None:
    for raw, source, line in r.json_lines(rel):
        norm = dialects.normalise_trace(raw)
        if r.checked("trace", norm, source):
            r.append("traces", Trace.from_data(norm.data, source, None if norm.dialect else line))


@loads("model")
def load_model(r: FileReader, rel: str) -> None:
    for raw, source in r.json_document(rel):
        if r.checked("model", dialects.Normalised(raw), source):
            stem = Path(rel).stem
            r.keyed("models", stem, CallingRecord.from_data(stem, raw, source))


@loads("hardware")
def load_hardware(r: FileReader, rel: str) -> None:
    for raw, source in r.json_document(rel):
        if r.checked("hardware", dialects.Normalised(raw), source):
            r.keyed("hardware", raw["name"], HardwareSpec.from_data(raw, source), "hardware")
        else:
            r.reject("hardware", raw)


@loads("agent_trace")
def load_agent_trace(r: FileReader, rel: str) -> None:
    where = LAYOUT["agent_traces"].fields(rel)
    for raw, source in r.json_document(rel):
        if r.checked("agent_trace", dialects.Normalised(raw), source):
            r.append("agent_traces", AgentTrace.from_data(where["author"], where["solution"], raw, source))


@loads("einsum")
def load_einsum(r: FileReader, rel: str) -> None:
    text = r.read_text(rel)
    if text is not None:
        where = LAYOUT["einsums"].fields(rel)
        cascade = EinsumCascade(where["definition"], where["type"], text, Source(rel, 1, text))
        r.keyed("einsums", cascade.definition, cascade)
