"""Python code rewriting for the legacy formats: integer arithmetic in axis values (Kernel
Signature), renaming a global function by tokens, and reading a function's signature."""

from __future__ import annotations

import ast
import io
import tokenize
from typing import Optional


class NotInteger(Exception):
    pass


def int_eval(node: ast.AST) -> int:
    if isinstance(node, ast.Expression):
        return int_eval(node.body)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = int_eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = int_eval(node.left), int_eval(node.right)
        op = node.op
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            if abs(a) > 1 << 62 or abs(b) > 1 << 62:
                raise NotInteger("too large")
            return a * b
        if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod)):
            if b == 0:
                raise NotInteger("division by zero")
            if isinstance(op, ast.Div):
                if a % b:
                    raise NotInteger(f"{a} / {b} is not an integer")
                return a // b
            return a // b if isinstance(op, ast.FloorDiv) else a % b
        if isinstance(op, ast.Pow):
            if b < 0 or b > 64 or abs(a) > 1 << 32:
                raise NotInteger("power out of range")
            return a ** b
    raise NotInteger("only integers and + - * / // % ** are allowed")


def axis_value(text: str) -> Optional[int]:
    if len(text) > 200:
        return None
    try:
        return int_eval(ast.parse(text.strip(), mode="eval"))
    except (SyntaxError, ValueError, NotInteger, RecursionError, MemoryError):
        return None


# -- renaming identifiers in Python code with tokenize -------------------------------------

def rename_global(code: str, old: str, new: str) -> Optional[str]:
    """Rename the module-level function `old` and every plain use of the name (not attributes).

    Works on tokens, so strings and comments that mention `old` are left alone. None if the
    code cannot be tokenised.
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    lines = code.splitlines(keepends=True)
    edits: list[tuple[int, int]] = []
    prev = None  # previous significant token
    for tok in tokens:
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            continue
        if tok.type == tokenize.NAME and tok.string == old:
            after_dot = prev is not None and prev.type == tokenize.OP and prev.string == "."
            nested_def = (prev is not None and prev.type == tokenize.NAME and prev.string in ("def", "class")
                          and prev.start[1] > 0)
            if not after_dot and not nested_def:
                edits.append(tok.start)
        prev = tok
    for row, col in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[col + len(old):]
    return "".join(lines)


def top_function(code: str, name: str) -> Optional[ast.FunctionDef]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def uses_name(code: str, name: str) -> bool:
    try:
        return any(t.type == tokenize.NAME and t.string == name
                   for t in tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return False


def returns_dicts(fn: ast.FunctionDef) -> bool:
    """True if every `return` directly in fn returns a dict literal."""
    returns = []
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            returns.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return bool(returns) and all(isinstance(r.value, (ast.Dict, ast.DictComp)) for r in returns)


def positional_params(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]

