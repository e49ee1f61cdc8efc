"""Typed, immutable records of the dataset, each remembering where it came from.

Records are built by `load` from data that already passed its JSON Schema, so the
constructors can index fields without defensive checks. `data` keeps the normalised JSON
object for export and for locating fields in diagnostics.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Mapping, Optional

from .evaluation import Evaluation
from .frozen import quick_init
from .jsonpos import line_of_pointer
from .status import DefinitionStatus, TraceStatus


def _frozen(mapping: Mapping) -> Mapping:
    return MappingProxyType(dict(mapping))


@quick_init  # made by the hundred thousand
@dataclass(frozen=True)
class Source:
    """Where a record lives: path relative to the dataset root, 1-based line.

    `text` is kept for whole-file JSON records (small) so a field's line can be found later;
    one-line JSONL records need no text: every field is on their line.
    """

    path: str
    line: int = 1
    text: Optional[str] = field(default=None, repr=False, compare=False)

    def line_of(self, pointer: str) -> int:
        if self.text is None or not pointer:
            return self.line
        return line_of_pointer(self.text, pointer, self.line)


@dataclass(frozen=True)
class Axis:
    name: str
    kind: str  # "const" | "var"
    value: Optional[int] = None  # const axes only
    parent: Optional[str] = None  # var axes only
    description: str = ""

    @property
    def is_const(self) -> bool:
        return self.kind == "const"


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[str, ...]
    dtype: str
    description: str = ""

    @property
    def is_scalar(self) -> bool:
        return not self.shape


def _tensors(objs: Mapping[str, Any]) -> Mapping[str, TensorSpec]:
    return _frozen({n: TensorSpec(n, tuple(t["shape"]), t["dtype"], t.get("description", "")) for n, t in objs.items()})


@dataclass(frozen=True)
class Definition:
    name: str
    type: str
    tags: tuple[str, ...]
    description: str
    axes: Mapping[str, Axis]
    inputs: Mapping[str, TensorSpec]
    outputs: Mapping[str, TensorSpec]
    reference: str
    constraints: tuple[str, ...]
    source: Source
    data: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_data(cls, data: dict, source: Source) -> "Definition":
        axes = {
            n: Axis(n, a["type"], a.get("value"), a.get("parent"), a.get("description", ""))
            for n, a in data["axes"].items()
        }
        return cls(
            name=data["name"], type=data["type"], tags=tuple(data.get("tags", ())),
            description=data.get("description", ""), axes=_frozen(axes),
            inputs=_tensors(data["inputs"]), outputs=_tensors(data["outputs"]),
            reference=data["reference"], constraints=tuple(data.get("constraints", ())),
            source=source, data=data,
        )

    @property
    def const_axes(self) -> dict[str, int]:
        return {n: a.value for n, a in self.axes.items() if a.is_const}

    @property
    def var_axes(self) -> tuple[str, ...]:
        return tuple(n for n, a in self.axes.items() if not a.is_const)

    def tag_values(self, namespace: str) -> tuple[str, ...]:
        """Values of the tags in one namespace: tag_values('model') -> ('llama-3.1-8b', ...)."""
        prefix = namespace + ":"
        return tuple(t[len(prefix):] for t in self.tags if t.startswith(prefix))

    @property
    def models(self) -> tuple[str, ...]:
        return self.tag_values("model")

    @property
    def stages(self) -> tuple[str, ...]:
        return self.tag_values("stage")

    @property
    def status(self) -> DefinitionStatus:
        """draft or verified: verified only when tagged status:verified (model/status.py)."""
        return DefinitionStatus.of(self.tags)

    @property
    def is_draft(self) -> bool:
        return self.status is DefinitionStatus.DRAFT


@quick_init  # made by the hundred thousand
@dataclass(frozen=True)
class Workload:
    definition: str
    uuid: str
    axes: Mapping[str, int]
    inputs: Mapping[str, Mapping[str, Any]]
    seed: Optional[int]
    source: Source
    data: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_data(cls, data: dict, source: Source) -> "Workload":
        w = data["workload"]
        return cls(data["definition"], w["uuid"], _frozen(w["axes"]), _frozen(w["inputs"]),
                   w.get("seed"), source, data)

    @property
    def stage(self) -> Optional[str]:
        """"decode" or "prefill": the model step the workload stands for, as its recipe states it."""
        return self.data["workload"].get("stage")

    @property
    def num_tokens(self) -> Optional[int]:
        """New tokens in that step (decode: one per sequence), as its recipe states it."""
        return self.data["workload"].get("num_tokens")


@dataclass(frozen=True)
class Solution:
    name: str
    definition: str
    author: str
    description: str
    language: str
    target_hardware: tuple[str, ...]
    entry_point: str  # "file::function"
    destination_passing_style: bool
    binding: Optional[str]
    dependencies: tuple[str, ...]
    sources: Mapping[str, str]  # path -> content, in file order
    source: Source
    data: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_data(cls, data: dict, source: Source) -> "Solution":
        spec = data["spec"]
        return cls(
            name=data["name"], definition=data["definition"], author=data["author"],
            description=data.get("description", ""), language=spec["language"],
            target_hardware=tuple(spec["target_hardware"]), entry_point=spec["entry_point"],
            destination_passing_style=bool(spec.get("destination_passing_style", False)),
            binding=spec.get("binding"), dependencies=tuple(spec.get("dependencies", ())),
            sources=_frozen({s["path"]: s["content"] for s in data["sources"]}),
            source=source, data=data,
        )

    @property
    def entry_file(self) -> str:
        return self.entry_point.rsplit("::", 1)[0]

    @property
    def entry_function(self) -> str:
        return self.entry_point.rsplit("::", 1)[1]


@quick_init  # made by the hundred thousand
@dataclass(frozen=True)
class Trace:
    """One benchmark result. A dataset holds up to millions of these, so a trace keeps its typed evaluation
    (model/evaluation.py, parsed once when loaded) plus its JSON text; `data` parses that text on first use, for
    exporting the record whole (holding a million parsed objects costs several GB and makes loading superlinear)."""

    definition: str
    workload_uuid: str
    workload_axes: Mapping[str, Any]
    solution: str
    evaluation: Evaluation
    source: Source
    raw: str = field(repr=False, compare=False)  # the record as JSON text (normalised)

    @classmethod
    def from_data(cls, data: dict, source: Source, raw: Optional[str] = None) -> "Trace":
        """`raw` is the line the record was parsed from; None when `data` was normalised from
        another dialect (then the canonical object is serialised instead)."""
        return cls(
            definition=data["definition"], workload_uuid=data["workload"]["uuid"],
            workload_axes=data["workload"]["axes"], solution=data["solution"],
            evaluation=Evaluation.from_data(data["evaluation"]), source=source,
            raw=raw if raw is not None else json.dumps(data, ensure_ascii=False),
        )

    @cached_property
    def data(self) -> dict:
        return json.loads(self.raw)

    def __reduce__(self):
        # Load's helper process sends its traces back pickled (load/parallel.py): the fields and the source's place
        # (a JSONL line keeps no text), without the dataclass's state dict and a Source object each.
        s = self.source
        if s.text is not None:
            return super().__reduce__()
        return _trace, (self.definition, self.workload_uuid, self.workload_axes, self.solution, self.evaluation,
                        s.path, s.line, self.raw)

    @property
    def status(self) -> TraceStatus:
        return self.evaluation.status

    @property
    def hardware(self) -> str:
        return self.evaluation.environment.hardware

    @property
    def timestamp(self) -> str:
        return self.evaluation.timestamp

    @property
    def has_correctness(self) -> bool:
        return self.evaluation.correctness is not None

    @property
    def has_performance(self) -> bool:
        return self.evaluation.performance is not None

    @property
    def latency_ms(self) -> Optional[float]:
        p = self.evaluation.performance
        return p.latency_ms if p is not None else None

    @property
    def reference_latency_ms(self) -> Optional[float]:
        p = self.evaluation.performance
        return p.reference_latency_ms if p is not None else None

    @property
    def speedup_factor(self) -> Optional[float]:
        p = self.evaluation.performance
        return p.speedup_factor if p is not None else None

    @property
    def is_passed(self) -> bool:
        return self.evaluation.passed

    @property
    def unstable(self) -> bool:
        """Passed, but the timing is too noisy to rank (model/stability.py's rule, Performance.unstable)."""
        return self.evaluation.unstable

    @property
    def provenance_record(self) -> Optional[Mapping]:
        """evaluation.environment.provenance (schema/trace.json), or None."""
        return self.evaluation.environment.provenance

    @property
    def provenance(self) -> str:
        """How the result was produced, one of PROVENANCES: measured (by this project's bench), recorded (read
        from another tool's records), unknown (no provenance: written before the bench recorded it)."""
        p = self.provenance_record
        kind = p.get("kind") if p else None
        return kind if kind in ("measured", "recorded") else "unknown"


def _trace(definition: str, workload_uuid: str, workload_axes: Mapping[str, Any], solution: str,
           evaluation: Evaluation, path: str, line: int, raw: str) -> Trace:
    """A trace as Trace.__reduce__ gave it."""
    return Trace(definition, workload_uuid, workload_axes, solution, evaluation, Source(path, line), raw)


# How a trace's result was produced (Trace.provenance); the bench names itself BENCH_TOOL in the measured ones.
PROVENANCES = ("measured", "recorded", "unknown")
BENCH_TOOL = "kerneltrace bench"


@dataclass(frozen=True)
class KernelCall:
    id: str
    count: int
    stage: Optional[str] = None


@dataclass(frozen=True)
class CallingRecord:
    name: str  # file stem
    model: str
    framework: str
    kernels: tuple[KernelCall, ...]
    source: Source
    data: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_data(cls, name: str, data: dict, source: Source) -> "CallingRecord":
        kernels = tuple(KernelCall(k["id"], k["count"], k.get("stage")) for k in data["kernels"])
        return cls(name, data["model"], data["framework"], kernels, source, data)


@dataclass(frozen=True)
class AgentTrace:
    author: str
    solution: str
    model: str  # model of the conversation form, or of the first llm_request entry
    entries: tuple[Mapping[str, Any], ...]  # list form; the conversation form becomes one llm_request-like entry
    source: Source
    data: Any = field(repr=False, compare=False)

    @classmethod
    def from_data(cls, author: str, stem: str, data: Any, source: Source) -> "AgentTrace":
        if isinstance(data, dict):
            entry = {"type": "conversation", "model": data["model"], "annotation": data.get("annotation", ""),
                     "conversation": data["conversation"]}
            return cls(author, data.get("solution", stem), data["model"], (entry,), source, data)
        models = [e.get("model", "") for e in data if e.get("type") == "llm_request"]
        return cls(author, stem, models[0] if models else "", tuple(data), source, data)


@dataclass(frozen=True)
class EinsumCascade:
    definition: str  # file stem
    type: str  # folder name
    template: str  # jinja2 template text of the YAML document
    source: Source


@dataclass(frozen=True)
class HardwareSpec:
    name: str
    kind: str
    peak_tflops: Mapping[str, float]
    memory_bandwidth_gb_s: float
    l2_cache_bytes: Optional[int]
    aliases: tuple[str, ...]
    source_note: str
    source: Source
    data: Mapping[str, Any] = field(repr=False, compare=False)
    compute_capability: Optional[str] = None  # GPUs: "9.0" for Hopper

    @classmethod
    def from_data(cls, data: dict, source: Source) -> "HardwareSpec":
        return cls(data["name"], data["kind"], _frozen(data["peak_tflops"]), data["memory_bandwidth_gb_s"],
                   data.get("l2_cache_bytes"), tuple(data.get("aliases", ())), data["source"], source, data,
                   data.get("compute_capability"))
