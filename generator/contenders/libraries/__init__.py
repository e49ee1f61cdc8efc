"""Library contenders: a well-kept library's kernel that computes exactly a definition.

`library_contenders(dataset)` returns (solutions, skipped): canonical Solution dicts (author = the
library's author name in model/contender_kinds.py) for every definition a library computes exactly,
and (definition name, reason) for the definitions a family's name pattern catches but it does not
claim. Families, one module per library: liger.py (liger-kernel), fla.py (fla-core), torch_ops.py
(torch's vendor kernels); each module's REJECTED says which families were looked at and why not.
"""

from __future__ import annotations

from . import fla, liger, torch_ops
from .common import Unclaimed, build

FAMILIES = liger.FAMILIES + fla.FAMILIES + torch_ops.FAMILIES
REJECTED = {**liger.REJECTED, **fla.REJECTED, **torch_ops.REJECTED}


def library_contenders(dataset) -> tuple[list[dict], list[tuple[str, str]]]:
    solutions, skipped = [], []
    for name in sorted(dataset.definitions):
        definition = dataset.definitions[name]
        for family in FAMILIES:
            if not family.pattern.match(name):
                continue
            try:
                solutions.append(build(family, definition))
            except Unclaimed as why:
                skipped.append((name, f"{family.author}: {why}"))
    return solutions, skipped
