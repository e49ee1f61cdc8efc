"""The schema reference as data: one table of fields per record kind, read from the JSON Schemas.

The walk follows `$ref` into common.json, into other record schemas and into local `$defs`,
merges the branches of `oneOf`/`anyOf`, and reads `if`/`then`/`else` (and `allOf` of them)
as fields that apply under a condition, e.g. an axis' `value` when its `type` is `const`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Optional

from ..model.kinds import KIND
from ..model.schemas import RECORD_KINDS, SCHEMA_DIR, load_schema

# Fields the schemas leave undescribed because they mean the same in every record.
_STANDARD_DESCRIPTIONS = {"$schema": "Optional: where the JSON Schema of this file is, for editors. Ignored otherwise."}
_MAX_DEPTH = 16


@dataclass(frozen=True)
class Constraint:
    """One rule on a field's value: `label` then `values` (shown as code), e.g. one of `a`, `b`."""

    label: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class FieldDoc:
    path: str  # 'axes.<name>.type'; '<name>' stands for any key of a map, '[]' for any item of an array
    type: str  # 'string', 'integer or null', ...
    required: str  # 'yes', 'no', 'if type is const', or '' where it does not apply (map values, items)
    description: str
    allowed: tuple[Constraint, ...]


@dataclass(frozen=True)
class KindDoc:
    kind: str
    title: str
    description: str
    stored_at: str
    type: str
    schema_file: str
    schema_text: str
    fields: tuple[FieldDoc, ...]


@dataclass(frozen=True)
class VocabularyDoc:
    name: str
    description: str
    type: str
    allowed: tuple[Constraint, ...]


# A condition under which a field applies: (sibling key, value, negated).
_Cond = tuple[str, str, bool]


@dataclass
class _Row:
    path: str
    type: str
    description: str
    allowed: tuple[Constraint, ...]
    requirable: bool  # False for map values and array items
    applies_always: bool
    applies_when: set[_Cond] = field(default_factory=set)
    required_always: bool = False
    required_when: set[_Cond] = field(default_factory=set)


@lru_cache(maxsize=None)
def _documents() -> dict[str, dict]:
    return {load_schema(name)["$id"]: load_schema(name) for name in RECORD_KINDS + ("common",)}


def _pointer(doc: Any, fragment: str) -> Any:
    node = doc
    for part in fragment.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _resolve(node: Any, doc: dict) -> tuple[Any, dict]:
    """Follow `$ref` (keeping the referring node's other keywords, which win)."""
    for _ in range(_MAX_DEPTH):
        if not (isinstance(node, dict) and "$ref" in node):
            return node, doc
        uri, _, fragment = node["$ref"].partition("#")
        target_doc = _documents()[uri] if uri else doc
        target = _pointer(target_doc, fragment)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **siblings} if isinstance(target, dict) else target
        doc = target_doc
    raise ValueError(f"$ref chain too long in {doc.get('$id')}")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _types(node: Any, doc: dict, depth: int = 0) -> list[str]:
    node, doc = _resolve(node, doc)
    if node is True or not isinstance(node, dict):
        return ["any"]
    declared = node.get("type")
    if declared:
        return [declared] if isinstance(declared, str) else list(declared)
    if "enum" in node:
        return _unique([_json_type(v) for v in node["enum"]])
    if "const" in node:
        return [_json_type(node["const"])]
    branches = node.get("oneOf") or node.get("anyOf")
    if branches and depth < _MAX_DEPTH:
        return _unique([t for b in branches for t in _types(b, doc, depth + 1)])
    if "properties" in node or "additionalProperties" in node:
        return ["object"]
    if "items" in node:
        return ["array"]
    return ["any"]


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _constraints(node: Any, doc: dict) -> tuple[Constraint, ...]:
    if not isinstance(node, dict):
        return ()
    out: list[Constraint] = []
    if "enum" in node:
        out.append(Constraint("one of", tuple(_value_text(v) for v in node["enum"])))
    props = node.get("properties")
    if isinstance(props, dict) and props and all(isinstance(p, dict) and "const" in p for p in props.values()):
        # a table of fixed values (common.json's definition_type_alias): show it as the mapping it is
        out.append(Constraint("maps", tuple(f"{k} → {_value_text(p['const'])}" for k, p in props.items())))
    if "const" in node:
        out.append(Constraint("exactly", (_value_text(node["const"]),)))
    if "pattern" in node:
        out.append(Constraint("matches", (node["pattern"],)))
    if "format" in node:
        out.append(Constraint("format", (node["format"],)))
    for key, label in (("minimum", "at least"), ("exclusiveMinimum", "greater than"),
                       ("maximum", "at most"), ("exclusiveMaximum", "less than")):
        if key in node:
            out.append(Constraint(label, (_value_text(node[key]),)))
    for key, label, unit in (("minLength", "at least", "character"), ("maxLength", "at most", "character"),
                             ("minItems", "at least", "item"), ("maxItems", "at most", "item"),
                             ("minProperties", "at least", "entry"), ("maxProperties", "at most", "entry")):
        if key in node:
            count = node[key]
            if label == "at least" and count == 1:
                out.append(Constraint("not empty"))
            else:
                plural = unit if count == 1 else ("entries" if unit == "entry" else unit + "s")
                out.append(Constraint(f"{label} {count} {plural}"))
    if node.get("uniqueItems"):
        out.append(Constraint("no duplicates"))
    if "default" in node:
        out.append(Constraint("default", (_value_text(node["default"]),)))
    if "propertyNames" in node:
        names, _ = _resolve(node["propertyNames"], doc)
        for c in _constraints(names, doc):
            out.append(Constraint("keys " + ("match" if c.label == "matches" else c.label), c.values))
    return tuple(out)


