"""One family file: read and checked (a bad file is a KernelTraceError naming the file, the field and the fix), then
rendered into its siblings' files."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

from ..model.errors import KernelTraceError
from ..model.fileio import dump_document
from ..model.layout import CANONICAL
from ..model.status import BASELINE_AUTHOR

SIBLING_KEYS = {"name", "set", "axes", "inputs", "outputs", "replace", "einsum_replace", "baseline_replace"}
# Fields of the template a sibling may set: what names, describes and tags it; never its inputs, outputs or
# reference (a different computation is a definition of its own, with its own independent check).
SETTABLE = {"description", "tags"}


@dataclass(frozen=True)
class Family:
    path: Path
    template: str
    type: str
    siblings: tuple[dict, ...]


def _fail(path: Path, where: str, problem: str, fix: str) -> KernelTraceError:
    return KernelTraceError(f"{path}: {where}: {problem}; {fix}")


def read_families(root: Path) -> list[Family]:
    return [_read(path) for path in sorted(Path(root).glob(CANONICAL["families"].glob))]


def _read(path: Path) -> Family:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _fail(path, "the file", f"cannot be read as JSON ({exc})", "fix the JSON") from None
    if not isinstance(data, dict):
        raise _fail(path, "the file", "is not a JSON object", "write {\"template\": ..., \"type\": ..., \"siblings\": [...]}")
    for key in ("template", "type"):
        if not isinstance(data.get(key), str):
            raise _fail(path, f"$.{key}", "is missing or not a string", f"name the family's {key}")
    siblings = data.get("siblings")
    if not isinstance(siblings, list) or not siblings:
        raise _fail(path, "$.siblings", "is missing or empty", "list the siblings, each with its name")
    for i, s in enumerate(siblings):
        where = f"$.siblings[{i}]"
        if not isinstance(s, dict) or not isinstance(s.get("name"), str):
            raise _fail(path, where, "has no name", "give each sibling a \"name\"")
        unknown = set(s) - SIBLING_KEYS
        if unknown:
            raise _fail(path, f"{where}.{sorted(unknown)[0]}", "is not a sibling field",
                        f"use {', '.join(sorted(SIBLING_KEYS))}")
        wrong = set(s.get("set", {})) - SETTABLE
        if wrong:
            raise _fail(path, f"{where}.set.{sorted(wrong)[0]}", "cannot differ between siblings",
                        f"a sibling sets only {', '.join(sorted(SETTABLE))}; other changes make a definition of its own")
    return Family(path, data["template"], data["type"], tuple(siblings))


def _sibling_definition(family: Family, template: dict, s: dict, i: int) -> dict:
    d = copy.deepcopy(template)
    d["name"] = s["name"]
    for key, value in s.get("set", {}).items():
        d[key] = value
    for axis, changes in s.get("axes", {}).items():
        if axis not in d["axes"]:
            raise _fail(family.path, f"$.siblings[{i}].axes.{axis}", f"{family.template} has no axis {axis}",
                        f"use one of {', '.join(d['axes'])}")
        d["axes"][axis].update(changes)
    for side in ("inputs", "outputs"):  # a tensor's description only: its shape and dtype are the template's
        for tensor, changes in s.get(side, {}).items():
            if tensor not in d[side] or set(changes) != {"description"}:
                raise _fail(family.path, f"$.siblings[{i}].{side}.{tensor}", "may only change an existing tensor's "
                            "description", f"the template's {side} are {', '.join(d[side])}")
            d[side][tensor].update(changes)
    d["reference"] = _replaced(family, d["reference"], s.get("replace", []), f"$.siblings[{i}].replace", "reference")
    return d


def _replaced(family: Family, text: str, pairs: list, where: str, what: str) -> str:
    """`text` with each [old, new] of `pairs` applied in turn, old appearing exactly once."""
    for k, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise _fail(family.path, f"{where}[{k}]", "is not a pair of strings", "write [\"old text\", \"new text\"]")
        old, new = pair
        if text.count(old) != 1:
            raise _fail(family.path, f"{where}[{k}]", f"{old!r} is not exactly once in the {what}",
                        "replace text that appears once")
        text = text.replace(old, new)
    return text


def render_family(root: Path, family: Family) -> dict[str, str]:
    """The family's files, path relative to the dataset root -> text: each sibling's definition, the template's
    Einsum cascade verbatim, and the template's baseline under the sibling's name."""
    root = Path(root)
    t = family.template
    sources = {"definition": CANONICAL.definition_file(family.type, t), "einsum": CANONICAL.einsum_file(family.type, t),
               "baseline": CANONICAL.solution_file(BASELINE_AUTHOR, family.type, t, f"{t}_torch")}
    missing = [rel for rel in sources.values() if not (root / rel).is_file()]
    if missing:
        raise _fail(family.path, "$.template", f"{t}'s {missing[0]} is not in the dataset",
                    "name a committed definition with its Einsum cascade and baseline")
    template = json.loads((root / sources["definition"]).read_text(encoding="utf-8"))
    einsum = (root / sources["einsum"]).read_text(encoding="utf-8")
    baseline = json.loads((root / sources["baseline"]).read_text(encoding="utf-8"))
    out = {}
    for i, s in enumerate(family.siblings):
        name = s["name"]
        out[CANONICAL.definition_file(family.type, name)] = dump_document(_sibling_definition(family, template, s, i))
        out[CANONICAL.einsum_file(family.type, name)] = _replaced(family, einsum, s.get("einsum_replace", []),
                                                                  f"$.siblings[{i}].einsum_replace", "Einsum cascade")
        sources_ = [{**src, "content": _replaced(family, src["content"], s.get("baseline_replace", []),
                                                 f"$.siblings[{i}].baseline_replace", "baseline's source")}
                    if k == 0 else src for k, src in enumerate(baseline["sources"])]
        out[CANONICAL.solution_file(BASELINE_AUTHOR, family.type, name, f"{name}_torch")] = dump_document(
            {**baseline, "name": f"{name}_torch", "definition": name, "sources": sources_})
    return out
