"""Einsum cascades in the workload-and-renames format (seed 003): render, parse, resolve.

A cascade file is a jinja2 template; rendered with a workload's axis values it is YAML that
describes Einsums over named ranks. This module turns that YAML (already checked against
schema/einsum.json) into a `Cascade` of plain values and reports everything it cannot make
sense of as `Problem`s (JSON pointer, message, hint), never as exceptions. Counting (MACs,
bytes) lives in roofline.py; the validator turns problems into diagnostics.

The format, as implemented here:
- projection: a list [m, k] means {M: m, K: k} (each entry one rank variable, the rank is
  its upper case); a map {RANK: expression} allows other rank names and expressions with
  integers, + - * // and parentheses (k // 128, kh * 4 + g).
- the size of a rank variable is the intersection of [0, size) of every rank it indexes
  directly and of its iteration_space_shape constraints ("0 <= p < 8", "kv <= q + 64").
  Constraints between two or more variables (causal masks) are counted point by point.
- set expressions (renames, bits_per_value keys): Inputs, Outputs, Intermediates, All,
  Nothing, tensor or rank-variable names, earlier renames, with & | ~ - and parentheses,
  evaluated per Einsum (~X is All - X). Intermediates are tensors some Einsum writes and
  another reads; inputs are only read, outputs only written.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional

import jinja2
import jinja2.sandbox

KEYWORDS = ("Inputs", "Outputs", "Intermediates", "All", "Nothing")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_EXPRESSION = 200  # characters; index expressions are short, this bounds parsing work
MAX_ENUMERATION = 4_000_000  # points visited when counting a coupled iteration space

# Bits of one value of each dtype (schema/common.json), the default bits_per_value of a
# definition's tensors.
DTYPE_BITS = {"float32": 32, "float16": 16, "bfloat16": 16, "float8_e4m3": 8, "float8_e5m2": 8,
              "float4_e2m1": 4, "int8": 8, "bool": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8}
# A dtype for tensors known only by their bits (intermediates, cascades without a definition).
BITS_DTYPE = {4: "float4_e2m1", 8: "float8_e4m3", 16: "bfloat16", 32: "float32", 64: "float32"}
DEFAULT_BITS = 32  # an intermediate no bits_per_value entry covers: the references compute in float32


@dataclass(frozen=True)
class Problem:
    pointer: str  # JSON pointer into the rendered YAML document
    message: str
    hint: str
    severity: str = "error"


def ptr(*parts: object) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


# -- rendering ------------------------------------------------------------------------------------
def render_template(template: str, values: Mapping[str, Any]) -> str:
    """Render a cascade template with axis values (jinja2, every name must be bound).

    Sandboxed: templates come from contributors and are rendered in CI.
    """
    return _compiled(template).render(dict(values))  # a dict, not **: an axis may be called 'self'


_ENV = jinja2.sandbox.SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


@functools.lru_cache(maxsize=256)
def _compiled(template: str) -> jinja2.Template:
    # One compile per template text: a cascade is rendered once per workload.
    return _ENV.from_string(template)


# -- integer expressions ---------------------------------------------------------------------------
class ExprError(ValueError):
    pass


@dataclass(frozen=True)
class Expr:
    """An index expression over rank variables: a parsed, checked Python expression."""

    text: str
    node: ast.AST = field(repr=False, compare=False)
    variables: tuple[str, ...]

    @property
    def is_variable(self) -> bool:
        return isinstance(self.node, ast.Name)

    def interval(self, bounds: Mapping[str, tuple[int, int]]) -> tuple[int, int]:
        """Smallest and largest value over the variables' inclusive bounds (interval arithmetic)."""
        return _interval(self.node, bounds)


_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)


