"""The cascade model: plain values for a parsed, checked cascade (Einsums, their tensor
accesses, renames), and the named sets (Inputs, Outputs, ...) set expressions see in an Einsum.

The values are frozen, so what is derived from them (an Einsum's inputs, the cascade's intermediates) is
computed once per object (cached_property): the checks and the counts ask for it per access.

Intermediates are tensors some Einsum writes and another reads; inputs are only read,
outputs only written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Optional

from .constraints import Constraint
from .expressions import Expr


@dataclass(frozen=True)
class Access:
    tensor: str
    ranks: tuple[str, ...]
    indices: tuple[Expr, ...]
    output: bool
    persistent: bool
    bits: Optional[int]  # the access's own bits_per_value
    pointer: str  # of the access in the document

    @cached_property
    def variables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v for e in self.indices for v in e.variables))


@dataclass(frozen=True)
class Rename:
    name: str
    source: str
    expected_count: Optional[int]
    pointer: str  # of the entry (list form) or of the member (map form)


@dataclass(frozen=True)
class Einsum:
    name: str
    accesses: tuple[Access, ...]
    is_copy: bool
    n_instances: int
    rank_sizes: Mapping[str, int]  # the workload's, overridden by the Einsum's own
    constraints: tuple[Constraint, ...]
    renames: tuple[Rename, ...]  # the Einsum's own renames field
    pointer: str
    bounds: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # rank variable -> inclusive range
    compute_dtype: Optional[str] = None  # the cascade's statement of the unit its multiply-adds run on

    @cached_property
    def inputs(self) -> tuple[Access, ...]:
        return tuple(a for a in self.accesses if not a.output)

    @cached_property
    def outputs(self) -> tuple[Access, ...]:
        return tuple(a for a in self.accesses if a.output)

    @cached_property
    def tensors(self) -> tuple[str, ...]:
        return tuple(a.tensor for a in self.accesses)

    @cached_property
    def rank_variables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v for a in self.accesses for v in a.variables))

    @cached_property
    def reduced_variables(self) -> tuple[str, ...]:
        """Rank variables that index no output: summed over."""
        out = {v for a in self.outputs for v in a.variables}
        return tuple(v for v in self.rank_variables if v not in out)

    @cached_property
    def is_contraction(self) -> bool:
        """Sums over a rank variable and reads two or more tensors: a product a matrix unit can run."""
        return not self.is_copy and bool(self.reduced_variables) and len(self.inputs) >= 2

    @cached_property
    def multiplicands(self) -> tuple[Access, ...]:
        """The inputs a contraction sums over (indexed by a summed variable); the others (a per-row or
        per-expert scale) are applied once per output, outside the products."""
        summed = set(self.reduced_variables)
        return tuple(a for a in self.inputs if summed & set(a.variables)) or self.inputs


@dataclass(frozen=True)
class RenameBlock:
    name: str
    tensor_accesses: tuple[Rename, ...]
    rank_variables: tuple[Rename, ...]
    pointer: str


@dataclass(frozen=True)
class Cascade:
    einsums: tuple[Einsum, ...]
    rank_sizes: Mapping[str, int]
    iteration_space_shape: Mapping[str, str]
    bits_per_value: tuple[tuple[str, int], ...]  # (set expression, bits), in document order
    n_instances: int
    rename_blocks: tuple[RenameBlock, ...]
    data: Mapping[str, Any] = field(repr=False, compare=False)

    @cached_property
    def tensors(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.tensor for e in self.einsums for a in e.accesses))

    @cached_property
    def written(self) -> frozenset:
        return frozenset(a.tensor for e in self.einsums for a in e.outputs)

    @cached_property
    def read(self) -> frozenset:
        return frozenset(a.tensor for e in self.einsums for a in e.inputs)

    @cached_property
    def intermediates(self) -> frozenset:
        return self.written & self.read

    def role(self, tensor: str) -> str:
        w, r = tensor in self.written, tensor in self.read
        return "intermediate" if w and r else "output" if w else "input"

    def inputs(self) -> tuple[str, ...]:
        return tuple(t for t in self.tensors if self.role(t) == "input")

    def outputs(self) -> tuple[str, ...]:
        return tuple(t for t in self.tensors if self.role(t) == "output")



def tensor_sets(cascade: Cascade, e: Einsum) -> dict[str, frozenset]:
    """The set keywords over the tensors of Einsum `e`."""
    tensors = frozenset(e.tensors)
    return {"All": tensors, "Nothing": frozenset(), "Inputs": frozenset(a.tensor for a in e.inputs),
            "Outputs": frozenset(a.tensor for a in e.outputs), "Intermediates": tensors & cascade.intermediates}


def variable_sets(cascade: Cascade, e: Einsum) -> dict[str, frozenset]:
    """The set keywords over the rank variables of Einsum `e`."""
    def of(accs) -> frozenset:
        return frozenset(v for a in accs for v in a.variables)
    return {"All": frozenset(e.rank_variables), "Nothing": frozenset(), "Inputs": of(e.inputs),
            "Outputs": of(e.outputs), "Intermediates": of(a for a in e.accesses if a.tensor in cascade.intermediates)}
