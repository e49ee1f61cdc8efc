"""A fast yes/no JSON Schema check for the keywords our schemas use.

jsonschema takes about half a millisecond per trace line, which makes a million-line
dataset take minutes. This compiles a schema once into the source of one Python function
per schema document (its '$ref's written inline, every keyword a line or two that returns
False), so a trace line is checked in a few microseconds with no call per value; the
function answers only "valid or not". Records it rejects are then checked again by
jsonschema, which explains the errors. A keyword this compiler does not know raises at
compile time, so it can never silently accept something; a test checks it agrees with
jsonschema on generated records.
"""

from __future__ import annotations

import re
from typing import Any, Callable

Check = Callable[[Any], bool]

# How each JSON type is tested, as an expression of the value `{v}`.
_TYPES: dict[str, str] = {
    "object": "isinstance({v}, dict)",
    "array": "isinstance({v}, list)",
    "string": "isinstance({v}, str)",
    # type(v) is ... first: the usual case in one cheap test, the rest (subclasses, 1.0) only when it fails
    "integer": "(type({v}) is int or (isinstance({v}, int) and not isinstance({v}, bool)) "
               "or (isinstance({v}, float) and {v}.is_integer()))",
    "number": "(type({v}) is float or type({v}) is int or (isinstance({v}, (int, float)) and not isinstance({v}, bool)))",
    "boolean": "isinstance({v}, bool)",
    "null": "{v} is None",
}
_NUMERIC = ("integer", "number")
# Keywords that carry documentation only.
_ANNOTATIONS = {"$schema", "$id", "title", "description", "default", "$defs", "examples", "format"}
_OBJECT = ("properties", "required", "additionalProperties")
PATTERN_MEMO = 65536  # strings remembered per pattern
_ABSENT = object()  # dict.get's answer for a property the object does not have


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


def _unique(v: list) -> bool:
    return all(not _equal(v[i], v[j]) for i in range(len(v)) for j in range(i + 1, len(v)))