def parse_expr(text: str) -> Expr:
    if not isinstance(text, str) or not text.strip():
        raise ExprError("is empty")
    if len(text) > MAX_EXPRESSION:
        raise ExprError(f"is longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ExprError("is not an expression") from None
    names: list[str] = []

    def walk(node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            if node.id not in names:
                names.append(node.id)
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            pass
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _BINOPS):
            walk(node.left)
            walk(node.right)
            if isinstance(node.op, ast.FloorDiv) and not (isinstance(node.right, ast.Constant)
                                                         and type(node.right.value) is int and node.right.value > 0):
                raise ExprError("divides by something other than a positive integer")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            walk(node.operand)
        else:
            raise ExprError(f"uses '{_describe(node)}'; only rank variables, integers, + - * // and () are allowed")

    try:
        walk(tree.body)
    except RecursionError:
        raise ExprError("is nested too deeply") from None
    return Expr(text.strip(), tree.body, tuple(names))


def _describe(node: ast.AST) -> str:
    try:
        return ast.unparse(node)[:40]
    except Exception:  # noqa: BLE001 - only for the message
        return type(node).__name__


def _interval(node: ast.AST, bounds: Mapping[str, tuple[int, int]]) -> tuple[int, int]:
    if isinstance(node, ast.Name):
        return bounds[node.id]
    if isinstance(node, ast.Constant):
        return node.value, node.value
    if isinstance(node, ast.UnaryOp):
        lo, hi = _interval(node.operand, bounds)
        return (-hi, -lo) if isinstance(node.op, ast.USub) else (lo, hi)
    a, b = _interval(node.left, bounds), _interval(node.right, bounds)
    if isinstance(node.op, ast.Add):
        return a[0] + b[0], a[1] + b[1]
    if isinstance(node.op, ast.Sub):
        return a[0] - b[1], a[1] - b[0]
    if isinstance(node.op, ast.Mult):
        products = [x * y for x in a for y in b]
        return min(products), max(products)
    return a[0] // b[0], a[1] // b[0]  # FloorDiv by a positive constant: monotone


def _linear(node: ast.AST) -> tuple[dict[str, int], int]:
    """coefficients, constant of a linear expression; ExprError if it is not linear."""
    if isinstance(node, ast.Name):
        return {node.id: 1}, 0
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {}, node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        c, k = _linear(node.operand)
        s = -1 if isinstance(node.op, ast.USub) else 1
        return {v: s * x for v, x in c.items()}, s * k
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        (c1, k1), (c2, k2) = _linear(node.left), _linear(node.right)
        s = 1 if isinstance(node.op, ast.Add) else -1
        out = dict(c1)
        for v, x in c2.items():
            out[v] = out.get(v, 0) + s * x
        return {v: x for v, x in out.items() if x}, k1 + s * k2
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        (c1, k1), (c2, k2) = _linear(node.left), _linear(node.right)
        if c1 and c2:
            raise ExprError("multiplies two rank variables (not linear)")
        if c1:
            return {v: x * k2 for v, x in c1.items() if x * k2}, k1 * k2
        return {v: x * k1 for v, x in c2.items() if x * k1}, k1 * k2
    raise ExprError(f"uses '{_describe(node)}'; constraints are linear: variables, integers, + - * and ()")


# -- iteration-space constraints ("0 <= m < 128", ISL's notation for one set) -------------------------
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
                (cl, kl), (cr, kr) = _linear(left), _linear(right)
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


def _tighten(bounds: dict[str, tuple[int, int]], c: Constraint) -> None:
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
    total = 1
    members: dict[str, list[str]] = {}
    for v in variables:
        members.setdefault(find(v), []).append(v)
    for root, vs in members.items():
        cs = [c for c in coupled if find(c.variables[0]) == root]
        if not cs:
            for v in vs:
                total *= size[v]
            continue
        vs = sorted(vs, key=lambda v: size[v])
        total *= _count_group(tuple(vs), tuple(tuple(bounds[v]) for v in vs), tuple(cs))
        if total == 0:
            return 0
    return total


@functools.lru_cache(maxsize=4096)
def _count_group(vs: tuple[str, ...], ranges: tuple[tuple[int, int], ...], cs: tuple[Constraint, ...]) -> int:
    """Points of one coupled group: enumerate all but the last variable, count the last in closed form.
    Cached: the Einsums of one cascade (QK, softmax, PV) share their masked iteration space."""
    outer, last = vs[:-1], len(vs) - 1
    work = 1
    for lo, hi in ranges[:-1]:
        work *= max(0, hi - lo + 1)
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


# -- set expressions --------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)(\s*\(\s*\))?|([&|~\-()]))")


class SetError(ValueError):
    pass


def parse_set_expression(text: str) -> Callable[[Callable[[str], frozenset]], frozenset]:
    """Compile a set expression; the result maps a name resolver to a set.

    Precedence as in Python (the reference implementation evaluates Python set objects):
    ~ binds tightest, then -, then &, then |.
    """
    if not isinstance(text, str):
        raise SetError("is not text")
    if len(text) > MAX_EXPRESSION:
        raise SetError(f"is longer than {MAX_EXPRESSION} characters")
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m:
            raise SetError(f"has an unexpected '{text[pos:].strip()[:10]}'; use names, & | ~ - and ()")
        tokens.append(m.group(1) or m.group(3))
        pos = m.end()
    if not tokens:
        raise SetError("is empty")
    i = 0

    def peek() -> Optional[str]:
        return tokens[i] if i < len(tokens) else None

    def take() -> str:
        nonlocal i
        i += 1
        return tokens[i - 1]

    def union():
        node = inter()
        while peek() == "|":
            take()
            left, right = node, inter()
            node = (lambda l, r: lambda res: l(res) | r(res))(left, right)
        return node

    def inter():
        node = diff()
        while peek() == "&":
            take()
            left, right = node, diff()
            node = (lambda l, r: lambda res: l(res) & r(res))(left, right)
        return node

    def diff():
        node = unary()
        while peek() == "-":
            take()
            left, right = node, unary()
            node = (lambda l, r: lambda res: l(res) - r(res))(left, right)
        return node

    def unary():
        tok = peek()
        if tok == "~":
            take()
            inner = unary()
            return lambda res: res("All") - inner(res)
        if tok == "(":
            take()
            node = union()
            if peek() != ")":
                raise SetError("has an unclosed '('")
            take()
            return node
        if tok is None or tok in "&|-)":
            raise SetError("is incomplete: a name or '(' is missing" if tok is None
                           else f"has '{tok}' where a name or '(' belongs")
        name = take()
        return lambda res: res(name)

    try:
        node = union()
    except RecursionError:
        raise SetError("is nested too deeply") from None
    if peek() is not None:
        raise SetError(f"has '{peek()}' where an operator (& | -) belongs")
    return node


# -- the cascade model -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Access:
    tensor: str
    ranks: tuple[str, ...]
    indices: tuple[Expr, ...]
    output: bool
    persistent: bool
    bits: Optional[int]  # the access's own bits_per_value
    pointer: str  # of the access in the document

    @property
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

    @property
    def inputs(self) -> tuple[Access, ...]:
        return tuple(a for a in self.accesses if not a.output)

    @property
    def outputs(self) -> tuple[Access, ...]:
        return tuple(a for a in self.accesses if a.output)

    @property
    def tensors(self) -> tuple[str, ...]:
        return tuple(a.tensor for a in self.accesses)

    @property
    def rank_variables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v for a in self.accesses for v in a.variables))

    @property
    def reduced_variables(self) -> tuple[str, ...]:
        """Rank variables that index no output: summed over."""
        out = {v for a in self.outputs for v in a.variables}
        return tuple(v for v in self.rank_variables if v not in out)


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

    @property
    def tensors(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.tensor for e in self.einsums for a in e.accesses))

    @property
    def written(self) -> frozenset:
        return frozenset(a.tensor for e in self.einsums for a in e.outputs)

    @property
    def read(self) -> frozenset:
        return frozenset(a.tensor for e in self.einsums for a in e.inputs)

    @property
    def intermediates(self) -> frozenset:
        return self.written & self.read

    def role(self, tensor: str) -> str:
        w, r = tensor in self.written, tensor in self.read
        return "intermediate" if w and r else "output" if w else "input"

    def inputs(self) -> tuple[str, ...]:
        return tuple(t for t in self.tensors if self.role(t) == "input")

    def outputs(self) -> tuple[str, ...]:
        return tuple(t for t in self.tensors if self.role(t) == "output")


