"""Static checks of Python text: constraints (expressions) and reference/solution functions."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from types import CodeType
from typing import Optional

# Node types a constraint may use: arithmetic, comparisons, boolean logic, names, numbers.
_CONSTRAINT_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
                     ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
                     ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Name, ast.Load,
                     ast.Constant, ast.Attribute, ast.Subscript, ast.Call, ast.Tuple, ast.Slice)
# Calls a constraint may make (on inputs, e.g. 'kv_indptr.shape[0] == batch_size + 1').
_CONSTRAINT_CALLS = {"len", "min", "max", "abs"}
MAX_EXPONENT = 64


@dataclass(frozen=True)
class ParsedConstraint:
    tree: Optional[ast.Expression]
    names: frozenset[str]
    problem: str = ""  # why it is not a valid constraint, '' if it is
    # Compiled once when the constraint is pure arithmetic over names (no attributes or
    # subscripts, which need tensors): only those are evaluated during validation.
    code: Optional[CodeType] = None


# Every workload checks every constraint of its definition: parse and compile each text once.
@lru_cache(maxsize=4096)
def parse_constraint(text: str) -> ParsedConstraint:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        return ParsedConstraint(None, frozenset(), f"is not a Python expression ({e.msg})")
    except ValueError as e:  # e.g. NUL bytes, or a lone surrogate such as '\ud800'
        return ParsedConstraint(None, frozenset(), f"is not a Python expression ({e})")
    except (RecursionError, MemoryError):  # the parser's own limits on nesting
        return ParsedConstraint(None, frozenset(), "is nested too deeply to parse")
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, _CONSTRAINT_NODES):
            return ParsedConstraint(None, frozenset(), f"uses {type(node).__name__}, which constraints do not allow")
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in _CONSTRAINT_CALLS) and not isinstance(
                    node.func, ast.Attribute):
                return ParsedConstraint(None, frozenset(), "calls a function other than len/min/max/abs")
        if isinstance(node, ast.Name) and node.id not in _CONSTRAINT_CALLS:
            names.add(node.id)
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool)):
            return ParsedConstraint(None, frozenset(), f"uses the constant {node.value!r}; only numbers are allowed")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return ParsedConstraint(None, frozenset(), f"uses the private attribute '{node.attr}'")
        # Constraints are evaluated during validation: keep powers small so a contributor's
        # '9**9**9**9' cannot hang CI.
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            exp = node.right
            if not (isinstance(exp, ast.Constant) and isinstance(exp.value, int) and 0 <= exp.value <= MAX_EXPONENT):
                return ParsedConstraint(None, frozenset(), f"raises to a power that is not a constant 0..{MAX_EXPONENT}")
            if isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Pow):
                return ParsedConstraint(None, frozenset(), "nests powers")
    arithmetic = not any(isinstance(n, (ast.Attribute, ast.Subscript)) for n in ast.walk(tree))
    try:
        code = compile(tree, "<constraint>", "eval") if arithmetic else None
    except (RecursionError, MemoryError, ValueError):  # the compiler's own limits
        return ParsedConstraint(None, frozenset(), "is nested too deeply to compile")
    return ParsedConstraint(tree, frozenset(names), code=code)


def evaluate_constraint(parsed: ParsedConstraint, values: dict[str, int]) -> Optional[bool]:
    """Truth of an axes-only constraint under `values`; None if it cannot be decided.

    Only arithmetic over axis values is evaluated: a constraint that looks into tensors
    (attributes, subscripts) is decided by the benchmark, with the tensors at hand.
    """
    if parsed.code is None or not parsed.names <= values.keys():
        return None
    try:
        result = eval(parsed.code, {"__builtins__": {}, "len": len, "min": min, "max": max, "abs": abs}, dict(values))
    except Exception:  # noqa: BLE001 - e.g. division by zero with a bad axis value: undecidable here
        return None
    return bool(result)


@dataclass(frozen=True)
class FunctionInfo:
    params: tuple[str, ...]  # positional parameter names
    has_varargs: bool
    line: int  # line of the 'def' within the text
    return_keys: tuple[frozenset[str], ...]  # key sets of `return {...}` dict literals


def parse_module(text: str) -> tuple[Optional[ast.Module], str, int]:
    """(tree, problem, line): the parsed module, or why it does not parse and where."""
    try:
        return ast.parse(text), "", 0
    except SyntaxError as e:
        return None, f"does not parse: {e.msg}", e.lineno or 0
    except ValueError as e:  # e.g. NUL bytes
        return None, f"does not parse: {e}", 0
    except (RecursionError, MemoryError):  # the parser's own limits on nesting
        return None, "does not parse: nested too deeply", 0


@dataclass(frozen=True)
class ModuleFacts:
    """What the checks read from a module's text: why it does not parse and where (problem '' when it does),
    the top-level function asked for (None if absent), and the line of its first use of torch.nn.functional
    (0 if none, or not asked)."""

    problem: str
    line: int
    function: Optional[FunctionInfo]
    torch_functional: int = 0


# Solutions and references repeat their texts (the bundled dataset: 1,366 entry files are 403 texts, 653
# references 211), and parsing and walking them is most of what their checks cost: once per text. The facts
# are kept, not the trees, which are large.
@lru_cache(maxsize=4096)
def module_facts(text: str, function: str, torch_functional: bool = False) -> ModuleFacts:
    tree, problem, line = parse_module(text)
    if tree is None:
        return ModuleFacts(problem, line, None)
    return ModuleFacts("", 0, find_function(tree, function), uses_torch_functional(tree) if torch_functional else 0)


def find_function(tree: ast.Module, name: str) -> Optional[FunctionInfo]:
    """The top-level function `name` (the last definition wins, as in Python)."""
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node
    if found is None:
        return None
    args = found.args
    params = tuple(a.arg for a in args.posonlyargs + args.args)
    keys = []
    for node in ast.walk(found):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.value.keys):
                keys.append(frozenset(k.value for k in node.value.keys))
    return FunctionInfo(params, args.vararg is not None, found.lineno, tuple(keys))


def uses_torch_functional(tree: ast.Module) -> int:
    """Line of the first use of torch.nn.functional (import or attribute chain), 0 if none."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("torch.nn.functional") or (
                    node.module == "torch.nn" and any(a.name == "functional" for a in node.names)):
                return node.lineno
        if isinstance(node, ast.Import) and any(a.name.startswith("torch.nn.functional") for a in node.names):
            return node.lineno
        if isinstance(node, ast.Attribute) and node.attr == "functional":
            v = node.value
            if isinstance(v, ast.Attribute) and v.attr == "nn":
                return node.lineno
    return 0
