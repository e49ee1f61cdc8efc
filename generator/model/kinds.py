"""The registry of record kinds: every list of kinds in the generator is read from KINDS.

A kind is its schema (schema/<name>.json), its record class (records.py), its layout folder
(layout.CANONICAL), its checks (validate: CHECKS[name]), its loader (load: @loads(name)) and
one entry here. The schema reference, the loader, the validator and the Hub export take their
lists of kinds from this table; tests/model/test_kinds.py checks that every kind has all its parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Optional

from .layout import CANONICAL, Folder
from .records import AgentTrace, CallingRecord, Definition, EinsumCascade, HardwareSpec, Solution, Trace, Workload


@dataclass(frozen=True)
class Kind:
    name: str  # schema file stem and the key of its loader and checks
    folder: str  # layout folder of its files, and the Dataset attribute that holds its records
    record: type
    config: Optional[str]  # name of its Hub export config, None if not exported

    @property
    def layout(self) -> Folder:
        return CANONICAL[self.folder]


# The order is the order of the schema reference page and of the export configs.
KINDS: tuple[Kind, ...] = (
    Kind("definition", "definitions", Definition, "definitions"),
    Kind("workload", "workloads", Workload, "workloads"),
    Kind("solution", "solutions", Solution, "solutions"),
    Kind("trace", "traces", Trace, "traces"),
    Kind("model", "models", CallingRecord, "models"),
    Kind("agent_trace", "agent_traces", AgentTrace, None),
    Kind("einsum", "einsums", EinsumCascade, "einsums"),
    Kind("hardware", "hardware", HardwareSpec, "hardware"),
)
KIND: Mapping[str, Kind] = MappingProxyType({k.name: k for k in KINDS})
KIND_OF_FOLDER: Mapping[str, Kind] = MappingProxyType({k.folder: k for k in KINDS})
