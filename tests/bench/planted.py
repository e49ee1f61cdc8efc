"""The bench tests' planted solutions and the dataset helpers they share (imported by its bare name, as pytest
puts tests/bench on sys.path).

A planted solution is a file: tests/bench/cheats/<attack>.py (a cheat, named for what it tries) or
tests/bench/cheats/honest/<name>.py (an honest twin, or the honest computation the cheats import for their right
answers). Its quoted "{{key}}" placeholders are set by the test (a path, a marker, a number). An honest module it
imports by its bare name (`from rmsnorm import compute`) is shipped beside it as a source of its own, as a
contributor's multi-file solution is. No file there is a test (pytest collects test_*.py) and the folder is no
package (no __init__.py): the files run only inside the bench's workers."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from dataset_factory import WORKLOAD, dump, dump_lines

CHEATS_DIR = Path(__file__).parent / "cheats"
HONEST_DIR = CHEATS_DIR / "honest"
DATASET = Path(__file__).resolve().parents[2] / "dataset"
FAST = {"min_samples": 3, "max_samples": 10, "budget_s": 0.05, "min_batches": 3}
_PLACEHOLDER = re.compile(r'"\{\{(\w+)\}\}"')


def path_of(name: str) -> Path:
    """cheats/<name>.py; "honest/<name>" for an honest one."""
    return CHEATS_DIR / f"{name}.py"


def text(name: str, **values) -> str:
    """The source of planted solution `name` with its placeholders set from `values` (extra values are ignored;
    a placeholder without one is an error: the file would run with a string where a path or a number belongs)."""
    source = path_of(name).read_text(encoding="utf-8")
    missing = sorted(set(_PLACEHOLDER.findall(source)) - set(values))
    if missing:
        raise KeyError(f"{path_of(name)}: no value for {', '.join(missing)}")
    return _PLACEHOLDER.sub(lambda m: repr(values[m.group(1)]), source)


def sources(name: str, **values) -> list[dict]:
    """The solution's sources: the file as main.py, and each honest module it imports by bare name."""
    main = text(name, **values)
    helpers = sorted(set(re.findall(r"^from (\w+) import", main, re.M)) & {p.stem for p in HONEST_DIR.glob("*.py")})
    return [{"path": "main.py", "content": main},
            *({"path": f"{h}.py", "content": text(f"honest/{h}", **values)} for h in helpers)]


def add_solution(root: Path, name: str, file: str | None = None, *, author: str = "cheat", dps: bool = False,
                 definition: str = "rmsnorm_h128", op_type: str = "norm", **values) -> Path:
    """Store planted solution `file` (default: `name`) as solution `name` of `author` on `definition`."""
    path = root / f"solutions/{author}/{op_type}/{definition}/{name}.json"
    dump(path, {
        "name": name, "definition": definition, "author": author, "description": f"planted: {name}",
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "destination_passing_style": dps, "dependencies": ["torch"]},
        "sources": sources(file or name, **values)})
    return path


def workloads(n: int) -> list[dict]:
    """n workloads of rmsnorm_h128: batch sizes 1, 4, 7, ..., seeds 100, 101, ..."""
    out = []
    for i in range(n):
        w = json.loads(json.dumps(WORKLOAD))
        w["workload"].update(uuid=f"wl-{i:04d}", axes={"batch_size": 1 + 3 * i}, seed=100 + i)
        out.append(w)
    return out


def copy_definition(root: Path, name: str, workload: dict) -> None:
    """A copy of rmsnorm_h128 (definition and Einsum cascade) named `name`, with this one workload."""
    d = json.loads((root / "definitions/norm/rmsnorm_h128.json").read_text())
    dump(root / f"definitions/norm/{name}.json", {**d, "name": name})
    dump_lines(root / f"workloads/norm/{name}.jsonl", [{**workload, "definition": name}])
    einsum = root / "einsums/norm/rmsnorm_h128.yaml"
    (einsum.parent / f"{name}.yaml").write_text(einsum.read_text(encoding="utf-8"), encoding="utf-8")


def target_hardware(root: Path, target: list[str], solutions: str = "solutions") -> None:
    """Set spec.target_hardware of every solution file under root/`solutions`."""
    for sol in (root / solutions).rglob("*.json"):
        s = json.loads(sol.read_text())
        s["spec"]["target_hardware"] = target
        dump(sol, s)


@contextmanager
def private_tempdir(folder: Path) -> Iterator[Path]:
    """tempfile's folder for this process is `folder` while inside: an unsandboxed worker's temporary folder lands
    there, so a test sees its own leftovers, never the live folder of a bench another xdist worker runs meanwhile."""
    import tempfile

    folder.mkdir(parents=True, exist_ok=True)
    before, tempfile.tempdir = tempfile.tempdir, str(folder)
    try:
        yield folder
    finally:
        tempfile.tempdir = before


def kt_temp_folders(folder: Path) -> set[str]:
    """The bench workers' temporary folders now in `folder` (each worker makes one and removes it)."""
    return {p.name for p in folder.glob("kt-worker-*")}