class FastSchema:
    """Compiles schemas from a {$id: document} mapping, resolving '$ref's among them."""

    def __init__(self, documents: dict[str, dict]):
        self.documents = documents
        self.compiled: dict[tuple[str, str], Check] = {}
        self.scope: dict[str, Any] = {"_equal": _equal, "_unique": _unique, "_ABSENT": _ABSENT}
        self.names = 0  # fresh variable and constant names
        self.inlining: list[tuple[str, str]] = []  # the refs being written inline (a ref to one of them recurses)

    def compile_id(self, doc_id: str) -> Check:
        return self.compile_ref(doc_id, "")

    def compile_ref(self, doc_id: str, fragment: str) -> Check:
        key = (doc_id, fragment)
        if key not in self.compiled:
            # Placeholder first, so that a recursive schema calls the finished function.
            self.compiled[key] = lambda v, key=key: self.compiled[key](v)
            self.compiled[key] = self.function(self.resolve(doc_id, fragment), doc_id, key)
        return self.compiled[key]

    def resolve(self, doc_id: str, fragment: str) -> Any:
        node = self.documents[doc_id]
        for part in [p for p in fragment.split("/") if p]:
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def function(self, schema: Any, doc_id: str, key: tuple[str, str] | None = None) -> Check:
        """`schema` compiled into one function of its own (a ref's key is marked as being inlined)."""
        if key is not None:
            self.inlining.append(key)
        try:
            body = self.lines(schema, "v", doc_id)
        finally:
            if key is not None:
                self.inlining.pop()
        name = self.fresh("_check")
        source = f"def {name}(v):\n" + "".join(f" {line}\n" for line in body) + " return True\n"
        exec(compile(source, f"<fastschema {doc_id}>", "exec"), self.scope)  # noqa: S102 -- source built here
        return self.scope[name]

    def fresh(self, stem: str) -> str:
        self.names += 1
        return f"{stem}{self.names}"

    def constant(self, value: Any) -> str:
        name = self.fresh("_k")
        self.scope[name] = value
        return name

    # -- schema -> lines that return False where `v` (a variable's name) fails it ---------------
    def lines(self, schema: Any, v: str, doc_id: str, known: str | None = None) -> list[str]:
        """`known`: the one JSON type `v` is known to have here (an enclosing schema checked it), or None."""
        if schema is True:
            return []
        if schema is False:
            return ["return False"]
        out: list[str] = []
        types = schema.get("type")
        types = types if isinstance(types, list) else [types] if types is not None else None
        if types is not None:
            out.append(f"if not ({' or '.join(_TYPES[t].format(v=v) for t in types)}): return False")
        known = (types[0] if types is not None and len(types) == 1 else None) or known  # `v`'s one type past here
        if _OBJECT[0] in schema or _OBJECT[1] in schema or _OBJECT[2] in schema:
            out += self.object(schema, v, doc_id, known == "object")
        for kw, arg in schema.items():
            if kw in _ANNOTATIONS or kw in _OBJECT or kw in ("type", "if", "then", "else"):
                continue
            make = getattr(self, "kw_" + kw.lstrip("$"), None)
            if make is None:
                raise NotImplementedError(f"fastschema: keyword {kw!r} is not supported")
            out += make(arg, v, doc_id, known)
        if "if" in schema:
            cond = self.expression(schema["if"], v, known) or \
                f"{self.constant(self.function(schema['if'], doc_id))}({v})"
            then, other = (self.lines(schema.get(k, True), v, doc_id, known) for k in ("then", "else"))
            out += [f"if {cond}:", *(" " + x for x in then or ["pass"]),
                    "else:", *(" " + x for x in other or ["pass"])]
        return out

    def expression(self, schema: Any, v: str, known: str | None = None) -> str | None:
        """`schema` as one expression of `v` where it is made of type, const, enum, required and properties
        only (an if's condition: no function to call); None where it is not. `known`: as for lines."""
        if isinstance(schema, bool):
            return repr(schema)
        if not isinstance(schema, dict) or any(k not in _ANNOTATIONS for k in schema if k not in
                                               ("type", "const", "enum", "required", "properties")):
            return None
        types = schema.get("type")
        parts = [] if types is None else \
            ["(" + " or ".join(_TYPES[t].format(v=v) for t in (types if isinstance(types, list) else [types])) + ")"]
        for kw in ("const", "enum"):
            if kw in schema:
                lines = getattr(self, "kw_" + kw)(schema[kw], v, "", None)
                parts.append(lines[0].removeprefix("if not ").removesuffix(": return False"))
        inner = [f"{k!r} in {v}" for k in schema.get("required", ())]
        for name, sub in schema.get("properties", {}).items():
            x = self.fresh("x")
            sub_expression = self.expression(sub, x)
            if sub_expression is None:
                return None
            inner.append(f"(({x} := {v}.get({name!r}, _ABSENT)) is _ABSENT or {sub_expression})")
        if inner:
            parts.append(f"({' and '.join(inner)})" if known == "object" else
                         f"(not isinstance({v}, dict) or ({' and '.join(inner)}))")
        return "(" + " and ".join(parts) + ")" if parts else "True"

    def types(self, schema: Any, doc_id: str) -> frozenset | None:
        """The JSON types a value must have to pass `schema` (through its $ref), or None when any may."""
        if isinstance(schema, dict) and "type" in schema:
            t = schema["type"]
            found = set(t) if isinstance(t, list) else {t}
            return frozenset(found | {"integer"} if "number" in found else found)
        if isinstance(schema, dict) and "$ref" in schema:
            target, _, fragment = schema["$ref"].partition("#")
            return self.types(self.resolve(target or doc_id, fragment), target or doc_id)
        return None

    def dispatch(self, arg: list, v: str, doc_id: str) -> list[str] | None:
        """Branches that no value can pass two of (their types do not overlap, as a nullable object's
        [{type: null}, {$ref: object}]) as one if/elif on the value's type, each written inline; None if
        they may overlap. Then oneOf and anyOf are the same test."""
        types = [self.types(s, doc_id) for s in arg]
        if any(t is None for t in types) or sum(map(len, types)) != len(frozenset().union(*types)):
            return None
        out = []
        for n, (branch, t) in enumerate(zip(arg, types)):
            test = " or ".join(_TYPES[x].format(v=v) for x in sorted(t))
            out += [f"{'el' if n else ''}if {test}:", *(" " + x for x in self.lines(branch, v, doc_id) or ["pass"])]
        return out + ["else:", " return False"]

    def guarded(self, test: str, body: list[str], sure: bool) -> list[str]:
        """`body` run where `test` holds (always, when `sure`: the type was checked already)."""
        if not body:
            return []
        return body if sure else [f"if {test}:", *(" " + x for x in body)]

    def object(self, schema: dict, v: str, doc_id: str, sure: bool) -> list[str]:
        """properties + required + additionalProperties."""
        if schema.get("patternProperties"):
            raise NotImplementedError("fastschema: patternProperties is not supported")
        props = schema.get("properties", {})
        body = [f"if {' or '.join(f'{k!r} not in {v}' for k in schema['required'])}: return False"] \
            if schema.get("required") else []
        for name, sub in props.items():
            check = self.lines(sub, x := self.fresh("x"), doc_id)
            if check:
                body += [f"if {name!r} in {v}:", f" {x} = {v}[{name!r}]", *(" " + c for c in check)]
        extra = schema.get("additionalProperties", True)
        if extra is False:
            body.append(f"if not {v}.keys() <= {self.constant(frozenset(props))}: return False")
        elif extra is not True:
            k, x = self.fresh("k"), self.fresh("x")
            check = self.lines(extra, x, doc_id)
            if check:
                known = self.constant(frozenset(props))
                body += [f"for {k}, {x} in {v}.items():", f" if {k} not in {known}:", *("  " + c for c in check)]
        return self.guarded(f"isinstance({v}, dict)", body, sure)

    # -- keywords (each returns lines) ----------------------------------------------------------
    def kw_ref(self, arg, v, doc_id, known):
        target, _, fragment = arg.partition("#")
        key = (target or doc_id, fragment)
        if key in self.inlining:  # recursive: call the ref's own function
            self.compile_ref(*key)
            return [f"if not {self.constant(self.compiled)}[{key!r}]({v}): return False"]
        self.inlining.append(key)
        try:
            return self.lines(self.resolve(*key), v, key[0], known)
        finally:
            self.inlining.pop()

    def kw_enum(self, arg, v, doc_id, known):
        if all(isinstance(e, str) for e in arg):
            return [f"if not (isinstance({v}, str) and {v} in {self.constant(frozenset(arg))}): return False"]
        return [f"if not any(_equal({v}, e) for e in {self.constant(list(arg))}): return False"]

    def kw_const(self, arg, v, doc_id, known):
        if isinstance(arg, str):
            return [f"if not (isinstance({v}, str) and {v} == {arg!r}): return False"]
        return [f"if not _equal({v}, {self.constant(arg)}): return False"]

    def kw_propertyNames(self, arg, v, doc_id, known):
        k = self.fresh("k")
        check = self.lines(arg, k, doc_id)
        return self.guarded(f"isinstance({v}, dict)", [f"for {k} in {v}:", *(" " + c for c in check)] if check else [],
                            known == "object")

    def kw_items(self, arg, v, doc_id, known):
        x = self.fresh("x")
        check = self.lines(arg, x, doc_id)
        return self.guarded(f"isinstance({v}, list)", [f"for {x} in {v}:", *(" " + c for c in check)] if check else [],
                            known == "array")

    def kw_pattern(self, arg, v, doc_id, known):
        # Names, uuids and timestamps repeat on every line of a file: the strings seen to match are
        # remembered (up to PATTERN_MEMO of them), a set lookup instead of a regular expression.
        search, seen = self.constant(re.compile(arg).search), self.constant(set())
        return self.guarded(f"isinstance({v}, str)", [
            f"if {v} not in {seen}:", f" if {search}({v}) is None: return False",
            f" if len({seen}) < {PATTERN_MEMO}: {seen}.add({v})"], known == "string")

    # Bounds are written as jsonschema tests them ("fails if v < arg"), so NaN passes both.
    def bound(self, failing: str, arg, v, known) -> list[str]:
        return self.guarded(_TYPES["number"].format(v=v), [f"if {v} {failing} {arg!r}: return False"],
                            known in _NUMERIC)

    def kw_minimum(self, arg, v, doc_id, known):
        return self.bound("<", arg, v, known)

    def kw_maximum(self, arg, v, doc_id, known):
        return self.bound(">", arg, v, known)

    def kw_exclusiveMinimum(self, arg, v, doc_id, known):
        return self.bound("<=", arg, v, known)

    def kw_minLength(self, arg, v, doc_id, known):
        return self.guarded(f"isinstance({v}, str)", [f"if len({v}) < {arg!r}: return False"], known == "string")

    def kw_maxLength(self, arg, v, doc_id, known):
        return self.guarded(f"isinstance({v}, str)", [f"if len({v}) > {arg!r}: return False"], known == "string")

    def kw_minItems(self, arg, v, doc_id, known):
        return self.guarded(f"isinstance({v}, list)", [f"if len({v}) < {arg!r}: return False"], known == "array")

    def kw_minProperties(self, arg, v, doc_id, known):
        return self.guarded(f"isinstance({v}, dict)", [f"if len({v}) < {arg!r}: return False"], known == "object")

    def kw_uniqueItems(self, arg, v, doc_id, known):
        return self.guarded(f"isinstance({v}, list)", [f"if not _unique({v}): return False"],
                            known == "array") if arg else []

    def kw_allOf(self, arg, v, doc_id, known):
        return [line for s in arg for line in self.lines(s, v, doc_id, known)]

    def kw_anyOf(self, arg, v, doc_id, known):
        if (inline := self.dispatch(arg, v, doc_id)) is not None:
            return inline
        subs = [self.constant(self.function(s, doc_id)) for s in arg]
        return [f"if not ({' or '.join(f'{s}({v})' for s in subs)}): return False"]

    def kw_oneOf(self, arg, v, doc_id, known):
        if (inline := self.dispatch(arg, v, doc_id)) is not None:
            return inline
        subs = [self.constant(self.function(s, doc_id)) for s in arg]
        return [f"if ({' + '.join(f'bool({s}({v}))' for s in subs)}) != 1: return False"]
