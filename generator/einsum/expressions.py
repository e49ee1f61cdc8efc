"""Index expressions over rank variables: integers, + - * // and parentheses (k // 128, kh * 4 + g).

Parsed with Python's own parser and checked node by node, so nothing but those operations can
appear; `interval` bounds an expression over its variables' ranges, `linear` reads the
coefficients the iteration-space constraints need.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from typing import Mapping

MAX_EXPRESSION = 200  # characters; index expressions are short, this bounds parsing work


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
    return _parse(text)


@functools.lru_cache(maxsize=8192)
def _parse(text: str) -> Expr:
    # Cached: a dataset's cascades repeat a few thousand index expressions in ~100k accesses (one reading per
    # workload); an Expr is frozen and its node is never changed. An ExprError is raised again, not cached.
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


def linear(node: ast.AST) -> tuple[dict[str, int], int]:
    """coefficients, constant of a linear expression; ExprError if it is not linear."""
    if isinstance(node, ast.Name):
        return {node.id: 1}, 0
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {}, node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        c, k = linear(node.operand)
        s = -1 if isinstance(node.op, ast.USub) else 1
        return {v: s * x for v, x in c.items()}, s * k
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        (c1, k1), (c2, k2) = linear(node.left), linear(node.right)
        s = 1 if isinstance(node.op, ast.Add) else -1
        out = dict(c1)
        for v, x in c2.items():
            out[v] = out.get(v, 0) + s * x
        return {v: x for v, x in out.items() if x}, k1 + s * k2
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        (c1, k1), (c2, k2) = linear(node.left), linear(node.right)
        if c1 and c2:
            raise ExprError("multiplies two rank variables (not linear)")
        if c1:
            return {v: x * k2 for v, x in c1.items() if x * k2}, k1 * k2
        return {v: x * k1 for v, x in c2.items() if x * k1}, k1 * k2
    raise ExprError(f"uses '{_describe(node)}'; constraints are linear: variables, integers, + - * and ()")
