"""From a rendered, schema-valid cascade document to a `Cascade`, with every problem found.

- projection: a list [m, k] means {M: m, K: k} (each entry one rank variable, the rank is its
  upper case); a map {RANK: expression} allows other rank names and index expressions.
- the size of a rank variable is the intersection of [0, size) of every rank it indexes
  directly and of its iteration_space_shape constraints ("0 <= p < 8", "kv <= q + 64").

Problems are collected in document order, never raised: the validator reports them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional

from .constraints import Constraint, parse_constraints, tighten
from .expressions import Expr, ExprError, parse_expr
from .model import Access, Cascade, Einsum, Rename, RenameBlock
from .problems import Problem, did_you_mean, ptr, ptr_join
from .sets import KEYWORDS, SetError, parse_set_expression

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
GlobalConstraints = list[tuple[str, Constraint]]  # (key variable, constraint)


def parse_cascade(data: Mapping[str, Any]) -> tuple[Optional[Cascade], list[Problem]]:
    """A cascade from its rendered, schema-valid YAML; None when it has errors."""
    return sized(cascade_structure(data), data)


@dataclass(frozen=True)
class Structure:
    """What a cascade document gives whatever the values of its workload rank_sizes (their names count):
    the renderings of one template mostly differ in those alone, so a reader may build this once and size it
    per rendering (`sized`). `before` and `after` are the problems found before and after the one size check
    (a tensor's one shape, `check_shapes`); `einsums` holds each Einsum with its own rank_sizes and what its
    bounds are made of (`_bounds_plan`), or None when building stopped at an error."""

    before: tuple[Problem, ...]
    after: tuple[Problem, ...]
    einsums: Optional[tuple[tuple[Einsum, Mapping[str, int], tuple], ...]]
    global_shape: Mapping[str, str] = field(default_factory=dict)
    bits: tuple[tuple[str, int], ...] = ()
    n_instances: int = 1
    blocks: tuple[RenameBlock, ...] = ()


def cascade_structure(data: Mapping[str, Any]) -> Structure:
    """The size-independent part of parsing a rendered, schema-valid cascade."""
    b = _Builder(data)
    try:
        return b.structure()
    except ExprError as e:  # counting-time limits surface while building bounds
        b.problem("", f"iteration space {e}", "simplify the iteration_space_shape constraints")
        return Structure(tuple(b.problems), (), None)


def sized(s: Structure, data: Mapping[str, Any]) -> tuple[Optional[Cascade], list[Problem]]:
    """The cascade of `s` with the workload rank sizes of `data`: the document `s` was built from, or one that
    differs from it in those sizes' values alone; None when it has errors."""
    if s.einsums is None:
        return None, list(s.before)
    rank_sizes = dict(data["workload"].get("rank_sizes") or {})
    einsums = []
    for e, own, plan in s.einsums:
        sizes = {**rank_sizes, **own}
        # Bounds need no check again: whether a variable has each bound does not depend on the sizes.
        einsums.append(e if sizes == e.rank_sizes else replace(e, rank_sizes=sizes, bounds=_bounds(plan, sizes)))
    shapes = _Builder(data)
    shapes.check_shapes(einsums)
    problems = [*s.before, *shapes.problems, *s.after]
    if any(p.severity == "error" for p in problems):
        return None, problems
    return Cascade(tuple(einsums), rank_sizes, s.global_shape, s.bits, s.n_instances, s.blocks, data), problems


def _renames(value: Any, pointer: str) -> tuple[Rename, ...]:
    if isinstance(value, dict):
        return tuple(Rename(str(k), v, None, ptr_join(pointer, k)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(Rename(r["name"], r["source"], r.get("expected_count"), f"{pointer}/{i}")
                     for i, r in enumerate(value))
    return ()


class _Builder:
    def __init__(self, data: Mapping[str, Any]):
        self.data = data
        self.problems: list[Problem] = []

    def problem(self, pointer: str, message: str, hint: str, severity: str = "error") -> None:
        self.problems.append(Problem(pointer, message, hint, severity))

    # -- the document ----------------------------------------------------------------------------
    def structure(self) -> Structure:
        w = self.data["workload"]
        rank_sizes = dict(w.get("rank_sizes") or {})
        global_shape = dict(w.get("iteration_space_shape") or {})
        global_constraints = self.global_constraints(global_shape)
        einsums = self.einsums(w["einsums"], rank_sizes, global_constraints)
        used_vars = {v for e, *_ in einsums for v in e.rank_variables}
        for var in global_shape:
            if var not in used_vars and einsums:
                self.problem(ptr("workload", "iteration_space_shape", var),
                             f"iteration_space_shape names '{var}', which no projection uses",
                             "remove it, or fix the rank variable's name", "warning")
        before = tuple(self.problems)
        bits = self.bits_per_value(w.get("bits_per_value") or {})
        blocks = self.rename_blocks(w, list(dict.fromkeys(e.name for e, *_ in einsums)))
        return Structure(before, tuple(self.problems[len(before):]), tuple(einsums), global_shape, tuple(bits),
                         int(w.get("n_instances", 1)), tuple(blocks))

    def global_constraints(self, global_shape: Mapping[str, str]) -> GlobalConstraints:
        out: GlobalConstraints = []
        for var, text in global_shape.items():
            p = ptr("workload", "iteration_space_shape", var)
            try:
                parsed = parse_constraints(text)
            except ExprError as e:
                self.problem(p, f"iteration_space_shape of '{var}': '{text}' {e}",
                             f"write a condition such as '0 <= {var} < 128'")
                continue
            out.extend((var, c) for c in parsed)
            if var not in {v for c in parsed for v in c.variables}:
                self.problem(p, f"iteration_space_shape of '{var}' does not mention '{var}': '{text}'",
                             f"write a condition on {var}, such as '0 <= {var} < 128'")
        return out

    def einsums(self, docs: list, rank_sizes: Mapping[str, int],
                global_constraints: GlobalConstraints) -> list[tuple[Einsum, Mapping[str, int], tuple]]:
        einsums: list[tuple[Einsum, Mapping[str, int], tuple]] = []
        names: dict[str, int] = {}
        for i, e in enumerate(docs):
            built = self.einsum(i, e, rank_sizes, global_constraints)
            if built is None:
                continue
            if built.name in names:
                self.problem(ptr("workload", "einsums", i, "name"),
                             f"Einsum name '{built.name}' is used twice (first at einsums[{names[built.name]}])",
                             "give every Einsum a unique name")
            names.setdefault(built.name, i)
            einsums.append((built, dict(e.get("rank_sizes") or {}), _bounds_plan(built.accesses, built.constraints)))
        return einsums

    def bits_per_value(self, entries: Mapping[str, int]) -> list[tuple[str, int]]:
        bits = []
        for key, value in entries.items():
            try:
                parse_set_expression(key)
                bits.append((key, value))
            except SetError as e:
                self.problem(ptr("workload", "bits_per_value", key), f"bits_per_value key '{key}' {e}",
                             "keys are set expressions such as All, Inputs, Intermediates or a tensor name")
        return bits

    def rename_blocks(self, w: Mapping[str, Any], built: list[str]) -> list[RenameBlock]:
        blocks = []
        for i, b in enumerate((self.data.get("renames") or {}).get("einsums") or []):
            p = ptr("renames", "einsums", i)
            blocks.append(RenameBlock(b["name"], _renames(b.get("tensor_accesses"), p + "/tensor_accesses"),
                                      _renames(b.get("rank_variables"), p + "/rank_variables"), p))
            if b["name"] != "default" and b["name"] not in {e["name"] for e in w["einsums"]}:
                self.problem(p + "/name", f"renames for Einsum '{b['name']}', which the workload does not have",
                             "name an Einsum of the workload, or 'default' for renames that apply to every Einsum"
                             + did_you_mean(b["name"], built))
        return blocks

    # -- one Einsum ------------------------------------------------------------------------------
    def einsum(self, i: int, e: Mapping[str, Any], rank_sizes: Mapping[str, int],
               global_constraints: GlobalConstraints) -> Optional[Einsum]:
        p = ptr("workload", "einsums", i)
        name = e["name"]
        sizes = {**rank_sizes, **(e.get("rank_sizes") or {})}
        accesses = self.accesses(p, name, e["tensor_accesses"], sizes)
        if accesses is None:
            return None
        if not any(a.output for a in accesses):
            self.problem(p + "/tensor_accesses", f"Einsum '{name}' has no output",
                         "mark the tensor it computes with 'output: true'")
            return None
        if e.get("is_copy_operation") and not any(not a.output for a in accesses):
            self.problem(p + "/is_copy_operation", f"copy Einsum '{name}' reads no tensor",
                         "a copy moves an input tensor to its output: list the input")
            return None
        variables = list(dict.fromkeys(v for a in accesses for v in a.variables))
        constraints = self.local_constraints(p, name, e.get("iteration_space_shape") or [], variables)
        if constraints is None:
            return None
        # Global constraints of a variable of this Einsum apply to it; the parts that name
        # variables it does not have cannot (the seed appends them by their key variable).
        for key, c in global_constraints:
            if key in variables and all(v in variables for v in c.variables):
                constraints.append(c)
        bounds = self.bounds(p, name, accesses, sizes, constraints)
        if bounds is None:
            return None
        n = int(e.get("n_instances", 1))
        built = Einsum(name, tuple(accesses), bool(e.get("is_copy_operation", False)), n, sizes,
                       tuple(constraints), _renames(e.get("renames"), p + "/renames"), p, bounds, e.get("compute_dtype"))
        if built.compute_dtype is not None and not built.is_contraction:
            self.problem(p + "/compute_dtype", f"Einsum '{name}' states compute_dtype {built.compute_dtype}, but it is "
                                               "no contraction (it must sum over a rank variable and read two or more "
                                               "tensors)",
                         "remove compute_dtype: copies are free, and element-wise work and single-input reductions "
                         "run on the float32 vector units")
            return None
        return built

    def accesses(self, p: str, name: str, docs: list, sizes: Mapping[str, int]) -> Optional[list[Access]]:
        """The Einsum's tensor accesses; None (problems reported) when any is wrong."""
        accesses: list[Access] = []
        seen: dict[str, int] = {}
        ok = True
        for j, a in enumerate(docs):
            pa = f"{p}/tensor_accesses/{j}"
            t = a["name"]
            if t in KEYWORDS:
                self.problem(pa + "/name", f"tensor name '{t}' is a set keyword",
                             f"rename the tensor: {', '.join(KEYWORDS)} name sets in renames")
                ok = False
                continue
            if t in seen:
                self.problem(pa + "/name", f"tensor '{t}' is accessed twice by Einsum '{name}' "
                                           f"(also tensor_accesses[{seen[t]}])",
                             "list each tensor once per Einsum; use a copy Einsum to read a tensor twice")
                ok = False
                continue
            seen[t] = j
            acc = self.access(pa, name, a, sizes)
            if acc is None:
                ok = False
            else:
                accesses.append(acc)
        return accesses if ok else None

    def local_constraints(self, p: str, name: str, local: Any, variables: list[str]) -> Optional[list[Constraint]]:
        """The Einsum's own iteration_space_shape (a map or a list); None (reported) when one is wrong."""
        constraints: list[Constraint] = []
        items = list(local.items()) if isinstance(local, dict) else [(None, t) for t in local]
        for k, (key, text) in enumerate(items):
            pc = f"{p}/iteration_space_shape/" + (ptr(key)[1:] if key is not None else str(k))
            try:
                cs = parse_constraints(text)
            except ExprError as ex:
                self.problem(pc, f"iteration_space_shape of Einsum '{name}': '{text}' {ex}",
                             "write a condition such as '0 <= m < 128'")
                return None
            unknown = [v for c in cs for v in c.variables if v not in variables]
            if unknown:
                self.problem(pc, f"iteration_space_shape of Einsum '{name}' names '{unknown[0]}', "
                                 f"which none of its projections uses",
                             f"its rank variables are {', '.join(variables) or 'none'}")
                return None
            constraints.extend(cs)
        return constraints

    def bounds(self, p: str, name: str, accesses: list[Access], sizes: Mapping[str, int],
               constraints: list[Constraint]) -> Optional[dict[str, tuple[int, int]]]:
        """Inclusive range of every rank variable; None (reported) when a variable has no lower or upper bound."""
        b2 = _bounds(_bounds_plan(accesses, constraints), sizes)
        for v, (lo, hi) in b2.items():
            if lo is None or hi is None:
                where = [a.tensor for a in accesses if v in a.variables]
                self.problem(p, f"rank variable '{v}' of Einsum '{name}' has no " +
                             ("lower bound" if lo is None and hi is not None else
                              "upper bound" if hi is None and lo is not None else "size") +
                             f": it only appears inside expressions (in {', '.join(where)})",
                             f"bound it in workload.iteration_space_shape, e.g. {v}: 0 <= {v} < 16")
                return None
        return b2

    def access(self, pa: str, einsum: str, a: Mapping[str, Any], sizes: Mapping[str, int]) -> Optional[Access]:
        proj = a["projection"]
        ranks: list[str] = []
        indices: list[Expr] = []
        items = []
        if isinstance(proj, list):
            for k, var in enumerate(proj):
                if not _IDENT.match(var):
                    self.problem(f"{pa}/projection/{k}",
                                 f"projection entry '{var}' of tensor '{a['name']}' is not a single rank variable",
                                 "a list projection holds rank variables (its ranks are their upper case); "
                                 "use a map {RANK: expression} for expressions")
                    return None
                items.append((var.upper(), var, f"{pa}/projection/{k}"))
        else:
            items = [(rank, text, f"{pa}/projection" + ptr(rank)) for rank, text in proj.items()]
        for rank, text, pk in items:
            if rank not in sizes:
                self.problem(pk, f"rank '{rank}' of tensor '{a['name']}' (Einsum '{einsum}') has no size",
                             f"add '{rank}: <size>' to workload.rank_sizes" + did_you_mean(rank, sizes)
                             + (f" (known ranks: {', '.join(sizes)})" if sizes else ""))
                return None
            try:
                expr = parse_expr(text)
            except ExprError as e:
                self.problem(pk, f"index '{text}' of rank '{rank}' of tensor '{a['name']}' {e}",
                             "write a rank variable or an expression such as 'kh * 4 + g' or 'k // 128'")
                return None
            if not _IDENT.match(rank):
                self.problem(pk, f"rank name '{rank}' is not an identifier",
                             "rank names are letters, digits and '_' (usually upper case)")
                return None
            ranks.append(rank)
            indices.append(expr)
        return Access(a["name"], tuple(ranks), tuple(indices), bool(a.get("output", False)),
                      bool(a.get("persistent", False)), a.get("bits_per_value"), pa)

    def check_shapes(self, einsums: list[Einsum]) -> None:
        """A tensor is indexed by the same ranks everywhere (it has one shape)."""
        first: dict[str, tuple[Einsum, Access]] = {}
        for e in einsums:
            for a in e.accesses:
                if a.tensor not in first:
                    first[a.tensor] = (e, a)
                    continue
                e0, a0 = first[a.tensor]
                if a0.ranks != a.ranks:
                    self.problem(a.pointer + "/projection",
                                 f"tensor '{a.tensor}' has ranks [{', '.join(a.ranks)}] in Einsum '{e.name}' but "
                                 f"[{', '.join(a0.ranks)}] in Einsum '{e0.name}'",
                                 "a tensor has one shape: project into the same ranks, in the same order")
                elif any(e.rank_sizes[r] != e0.rank_sizes[r] for r in a.ranks):
                    r = next(r for r in a.ranks if e.rank_sizes[r] != e0.rank_sizes[r])
                    self.problem(a.pointer + "/projection",
                                 f"rank '{r}' of tensor '{a.tensor}' has size {e.rank_sizes[r]} in Einsum "
                                 f"'{e.name}' but {e0.rank_sizes[r]} in Einsum '{e0.name}'",
                                 "a tensor has one shape: give the rank one size")


def _bounds_plan(accesses, constraints) -> tuple:
    """What an Einsum's bounds are made of, apart from the sizes: its rank variables, the (variable, rank) of
    every rank a variable indexes directly, in order, and its one-variable constraints."""
    variables = tuple(dict.fromkeys(v for a in accesses for v in a.variables))
    direct = tuple((idx.node.id, rank) for a in accesses for rank, idx in zip(a.ranks, a.indices) if idx.is_variable)
    return variables, direct, tuple(c for c in constraints if len(c.coefs) == 1)


def _bounds(plan: tuple, sizes: Mapping[str, int]) -> dict[str, tuple[Optional[int], Optional[int]]]:
    """Inclusive range of every rank variable: the ranks it indexes directly, then its one-variable constraints
    (None where neither bounds it: that depends on which ranks and constraints there are, not on the sizes)."""
    variables, direct, single = plan
    bounds: dict[str, list] = {v: [None, None] for v in variables}
    for var, rank in direct:
        lo, hi = bounds[var]
        size = sizes[rank]
        bounds[var] = [0 if lo is None else max(lo, 0), size - 1 if hi is None else min(hi, size - 1)]
    b2 = {v: (lo, hi) for v, (lo, hi) in bounds.items()}
    for c in single:
        tighten(b2, c)
    return b2
