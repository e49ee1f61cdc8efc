"""Readers for the other dialects: FlashInfer-Trace, Kernel Signature (seed 001), schema set (seed 002).

Each `normalise_<kind>` takes one parsed JSON value and returns a `Normalised`: the canonical
object, the dialect it was written in (None when already canonical), and notes saying what
could not be carried over. Canonical input passes through unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class Normalised:
    data: Any
    dialect: Optional[str] = None
    notes: list[str] = field(default_factory=list)


def normalise_definition(data: Any, stem: str) -> Normalised:
    return Normalised(data)


def normalise_workload(data: Any) -> Normalised:
    return Normalised(data)


def normalise_solution(data: Any) -> Normalised:
    return Normalised(data)


def normalise_trace(data: Any) -> Normalised:
    return Normalised(data)
