"""Cascade templates: a cascade file is a jinja2 template over its definition's axes; rendered
with a workload's axis values it is YAML in the workload-and-renames format (seed 003)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import jinja2
import jinja2.sandbox
import yaml

from ..model.fileio import SAFE_YAML_LOADER
from .builder import Structure, cascade_structure, sized
from .model import Cascade
from .problems import CascadeProblem, Problem, ptr

_ENV = jinja2.sandbox.SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
_LOADER = SAFE_YAML_LOADER  # a module global: tests/benchmarks/bench_roofline.py swaps it


def render_template(template: str, values: Mapping[str, Any]) -> str:
    """Render a cascade template with axis values (jinja2, every name must be bound).

    Sandboxed: templates come from contributors and are rendered in CI.
    """
    return _compiled(template).render(dict(values))  # a dict, not **: an axis may be called 'self'


@functools.lru_cache(maxsize=256)
def _compiled(template: str) -> jinja2.Template:
    # One compile per template text: a cascade is rendered once per workload.
    return _ENV.from_string(template)


def axis_values(definition, axes: Mapping[str, int]) -> dict[str, int]:
    """What a cascade template is rendered with: the workload's var axes and the const axes."""
    return {**{a: axes[a] for a in definition.var_axes if a in axes}, **definition.const_axes}


def tensor_dtypes(definition) -> dict[str, str]:
    return {**{n: t.dtype for n, t in definition.inputs.items()}, **{n: t.dtype for n, t in definition.outputs.items()}}


@dataclass(frozen=True)
class Rendered:
    """A rendered cascade read once: its YAML data (never mutate it), the schema's findings (file "cascade": the
    caller names its own), what the parser made of it (None where the schema or the parser failed), and its
    skeleton: the text with every workload rank size at 1 where those sizes alone may set it apart from other
    renderings (else the text itself). Renderings with one skeleton differ in their rank sizes alone, so
    whatever does not depend on those sizes (renames, bits, precision) is the same for all of them."""

    data: Any
    schema: tuple
    cascade: Optional[Cascade]
    problems: tuple
    skeleton: str = ""


@functools.lru_cache(maxsize=16384)
def read_rendered(text: str) -> Rendered:
    """Read and parse one rendered cascade (a YAML error raises). Cached on the text: validate, the speed-of-light
    floors, the roofline and the export each read every workload's rendering, often in one process (export and
    build validate first), and most of that time is YAML and parsing."""
    from ..model import schema_check
    from ..model.records import Source

    data, skeleton = _read(text)
    source = Source("cascade", 1)
    schema = tuple(schema_check.yaml_key_diagnostics(data, source) or schema_check.schema_diagnostics("einsum", data, source))
    if schema:  # the parser assumes the shape the schema promises
        return Rendered(data, schema, None, (), skeleton or text)
    # The skeleton passes the schema too (its sizes, 1, are valid wherever the rendering's are), so its
    # structure is built once and sized per rendering.
    structure = _skeleton_structure(skeleton) if skeleton else cascade_structure(data)
    cascade, problems = sized(structure, data)
    return Rendered(data, (), cascade, tuple(problems), skeleton or text)


# The renderings of one template mostly differ in their rank sizes alone, each a line `    NAME: INT` of the
# block that opens the document (seed 003's layout): 4,247 renderings of the bundled dataset are 553 texts
# once the sizes are set aside. So the rest is read once, with every size 1, and each rendering's sizes are
# filled in; a block in any other form (a comment, a float, a key read twice) is read whole.
_SIZES_BLOCK = re.compile(r"\A((?:#[^\n]*\n|\n)*workload:\n  rank_sizes:\n)((?:    [A-Za-z_][A-Za-z0-9_]*: -?(?:0|[1-9][0-9]*)\n)+)")
_SIZE_LINE = re.compile(r"    ([A-Za-z_][A-Za-z0-9_]*): (-?(?:0|[1-9][0-9]*))\n")


def yaml_data(text: str) -> Any:
    """The YAML data of a rendered cascade (a YAML error raises): what yaml.safe_load gives, key order
    included. Shared between renderings: never mutate it."""
    return _read(text)[0]


def _read(text: str) -> tuple[Any, Optional[str]]:
    """(yaml_data(text), the skeleton it was read from: the text with every rank size 1; None when read whole)."""
    m = _SIZES_BLOCK.match(text)
    if m is None:
        return yaml.load(text, Loader=_LOADER), None  # safe: CSafeLoader or SafeLoader
    sizes = {name: int(value) for name, value in _SIZE_LINE.findall(m.group(2))}
    skeleton_text = m.group(1) + _SIZE_LINE.sub(r"    \1: 1\n", m.group(2)) + text[m.end():]
    skeleton = _read_skeleton(skeleton_text)
    try:
        if list(skeleton["workload"]["rank_sizes"]) == list(sizes):
            return {**skeleton, "workload": {**skeleton["workload"], "rank_sizes": sizes}}, skeleton_text
    except (TypeError, KeyError):
        pass
    return yaml.load(text, Loader=_LOADER), None


