"""Independent formulations of every definition, one module per source of definitions.

Each module defines CASES = {definition name: Case}; every module here that does is collected (a new
model's file needs no registration). Adding a definition means adding its Case to the module of its
model; tests/test_references.py fails for a definition that has none.
"""

from __future__ import annotations

import importlib
import pkgutil

from .common import Case


def _modules() -> tuple[str, ...]:
    """Every module of this folder that defines CASES: a new model's file is found by being here."""
    names = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_") and hasattr(importlib.import_module(f"{__name__}.{info.name}"), "CASES"):
            names.append(info.name)
    return tuple(sorted(names))


_MODULES = _modules()


def _collect() -> dict:
    cases: dict = {}
    for name in _MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        for key, case in module.CASES.items():
            assert key not in cases, f"{key} has a Case in two modules"
            cases[key] = case
    return cases


CASES = _collect()

__all__ = ["CASES", "Case"]
