"""Turn recipe Specs into workload lines and safetensors blobs, or check committed files against them."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from ..load import load
from ..model.dtypes import NUMPY_NAMES
from ..model.errors import KernelTraceError
from ..model.fileio import dump_line, write_atomic
from ..model.layout import CANONICAL
from .recipe import recipe_specs
from .spec import Spec, as_jsonable


def all_specs(root: Path) -> list[Spec]:
    """The Specs of every recipe file (dataset/recipes/<model>.yaml): every model's recipe is data."""
    return recipe_specs(root)


def _definitions(root: Path) -> dict:
    """name -> definition data, read by the one loader (any layout it reads)."""
    return {name: d.data for name, d in load(root).definitions.items()}


def render(root: Path, specs: Iterable[Spec]) -> dict[Path, bytes]:
    """Every file the specs describe, path -> exact bytes. Raises KernelTraceError on a bad spec."""
    from safetensors.numpy import save  # bench extra

    definitions = _definitions(root)
    lines: dict[str, list[str]] = {}
    files: dict[Path, bytes] = {}
    seen: set = set()
    # blob bytes -> the path that holds them: a workload whose blob is byte for byte one written before (the
    # same page table under another head configuration, say) names that file instead of a copy.
    by_content: dict[bytes, str] = {}
    for spec in specs:
        d = definitions.get(spec.definition)
        where = f"recipe {spec.definition}/{spec.key}"
        if d is None:
            raise KernelTraceError(f"{where}: no definition named {spec.definition!r} loads from "
                                       f"{root / CANONICAL['definitions'].name} (`kerneltrace validate` says why if its file is there)")
        if (spec.definition, spec.key) in seen:
            raise KernelTraceError(f"{where}: key used twice")
        seen.add((spec.definition, spec.key))
        var = {n for n, a in d["axes"].items() if a["type"] == "var"}
        if set(spec.axes) != var:
            raise KernelTraceError(f"{where}: axes {sorted(spec.axes)} but the definition's var axes are {sorted(var)}")
        if set(spec.inputs) != set(d["inputs"]):
            raise KernelTraceError(f"{where}: inputs {sorted(spec.inputs)} but the definition takes {list(d['inputs'])}")
        inputs, blob = {}, {}
        rel = CANONICAL.blob_file(d["type"], d["name"], spec.uuid)
        for name in d["inputs"]:  # the definition's order
            value = spec.inputs[name]
            if isinstance(value, np.ndarray):
                dtype = d["inputs"][name]["dtype"]
                if dtype not in NUMPY_NAMES:
                    raise KernelTraceError(f"{where}: input {name} is {dtype}, which a numpy blob cannot hold")
                blob[name] = np.ascontiguousarray(value.astype(NUMPY_NAMES[dtype]))
                inputs[name] = {"type": "safetensors", "path": rel, "tensor_key": name}
            elif value == "random":
                inputs[name] = {"type": "random"}
            else:
                inputs[name] = {"type": "scalar", "value": as_jsonable(value)}
        if blob:
            data = save(dict(sorted(blob.items())))
            digest = hashlib.sha256(data).digest()
            if digest in by_content:
                for name in blob:
                    inputs[name]["path"] = by_content[digest]
            else:
                by_content[digest] = rel
                files[root / rel] = data
        workload = {"uuid": spec.uuid, "axes": {k: int(v) for k, v in spec.axes.items()}, "inputs": inputs,
                    "seed": spec.seed}
        if spec.stage is not None:  # the step as data, stated by the recipe (never parsed from prose)
            workload["stage"] = spec.stage
        if spec.num_tokens is not None:
            workload["num_tokens"] = int(spec.num_tokens)
        if spec.description:
            workload["description"] = spec.description
        line = {"definition": d["name"], "workload": workload, "solution": None, "evaluation": None}
        lines.setdefault(CANONICAL.workload_file(d["type"], d["name"]), []).append(dump_line(line))
    for rel, rows in lines.items():
        files[root / rel] = ("\n".join(rows) + "\n").encode("utf-8")
    return files


def write(root: Path, files: dict[Path, bytes]) -> Iterator[Path]:  # noqa: ARG001 - one signature with stale, check
    """Write files atomically (temporary file, then rename); yield the ones that changed."""
    for path, data in sorted(files.items()):
        if path.is_file() and path.read_bytes() == data:
            continue
        write_atomic(path, data)
        yield path


def orphans(root: Path, files: dict[Path, bytes]) -> list[Path]:
    """Blobs in the folders of the definitions the recipes write workloads for that no recipe makes (any
    more: a workload dropped, or its blob now shared with an identical one written earlier)."""
    folders = set()
    for path in files:
        if path.suffix == ".jsonl":  # workloads/<type>/<definition>.jsonl -> its blob folder
            type_, definition = path.parent.name, path.stem
            folders.add((root / CANONICAL.blob_file(type_, definition, "x")).parent)
    return [blob for folder in sorted(folders) for blob in sorted(folder.glob("*.safetensors")) if blob not in files]


def prune(root: Path, files: dict[Path, bytes]) -> list[Path]:
    """Remove the orphans (generated files nothing generates any more) and the folders they leave empty."""
    removed = orphans(root, files)
    for blob in removed:
        blob.unlink()
        if not any(blob.parent.iterdir()):
            blob.parent.rmdir()
    return removed


def stale(root: Path, files: dict[Path, bytes]) -> list[str]:
    """Problems: committed files that differ from, or are missing against, what the recipes make; and
    blobs in folders the recipes own that no recipe makes any more."""
    problems = []
    for path, data in sorted(files.items()):
        if not path.is_file():
            problems.append(f"{path.relative_to(root)}: missing")
        elif path.read_bytes() != data:
            problems.append(f"{path.relative_to(root)}: differs from what its recipe generates")
    problems += [f"{blob.relative_to(root)}: no recipe generates it" for blob in orphans(root, files)]
    return problems


def check(root: Path, files: dict[Path, bytes]) -> list[str]:
    """Every problem with the committed workload files against what the recipes make (`files`): stale or
    missing files, blobs no recipe makes, and workload files no recipe writes (a line appended by hand
    is stale: the file is the recipe's output, whole)."""
    problems = stale(root, files)
    made = {Path(f).resolve() for f in files}
    for w in sorted(root.glob(CANONICAL["workloads"].glob)):
        if w.resolve() not in made:
            problems.append(f"{w.relative_to(root)}: no recipe writes it (add the definition's workloads to "
                            f"its model's recipe, or remove the file)")
    return problems
