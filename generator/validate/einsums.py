"""Checks of Einsum cascades (einsums/<type>/<definition>.yaml).

A cascade is a jinja2 template over its definition's axes, so it is rendered once per
workload (and with every var axis at 1 when the definition has none yet) and each rendering
is checked: it parses as YAML, matches schema/einsum.json, its projections use ranks with
sizes, every input and output of the definition appears with the shape the definition gives it
for that workload, the renames give their expected counts, its iteration spaces can be
counted, and no contraction counts its FLOPs at a rate wider than the data it multiplies. A problem found with several workloads is reported once, naming the first.
Renderings that differ in their rank sizes alone (one skeleton) are parsed from one structure, and the checks
that do not depend on those sizes run once for them: what they find is the same for each.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterator, Optional

import jinja2
import yaml

from ..einsum import (
    Cascade,
    CascadeProblem,
    Problem,
    access_bits,
    axis_values,
    bits_problems,
    check_countable,
    precision_problems,
    read_rendered,
    render_template,
    resolve_renames,
    template_error_location,
    tensor_dtypes,
)
from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic
from ..model.dtypes import DTYPE_BITS
from ..model.fileio import SAFE_YAML_LOADER
from ..model.records import Definition
from .common import error, path_parts


def render_einsum(template: str, values: dict[str, int]) -> str:
    """Render an Einsum cascade template with axis values (sandboxed jinja2, every name bound)."""
    return render_template(template, values)


def yaml_line(text: str, pointer: str) -> int:
    """Line (1-based) of the member or item at `pointer` in a YAML text; its deepest existing ancestor
    when it is missing; 1 when the text cannot be composed."""
    try:
        node = yaml.compose(text, Loader=SAFE_YAML_LOADER)
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
        yield from _check_cascade(e, d, ds.workloads_by_definition.get(d.name, []))


def _renderings(d: Definition, workloads) -> list[tuple[str, dict[str, int]]]:
    """(label, template values) for each workload; one with every var axis at 1 when there is none."""
    out = []
    for w in workloads:
        if all(a in w.axes for a in d.var_axes):
            out.append((f"workload {w.uuid}", axis_values(d, w.axes)))
    if not out:
        out.append(("var axes at 1 (no workload)", {**{a: 1 for a in d.var_axes}, **d.const_axes}))
    return out


class _Reporter:
    """Collects problems over renderings, one diagnostic per (pointer, key). A problem that depends on
    the workload (a rank size) names the first rendering that shows it and counts the others."""

    def __init__(self, path: str):
        self.path = path
        self.found: dict[tuple[str, str], list] = {}

    def add(self, text: str, label: str, p: Problem, key_message: Optional[str] = None) -> None:
        key = (p.pointer, key_message or p.message)
        if key in self.found:
            self.found[key][1] += 1
            return
        diag = Diagnostic(self.path, yaml_line(text, p.pointer), p.pointer, p.severity, p.message, p.hint)
        self.found[key] = [diag, 0, label if key_message and key_message != p.message else None]

    def diagnostics(self) -> list[Diagnostic]:
        out = []
        for diag, more, label in self.found.values():
            if label:
                others = f", and {more} other rendering(s)" if more else ""
                diag = dataclasses.replace(diag, message=f"{diag.message} ({label}{others})")
            out.append(diag)
        return out


def _check_cascade(e, d: Definition, workloads) -> Iterator[Diagnostic]:
    reporter = _Reporter(e.source.path)
    parsed: dict[str, tuple] = {}  # rendered text -> (cascade, skeleton); the same text is checked once
    # Skeletons (renderings that differ in their rank sizes alone) whose size-independent checks are done: what
    # they find is the same for every such rendering, so once adds every diagnostic (the reporter keeps one).
    done: set[str] = set()
    for label, values in _renderings(d, workloads):
        try:
            text = render_template(e.template, values)
        except Exception as exc:  # noqa: BLE001 - a syntax error, an unknown name, anything the template does (1/0, the sandbox)
            yield _render_failure(e, d, label, values, exc)
            return
        if text not in parsed:
            try:
                read = read_rendered(text)
            except (yaml.YAMLError, ValueError, RecursionError) as exc:  # ValueError: e.g. a date 2024-13-45
                mark = getattr(exc, "problem_mark", None)
                yield Diagnostic(e.source.path, (mark.line + 1) if mark else 1, "", "error",
                                 f"rendered template is not valid YAML: {getattr(exc, 'problem', None) or exc}",
                                 "fix the YAML")
                return
            if read.schema:
                for diag in read.schema:
                    yield dataclasses.replace(diag, file=e.source.path, line=yaml_line(text, diag.pointer))
                return  # the rest assumes the shape the schema promises
            for p in read.problems:
                reporter.add(text, label, p)
            if read.cascade is not None:
                _check_parsed(read.cascade, d, text, label, reporter, first=read.skeleton not in done)
            parsed[text] = read.cascade, read.skeleton
        cascade, skeleton = parsed[text]
        if cascade is None:
            break  # structural problems are the same in every rendering
        # Against the definition for every workload: the same text can be right for one and wrong for another.
        for p, key_message in _against_definition(cascade, d, values, structural=skeleton not in done):
            reporter.add(text, label, p, key_message)
        done.add(skeleton)
    yield from reporter.diagnostics()


def _check_parsed(cascade: Cascade, d: Definition, text: str, label: str, reporter: _Reporter, first: bool) -> None:
    """The checks of a parsed rendering; those that do not depend on its rank sizes only for the `first` of its
    skeleton."""
    if first:
        for p in resolve_renames(cascade)[1] + bits_problems(cascade):
            reporter.add(text, label, p)
    try:
        check_countable(cascade)
    except CascadeProblem as exc:
        for p in exc.problems:
            reporter.add(text, label, p)
    if first:
        for p in precision_problems(cascade, tensor_dtypes(d)):
            reporter.add(text, label, p)


def _render_failure(e, d: Definition, label: str, values: dict[str, int], exc: Exception) -> Diagnostic:
    """Where the template fails (its line, and the field whose value is there) and why."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        message, hint = f"template does not parse: {exc.message}", "fix the jinja2 syntax"
    elif isinstance(exc, jinja2.UndefinedError):
        name = _undefined_name(exc.message or "")
        message = f"template uses an unknown name: {exc.message}"
        hint = f"templates may use the axes of {d.name}: {', '.join(d.axes)}" + _close(name, d.axes)
    else:
        message = f"template fails to render ({label}): {type(exc).__name__}: {exc}"
        hint = "templates only substitute axis values, e.g. {{ batch_size }}"
    line, pointer = template_error_location(e.template, values, exc)
    return Diagnostic(e.source.path, line or 1, pointer, "error", message, hint)


