"""The loaded dataset: typed records indexed by name, plus what loading found wrong."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Optional

from .diagnostics import Diagnostic
from .kinds import KIND
from .records import AgentTrace, CallingRecord, Definition, EinsumCascade, HardwareSpec, Solution, Trace, Workload


@dataclass
class Dataset:
    # One attribute per record kind, named after its folder (kinds.KINDS).
    root: Path
    definitions: dict[str, Definition] = field(default_factory=dict)
    workloads: list[Workload] = field(default_factory=list)
    solutions: dict[str, Solution] = field(default_factory=dict)
    traces: list[Trace] = field(default_factory=list)
    models: dict[str, CallingRecord] = field(default_factory=dict)
    agent_traces: list[AgentTrace] = field(default_factory=list)
    einsums: dict[str, EinsumCascade] = field(default_factory=dict)
    hardware: dict[str, HardwareSpec] = field(default_factory=dict)
    # Problems found while reading (syntax, schema, duplicates); validate() adds the rest.
    load_diagnostics: list[Diagnostic] = field(default_factory=list)
    # Names of records that were present but rejected by their schema, per kind, so that
    # references to them are not also reported as references to something missing.
    rejected: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    @cached_property
    def workloads_by_definition(self) -> dict[str, list[Workload]]:
        out: dict[str, list[Workload]] = defaultdict(list)
        for w in self.workloads:
            out[w.definition].append(w)
        return dict(out)

    @cached_property
    def solutions_by_definition(self) -> dict[str, list[Solution]]:
        out: dict[str, list[Solution]] = defaultdict(list)
        for s in self.solutions.values():
            out[s.definition].append(s)
        return dict(out)

    @cached_property
    def traces_by_definition(self) -> dict[str, list[Trace]]:
        out: dict[str, list[Trace]] = defaultdict(list)
        for t in self.traces:
            out[t.definition].append(t)
        return dict(out)

    def hardware_spec(self, name: str) -> Optional[HardwareSpec]:
        """The hardware spec `name` names, by its name or one of its aliases (the first spec by name
        that lists it); None if none does. Traces file their results under the spec's name."""
        if name in self.hardware:
            return self.hardware[name]
        for _, spec in sorted(self.hardware.items()):
            if name in spec.aliases:
                return spec
        return None

    @cached_property
    def callers(self) -> dict[str, tuple[str, ...]]:
        """Definition name -> the calling records (by name, sorted) whose kernels call it."""
        out: dict[str, set[str]] = defaultdict(set)
        for name, m in self.models.items():
            for k in m.kernels:
                out[k.id].add(name)
        return {d: tuple(sorted(names)) for d, names in out.items()}

    @cached_property
    def misnamed_definitions(self) -> dict[str, Definition]:
        """File stem -> the definition in that file, where its `name` is another: the records beside it name it
        by the file's name, and its name error is the one thing to report (validate's check_location)."""
        out = {}
        for d in self.definitions.values():
            stem = d.source.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            if stem != d.name and stem not in self.definitions:
                out[stem] = d
        return out

    def is_known(self, kind: str, name: str) -> bool:
        """True if a record of this kind and name exists, valid or rejected by its schema (or, for a definition,
        in a file of that name whose `name` says another)."""
        return (name in getattr(self, KIND[kind].folder) or name in self.rejected[kind]
                or (kind == "definition" and name in self.misnamed_definitions))
