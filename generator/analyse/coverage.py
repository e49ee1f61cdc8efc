"""Model coverage: which kernels of a model's decode and prefill steps have definitions.

Pure functions over the loaded dataset (calling records and definitions); the site's home and model
pages and the README's table all come from here, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.dataset import Dataset

STAGES = ("decode", "prefill")


@dataclass(frozen=True)
class KernelRow:
    id: str
    count: int
    stages: tuple[str, ...]  # the steps that call it
    covered: bool
    note: str


@dataclass(frozen=True)
class StageCoverage:
    kernels: int  # distinct kernels the step calls
    covered: int  # of which have a definition
    calls: int  # kernel calls per step
    covered_calls: int

    @property
    def share(self) -> float:
        return self.covered_calls / self.calls if self.calls else 0.0


def serving_summary(serving: dict) -> str:
    """One line for a record's serving block: "TP8 EP8, 8x H200" or "TP16, 2 nodes x 8 H100_SXM"."""
    if not serving:
        return ""
    par = f"TP{serving['tensor_parallel']}" + (f" EP{serving['expert_parallel']}" if serving.get("expert_parallel") else "")
    gpus, nodes = serving["gpus"], serving.get("nodes", 1)
    where = f"{nodes} nodes x {gpus // nodes}" if nodes > 1 and gpus % nodes == 0 else f"{gpus}x"
    return f"{par}, {where} {serving['hardware']}"


@dataclass(frozen=True)
class ModelCoverage:
    name: str  # calling record file stem
    model: str
    framework: str
    description: str
    kernels: tuple[KernelRow, ...]
    stages: dict  # stage -> StageCoverage
    serving: str = ""  # serving_summary of the record's serving block ("" when it has none)
    engine_version: str = ""  # the framework release the record describes ("" for a foreign record without one)
    engine_checked: str = ""  # when the record was last checked against that release

    @property
    def engine(self) -> str:
        """The framework and its release, e.g. "SGLang 0.5.23" (the framework alone without a release)."""
        return f"{self.framework} {self.engine_version}".strip()

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(sorted({k.id for k in self.kernels if not k.covered}))


def model_coverage(ds: Dataset) -> list[ModelCoverage]:
    out = []
    for name, record in sorted(ds.models.items()):
        notes = [str(k.get("note", "")) for k in record.data["kernels"]]
        rows = tuple(KernelRow(k.id, k.count, (k.stage,) if k.stage else STAGES, k.id in ds.definitions, note)
                     for k, note in zip(record.kernels, notes))
        stages = {}
        for stage in STAGES:
            in_stage = [r for r in rows if stage in r.stages]
            ids = {r.id for r in in_stage}
            covered_ids = {r.id for r in in_stage if r.covered}
            stages[stage] = StageCoverage(len(ids), len(covered_ids), sum(r.count for r in in_stage),
                                          sum(r.count for r in in_stage if r.covered))
        out.append(ModelCoverage(name, record.model, record.framework,
                                 str(record.data.get("description", "")), rows, stages,
                                 serving_summary(record.data.get("serving") or {}),
                                 str(record.data.get("engine_version", "")), str(record.data.get("engine_checked", ""))))
    return out


def coverage_table(coverage: list[ModelCoverage]) -> str:
    """The README's markdown table: one row per model, kernels and calls covered per step (the site
    renders the same numbers through its templates, with escaping and links)."""
    lines = ["| model | framework | serving | decode step: kernels covered | decode: calls covered | "
             "prefill step: kernels covered | prefill: calls covered |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for m in coverage:
        d, p = m.stages["decode"], m.stages["prefill"]
        lines.append(f"| {m.model} | {m.engine} | {m.serving} | {d.covered} of {d.kernels} | {d.covered_calls} of {d.calls} "
                     f"({d.share:.0%}) | {p.covered} of {p.kernels} | {p.covered_calls} of {p.calls} ({p.share:.0%}) |")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class EngineRelease:
    engine: str  # framework and release, e.g. "SGLang 0.5.23"
    records: tuple[str, ...]  # calling record names describing it
    checked: str  # the latest date any of them was checked ("" when none says)


def engine_releases(coverage: list[ModelCoverage]) -> list[EngineRelease]:
    """Which framework releases the records describe, each with its records and when it was last checked;
    records naming no release are gathered under the framework alone."""
    groups: dict[str, list[ModelCoverage]] = {}
    for m in coverage:
        groups.setdefault(m.engine, []).append(m)
    return [EngineRelease(engine, tuple(m.name for m in ms), max(m.engine_checked for m in ms))
            for engine, ms in sorted(groups.items())]
