"""Cascade templates: a cascade file is a jinja2 template over its definition's axes; rendered
with a workload's axis values it is YAML in the workload-and-renames format (seed 003)."""

from __future__ import annotations

import functools
from typing import Any, Mapping

import jinja2
import jinja2.sandbox
import yaml

from .builder import parse_cascade
from .model import Cascade
from .problems import CascadeProblem, Problem

_ENV = jinja2.sandbox.SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


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


def load_cascade(text: str, values: Mapping[str, int]) -> Cascade:
    """Render, read and parse a cascade template; CascadeProblem (or a jinja2/YAML error) when it is bad."""
    from ..model import schema_check
    from ..model.records import Source

    data = yaml.safe_load(render_template(text, values))
    schema = schema_check.schema_diagnostics("einsum", data, Source("cascade"))
    if schema:
        raise CascadeProblem([Problem(d.pointer, d.message, d.hint) for d in schema])
    cascade, problems = parse_cascade(data)
    errors = [p for p in problems if p.severity == "error"]
    if cascade is None or errors:
        raise CascadeProblem(errors)
    return cascade
