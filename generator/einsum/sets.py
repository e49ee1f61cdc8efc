"""Set expressions (renames, bits_per_value keys): Inputs, Outputs, Intermediates, All, Nothing,
tensor or rank-variable names and earlier renames, combined with & | ~ - and parentheses.

An expression compiles to a function of a name resolver, so one parse serves every Einsum
(~X is All - X). Precedence as in Python, whose set objects the reference implementation
evaluates: ~ binds tightest, then -, then &, then |.
"""

from __future__ import annotations

import re
from typing import Callable, Optional

from .expressions import MAX_EXPRESSION

KEYWORDS = ("Inputs", "Outputs", "Intermediates", "All", "Nothing")
_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)(\s*\(\s*\))?|([&|~\-()]))")

Resolver = Callable[[str], frozenset]
SetFunction = Callable[[Resolver], frozenset]


class SetError(ValueError):
    pass


def tokenize(text: str) -> list[str]:
    """Names and operators of a set expression ('Outputs()' is the name Outputs, as in the seed's prose)."""
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
    return tokens


def parse_set_expression(text: str) -> SetFunction:
    """Compile a set expression; the result maps a name resolver to a set."""
    parser = _Parser(tokenize(text))
    try:
        node = parser.union()
    except RecursionError:
        raise SetError("is nested too deeply") from None
    if parser.peek() is not None:
        raise SetError(f"has '{parser.peek()}' where an operator (& | -) belongs")
    return node


def _binary(op: str, left: SetFunction, right: SetFunction) -> SetFunction:
    if op == "|":
        return lambda res: left(res) | right(res)
    if op == "&":
        return lambda res: left(res) & right(res)
    return lambda res: left(res) - right(res)


class _Parser:
    """Recursive descent over the tokens, one method per precedence level."""

    def __init__(self, tokens: list[str]):
        self.tokens = tokens
        self.i = 0

    def peek(self) -> Optional[str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str:
        self.i += 1
        return self.tokens[self.i - 1]

    def _level(self, op: str, operand: Callable[[], SetFunction]) -> SetFunction:
        node = operand()
        while self.peek() == op:
            self.take()
            node = _binary(op, node, operand())
        return node

    def union(self) -> SetFunction:
        return self._level("|", self.inter)

    def inter(self) -> SetFunction:
        return self._level("&", self.diff)

    def diff(self) -> SetFunction:
        return self._level("-", self.unary)

    def unary(self) -> SetFunction:
        tok = self.peek()
        if tok == "~":
            self.take()
            inner = self.unary()
            return lambda res: res("All") - inner(res)
        if tok == "(":
            self.take()
            node = self.union()
            if self.peek() != ")":
                raise SetError("has an unclosed '('")
            self.take()
            return node
        if tok is None or tok in "&|-)":
            raise SetError("is incomplete: a name or '(' is missing" if tok is None
                           else f"has '{tok}' where a name or '(' belongs")
        name = self.take()
        return lambda res: res(name)
