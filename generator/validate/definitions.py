"""Semantic checks of definitions (the schema has already passed)."""

from __future__ import annotations

import difflib
import re
from typing import Collection, Iterator, Optional

from ..formats import flashinfer_trace
from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic
from ..model.diagnostics import make_pointer as ptr
from ..model.records import Definition
from ..model.schemas import TAG_NAMESPACES
from .common import error, path_parts, warning
from .pycode import module_facts, parse_constraint

NAME_RE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
# Tags in the namespaces KernelTrace gives meaning to; other namespaces (fi_api:, gpu:, ...) are kept as written.
TAG_VALUE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+/-]*$")


def _tag_example(namespace: str) -> str:
    return {"stage": "decode", "model": "llama-3.1-8b", "quantization": "fp8", "status": "verified", "tp": "8",
            "ep": "8"}.get(namespace, "value")


def check_definitions(ds: Dataset, names: Optional[Collection[str]] = None) -> Iterator[Diagnostic]:
    """Every definition's checks; `names`: only those definitions' (the bench, running a few of them)."""
    for d in ds.definitions.values():
        if names is not None and d.name not in names:
            continue
        yield from check_location(d, ds)
        yield from check_name(d)
        yield from check_axes(d)
        yield from check_constraints(d)
        yield from check_reference(d)
        yield from check_tags(d)


def check_location(d: Definition, ds: Dataset) -> Iterator[Diagnostic]:
    parts = path_parts(d)
    stem = parts[-1][: -len(".json")]
    if stem != d.name:
        # Said once: the records that name the file's name are not reported as orphans (Dataset.is_known).
        named = _named_by(ds, stem) if ds.misnamed_definitions.get(stem) is d else ""
        yield error(d, "/name", f"name '{d.name}' does not match the file name '{parts[-1]}'{named}",
                    f"rename the file to {d.name}.json or change the name")
    if parts[1] != d.type and not flashinfer_trace.placed_in_layout(d.source.path, d.type):
        yield error(d, "/type", f"type '{d.type}' does not match the folder definitions/{parts[1]}/",
                    f"move the file to definitions/{d.type}/{d.name}.json")


def _named_by(ds: Dataset, stem: str) -> str:
    """', which N workloads, ... name' for the records that name a definition by `stem`; '' if none do."""
    counts = {"workload": sum(w.definition == stem for w in ds.workloads),
              "solution": sum(s.definition == stem for s in ds.solutions.values()),
              "trace": sum(t.definition == stem for t in ds.traces_by_definition.get(stem, ())),
              "Einsum cascade": int(stem in ds.einsums),
              "calling record": sum(any(k.id == stem for k in m.kernels) for m in ds.models.values())}
    named = [f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in counts.items() if n]
    return f", which {', '.join(named)} name" if named else ""


def check_name(d: Definition) -> Iterator[Diagnostic]:
    if not NAME_RE.match(d.name):
        yield error(d, "/name", f"name '{d.name}' does not follow the convention {{type}}_{{props}}_{{constants}}",
                    "use lowercase letters and digits joined by '_', e.g. gqa_paged_decode_h32_kv8_d128_ps1")
        return
    numbers = set(re.findall(r"\d+", d.name))
    shown = {n for n, v in d.const_axes.items() if str(v) in numbers}
    # A constant fixed by an equality with shown constants (num_k_blocks * 128 == K, gate_up_size ==
    # 2 * intermediate_size) is derived: the name need not repeat it.
    derived = set()
    for c in d.constraints:
        if "==" in c:
            names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", c))
            if names & shown:
                derived |= names
    missing = [f"{n}={v}" for n, v in d.const_axes.items() if str(v) not in numbers and n not in derived]
    if missing:
        yield warning(d, "/name", f"name '{d.name}' does not show the constant axes {', '.join(missing)}",
                      "put the constants that tell definitions apart in the name, e.g. _h4096 or _d128")