def _undefined_name(message: str) -> str:
    """The name in jinja2's "'x' is undefined"."""
    m = re.match(r"^'([^']+)' is undefined", message)
    return m.group(1) if m else ""


def _against_definition(c: Cascade, d: Definition, values: dict[str, int],
                        structural: bool = True) -> Iterator[tuple[Problem, str]]:
    """Problems of a cascade against its definition, each with a key that ignores workload numbers; those that
    do not depend on its rank sizes only when `structural`."""
    first_access = {}
    for e in c.einsums:
        for a in e.accesses:
            first_access.setdefault(a.tensor, (e, a))
    if structural:
        yield from _missing_tensors(c, d)
        yield from _wrong_direction(c, d)
        yield from _unknown_tensors(c, d, first_access)
    yield from _wrong_shapes(d, values, first_access)
    if structural:
        yield from _bits_against_dtypes(c, d)


def _missing_tensors(c: Cascade, d: Definition) -> Iterator[tuple[Problem, str]]:
    """Every input and output of the definition appears in some Einsum."""
    for kind, group in (("input", d.inputs), ("output", d.outputs)):
        for name, spec in group.items():
            if name not in c.tensors:
                shape = ", ".join(s.upper() for s in spec.shape)
                msg = f"{kind} '{name}' of {d.name} appears in no Einsum"
                yield (Problem("/workload/einsums", msg,
                               f"add it to the Einsum that {'reads' if kind == 'input' else 'writes'} it, e.g. "
                               f"{{name: {name}, projection: [{', '.join(s.lower() for s in spec.shape)}]"
                               f"{', output: true' if kind == 'output' else ''}}} (ranks {shape or 'none: a scalar'})"),
                       msg)


