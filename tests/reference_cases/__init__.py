"""Independent formulations of every definition, one module per source of definitions.

Each module defines CASES = {definition name: Case}. Adding a definition means adding its Case to the
module of its model; tests/test_references.py fails for a definition that has none.
"""

from __future__ import annotations

import importlib

from .common import Case

_MODULES = ("seed", "llama", "qwen", "deepseek")


def _collect() -> dict:
    cases: dict = {}
    for name in _MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        for key, case in module.CASES.items():
            assert key not in cases, f"{key} has a Case in two modules"
            cases[key] = case
    return cases


CASES = _collect()

__all__ = ["CASES", "Case"]
