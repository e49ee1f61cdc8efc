"""Checks of the smaller record kinds: calling records, agent traces, hardware specs (Einsum cascades: einsums.py)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Iterator

from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic
from ..model.diagnostics import make_pointer as ptr
from ..model.layout import CANONICAL
from .common import error, warning


def check_models(ds: Dataset) -> Iterator[Diagnostic]:
    for m in ds.models.values():
        serving = m.data.get("serving") or {}
        hw = serving.get("hardware")
        if hw is not None and ds.hardware_spec(hw) is None:
            yield error(m, ptr("serving", "hardware"), f"serving hardware '{hw}' names no hardware record",
                        f"use one of {', '.join(sorted(ds.hardware))}, or add hardware/{hw}.json")
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
                            f"store it as {CANONICAL['agent_traces'].pattern} for an existing solution")
        elif s.author != a.author:
            yield error(a, "", f"solution '{a.solution}' is by '{s.author}', but the agent trace is under agent_traces/{a.author}/",
                        f"move it to {CANONICAL.agent_trace_file(s.author, a.solution)}")


def check_hardware(ds: Dataset) -> Iterator[Diagnostic]:
    for h in ds.hardware.values():
        stem = PurePosixPath(h.source.path).stem
        if stem != h.name:
            yield error(h, "/name", f"hardware name '{h.name}' does not match the file name {stem}.json",
                        f"rename the file to {h.name}.json")
