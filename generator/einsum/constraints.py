"""Iteration-space constraints ("0 <= m < 128", ISL's notation for one set) and counting the
integer points of an iteration space under them.

Constraints on one variable fold into its bounds (`tighten`); constraints that couple two or
more variables (causal masks) are counted point by point, up to MAX_ENUMERATION points.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Iterable, Mapping

from .expressions import MAX_EXPRESSION, ExprError, linear

MAX_ENUMERATION = 4_000_000  # points visited when counting a coupled iteration space


@dataclass(frozen=True)
class Constraint:
    """sum(coef * var) + const <= 0, over integers."""

    coefs: tuple[tuple[str, int], ...]
    const: int
    text: str  # the expression it came from, for messages

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(v for v, _ in self.coefs)


_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def parse_constraints(text: str) -> list[Constraint]:
    """Linear inequalities of an ISL-style set condition: chains like 0 <= m < 128, joined by 'and'."""
    if not isinstance(text, str) or not text.strip():
        raise ExprError("is empty")
    if len(text) > MAX_EXPRESSION:
        raise ExprError(f"is longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ExprError("is not a condition like '0 <= m < 128'") from None
    parts = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
    out: list[Constraint] = []
    for part in parts:
        if not isinstance(part, ast.Compare):
            raise ExprError("is not a condition like '0 <= m < 128' (comparisons joined by 'and')")
        left = part.left
        for op, right in zip(part.ops, part.comparators):
            if type(op) not in _COMPARE:
                raise ExprError(f"compares with '{type(op).__name__}'; use <, <=, > or >=")
            try:
                (cl, kl), (cr, kr) = linear(left), linear(right)
            except RecursionError:
                raise ExprError("is nested too deeply") from None
            coefs = dict(cl)
            for v, x in cr.items():
                coefs[v] = coefs.get(v, 0) - x
            const = kl - kr  # left - right
            if isinstance(op, (ast.Gt, ast.GtE)):  # right - left <= 0
                coefs, const = {v: -x for v, x in coefs.items()}, -const
            if isinstance(op, (ast.Lt, ast.Gt)):  # strict over integers: a < b  <=>  a - b + 1 <= 0
                const += 1
            coefs = {v: x for v, x in coefs.items() if x}
            out.append(Constraint(tuple(sorted(coefs.items())), const, text.strip()))
            left = right
    return out


def tighten(bounds: dict[str, tuple[int, int]], c: Constraint) -> None:
    """Fold a one-variable constraint a*v + k <= 0 into v's bounds."""
    (v, a), = c.coefs
    lo, hi = bounds.get(v, (None, None))
    if a > 0:
        limit = (-c.const) // a  # v <= floor(-k / a)
        hi = limit if hi is None else min(hi, limit)
    else:
        limit = _ceil_div(c.const, -a)  # v >= ceil(k / -a)
        lo = limit if lo is None else max(lo, limit)
    bounds[v] = (lo, hi)


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def count_points(variables: Iterable[str], bounds: Mapping[str, tuple[int, int]],
                 constraints: Iterable[Constraint]) -> int:
    """Integer points of the box `bounds` (inclusive) that satisfy every constraint.

    Constraints on one variable must already be folded into `bounds`. Variables coupled by
    constraints are enumerated (all but the last of each group, smallest range first) up to
    MAX_ENUMERATION points; ExprError beyond that.
    """
    total = 1
    for vs, ranges, cs in _groups(variables, bounds, constraints):
        if not cs:
            for lo, hi in ranges:
                total *= max(0, hi - lo + 1)
            continue
        total *= _count_group(vs, ranges, cs)
        if total == 0:
            return 0
    return total


