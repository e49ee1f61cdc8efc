"""Definition families: sibling definitions rendered from a template definition and a table of their constants.

A family file (dataset/families/<family>.json, data like the model recipes) names its template definition and,
for each sibling, what differs from the template (description, tags and constraints; axes and tensors field by
field, with their sources; text replaced once in the reference, the Einsum cascade or the baseline).
`kerneltrace definitions` renders each sibling's definition, Einsum cascade and baseline solution (the template's,
under the sibling's name) and writes those that differ, atomically; `--check` writes nothing and lists what
differs. Whatever a sibling does not name is the template's; every sibling still has its own independent check in
tests/reference_cases (a family saves writing, it proves nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..model.errors import KernelTraceError
from ..model.fileio import write_atomic
from ..model.layout import CANONICAL
from .family import read_families, render_family


@dataclass
class Report:
    files: int = 0  # files the families render
    changed: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # --check: what differs or is missing


def render(root: Path) -> dict[str, str]:
    """Every file the dataset's families render: path relative to the dataset root -> text."""
    out: dict[str, str] = {}
    for family in read_families(root):
        for rel, text in render_family(root, family).items():
            if rel in out:
                raise KernelTraceError(f"{family.path}: renders {rel}, which another family renders too; name each "
                                       "sibling in one family only")
            out[rel] = text
    return out


def definitions(root: Path, *, check: bool = False) -> Report:
    """Render every family of the dataset at `root`; write what differs, or with `check` list it."""
    root = Path(root)
    files = render(root)
    report = Report(files=len(files))
    for rel, text in sorted(files.items()):
        path = root / rel
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        if check:
            report.problems.append(f"{rel}: {'missing' if current is None else 'differs from what its family renders'}"
                                   f" ({CANONICAL['families'].name}/: run `kerneltrace definitions`)")
        else:
            write_atomic(path, text)
            report.changed.append(path)
    return report
