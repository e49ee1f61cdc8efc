"""Semantic checks of solutions: location, sources, entry point and its signature."""

from __future__ import annotations

import re
from typing import Iterator

from ..formats import flashinfer_trace
from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic
from ..model.diagnostics import make_pointer as ptr
from ..model.layout import CANONICAL
from ..model.records import Definition, Solution
from .common import bad_relative_path, error, orphan_error, path_parts, warning
from .pycode import module_facts


def check_solutions(ds: Dataset) -> Iterator[Diagnostic]:
    for s in ds.solutions.values():
        d = ds.definitions.get(s.definition)
        if d is None and (problem := orphan_error(ds, s, "solution")):
            yield problem
        yield from check_location(s, d)
        yield from check_sources(s)
        yield from check_targets(ds, s)
        if d is not None:
            yield from check_entry_point(s, d)


def check_location(s: Solution, d: Definition | None) -> Iterator[Diagnostic]:
    parts = path_parts(s)  # solutions/<author>/<type>/<definition>/<name>.json
    expected_type = d.type if d is not None else parts[2]
    expected = CANONICAL.solution_file(s.author, expected_type, s.definition, s.name)
    if s.source.path == expected:
        return
    in_layout = flashinfer_trace.placed_in_layout(s.source.path, expected_type)
    if len(parts) == 5 and parts[3] == s.definition and parts[4] == s.name + ".json" and (
            parts[2] == expected_type or in_layout):
        if parts[1] != s.author:  # the folder is who it runs and ranks as (bench.trusted.plan.worker_owner): a file cannot claim
            yield error(s, "/author", f"solution by '{s.author}' is stored in the folder solutions/{parts[1]}/: the "
                        "bench runs it in that folder's worker and ranks it as that folder's (a file naming another "
                        "author, such as the baseline, is refused)",
                        f"move it to {expected}, or set \"author\": \"{parts[1]}\"")
        return
    if len(parts) != 5 and in_layout:
        return  # a FlashInfer-Trace layout, read in place (the loader says so once)
    if s.source.path != expected:
        field = ("/author" if parts[1] != s.author else "/definition" if parts[3] != s.definition
                 else "/name" if parts[4] != s.name + ".json" else "/definition")
        yield error(s, field, f"solution is stored at {s.source.path}, but its author, definition and name place it at {expected}",
                    f"move the file to {expected} or fix the fields")


def check_targets(ds: Dataset, s: Solution) -> Iterator[Diagnostic]:
    """A GPU bench takes a solution by the hardware specs its targets name (bench.trusted.plan.why_not_on)."""
    for i, target in enumerate(s.target_hardware):
        if target.lower() != "cpu" and ds.hardware_spec(target) is None:
            known = ", ".join(sorted(n for n, h in ds.hardware.items() if h.kind == "gpu"))
            yield warning(s, ptr("spec", "target_hardware", i), f"target {target!r} names no hardware spec: a GPU bench "
                          "takes this solution only on a device of that very name",
                          f"use a spec's name ({known or 'none yet'}), or list {target!r} in the aliases of that GPU's spec")


def check_sources(s: Solution) -> Iterator[Diagnostic]:
    seen = set()
    for i, path in enumerate(s.data["sources"]):
        path = path["path"]
        problem = bad_relative_path(path)
        if problem:
            yield error(s, ptr("sources", i, "path"), f"source path {path!r} {problem}", "use a relative path such as main.py or kernels/gemm.cu")
        if path in seen:
            yield error(s, ptr("sources", i, "path"), f"source path {path!r} appears twice", "give each source file its own path")
        seen.add(path)


def check_entry_point(s: Solution, d: Definition) -> Iterator[Diagnostic]:
    if s.entry_file not in s.sources:
        yield error(s, "/spec/entry_point", f"entry file '{s.entry_file}' is not among the sources",
                    f"sources: {', '.join(s.sources)}")
        return
    text = s.sources[s.entry_file]
    index = list(s.sources).index(s.entry_file)
    if not s.entry_file.endswith(".py"):
        # Compiled sources: the binding decides the signature; check the symbol exists.
        if not re.search(rf"\b{re.escape(s.entry_function)}\s*\(", text):
            yield error(s, ptr("sources", index, "content"), f"entry function '{s.entry_function}' is not found in {s.entry_file}",
                        "define the function named in spec.entry_point")
        return
    facts = module_facts(text, s.entry_function)
    if facts.problem:
        yield error(s, ptr("sources", index, "content"), f"{s.entry_file} {facts.problem} (line {facts.line})",
                    "fix the Python syntax")
        return
    fn = facts.function
    if fn is None:
        yield error(s, "/spec/entry_point", f"{s.entry_file} defines no top-level function '{s.entry_function}'",
                    "define it, or fix spec.entry_point")
        return
    if s.destination_passing_style:
        expected, style = tuple(d.inputs) + tuple(d.outputs), "destination-passing (inputs, then outputs)"
    else:
        expected, style = tuple(d.inputs), "value-returning (inputs only)"
    if fn.has_varargs:
        return
    if len(fn.params) != len(expected):
        other = ("value-returning" if s.destination_passing_style else "destination-passing")
        yield error(s, "/spec/entry_point",
                    f"{s.entry_function}({', '.join(fn.params)}) takes {len(fn.params)} parameters; a {style} "
                    f"solution of {d.name} takes {len(expected)}: ({', '.join(expected)})",
                    f"fix the signature, or set spec.destination_passing_style to {str(not s.destination_passing_style).lower()} "
                    f"for a {other} solution"
                    if len(fn.params) == (len(d.inputs) if s.destination_passing_style else len(d.inputs) + len(d.outputs))
                    else "take the definition's inputs in order" + (", then its outputs" if s.destination_passing_style else ""))
    elif fn.params != expected:
        diffs = [f"'{p}' for '{e}'" for p, e in zip(fn.params, expected) if p != e]
        yield warning(s, "/spec/entry_point", f"{s.entry_function} names its parameters differently from the definition: {', '.join(diffs)}",
                      "arguments are passed by position; matching names make the code easier to check")
