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
                                 serving_summary(record.data.get("serving") or {})))
    return out


def coverage_table(coverage: list[ModelCoverage]) -> str:
    """The README's markdown table: one row per model, kernels and calls covered per step (the site
    renders the same numbers through its templates, with escaping and links)."""
    lines = ["| model | framework | serving | decode step: kernels covered | decode: calls covered | "
             "prefill step: kernels covered | prefill: calls covered |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for m in coverage:
        d, p = m.stages["decode"], m.stages["prefill"]
        lines.append(f"| {m.model} | {m.framework} | {m.serving} | {d.covered} of {d.kernels} | {d.covered_calls} of {d.calls} "
                     f"({d.share:.0%}) | {p.covered} of {p.kernels} | {p.covered_calls} of {p.calls} ({p.share:.0%}) |")
    return "\n".join(lines) + "\n"