def _renames(value: Any, pointer: str) -> tuple[Rename, ...]:
    if isinstance(value, dict):
        return tuple(Rename(str(k), v, None, ptr_join(pointer, k)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(Rename(r["name"], r["source"], r.get("expected_count"), f"{pointer}/{i}")
                     for i, r in enumerate(value))
    return ()


def ptr_join(pointer: str, key: object) -> str:
    return pointer + ptr(key)


class _Builder:
    def __init__(self, data: Mapping[str, Any]):
        self.data = data
        self.problems: list[Problem] = []

    def problem(self, pointer: str, message: str, hint: str, severity: str = "error") -> None:
        self.problems.append(Problem(pointer, message, hint, severity))

    def build(self) -> Optional[Cascade]:
        w = self.data["workload"]
        rank_sizes = dict(w.get("rank_sizes") or {})
        global_shape = dict(w.get("iteration_space_shape") or {})
        global_constraints: list[tuple[str, Constraint]] = []  # (key variable, constraint)
        for var, text in global_shape.items():
            p = ptr("workload", "iteration_space_shape", var)
            try:
                parsed = parse_constraints(text)
            except ExprError as e:
                self.problem(p, f"iteration_space_shape of '{var}': '{text}' {e}",
                             f"write a condition such as '0 <= {var} < 128'")
                continue
            global_constraints.extend((var, c) for c in parsed)
            if var not in {v for c in parsed for v in c.variables}:
                self.problem(p, f"iteration_space_shape of '{var}' does not mention '{var}': '{text}'",
                             f"write a condition on {var}, such as '0 <= {var} < 128'")
        einsums: list[Einsum] = []
        names: dict[str, int] = {}
        for i, e in enumerate(w["einsums"]):
            built = self.einsum(i, e, rank_sizes, global_constraints)
            if built is None:
                continue
            if built.name in names:
                self.problem(ptr("workload", "einsums", i, "name"),
                             f"Einsum name '{built.name}' is used twice (first at einsums[{names[built.name]}])",
                             "give every Einsum a unique name")
            names.setdefault(built.name, i)
            einsums.append(built)
        used_vars = {v for e in einsums for v in e.rank_variables}
        for var in global_shape:
            if var not in used_vars and einsums:
                self.problem(ptr("workload", "iteration_space_shape", var),
                             f"iteration_space_shape names '{var}', which no projection uses",
                             "remove it, or fix the rank variable's name", "warning")
        self.check_shapes(einsums)
        bits = []
        for key, value in (w.get("bits_per_value") or {}).items():
            try:
                parse_set_expression(key)
                bits.append((key, value))
            except SetError as e:
                self.problem(ptr("workload", "bits_per_value", key), f"bits_per_value key '{key}' {e}",
                             "keys are set expressions such as All, Inputs, Intermediates or a tensor name")
        blocks = []
        for i, b in enumerate((self.data.get("renames") or {}).get("einsums") or []):
            p = ptr("renames", "einsums", i)
            blocks.append(RenameBlock(b["name"], _renames(b.get("tensor_accesses"), p + "/tensor_accesses"),
                                      _renames(b.get("rank_variables"), p + "/rank_variables"), p))
            if b["name"] != "default" and b["name"] not in {e["name"] for e in w["einsums"]}:
                self.problem(p + "/name", f"renames for Einsum '{b['name']}', which the workload does not have",
                             "name an Einsum of the workload, or 'default' for renames that apply to every Einsum"
                             + _did_you_mean(b["name"], names))
        if any(p.severity == "error" for p in self.problems):
            return None
        return Cascade(tuple(einsums), rank_sizes, global_shape, tuple(bits), int(w.get("n_instances", 1)),
                       tuple(blocks), self.data)

    def einsum(self, i: int, e: Mapping[str, Any], rank_sizes: Mapping[str, int],
               global_constraints: list[tuple[str, Constraint]]) -> Optional[Einsum]:
        p = ptr("workload", "einsums", i)
        name = e["name"]
        sizes = {**rank_sizes, **(e.get("rank_sizes") or {})}
        accesses: list[Access] = []
        seen: dict[str, int] = {}
        ok = True
        for j, a in enumerate(e["tensor_accesses"]):
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
        if not ok:
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
        constraints: list[Constraint] = []
        local = e.get("iteration_space_shape") or []
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
        # Global constraints of a variable of this Einsum apply to it; the parts that name
        # variables it does not have cannot (the seed appends them by their key variable).
        for key, c in global_constraints:
            if key in variables and all(v in variables for v in c.variables):
                constraints.append(c)
        bounds: dict[str, list] = {v: [None, None] for v in variables}
        for a in accesses:
            for rank, idx in zip(a.ranks, a.indices):
                if idx.is_variable:
                    lo, hi = bounds[idx.text]
                    size = sizes[rank]
                    bounds[idx.text] = [0 if lo is None else max(lo, 0), size - 1 if hi is None else min(hi, size - 1)]
        b2 = {v: (lo, hi) for v, (lo, hi) in bounds.items()}
        for c in constraints:
            if len(c.coefs) == 1:
                _tighten(b2, c)
        for v, (lo, hi) in b2.items():
            if lo is None or hi is None:
                where = [a.tensor for a in accesses if v in a.variables]
                self.problem(p, f"rank variable '{v}' of Einsum '{name}' has no " +
                             ("lower bound" if lo is None and hi is not None else
                              "upper bound" if hi is None and lo is not None else "size") +
                             f": it only appears inside expressions (in {', '.join(where)})",
                             f"bound it in workload.iteration_space_shape, e.g. {v}: 0 <= {v} < 16")
                return None
        n = int(e.get("n_instances", 1))
        return Einsum(name, tuple(accesses), bool(e.get("is_copy_operation", False)), n, sizes,
                      tuple(constraints), _renames(e.get("renames"), p + "/renames"), p, b2)

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
                             f"add '{rank}: <size>' to workload.rank_sizes" + _did_you_mean(rank, sizes)
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


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def parse_cascade(data: Mapping[str, Any]) -> tuple[Optional[Cascade], list[Problem]]:
    """A cascade from its rendered, schema-valid YAML; None when it has errors."""
    b = _Builder(data)
    try:
        cascade = b.build()
    except ExprError as e:  # counting-time limits surface while building bounds
        b.problem("", f"iteration space {e}", "simplify the iteration_space_shape constraints")
        cascade = None
    return cascade, b.problems


# -- renames ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RenameResult:
    einsum: str
    rename: Rename
    members: tuple[str, ...]  # sorted


def _tensor_sets(cascade: Cascade, e: Einsum) -> dict[str, frozenset]:
    tensors = frozenset(e.tensors)
    return {"All": tensors, "Nothing": frozenset(), "Inputs": frozenset(a.tensor for a in e.inputs),
            "Outputs": frozenset(a.tensor for a in e.outputs), "Intermediates": tensors & cascade.intermediates}


def _variable_sets(cascade: Cascade, e: Einsum) -> dict[str, frozenset]:
    def of(accs) -> frozenset:
        return frozenset(v for a in accs for v in a.variables)
    return {"All": frozenset(e.rank_variables), "Nothing": frozenset(), "Inputs": of(e.inputs),
            "Outputs": of(e.outputs), "Intermediates": of(a for a in e.accesses if a.tensor in cascade.intermediates)}


def resolve_renames(cascade: Cascade) -> tuple[list[RenameResult], list[Problem]]:
    """Evaluate every rename of every Einsum (default block, overridden per Einsum); check expected_count."""
    results: list[RenameResult] = []
    problems: list[Problem] = []
    blocks = {b.name: b for b in cascade.rename_blocks}
    default = blocks.get("default")
    reported: set[tuple[str, str]] = set()  # (pointer, message): a bad default is one problem, not one per Einsum
    for e in cascade.einsums:
        own = blocks.get(e.name)
        for kind, sets, names in (("tensor_accesses", _tensor_sets(cascade, e), set(cascade.tensors)),
                                  ("rank_variables", _variable_sets(cascade, e),
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


# -- bits ---------------------------------------------------------------------------------------------------
def access_bits(cascade: Cascade, dtypes: Mapping[str, str]) -> dict[tuple[str, str], tuple[int, str]]:
    """(einsum, tensor) -> (bits per value, where it came from).

    The access's own bits_per_value wins, then the last matching workload bits_per_value key,
    then the tensor's dtype in the definition, then DEFAULT_BITS.
    """
    out: dict[tuple[str, str], tuple[int, str]] = {}
    compiled = []
    for key, bits in cascade.bits_per_value:
        try:
            compiled.append((key, bits, parse_set_expression(key)))
        except SetError:
            continue
    all_tensors = set(cascade.tensors)
    for e in cascade.einsums:
        sets = _tensor_sets(cascade, e)

        def resolve(name: str) -> frozenset:
            if name in sets:
                return sets[name]
            if name in all_tensors:
                return frozenset({name}) & sets["All"]
            raise SetError(f"names '{name}', which is no tensor of the workload or set keyword")

        matched: dict[str, tuple[int, str]] = {}
        for key, bits, fn in compiled:
            try:
                for t in fn(resolve):
                    matched[t] = (bits, f"bits_per_value {key}")
            except SetError:
                continue
        for a in e.accesses:
            if a.bits is not None:
                out[(e.name, a.tensor)] = (a.bits, "access")
            elif a.tensor in matched:
                out[(e.name, a.tensor)] = matched[a.tensor]
            elif a.tensor in dtypes:
                out[(e.name, a.tensor)] = (DTYPE_BITS.get(dtypes[a.tensor], DEFAULT_BITS), f"dtype {dtypes[a.tensor]}")
            else:
                out[(e.name, a.tensor)] = (DEFAULT_BITS, "default")
    return out


def bits_problems(cascade: Cascade) -> list[Problem]:
    """bits_per_value keys that name unknown things."""
    problems = []
    all_tensors = set(cascade.tensors)
    for key, _ in cascade.bits_per_value:
        try:
            fn = parse_set_expression(key)
        except SetError:
            continue
        for e in cascade.einsums:
            sets = _tensor_sets(cascade, e)

            def resolve(name: str) -> frozenset:
                if name in sets:
                    return sets[name]
                if name in all_tensors:
                    return frozenset()
                raise SetError(f"names '{name}', which is no tensor of the workload or set keyword")
            try:
                fn(resolve)
            except SetError as ex:
                problems.append(Problem(ptr("workload", "bits_per_value", key), f"bits_per_value key '{key}' {ex}",
                                        "keys are set expressions: " + ", ".join(KEYWORDS) + " or tensor names"
                                        + _did_you_mean(key, all_tensors)))
                break
    return problems


# -- plain YAML (for AccelForge) ----------------------------------------------------------------------------
def plain_document(cascade: Cascade, dtypes: Mapping[str, str]) -> dict:
    """The rendered cascade as a plain workload-and-renames document, with every access's
    bits_per_value written out (a reader without the definition cannot know the dtypes)."""
    import copy

    data = copy.deepcopy(dict(cascade.data))
    bits = access_bits(cascade, dtypes)
    for e_doc, e in zip(data["workload"]["einsums"], cascade.einsums):
        for a_doc in e_doc["tensor_accesses"]:
            a_doc["bits_per_value"] = bits[(e.name, a_doc["name"])][0]
    return data
