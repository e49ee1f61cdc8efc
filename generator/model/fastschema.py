"""A fast yes/no JSON Schema check for the keywords our schemas use.

jsonschema takes about half a millisecond per trace line, which makes a million-line
dataset take minutes. This compiles a schema once into nested closures (a few
microseconds per record) that answer only "valid or not"; records it rejects are then
checked again by jsonschema, which explains the errors. A keyword this compiler does not
know raises at compile time, so it can never silently accept something; a test checks it
agrees with jsonschema on generated records.
"""

from __future__ import annotations

import re
from typing import Any, Callable

Check = Callable[[Any], bool]

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
# Keywords that carry documentation only.
_ANNOTATIONS = {"$schema", "$id", "title", "description", "default", "$defs", "examples", "format"}


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) or isinstance(b, list):
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(_equal(x, y) for x, y in zip(a, b)))
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                and all(_equal(a[k], b[k]) for k in a))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _all_of(checks: list[Check]) -> Check:
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        a, b = checks
        return lambda v: a(v) and b(v)

    def check(v: Any) -> bool:
        for c in checks:
            if not c(v):
                return False
        return True
    return check


class FastSchema:
    """Compiles schemas from a {$id: document} mapping, resolving '$ref's among them."""

    def __init__(self, documents: dict[str, dict]):
        self.documents = documents
        self.compiled: dict[tuple[str, str], Check] = {}

    def compile_id(self, doc_id: str) -> Check:
        return self.compile_ref(doc_id, "")

    def compile_ref(self, doc_id: str, fragment: str) -> Check:
        key = (doc_id, fragment)
        if key not in self.compiled:
            # Placeholder first, so recursive schemas resolve lazily.
            self.compiled[key] = lambda v, key=key: self.compiled[key](v)
            node = self.documents[doc_id]
            for part in [p for p in fragment.split("/") if p]:
                node = node[part.replace("~1", "/").replace("~0", "~")]
            self.compiled[key] = self.compile(node, doc_id)
        return self.compiled[key]

    def compile(self, schema: Any, doc_id: str) -> Check:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        checks: list[Check] = []
        object_keys = {"properties", "required", "additionalProperties"} & schema.keys()
        if object_keys:
            checks.append(self.compile_object(schema, doc_id))
        for kw, arg in schema.items():
            if kw in _ANNOTATIONS or kw in object_keys or kw in ("if", "then", "else"):
                continue
            make = getattr(self, "kw_" + kw.lstrip("$"), None)
            if make is None:
                raise NotImplementedError(f"fastschema: keyword {kw!r} is not supported")
            checks.append(make(arg, schema, doc_id))
        if "if" in schema:
            cond = self.compile(schema["if"], doc_id)
            then = self.compile(schema.get("then", True), doc_id)
            other = self.compile(schema.get("else", True), doc_id)
            checks.append(lambda v: then(v) if cond(v) else other(v))
        return _all_of(checks)

    def compile_object(self, schema: dict, doc_id: str) -> Check:
        """properties + required + additionalProperties in one pass over the object's keys."""
        if schema.get("patternProperties"):
            raise NotImplementedError("fastschema: patternProperties is not supported")
        props = {k: self.compile(s, doc_id) for k, s in schema.get("properties", {}).items()}
        required = tuple(schema.get("required", ()))
        extra = self.compile(schema["additionalProperties"], doc_id) if "additionalProperties" in schema else None

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for k in required:
                if k not in v:
                    return False
            for k, item in v.items():
                c = props.get(k, extra)
                if c is not None and not c(item):
                    return False
            return True
        return check

    # -- keywords (each returns a check) -----------------------------------------------------
    def kw_ref(self, arg, schema, doc_id):
        target, _, fragment = arg.partition("#")
        return self.compile_ref(target or doc_id, fragment)

    def kw_type(self, arg, schema, doc_id):
        preds = [_TYPES[t] for t in (arg if isinstance(arg, list) else [arg])]
        if len(preds) == 1:
            return preds[0]
        return lambda v: any(p(v) for p in preds)

    def kw_enum(self, arg, schema, doc_id):
        if all(isinstance(e, str) for e in arg):
            names = frozenset(arg)
            return lambda v: isinstance(v, str) and v in names
        return lambda v: any(_equal(v, e) for e in arg)

    def kw_const(self, arg, schema, doc_id):
        if isinstance(arg, str):
            return lambda v: v == arg and isinstance(v, str)
        return lambda v: _equal(v, arg)

    def kw_propertyNames(self, arg, schema, doc_id):
        name = self.compile(arg, doc_id)
        return lambda v: not isinstance(v, dict) or all(name(k) for k in v)

    def kw_items(self, arg, schema, doc_id):
        item = self.compile(arg, doc_id)

        def check(v: Any) -> bool:
            if isinstance(v, list):
                for x in v:
                    if not item(x):
                        return False
            return True
        return check

    def kw_pattern(self, arg, schema, doc_id):
        search = re.compile(arg).search
        return lambda v: not isinstance(v, str) or search(v) is not None

    # Bounds are written as jsonschema tests them ("fails if v < arg"), so NaN passes both.
    def kw_minimum(self, arg, schema, doc_id):
        return lambda v: not _TYPES["number"](v) or not v < arg

    def kw_maximum(self, arg, schema, doc_id):
        return lambda v: not _TYPES["number"](v) or not v > arg

    def kw_exclusiveMinimum(self, arg, schema, doc_id):
        return lambda v: not _TYPES["number"](v) or not v <= arg

    def kw_minLength(self, arg, schema, doc_id):
        return lambda v: not isinstance(v, str) or len(v) >= arg

    def kw_maxLength(self, arg, schema, doc_id):
        return lambda v: not isinstance(v, str) or len(v) <= arg

    def kw_minItems(self, arg, schema, doc_id):
        return lambda v: not isinstance(v, list) or len(v) >= arg

    def kw_minProperties(self, arg, schema, doc_id):
        return lambda v: not isinstance(v, dict) or len(v) >= arg

    def kw_uniqueItems(self, arg, schema, doc_id):
        if not arg:
            return lambda v: True
        return lambda v: not isinstance(v, list) or all(
            not _equal(v[i], v[j]) for i in range(len(v)) for j in range(i + 1, len(v)))

    def kw_allOf(self, arg, schema, doc_id):
        return _all_of([self.compile(s, doc_id) for s in arg])

    def kw_anyOf(self, arg, schema, doc_id):
        subs = [self.compile(s, doc_id) for s in arg]
        return lambda v: any(s(v) for s in subs)

    def kw_oneOf(self, arg, schema, doc_id):
        subs = [self.compile(s, doc_id) for s in arg]

        def check(v: Any) -> bool:
            matched = 0
            for s in subs:
                if s(v):
                    matched += 1
                    if matched > 1:
                        return False
            return matched == 1
        return check

