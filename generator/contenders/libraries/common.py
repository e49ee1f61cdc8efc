"""What every library family shares: how a definition is recognised and how its Solution dict is built.

A family claims a definition only when the definition's name matches the family's pattern AND its
signature (input and output names, shapes by axis name, dtypes) is the one the family's call was
written for; anything else that the family's name pattern catches is listed as skipped, with why.
The semantics (eps placement, rounding points, offsets, layouts) are then proven by the checks in
tests/contenders/test_library_contenders.py, one per distinct reference text of a family, on the CPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from ...model.contender_kinds import LIBRARY_AUTHORS

# GPUs a Triton library's kernels run on (Ampere and later; spec names of dataset/hardware/).
TRITON_GPUS = ("A100", "H100_SXM", "H200", "B200")

Signature = tuple[tuple[tuple[str, tuple[str, ...], str], ...], tuple[tuple[str, tuple[str, ...], str], ...]]


def signature(definition) -> Signature:
    """(inputs, outputs) as (name, shape by axis name, dtype), in the definition's order."""
    def spec(ts):
        return tuple((t.name, tuple(t.shape), t.dtype) for t in ts.values())
    return spec(definition.inputs), spec(definition.outputs)


def sig(inputs: str, outputs: str) -> Signature:
    """A signature from a compact text: 'name:axis,axis:dtype name:...' for inputs, then outputs
    (a scalar has no axes: 'scale::float32')."""
    def parse(text):
        out = []
        for item in text.split():
            name, axes, dtype = item.split(":")
            out.append((name, tuple(a for a in axes.split(",") if a), dtype))
        return tuple(out)
    return parse(inputs), parse(outputs)


_EPS = re.compile(r"^\s*eps = ([0-9.eE+-]+)\s*(#.*)?$", re.M)


def reference_eps(definition) -> Optional[float]:
    """The eps literal of a reference (`eps = 1e-5  # ...`), or None when there is not exactly one."""
    found = _EPS.findall(definition.reference)
    return float(found[0][0]) if len(found) == 1 else None


@dataclass(frozen=True)
class Family:
    """Sibling definitions (differing only in const axes and baked-in constants) one library call computes.

    `render(definition)` returns (main.py source, description) or raises Unclaimed with the reason."""

    name: str
    author: str
    pattern: re.Pattern
    signatures: tuple[Signature, ...]
    render: Callable
    language: str
    target_hardware: tuple[str, ...]
    dependencies: tuple[str, ...]
    suffix: str
    notes: dict = field(default_factory=dict)


class Unclaimed(Exception):
    """A definition a family's name pattern catches but whose semantics its call does not compute."""


def build(family: Family, definition) -> dict:
    """The canonical Solution dict of `family`'s contender for `definition` (raises Unclaimed)."""
    assert family.author in LIBRARY_AUTHORS, family.author
    if signature(definition) not in family.signatures:
        raise Unclaimed(f"{family.name}: its inputs/outputs differ from the signature the call was written for")
    source, description = family.render(definition)
    return {
        "name": f"{definition.name}_{family.suffix}",
        "definition": definition.name,
        "author": family.author,
        "description": description,
        "spec": {
            "language": family.language,
            "target_hardware": list(family.target_hardware),
            "entry_point": "main.py::run",
            "destination_passing_style": False,
            "dependencies": list(family.dependencies),
        },
        "sources": [{"path": "main.py", "content": source}],
    }
