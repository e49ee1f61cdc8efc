"""Where every file of a dataset lives: the one owner of dataset paths.

A `Layout` is a table of top-level folders, each with the pattern of the files below it
(`traces/<author>/<type>/<definition>.jsonl`). Readers and writers ask it for a path
(`CANONICAL.trace_file(author, type_, definition)`) or for the fields a path names
(`CANONICAL.fields("traces/alice/gemm/g.jsonl")["author"]`) instead of spelling paths out.
Paths are POSIX strings relative to the dataset root; join them to a root with `root / rel`.

Other layouts (flashinfer-bench writes traces/<op_type>/<definition>.jsonl) are other `Layout`
values built from their own folder table; `CANONICAL` is the one KernelTrace writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import Mapping, Optional

_FIELD = re.compile(r"<([a-z_]+)>")


@dataclass(frozen=True)
class Folder:
    """One top-level folder: the pattern of its files and whether the loader reads them."""

    name: str
    pattern: str  # e.g. "traces/<author>/<type>/<definition>.jsonl"
    loaded: bool = True  # blob/ is referenced by workloads, never walked as records

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.pattern).suffix

    @property
    def depth(self) -> int:
        """How many folders a file sits below the top-level folder (a file directly in it: 1)."""
        return self.pattern.count("/")

    @property
    def glob(self) -> str:
        """A glob that matches every file of the pattern, relative to the dataset root."""
        return _FIELD.sub("*", self.pattern)

    def path(self, **fields: str) -> str:
        """The pattern with its <fields> filled in."""
        return _FIELD.sub(lambda m: fields[m.group(1)], self.pattern)

    def fields(self, rel: str) -> Optional[dict[str, str]]:
        """The values of the pattern's <fields> in `rel`, or None if `rel` does not fit the pattern."""
        m = re.fullmatch(_FIELD.sub(r"(?P<\1>[^/]+)", re.escape(self.pattern)), rel)
        return m.groupdict() if m else None


class Layout:
    """A dataset's folders in the order they are read (definitions first: the rest refer to them)."""

    def __init__(self, *folders: Folder):
        self.folders: Mapping[str, Folder] = MappingProxyType({f.name: f for f in folders})

    def __getitem__(self, folder: str) -> Folder:
        return self.folders[folder]

    def fields(self, rel: str) -> Optional[dict[str, str]]:
        """What a dataset-relative path names (author, type, definition, ...), by its top-level folder."""
        folder = self.folders.get(PurePosixPath(rel).parts[0] if rel else "")
        return folder.fields(rel) if folder else None

    # -- the paths, one method per kind of file --------------------------------------------------
    def definition_file(self, type_: str, name: str) -> str:
        return self["definitions"].path(type=type_, definition=name)

    def workload_file(self, type_: str, definition: str) -> str:
        return self["workloads"].path(type=type_, definition=definition)

    def solution_file(self, author: str, type_: str, definition: str, name: str) -> str:
        return self["solutions"].path(author=author, type=type_, definition=definition, solution=name)

    def trace_file(self, author: str, type_: str, definition: str) -> str:
        return self["traces"].path(author=author, type=type_, definition=definition)

    def blob_file(self, type_: str, definition: str, uuid: str) -> str:
        return self["blob"].path(type=type_, definition=definition, uuid=uuid)

    def einsum_file(self, type_: str, definition: str) -> str:
        return self["einsums"].path(type=type_, definition=definition)

    def model_file(self, name: str) -> str:
        return self["models"].path(model=name)

    def recipe_file(self, model: str) -> str:
        return self["recipes"].path(model=model)

    def hardware_file(self, name: str) -> str:
        return self["hardware"].path(hardware=name)

    def agent_trace_file(self, author: str, solution: str) -> str:
        return self["agent_traces"].path(author=author, solution=solution)

    def solution_author(self, rel: str) -> str:
        """The author folder of a solution file (who the bench and the site take its author to be, whatever its
        `author` field claims); '' where the path does not name one (a FlashInfer-Trace layout read in place)."""
        where = self["solutions"].fields(rel)
        return where["author"] if where else ""

    def probe_file(self, name: str) -> str:
        return self["contenders"].path(probe=name)

    def trace_author(self, rel: str) -> str:
        """The author folder of a trace file; '' where the path does not name one."""
        where = self["traces"].fields(rel)
        return where["author"] if where else ""


# KernelTrace's own layout (DESIGN.md, dataset/). The order is the loader's reading order.
CANONICAL = Layout(
    Folder("definitions", "definitions/<type>/<definition>.json"),
    Folder("workloads", "workloads/<type>/<definition>.jsonl"),
    Folder("solutions", "solutions/<author>/<type>/<definition>/<solution>.json"),
    Folder("traces", "traces/<author>/<type>/<definition>.jsonl"),
    Folder("models", "models/<model>.json"),
    Folder("hardware", "hardware/<hardware>.json"),
    Folder("agent_traces", "agent_traces/<author>/<solution>.json"),
    Folder("einsums", "einsums/<type>/<definition>.yaml"),
    Folder("blob", "blob/workloads/<type>/<definition>/<uuid>.safetensors", loaded=False),
    # A model's workload recipe, named as its calling record; read by workloadgen, not by the loader.
    Folder("recipes", "recipes/<model>.yaml", loaded=False),
    # What `kerneltrace contenders --probe` found about each reference (does it compile, and if not why), read by
    # the contenders writer and its --check; not a record kind, so the loader does not read it.
    Folder("contenders", "contenders/<probe>.json", loaded=False),
    # Sibling definitions as a template and a table of constants, rendered by `kerneltrace definitions` into
    # definitions/, einsums/ and the baselines; not a record kind, so the loader does not read it.
    Folder("families", "families/<family>.json", loaded=False),
)
