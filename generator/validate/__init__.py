"""Validate stage: schema errors (found while loading) plus semantic checks.

`validate(ds)` returns every diagnostic, sorted; it never raises on bad data.
"""

from __future__ import annotations

from pathlib import Path

from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic, sort_diagnostics
from ..model.kinds import KINDS
from ..load import load
from .definitions import check_definitions
from .einsums import check_einsums
from .others import check_agent_traces, check_hardware, check_models
from .solutions import check_solutions
from .traces import check_traces
from .workloads import check_workloads

# Record kind -> its semantic checks (every kind of model.kinds.KINDS has one).
CHECKS = {
    "definition": check_definitions, "workload": check_workloads, "solution": check_solutions,
    "trace": check_traces, "model": check_models, "agent_trace": check_agent_traces, "hardware": check_hardware,
    "einsum": check_einsums,
}


def validate(ds: Dataset) -> list[Diagnostic]:
    diags = list(ds.load_diagnostics)
    for kind in KINDS:
        diags.extend(CHECKS[kind.name](ds))
    return sort_diagnostics(diags)


def validate_path(root: Path | str) -> list[Diagnostic]:
    return validate(load(root))