@functools.lru_cache(maxsize=4096)
def _read_skeleton(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)


@functools.lru_cache(maxsize=4096)
def _skeleton_structure(text: str) -> Structure:
    return cascade_structure(_read_skeleton(text))


def load_cascade(text: str, values: Mapping[str, int]) -> Cascade:
    """Render, read and parse a cascade template; CascadeProblem (or a jinja2/YAML error) when it is bad."""
    r = read_rendered(render_template(text, values))
    if r.schema:
        raise CascadeProblem([Problem(d.pointer, d.message, d.hint) for d in r.schema])
    errors = [p for p in r.problems if p.severity == "error"]
    if r.cascade is None or errors:
        raise CascadeProblem(errors)
    return r.cascade


# -- where a template fails -----------------------------------------------------------------------
# Closed constructs first; a half-closed one (a syntax error) ends at its line or its first brace,
# which may also be YAML's: the skeleton is tried both ways.
_CLOSED = r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}"
_JINJA = re.compile(_CLOSED + r"|\{\{[^}\n]*\}?|\{%[^%\n]*%?", re.S)
_JINJA_OPEN = re.compile(_CLOSED + r"|\{\{[^}\n]*|\{%[^%\n]*", re.S)


def _error_line(template: str, exc: BaseException) -> Optional[int]:
    """Line (1-based) of the template where rendering failed: a syntax error carries it; an error
    while rendering leaves it in the traceback frame jinja2 makes for the template."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return exc.lineno or None
    line, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line if line and 1 <= line <= template.count("\n") + 1 else None


def template_error_location(template: str, values: Mapping[str, Any], exc: BaseException) -> tuple[Optional[int], str]:
    """(line, JSON pointer of the YAML value) where rendering `template` with `values` failed with
    `exc`; (None, '') when jinja2 does not say where."""
    line = _error_line(template, exc)
    if line is None:
        return None, ""
    return line, template_pointer(template, line, _failing_column(template, line, values, type(exc)))


def template_pointer(template: str, line: int, column: Optional[int]) -> str:
    """JSON pointer of the YAML value of the template at (`line`, `column`), or of the deepest member
    whose key starts on `line` when no column is known; '' when the template's YAML cannot be read
    even with its jinja2 parts blanked out, or nothing is there (a {% set %} line)."""
    root = _skeleton_node(template)
    if root is None:
        return ""
    best, best_depth = "", -1
    for pointer, key, value in _members(root, ""):
        depth = pointer.count("/")
        if column is not None:
            start, end = value.start_mark, value.end_mark
            hit = (start.line, start.column) <= (line - 1, column) < (end.line, end.column)
        else:
            hit = key is not None and key.start_mark.line == line - 1
        if hit and depth > best_depth:
            best, best_depth = pointer, depth
    return best


def _failing_column(template: str, line: int, values: Mapping[str, Any], error: type) -> Optional[int]:
    """Column of the jinja2 construct on `line` that fails: jinja2 names the line only, so render the
    template up to the end of each construct there until one fails the same way."""
    lines = template.split("\n")
    found = list(_JINJA.finditer(lines[line - 1]))
    offset = sum(len(text) + 1 for text in lines[:line - 1])
    for m in found:
        try:
            _ENV.from_string(template[:offset + m.end()]).render(dict(values))
        except error:
            return m.start()
        except Exception:  # noqa: BLE001 - another failure of a cut template says nothing about this one
            continue
    return found[0].start() if found else None


def _skeleton_node(template: str):
    """The YAML node tree of the template with every jinja2 construct blanked out, lines and columns
    kept: an expression becomes the value 0, a statement or comment spaces. None if it does not read."""
    def blank(m: re.Match) -> str:
        text = m.group(0)
        first = "0" if text.startswith("{{") else " "
        return first + "".join("\n" if ch == "\n" else " " for ch in text[1:])

    for pattern in (_JINJA, _JINJA_OPEN):
        try:
            return yaml.compose(pattern.sub(blank, template), Loader=_LOADER)
        except (yaml.YAMLError, ValueError, RecursionError):
            continue
    return None


def _members(node, pointer: str):
    """(pointer, key node or None, value node) of every member and item under `node`."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            p = pointer + ptr(k.value if isinstance(k, yaml.ScalarNode) else "?")
            yield p, k, v
            yield from _members(v, p)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            p = f"{pointer}/{i}"
            yield p, None, v
            yield from _members(v, p)


def _contains(node, line: int, column: int) -> bool:
    start, end = node.start_mark, node.end_mark
    return (start.line, start.column) <= (line, column) < (end.line, end.column)
