"""Checks of the smaller record kinds: calling records, agent traces, hardware specs, Einsum cascades."""

from __future__ import annotations

import dataclasses
from pathlib import PurePosixPath
from typing import Iterator

import jinja2
import jinja2.sandbox
import yaml

from ..dataset import Dataset
from ..diagnostics import Diagnostic
from ..diagnostics import make_pointer as ptr
from ..records import Source
from ..schema_check import schema_diagnostics
from .common import error, path_parts, warning


def check_models(ds: Dataset) -> Iterator[Diagnostic]:
    for m in ds.models.values():
        for i, k in enumerate(m.kernels):
            if k.id not in ds.definitions and not ds.is_known("definition", k.id):
                # A calling record lists every kernel a step calls; the ones without a definition yet are
                # what coverage reports as missing, so this is a warning (a typo shows here too).
                yield warning(m, ptr("kernels", i, "id"), f"kernel '{k.id}' names no definition: it counts as not covered",
                              "check the spelling, or add the definition so the kernel is covered")


def check_agent_traces(ds: Dataset) -> Iterator[Diagnostic]:
    for a in ds.agent_traces:
        stem = PurePosixPath(a.source.path).stem
        if a.solution != stem:
            yield error(a, "/solution", f"agent trace names solution '{a.solution}' but is stored as {stem}.json",
                        f"rename the file to {a.solution}.json")
        s = ds.solutions.get(a.solution)
        if s is None:
            if not ds.is_known("solution", a.solution):
                yield error(a, "", f"agent trace of unknown solution '{a.solution}'",
                            "store it as agent_traces/<author>/<solution>.json for an existing solution")
        elif s.author != a.author:
            yield error(a, "", f"solution '{a.solution}' is by '{s.author}', but the agent trace is under agent_traces/{a.author}/",
                        f"move it to agent_traces/{s.author}/{a.solution}.json")


def check_hardware(ds: Dataset) -> Iterator[Diagnostic]:
    for h in ds.hardware.values():
        stem = PurePosixPath(h.source.path).stem
        if stem != h.name:
            yield error(h, "/name", f"hardware name '{h.name}' does not match the file name {stem}.json",
                        f"rename the file to {h.name}.json")


def render_einsum(template: str, values: dict[str, int]) -> str:
    """Render an Einsum cascade template with axis values (jinja2, every name must be bound).

    Sandboxed: templates come from contributors and are rendered in CI.
    """
    env = jinja2.sandbox.SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string(template).render(values)  # a dict, not **: an axis may be called 'self'


def yaml_line(text: str, pointer: str) -> int:
    """Line (1-based) of the member or item at `pointer` in a YAML text; its deepest existing ancestor
    when it is missing; 1 when the text cannot be composed."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, ValueError, RecursionError):
        return 1
    line = 1
    for part in pointer.split("/")[1:] if pointer else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, yaml.MappingNode):
            found = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part]
            if not found:
                break
            line, node = found[0][0].start_mark.line + 1, found[0][1]
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
            line = node.start_mark.line + 1
        else:
            break
    return line


def check_einsums(ds: Dataset) -> Iterator[Diagnostic]:
    for e in ds.einsums.values():
        d = ds.definitions.get(e.definition)
        if d is None:
            if not ds.is_known("definition", e.definition):
                yield error(e, "", f"Einsum cascade of unknown definition '{e.definition}'",
                            "name the file after an existing definition")
            continue
        if path_parts(e)[1] != d.type:
            yield error(e, "", f"Einsum cascade of {d.name} is under einsums/{path_parts(e)[1]}/",
                        f"move it to einsums/{d.type}/{d.name}.yaml")
        workloads = ds.workloads_by_definition.get(d.name, [])
        bound = dict(workloads[0].axes) if workloads else {}
        values = {**{a: bound.get(a, 1) for a in d.var_axes}, **d.const_axes}
        try:
            text = render_einsum(e.template, values)
        except jinja2.TemplateSyntaxError as exc:
            yield Diagnostic(e.source.path, exc.lineno or 1, "", "error", f"template does not parse: {exc.message}",
                             "fix the jinja2 syntax")
            continue
        except jinja2.UndefinedError as exc:
            yield error(e, "", f"template uses an unknown name: {exc.message}",
                        f"templates may use the axes of {d.name}: {', '.join(d.axes)}")
            continue
        except Exception as exc:  # anything else the template does when rendered (1/0, a sandbox refusal)
            yield error(e, "", f"template fails to render: {type(exc).__name__}: {exc}",
                        "templates only substitute axis values, e.g. {{ batch_size }}")
            continue
        try:
            data = yaml.safe_load(text)
        except (yaml.YAMLError, ValueError, RecursionError) as exc:  # ValueError: e.g. a date 2024-13-45
            mark = getattr(exc, "problem_mark", None)
            yield Diagnostic(e.source.path, (mark.line + 1) if mark else 1, "", "error",
                             f"rendered template is not valid YAML: {getattr(exc, 'problem', None) or exc}",
                             "fix the YAML")
            continue
        for diag in schema_diagnostics("einsum", data, Source(e.source.path, 1)):
            yield dataclasses.replace(diag, line=yaml_line(text, diag.pointer))