def check_axes(d: Definition) -> Iterator[Diagnostic]:
    used = set()
    for group in ("inputs", "outputs"):
        for t in getattr(d, group).values():
            for i, axis in enumerate(t.shape):
                used.add(axis)
                if axis not in d.axes:
                    near = difflib.get_close_matches(axis, list(d.axes), n=1)
                    yield error(d, ptr(group, t.name, "shape", i), f"axis '{axis}' of {group[:-1]} '{t.name}' is not declared",
                                (f"did you mean '{near[0]}'? " if near else "") +
                                f"add '{axis}' to axes, or use one of: {', '.join(d.axes)}")
    for name in set(d.inputs) & set(d.outputs):
        yield error(d, ptr("outputs", name), f"'{name}' is both an input and an output",
                    "give the output its own name (destination-passing solutions take both)")
    constraint_names = set()
    for c in d.constraints:
        constraint_names |= parse_constraint(c).names
    for axis in d.axes.values():
        if axis.parent is not None:
            if axis.parent == axis.name:
                yield error(d, ptr("axes", axis.name, "parent"), f"axis '{axis.name}' is its own parent",
                            "remove 'parent' or name another axis")
            elif axis.parent not in d.axes:
                yield error(d, ptr("axes", axis.name, "parent"), f"parent '{axis.parent}' of axis '{axis.name}' is not declared",
                            f"use one of: {', '.join(a for a in d.axes if a != axis.name)}")
        if axis.name not in used and axis.name not in constraint_names and not any(
                a.parent == axis.name for a in d.axes.values()):
            yield warning(d, ptr("axes", axis.name), f"axis '{axis.name}' is used by no tensor, constraint or child axis",
                          "remove it, or use it in a shape or a constraint")


def check_constraints(d: Definition) -> Iterator[Diagnostic]:
    known = set(d.axes) | set(d.inputs)
    for i, text in enumerate(d.constraints):
        parsed = parse_constraint(text)
        if parsed.problem:
            yield error(d, ptr("constraints", i), f"constraint {text!r} {parsed.problem}",
                        "write a Python expression over axes and inputs, e.g. 'H_qo == H_kv * H_r'")
            continue
        for name in sorted(parsed.names - known):
            yield error(d, ptr("constraints", i), f"constraint {text!r} names '{name}', which is neither an axis nor an input",
                        f"known names: {', '.join(sorted(known))}")


def check_reference(d: Definition) -> Iterator[Diagnostic]:
    facts = module_facts(d.reference, "run", torch_functional=True)
    if facts.problem:
        yield error(d, "/reference", f"reference {facts.problem} (line {facts.line} of the reference)",
                    "fix the Python syntax of the reference")
        return
    fn = facts.function
    inputs = tuple(d.inputs)
    if fn is None:
        yield error(d, "/reference", "reference defines no top-level function 'run'",
                    f"define def run({', '.join(inputs)}): ... returning a dict of the outputs")
        return
    if fn.params != inputs or fn.has_varargs:
        yield error(d, "/reference", f"reference run({', '.join(fn.params)}) does not take the inputs in order",
                    f"define it as run({', '.join(inputs)})")
    outputs = frozenset(d.outputs)
    for keys in fn.return_keys:
        if keys != outputs:
            missing, extra = sorted(outputs - keys), sorted(keys - outputs)
            what = "; ".join(x for x in (f"missing {', '.join(missing)}" if missing else "",
                                         f"unknown {', '.join(extra)}" if extra else "") if x)
            yield error(d, "/reference", f"reference run returns a dict that does not hold exactly the outputs ({what})",
                        f"return {{{', '.join(repr(o) for o in d.outputs)}}} with every output")
    line = facts.torch_functional
    if line:
        yield warning(d, "/reference", f"reference uses torch.nn.functional (line {line} of the reference)",
                      "write the computation step by step in plain PyTorch: the reference is the specification")


def check_tags(d: Definition) -> Iterator[Diagnostic]:
    for i, tag in enumerate(d.tags):
        namespace, _, value = tag.partition(":")
        if not value:
            if tag != "fused":
                yield warning(d, ptr("tags", i), f"tag '{tag}' has no namespace; kept as it is",
                              "write it as namespace:value, e.g. stage:decode (the flag 'fused' is the one bare tag)")
        elif namespace in TAG_NAMESPACES and not TAG_VALUE_RE.match(value):
            yield error(d, ptr("tags", i), f"tag '{tag}': the value of a {namespace}: tag must be letters, digits "
                        f"and _ . + / -, starting with a letter or digit", f"e.g. {namespace}:{_tag_example(namespace)}")
    statuses = d.tag_values("status")
    if len(statuses) > 1:
        yield error(d, "/tags", f"more than one status tag: {', '.join(statuses)}", "keep one status: tag")
