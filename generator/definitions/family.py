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

SIBLING_KEYS = {"name", "set", "axes", "inputs", "outputs", "replace", "einsum_replace", "baseline_set",
                "baseline_replace"}
# Top-level fields a sibling may set outright; its tensors, axes and code change field by field or by exact text
# replacement, so that what it shares with the template stays written once. Every sibling still has an independent
# check of its own in tests/reference_cases (test_references fails a definition without one): a family saves
# writing, it proves nothing.
SETTABLE = {"description", "tags", "constraints"}
BASELINE_SETTABLE = {"description"}
TENSOR_FIELDS = {"shape", "dtype", "description", "random"}
AXIS_FIELDS = {"type", "value", "description", "parent"}


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
        for key, allowed in (("set", SETTABLE), ("baseline_set", BASELINE_SETTABLE)):
            wrong = set(s.get(key, {})) - allowed
            if wrong:
                raise _fail(path, f"{where}.{key}.{sorted(wrong)[0]}", "cannot be set outright",
                            f"{key} names only {', '.join(sorted(allowed))}; change tensors, axes and code field by "
                            "field or by replacing text")
    return Family(path, data["template"], data["type"], tuple(siblings))


def _sibling_definition(family: Family, template: dict, s: dict, i: int) -> dict:
    d = copy.deepcopy(template)
    d["name"] = s["name"]
    for key, value in s.get("set", {}).items():
        d[key] = value
    d["axes"] = _changed(family, d["axes"], s.get("axes", {}), f"$.siblings[{i}].axes", AXIS_FIELDS, ("type",))
    for side in ("inputs", "outputs"):
        d[side] = _changed(family, d[side], s.get(side, {}), f"$.siblings[{i}].{side}", TENSOR_FIELDS,
                           ("shape", "dtype"))
    d["reference"] = _replaced(family, d["reference"], s.get("replace", []), f"$.siblings[{i}].replace", "reference")
    return d


def _changed(family: Family, items: dict, changes: dict, where: str, fields: set, required: tuple) -> dict:
    """`items` (axes or tensors by name) with a sibling's changes: {name: {field: value}} updates an entry (a null
    value drops the field), {name: null} drops the entry, and a name the template lacks adds it, appended."""
    if not isinstance(changes, dict):
        raise _fail(family.path, where, "is not an object", "write {\"<name>\": {\"<field>\": value}}")
    out = dict(items)
    for name, change in changes.items():
        if change is None:
            if name not in out:
                raise _fail(family.path, f"{where}.{name}", "drops an entry the template does not have",
                            f"the template's are {', '.join(items)}")
            del out[name]
            continue
        wrong = set(change) - fields if isinstance(change, dict) else {"(not an object)"}
        if wrong:
            raise _fail(family.path, f"{where}.{name}", f"cannot change {sorted(wrong)[0]}",
                        f"change only {', '.join(sorted(fields))}")
        entry = dict(out.get(name, {}))
        for key, value in change.items():
            if value is None:
                entry.pop(key, None)
            else:
                entry[key] = value
        missing = [key for key in required if key not in entry]
        if missing:
            raise _fail(family.path, f"{where}.{name}", f"is new here and has no {missing[0]}",
                        f"a new entry gives {', '.join(required)} (or name one of {', '.join(items)})")
        out[name] = entry
    return out


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
            {**baseline, "name": f"{name}_torch", "definition": name, **s.get("baseline_set", {}), "sources": sources_})
    return out
