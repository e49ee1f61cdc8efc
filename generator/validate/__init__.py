"""Validate stage: schema errors (found while loading) plus semantic checks.

`validate(ds)` returns every diagnostic, sorted; it never raises on bad data.
"""

from __future__ import annotations

from pathlib import Path

from ..load import load
from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic, sort_diagnostics
from ..model.errors import KernelTraceError
from ..model.kinds import KINDS
from .completeness import check_completeness
from .definitions import check_definitions
from .einsums import check_einsums
from .memory import check_memory
from .model_tags import check_model_tags
from .others import check_agent_traces, check_hardware, check_models
from .solutions import check_solutions
from .traces import check_traces
from .workloads import check_workloads

# Record kind -> its semantic checks (every kind of model.kinds.KINDS has one).
CHECKS = {
    "definition": lambda ds: [*check_definitions(ds), *check_completeness(ds)], "workload": check_workloads, "solution": check_solutions,
    "trace": check_traces, "model": lambda ds: [*check_models(ds), *check_model_tags(ds), *check_memory(ds)], "agent_trace": check_agent_traces, "hardware": check_hardware,
    "einsum": check_einsums,
}


def validate(ds: Dataset) -> list[Diagnostic]:
    return sort_diagnostics([*ds.load_diagnostics, *semantic_diagnostics(ds)])


def semantic_diagnostics(ds: Dataset) -> list[Diagnostic]:
    """What the checks find (what loading found is in ds.load_diagnostics), unsorted."""
    return [d for found in checks_by_kind(ds).values() for d in found]


def checks_by_kind(ds: Dataset) -> dict[str, list[Diagnostic]]:
    """What each kind's checks find."""
    return {kind.name: list(CHECKS[kind.name](ds)) for kind in KINDS}


def validate_path(root: Path | str) -> list[Diagnostic]:
    return validate(load(root))


def load_valid(root: Path | str, doing: str) -> Dataset:
    """The dataset at `root` if `validate` finds no error in it; else KernelTraceError listing the
    first errors. The one rule for a dataset with errors: every command that publishes it (build,
    export) refuses it, as validate does. bench refuses only data it cannot read: a solution that
    validate flags (say, one that does not compile) is what it measures, into a failing trace."""
    ds = load(root)
    refuse_errors(validate(ds), root, doing)
    return ds


def refuse_errors(diagnostics: list[Diagnostic], root: Path | str, doing: str) -> None:
    """KernelTraceError listing the first errors among `diagnostics`, if there are any."""
    errors = sort_diagnostics([d for d in diagnostics if d.is_error])
    refuse(len(errors), errors[:5], root, doing)


def refuse(count: int, first: list[Diagnostic], root: Path | str, doing: str) -> None:
    """KernelTraceError naming `first`, the first (at most 5) of `count` errors, if there are any."""
    if count:
        shown = "\n".join("  " + d.format_human().splitlines()[0] for d in first[:5])
        more = f"\n  ... and {count - 5} more" if count > 5 else ""
        raise KernelTraceError(f"the dataset at {root} has {count} error(s):\n{shown}{more}\nrun "
                               f"'kerneltrace validate --dataset {root}' and fix them before {doing}")


# Checks over every calling record and hardware spec: cheap (a few per model), so a scoped run does
# them whole and a change to one definition is seen by its calling records at once.
WHOLE_KINDS = ("model", "hardware")


def scoped_diagnostics(ds: Dataset, definitions: set[str], changed: set[str],
                       previous: dict[str, list[Diagnostic]]) -> dict[str, list[Diagnostic]]:
    """`checks_by_kind(ds)` when only the files of `definitions` (and the paths in `changed`) changed
    since `previous` was found: the checks of calling records and hardware run whole; the others
    re-run on those definitions with their workloads, solutions, traces, agent traces and Einsum
    cascades, and their files' findings replace the previous ones. For `kerneltrace serve`'s quick
    rebuilds."""
    by_def = ds.traces_by_definition
    solutions = {name: s for name, s in ds.solutions.items() if s.definition in definitions}
    sub = Dataset(
        root=ds.root,
        definitions={n: ds.definitions[n] for n in sorted(definitions) if n in ds.definitions},
        workloads=[w for w in ds.workloads if w.definition in definitions],
        solutions=solutions,
        traces=[t for n in sorted(definitions) for t in by_def.get(n, ())],
        models=ds.models,
        agent_traces=[a for a in ds.agent_traces if a.solution in solutions],
        einsums={n: e for n, e in ds.einsums.items() if n in definitions},
        hardware=ds.hardware,
        rejected=ds.rejected,
    )
    scope = set(changed)
    for kind in KINDS:
        if kind.name in WHOLE_KINDS:
            continue
        records = getattr(sub, kind.folder)
        scope.update(r.source.path for r in (records.values() if isinstance(records, dict) else records))
    out = {}
    for kind in KINDS:
        if kind.name in WHOLE_KINDS:
            out[kind.name] = list(CHECKS[kind.name](ds))
        else:
            out[kind.name] = [d for d in previous.get(kind.name, ()) if d.file not in scope] + \
                             [d for d in CHECKS[kind.name](sub) if d.file in scope]
    return out
