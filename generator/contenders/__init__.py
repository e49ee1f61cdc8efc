"""Generated contenders: solutions the project writes for every definition it can, never by hand.

`kerneltrace contenders` renders them into dataset/solutions/ (and `--check` compares the committed
files with what it would write): the `torch.compile` of every reference that compiles (compiler.py)
and the library kernels that compute exactly a definition (libraries/). Who wrote a solution is the
folder it sits in (model/layout.py); what kind of contender an author is, is model/contender_kinds.py.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable


@dataclass
class Report:
    files: int = 0  # contenders the command writes
    changed: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # --check: what differs, is missing or stale
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (definition, why it gets no contender)
    unprobed: list[tuple[str, str]] = field(default_factory=list)

    def by_reason(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for name, why in self.skipped:
            out[why].append(name)
        return dict(sorted(out.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def contenders(root: Path, *, definitions: Iterable[str] = (), check: bool = False, probe: bool = False) -> Report:
    """Write (or with `check`, compare) every generated contender of the dataset at `root`. Writing first probes
    (probe.py: traces, needs torch) the definitions whose verdict is missing or of another reference, and with
    `probe` every one named (all by default); `check` probes nothing and compiles nothing."""
    from ..load import load
    from . import write as w

    ds = load(root)
    rendered = w.render(ds, definitions)
    if not check and (probe or rendered.unprobed):
        from .probe import probe as run_probe

        run_probe(ds, definitions if probe else [name for name, _ in rendered.unprobed])
        rendered = w.render(ds, definitions)
    report = Report(files=len(rendered.files), skipped=rendered.skipped, unprobed=rendered.unprobed)
    if check:
        report.problems = w.check(Path(root), rendered)
        return report
    report.changed = list(w.write(rendered))
    report.removed = w.prune(Path(root), rendered)
    return report