def countable_points(variables: Iterable[str], bounds: Mapping[str, tuple[int, int]],
                     constraints: Iterable[Constraint]) -> None:
    """Raise the ExprError that count_points would, without counting (validate needs no counts). A coupled
    group is counted only when a later one is too large: count_points stops at a group that leaves no points."""
    constraints = tuple(constraints)
    if all(len(c.coefs) < 2 for c in constraints):
        return  # nothing is enumerated, so nothing is too large
    empty, counted = False, []
    for vs, ranges, cs in _groups(variables, bounds, constraints):
        if not cs:
            empty = empty or any(hi < lo for lo, hi in ranges)
            continue
        if _work(ranges) > MAX_ENUMERATION:
            if any(_count_group(*group) == 0 for group in counted):
                return
            _count_group(vs, ranges, cs)  # raises, with count_points' message
        if empty:
            return
        counted.append((vs, ranges, cs))


def _groups(variables: Iterable[str], bounds: Mapping[str, tuple[int, int]], constraints: Iterable[Constraint]):
    """(variables, their ranges, the constraints coupling them) of each group of variables linked by
    constraints, in the order of their first variable; a variable no constraint couples is a group of its
    own, with no constraints; a coupled group's variables sorted by their range's size."""
    variables = list(dict.fromkeys(variables))
    size = {v: max(0, bounds[v][1] - bounds[v][0] + 1) for v in variables}
    coupled = [c for c in constraints if len(c.coefs) > 1]
    # Groups of variables linked by constraints (union-find over a few names).
    group = {v: v for v in variables}

    def find(v: str) -> str:
        while group[v] != v:
            v = group[v]
        return v

    for c in coupled:
        first = find(c.variables[0])
        for v in c.variables[1:]:
            group[find(v)] = first
    members: dict[str, list[str]] = {}
    for v in variables:
        members.setdefault(find(v), []).append(v)
    for root, vs in members.items():
        cs = [c for c in coupled if find(c.variables[0]) == root]
        if cs:
            vs = sorted(vs, key=lambda v: size[v])
        yield tuple(vs), tuple(tuple(bounds[v]) for v in vs), tuple(cs)


def _work(ranges: tuple[tuple[int, int], ...]) -> int:
    """Points enumerated to count a coupled group: those of every variable but the last."""
    work = 1
    for lo, hi in ranges[:-1]:
        work *= max(0, hi - lo + 1)
    return work


@functools.lru_cache(maxsize=4096)
def _count_group(vs: tuple[str, ...], ranges: tuple[tuple[int, int], ...], cs: tuple[Constraint, ...]) -> int:
    """Points of one coupled group: enumerate all but the last variable, count the last in closed form.
    Cached: the Einsums of one cascade (QK, softmax, PV) share their masked iteration space."""
    outer, last = vs[:-1], len(vs) - 1
    work = _work(ranges)
    if work > MAX_ENUMERATION:
        raise ExprError(f"couples rank variables {', '.join(vs)} over {work} points; at most "
                        f"{MAX_ENUMERATION} can be counted")
    index = {v: i for i, v in enumerate(vs)}
    # Each constraint as (coefficient of the last variable, const, ((position, coef), ...) of the others),
    # and per depth the constraints without the last variable that become fully assigned there.
    final, prune = [], [[] for _ in outer]
    for c in cs:
        a = dict(c.coefs).get(vs[last], 0)
        others = tuple((index[v], x) for v, x in c.coefs if v != vs[last])
        if a:
            final.append((a, c.const, others))
        else:
            prune[max(i for i, _ in others)].append((c.const, others))
    values = [0] * len(outer)
    last_lo, last_hi = ranges[last]

    def rec(depth: int) -> int:
        if depth == len(outer):
            lo, hi = last_lo, last_hi
            for a, const, others in final:
                rest = const
                for i, x in others:
                    rest += x * values[i]
                if a > 0:
                    hi = min(hi, (-rest) // a)
                else:
                    lo = max(lo, _ceil_div(rest, -a))
            return hi - lo + 1 if hi >= lo else 0
        n = 0
        checks = prune[depth]
        for value in range(ranges[depth][0], ranges[depth][1] + 1):
            values[depth] = value
            if all(const + sum(x * values[i] for i, x in others) <= 0 for const, others in checks):
                n += rec(depth + 1)
        return n

    return rec(0)