def _wrong_direction(c: Cascade, d: Definition) -> Iterator[tuple[Problem, str]]:
    """Inputs are only read and outputs only written."""
    for e in c.einsums:
        for a in e.accesses:
            if a.tensor in d.inputs and a.output:
                msg = f"Einsum '{e.name}' writes '{a.tensor}', an input of {d.name}"
                yield Problem(a.pointer + "/output", msg,
                              "inputs are only read; write the result to a new (intermediate) tensor"), msg
            elif a.tensor in d.outputs and not a.output:
                msg = f"Einsum '{e.name}' reads '{a.tensor}', an output of {d.name}"
                yield (Problem(a.pointer + "/name", msg,
                               "an output read again would count as an intermediate (AccelForge reads it so): "
                               f"compute an intermediate, read that, and copy it to '{a.tensor}' with an "
                               "is_copy_operation Einsum"), msg)


def _unknown_tensors(c: Cascade, d: Definition, first_access) -> Iterator[tuple[Problem, str]]:
    """A tensor the definition does not name must be an intermediate: written and read."""
    known = set(d.inputs) | set(d.outputs)
    for t in c.tensors:
        if t in known:
            continue
        e, a = first_access[t]
        if t not in c.written:
            msg = f"tensor '{t}' is read but no Einsum writes it, and {d.name} has no input '{t}'"
            yield Problem(a.pointer + "/name", msg, "name an input of the definition (" + ", ".join(d.inputs) +
                          ") or add the Einsum that computes it" + _close(t, d.inputs)), msg
        elif t not in c.read:
            msg = f"tensor '{t}' is written but never read, and {d.name} has no output '{t}'"
            yield Problem(a.pointer + "/name", msg, "name an output of the definition (" + ", ".join(d.outputs) +
                          ") or read the tensor in a later Einsum" + _close(t, d.outputs)), msg


def _wrong_shapes(d: Definition, values: dict[str, int], first_access) -> Iterator[tuple[Problem, str]]:
    """The ranks of a definition tensor have the sizes the definition gives this workload."""
    for t, (e, a) in first_access.items():
        spec = d.inputs.get(t) or d.outputs.get(t)
        if spec is None or any(axis not in d.axes for axis in spec.shape):
            continue  # a shape naming an undeclared axis is the definition's error, reported there
        if len(a.ranks) != len(spec.shape):
            msg = (f"tensor '{t}' is projected into {len(a.ranks)} rank(s) [{', '.join(a.ranks)}], but {d.name} "
                   f"gives it {len(spec.shape)} dimension(s) [{', '.join(spec.shape)}]")
            yield Problem(a.pointer + "/projection", msg, "project one rank per dimension, in the definition's order"), msg
            continue
        for i, (rank, axis) in enumerate(zip(a.ranks, spec.shape)):
            want = values.get(axis)
            if want is None:
                continue
            got = e.rank_sizes[rank]
            if got != want:
                key = f"tensor '{t}' dimension {i} rank size"
                yield (Problem(a.pointer + "/projection",
                               f"rank '{rank}' of tensor '{t}' has size {got}, but dimension {i} of '{t}' is "
                               f"{axis} = {want}",
                               f"set rank_sizes {rank}: {{{{ {axis} }}}} (ranks take the definition's axis values)"),
                       key)


def _bits_against_dtypes(c: Cascade, d: Definition) -> Iterator[tuple[Problem, str]]:
    """Bits that contradict a tensor's dtype are allowed (packed formats) but worth a look."""
    bits = access_bits(c, tensor_dtypes(d))
    for e in c.einsums:
        for a in e.accesses:
            spec = d.inputs.get(a.tensor) or d.outputs.get(a.tensor)
            if spec is None:
                continue
            b, origin = bits[(e.name, a.tensor)]
            want = DTYPE_BITS.get(spec.dtype)
            if want is not None and b != want:
                where = a.pointer + "/bits_per_value" if origin == "access" else "/workload/bits_per_value"
                msg = f"'{a.tensor}' has {b} bits per value ({origin}), but its dtype {spec.dtype} has {want}"
                yield (Problem(where, msg, "leave bits_per_value out for the definition's tensors (they default to "
                                           "their dtype), or restrict the key, e.g. Intermediates: 16", "warning"),
                       msg)


def _close(name: str, known) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""
