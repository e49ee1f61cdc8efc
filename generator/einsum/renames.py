"""Renames: evaluate every rename of every Einsum (the default block, overridden per Einsum and
by the Einsum's own field) and check their expected counts."""

from __future__ import annotations

from dataclasses import dataclass

from .model import Cascade, Einsum, Rename, tensor_sets, variable_sets
from .problems import Problem
from .sets import KEYWORDS, SetError, parse_set_expression


@dataclass(frozen=True)
class RenameResult:
    einsum: str
    rename: Rename
    members: tuple[str, ...]  # sorted


def resolve_renames(cascade: Cascade) -> tuple[list[RenameResult], list[Problem]]:
    """Evaluate every rename of every Einsum (default block, overridden per Einsum); check expected_count."""
    results: list[RenameResult] = []
    problems: list[Problem] = []
    blocks = {b.name: b for b in cascade.rename_blocks}
    default = blocks.get("default")
    reported: set[tuple[str, str]] = set()  # (pointer, message): a bad default is one problem, not one per Einsum
    for e in cascade.einsums:
        own = blocks.get(e.name)
        for kind, sets, names in (("tensor_accesses", tensor_sets(cascade, e), set(cascade.tensors)),
                                  ("rank_variables", variable_sets(cascade, e),
                                   {v for x in cascade.einsums for v in x.rank_variables})):
            entries: dict[str, Rename] = {}
            for block in (default, own):
                if block is not None:
                    for r in getattr(block, kind):
                        entries[r.name] = r
            if kind == "tensor_accesses":
                for r in e.renames:  # the Einsum's own field names tensors or rank variables
                    entries[r.name] = r
            _evaluate(e, entries, sets, names, kind, results, problems, reported)
    return results, problems


def _evaluate(e: Einsum, entries: dict[str, Rename], sets: dict[str, frozenset], names: set[str], kind: str,
              results: list, problems: list, reported: set) -> None:
    done: dict[str, frozenset] = {}
    failed: set[str] = set()
    visiting: list[str] = []
    variables = set(e.rank_variables)
    what = "tensors" if kind == "tensor_accesses" else "rank variables"

    def report(r: Rename, message: str, hint: str) -> None:
        key = (r.pointer, message)
        if key not in reported:
            reported.add(key)
            problems.append(Problem(r.pointer, message, hint))

    def resolve_name(name: str) -> frozenset:
        if name in sets:
            return sets[name]
        if name in entries and name not in names:
            return value(entries[name])
        if name in names:
            return frozenset({name}) & sets["All"]
        if kind == "tensor_accesses" and name in variables:  # an Einsum-level rename of a rank variable
            return frozenset({name})
        raise SetError(f"names '{name}', which is no {what[:-1]} of the workload, set keyword or rename")

    def value(r: Rename) -> frozenset:
        if r.name in done:
            return done[r.name]
        if r.name in failed:
            raise SetError("")
        if r.name in visiting:
            raise SetError(f"refers to itself through {' -> '.join(visiting + [r.name])}")
        visiting.append(r.name)
        try:
            result = parse_set_expression(r.source)(resolve_name)
        finally:
            visiting.pop()
        done[r.name] = result
        return result

    for r in entries.values():
        try:
            members = value(r)
        except SetError as ex:
            failed.add(r.name)
            if str(ex):
                report(r, f"rename '{r.name}' of Einsum '{e.name}': '{r.source}' {ex}",
                       f"set expressions use {', '.join(KEYWORDS)}, names of {what}, earlier renames, "
                       "and & | ~ - ( )")
            continue
        results.append(RenameResult(e.name, r, tuple(sorted(members))))
        if r.expected_count is not None and len(members) != r.expected_count:
            listed = ", ".join(sorted(members)) or "none"
            shown = "; ".join(f"{k} = {{{', '.join(sorted(v))}}}" for k, v in sets.items() if k not in ("All", "Nothing"))
            report(r, f"rename '{r.name}' of Einsum '{e.name}': '{r.source}' gives {len(members)} {what} "
                      f"({listed}), expected_count is {r.expected_count}",
                   f"in Einsum '{e.name}', {shown}; override the rename for this Einsum "
                   f"(renames: {{{r.name}: ...}}) or fix the expression")
