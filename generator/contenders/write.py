"""Render the generated contenders into files, write them, or check the committed ones against them.

The compiler contender of a definition is written where the probe's verdict (dataset/contenders/, written by
`kerneltrace contenders --probe`, probe.py) says its reference compiles and the verdict is of the reference
as it is now (the verdict keeps the reference's digest); the library contenders are whatever
`libraries.library_contenders` returns. Rendering compiles nothing and imports no torch, so `--check` takes
seconds in CI.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional

from ..model.contender_kinds import COMPILER_AUTHOR, LIBRARY_AUTHORS
from ..model.errors import KernelTraceError
from ..model.fileio import dump_document, write_atomic
from ..model.layout import CANONICAL
from .compiler import compiler_solution, wrong_when_compiled

PROBE = "torch-compile"  # the probe file's name: dataset/contenders/torch-compile.json
GENERATED_AUTHORS = (COMPILER_AUTHOR, *LIBRARY_AUTHORS)
COMPILES = "compiles"


@dataclass
class Rendered:
    files: dict[Path, bytes] = field(default_factory=dict)  # path -> exact bytes
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (definition or solution, why nothing is written)
    unprobed: list[tuple[str, str]] = field(default_factory=list)  # (definition, why its verdict is missing or stale)
    definitions: Optional[set] = None  # the definitions rendered (None: all)


def reference_digest(reference: str) -> str:
    return hashlib.sha256(reference.encode("utf-8")).hexdigest()[:16]


def probe_path(root: Path) -> Path:
    return root / CANONICAL.probe_file(PROBE)


def read_verdicts(root: Path) -> dict:
    """The probe file's content ({"verdicts": {definition: {"reference": digest, "verdict": ...}}}), empty
    where there is none yet. Bad content is a KernelTraceError naming the file and the fix."""
    path = probe_path(root)
    if not path.is_file():
        return {"verdicts": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise KernelTraceError(f"{path}: not readable JSON ({exc}); run `kerneltrace contenders --probe` to "
                               "write it again") from None
    if not isinstance(data, dict) or not isinstance(data.get("verdicts"), dict) or not all(
            isinstance(v, dict) and isinstance(v.get("verdict"), str) for v in data["verdicts"].values()):
        raise KernelTraceError(f"{path}: expected {{\"verdicts\": {{definition: {{\"reference\": digest, \"verdict\": "
                               "\"compiles\" | reason}}}}}}; run `kerneltrace contenders --probe` to write it again")
    return data


def write_verdicts(root: Path, data: dict) -> None:
    write_atomic(probe_path(root), dump_document({**data, "verdicts": dict(sorted(data["verdicts"].items()))}))


def _file(solution: dict, type_: str, root: Path) -> tuple[Path, bytes]:
    rel = CANONICAL.solution_file(solution["author"], type_, solution["definition"], solution["name"])
    return root / rel, dump_document(solution).encode("utf-8")


def render(ds, definitions: Iterable[str] = (), libraries=None) -> Rendered:
    """Every generated contender of the loaded dataset `ds` (only `definitions`' where given), with what is
    skipped and why. `libraries`: the library hook (libraries.library_contenders by default)."""
    if libraries is None:
        from .libraries import library_contenders as libraries
    root = Path(ds.root)
    wanted = set(definitions) or None
    for name in sorted((wanted or set()) - set(ds.definitions)):
        raise KernelTraceError(f"--definitions: no definition named {name!r} in {root}")
    out = Rendered(definitions=wanted)
    verdicts = read_verdicts(root)["verdicts"]
    baselines = {s.definition: s.data for s in sorted(ds.solutions.values(), key=lambda s: s.name)
                 if s.author == "baseline"}
    for name, d in sorted(ds.definitions.items()):
        if wanted and name not in wanted:
            continue
        seen = verdicts.get(name)
        if seen is None or seen.get("reference") != reference_digest(d.data["reference"]):
            why = "never probed" if seen is None else "whose reference changed since it was probed"
            out.unprobed.append((name, why))
            continue
        if seen["verdict"] != COMPILES or wrong_when_compiled(name):
            out.skipped.append((name, wrong_when_compiled(name) if seen["verdict"] == COMPILES else seen["verdict"]))
            continue
        path, data = _file(compiler_solution(d.data, baselines.get(name)), d.type, root)
        out.files[path] = data
    solutions, skipped = libraries(ds)
    for solution in solutions:
        d = ds.definitions.get(solution.get("definition"))
        if solution.get("author") not in LIBRARY_AUTHORS or d is None:
            raise KernelTraceError(f"library contender {solution.get('name')!r}: author {solution.get('author')!r} "
                                   f"and definition {solution.get('definition')!r} must be a library author of "
                                   "model/contender_kinds.py and a definition of the dataset")
        if wanted and d.name not in wanted:
            continue
        path, data = _file(solution, d.type, root)
        if path in out.files:
            raise KernelTraceError(f"two contenders are written to {path.relative_to(root)}")
        out.files[path] = data
    out.skipped += [(n, why) for n, why in skipped if not wanted or n in wanted]
    return out


def orphans(root: Path, rendered: Rendered) -> list[Path]:
    """Files under the generated authors' folders that the command would not write (a definition dropped, a
    library contender withdrawn, a reference that stopped compiling); within the rendered definitions only."""
    found = []
    for author in GENERATED_AUTHORS:
        pattern = CANONICAL["solutions"].path(author=author, type="*", definition="*", solution="*")
        for path in sorted(root.glob(pattern)):
            if rendered.definitions and path.parent.name not in rendered.definitions:
                continue
            if path not in rendered.files:
                found.append(path)
    return found


def write(rendered: Rendered) -> Iterator[Path]:
    """Write the rendered files atomically; yield the ones that changed."""
    for path, data in sorted(rendered.files.items()):
        if path.is_file() and path.read_bytes() == data:
            continue
        write_atomic(path, data)
        yield path


def prune(root: Path, rendered: Rendered) -> list[Path]:
    """Remove the orphans and the folders they leave empty."""
    removed = orphans(root, rendered)
    for path in removed:
        path.unlink()
        for folder in (path.parent, path.parent.parent):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    return removed


def check(root: Path, rendered: Rendered) -> list[str]:
    """Every problem with the committed contenders: a file that differs from what the command writes, one
    missing, one it would not write (stale), and a definition whose probe verdict is missing or stale."""
    problems = []
    for path, data in sorted(rendered.files.items()):
        rel = path.relative_to(root)
        if not path.is_file():
            problems.append(f"{rel}: missing")
        elif path.read_bytes() != data:
            problems.append(f"{rel}: differs from what `kerneltrace contenders` writes (generated: never edit it)")
    problems += [f"{p.relative_to(root)}: stale: `kerneltrace contenders` does not write it (any more)"
                 for p in orphans(root, rendered)]
    for why in sorted({why for _, why in rendered.unprobed}):
        names = [name for name, w in rendered.unprobed if w == why]
        problems.append(f"{CANONICAL.probe_file(PROBE)}: {len(names)} definition(s) {why}: {', '.join(names)}; run "
                        "`kerneltrace contenders` (it probes them, then writes their contenders)")
    return problems
