"""Warnings about what is missing or repeated rather than wrong: a definition nobody can run or rank
(no workload, no baseline solution), a verified definition below the workload minimum, and traces
that repeat a (solution, workload, hardware) key, as hand-merged or older trace files hold (the site
keeps the latest; the older lines are noise)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterator

from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic
from ..model.diagnostics import make_pointer as ptr
from ..model.layout import CANONICAL
from ..model.status import BASELINE_AUTHOR, DefinitionStatus
from .common import warning

# A verified kernel is ranked on its workloads: fewer than five shapes cannot show how it scales
# from decode batch 1 to a long prefill. Drafts may have fewer (site_src/contributing.md).
MIN_VERIFIED_WORKLOADS = 5
VERIFIED_TAG = DefinitionStatus.VERIFIED.tag


def check_completeness(ds: Dataset) -> Iterator[Diagnostic]:
    workloads = Counter(w.definition for w in ds.workloads)
    baselines = {s.definition for s in ds.solutions.values() if s.author == BASELINE_AUTHOR}
    misnamed = {d.name for d in ds.misnamed_definitions.values()}  # their one error says why nothing names them
    for d in ds.definitions.values():
        if d.name in misnamed:
            continue
        if not workloads[d.name]:
            yield warning(d, ptr("name"), f"{d.name} has no workloads: nothing can be benchmarked",
                          f"add at least 5 to {CANONICAL.workload_file(d.type, d.name)}: entries in its model's recipe, "
                          f"{CANONICAL.recipe_file('<model>')}, then run `kerneltrace workloads`")
        elif d.status is DefinitionStatus.VERIFIED and workloads[d.name] < MIN_VERIFIED_WORKLOADS:
            have = workloads[d.name]
            yield warning(d, ptr("tags"), f"{d.name} is tagged {VERIFIED_TAG} but has {have} workload"
                          f"{'s' if have != 1 else ''}, below the minimum of {MIN_VERIFIED_WORKLOADS}",
                          f"add {MIN_VERIFIED_WORKLOADS - have} more to {CANONICAL.workload_file(d.type, d.name)} "
                          f"(from its model's recipe, {CANONICAL.recipe_file('<model>')}), or tag it status:draft until it has them")
        if d.name not in baselines:
            yield warning(d, ptr("name"), f"{d.name} has no baseline solution: speedups can only be those the traces recorded",
                          f"add {CANONICAL.solution_file(BASELINE_AUTHOR, d.type, d.name, d.name + '_torch')}")
    yield from _duplicate_traces(ds)


def _duplicate_traces(ds: Dataset) -> Iterator[Diagnostic]:
    # One warning per trace file, at its first repeated key: a re-measured file can repeat
    # thousands of keys, and one line that names the count says the same.
    first_seen: dict[tuple, object] = {}
    repeats: dict[str, list] = defaultdict(list)
    for t in ds.traces:
        key = (t.solution, t.workload_uuid, t.hardware)
        if key in first_seen:
            repeats[t.source.path].append((t, first_seen[key]))
        else:
            first_seen[key] = t.source
    for pairs in repeats.values():
        t, first = pairs[0]
        more = f" ({len(pairs)} repeated keys in this file)" if len(pairs) > 1 else ""
        yield warning(t, "", f"duplicate trace: {t.solution} on workload {t.workload_uuid} on {t.hardware} also "
                             f"at {first.path}:{first.line}{more}",
                      "keep one per (solution, workload, hardware): the bench replaces a key it measures "
                      "again, and the site uses the latest")
