"""Validate stage: schema errors (found while loading) plus semantic checks.

`validate(ds)` returns every diagnostic, sorted; it never raises on bad data.
"""

from __future__ import annotations

from pathlib import Path

from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic, sort_diagnostics
from ..model.errors import KernelTraceError
from ..model.kinds import KINDS
from ..load import load
from .definitions import check_definitions
from .completeness import check_completeness
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
    diags = list(ds.load_diagnostics)
    for kind in KINDS:
        diags.extend(CHECKS[kind.name](ds))
    return sort_diagnostics(diags)


def validate_path(root: Path | str) -> list[Diagnostic]:
    return validate(load(root))


def load_valid(root: Path | str, doing: str) -> Dataset:
    """The dataset at `root` if `validate` finds no error in it; else KernelTraceError listing the
    first errors. The one rule for a dataset with errors: every command that publishes it (build,
    export) refuses it, as validate does. bench refuses only data it cannot read: a solution that
    validate flags (say, one that does not compile) is what it measures, into a failing trace."""
    ds = load(root)
    errors = [d for d in validate(ds) if d.is_error]
    if errors:
        shown = "\n".join("  " + d.format_human().splitlines()[0] for d in errors[:5])
        more = f"\n  ... and {len(errors) - 5} more" if len(errors) > 5 else ""
        raise KernelTraceError(f"the dataset at {root} has {len(errors)} error(s):\n{shown}{more}\nrun "
                               f"'kerneltrace validate --dataset {root}' and fix them before {doing}")
    return ds