def _condition(if_schema: Any) -> _Cond:
    props = if_schema.get("properties", {}) if isinstance(if_schema, dict) else {}
    if len(props) == 1:
        (key, sub), = props.items()
        if isinstance(sub, dict) and "const" in sub:
            return (key, _value_text(sub["const"]), False)
    return ("condition", json.dumps(if_schema, sort_keys=True), False)


def _simplify(conds: set[_Cond]) -> tuple[bool, set[_Cond]]:
    """(always, remaining): 'X is v' together with 'X is not v' means always."""
    for key, value, negated in conds:
        if (key, value, not negated) in conds:
            return True, set()
    return False, conds


def _condition_text(conds: set[_Cond]) -> str:
    parts = sorted(f"{key} is {'not ' if negated else ''}{value}" for key, value, negated in conds)
    return "if " + " or ".join(parts)


class _Walker:
    def __init__(self) -> None:
        self.rows: dict[str, _Row] = {}

    def field(self, node: Any, doc: dict, path: str, required: Optional[bool], when: Optional[_Cond],
              depth: int) -> None:
        node, doc = _resolve(node, doc)
        self.add_row(node, doc, path, required, when)
        if depth < _MAX_DEPTH:
            # A condition applies to the field it introduces; its sub-fields are relative to it.
            self.children(node, doc, path, None, depth + 1)

    def add_row(self, node: Any, doc: dict, path: str, required: Optional[bool], when: Optional[_Cond]) -> None:
        row = self.rows.get(path)
        if row is None:
            name = path.rsplit(".", 1)[-1]
            description = node.get("description", "") if isinstance(node, dict) else ""
            row = self.rows[path] = _Row(
                path=path, type=" or ".join(_types(node, doc)),
                description=description or _STANDARD_DESCRIPTIONS.get(name, ""),
                allowed=_constraints(node, doc), requirable=required is not None, applies_always=when is None)
        elif row.type == "any":
            row.type = " or ".join(_types(node, doc))
        if when is None:
            row.applies_always = True
        else:
            row.applies_when.add(when)
        if required:
            if when is None:
                row.required_always = True
            else:
                row.required_when.add(when)

    def children(self, node: Any, doc: dict, path: str, when: Optional[_Cond], depth: int) -> None:
        if not isinstance(node, dict):
            return
        required = set(node.get("required", ()))
        for name, sub in node.get("properties", {}).items():
            self.field(sub, doc, _join(path, name), name in required, when, depth)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            self.field(extra, doc, _join(path, "<name>"), None, when, depth)
        items = node.get("items")
        if isinstance(items, dict):
            self.field(items, doc, path + "[]", None, when, depth)
        for branch in [*node.get("oneOf", ()), *node.get("anyOf", ()), *node.get("allOf", ())]:
            branch, branch_doc = _resolve(branch, doc)
            self.children(branch, branch_doc, path, when, depth + 1)
        if "if" in node:
            cond = _condition(node["if"])
            for key, negated in (("then", False), ("else", True)):
                if key in node:
                    branch, branch_doc = _resolve(node[key], doc)
                    self.children(branch, branch_doc, path, (cond[0], cond[1], negated), depth + 1)

    def fields(self) -> tuple[FieldDoc, ...]:
        out = []
        for row in self.rows.values():
            always, when = (True, set()) if row.applies_always else _simplify(row.applies_when)
            description = row.description
            if not always:
                description = (description + " " if description else "") + f"Only {_condition_text(when)}."
            required_always, required_when = row.required_always, row.required_when
            if not required_always and required_when:
                required_always, required_when = _simplify(required_when)
            if not row.requirable:
                required = ""
            elif required_always:
                required = "yes"
            elif required_when:
                required = _condition_text(required_when)
            else:
                required = "no"
            out.append(FieldDoc(row.path, row.type, required, description, row.allowed))
        return tuple(out)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def kind_doc(kind: str) -> KindDoc:
    """The reference of one record kind: title, where it is stored, its fields, its schema text."""
    schema = load_schema(kind)
    walker = _Walker()
    walker.children(schema, schema, "", None, 0)
    return KindDoc(
        kind=kind, title=schema.get("title", kind), description=schema.get("description", ""),
        stored_at=KIND[kind].layout.pattern, type=" or ".join(_types(schema, schema)),
        schema_file=f"{kind}.json", schema_text=(SCHEMA_DIR / f"{kind}.json").read_text(encoding="utf-8"),
        fields=walker.fields(),
    )


def vocabulary() -> tuple[VocabularyDoc, ...]:
    """The shared lists of common.json ($defs), sorted by name."""
    common = load_schema("common")
    return tuple(
        VocabularyDoc(name, node.get("description", ""), " or ".join(_types(node, common)), _constraints(node, common))
        for name, node in sorted(common["$defs"].items())
    )


def schema_reference() -> tuple[KindDoc, ...]:
    """Every record kind, in the order of RECORD_KINDS."""
    return tuple(kind_doc(kind) for kind in RECORD_KINDS)
