"""Warnings about what is missing or repeated rather than wrong: a definition nobody can run or rank
(no workload, no baseline solution) and traces that repeat a (solution, workload, hardware) key, as
re-running the bench without --resume appends (the site keeps the latest; the older lines are noise).
The bundled dataset also keeps every verified definition at 5 workloads or more (tests/test_coverage.py)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterator

from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic
from ..model.diagnostics import make_pointer as ptr
from ..model.layout import CANONICAL
from .common import warning

BASELINE_AUTHOR = "baseline"


def check_completeness(ds: Dataset) -> Iterator[Diagnostic]:
    workloads = Counter(w.definition for w in ds.workloads)
    baselines = {s.definition for s in ds.solutions.values() if s.author == BASELINE_AUTHOR}
    for d in ds.definitions.values():
        if not workloads[d.name]:
            yield warning(d, ptr("name"), f"{d.name} has no workloads: nothing can be benchmarked",
                          f"add at least 5 to {CANONICAL.workload_file(d.type, d.name)} (or a recipe in "
                          "generator/workloadgen/)")
        if d.name not in baselines:
            yield warning(d, ptr("name"), f"{d.name} has no baseline solution: speedups cannot be computed",
                          f"add {CANONICAL.solution_file(BASELINE_AUTHOR, d.type, d.name, d.name + '_torch')}")
    seen: dict[tuple, list] = defaultdict(list)
    for t in ds.traces:
        seen[(t.solution, t.workload_uuid, t.hardware)].append(t)
    for (solution, uuid, hw), traces in seen.items():
        for t in traces[1:]:
            first = traces[0].source
            yield warning(t, "", f"duplicate trace: {solution} on workload {uuid} on {hw} also at "
                                 f"{first.path}:{first.line}",
                          "keep one (bench with --resume skips finished pairs); the site uses the latest")
