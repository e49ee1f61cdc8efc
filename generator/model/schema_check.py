"""JSON Schema errors turned into diagnostics a contributor can act on.

jsonschema reports every error with its location; here each becomes a pointer, a short
message and a hint. Errors under oneOf/anyOf are reduced to their best match so a typo in
one branch does not produce a message per branch.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Iterator

from jsonschema import ValidationError

from .diagnostics import ERROR, Diagnostic, make_pointer, pointer_to_path
from .dtypes import SHORT_NAMES
from .records import Source
from .schemas import DEFINITION_TYPES, DTYPES, closest_definition_types, fast_check_for, validator_for

_TYPE_NAMES = {"object": "an object", "array": "a list", "string": "a string", "integer": "an integer",
               "number": "a number", "boolean": "true or false", "null": "null"}


def _type_name(t: Any) -> str:
    if isinstance(t, list):
        return " or ".join(_TYPE_NAMES.get(x, x) for x in t)
    return _TYPE_NAMES.get(t, str(t))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _close(word: str, choices) -> str:
    """'did you mean ...? ' for a near miss (case does not count), or ''."""
    if tuple(choices) == DEFINITION_TYPES and isinstance(word, str):  # other tools' type names too
        types = closest_definition_types(word)
        return f"did you mean {' or '.join(repr(t) for t in types)}? " if types else ""
    if tuple(choices) == DTYPES and isinstance(word, str) and word.lower() in SHORT_NAMES:  # bf16, fp16 ...
        return f"did you mean '{SHORT_NAMES[word.lower()]}'? "
    by_lower = {str(c).lower(): str(c) for c in choices}
    near = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1, cutoff=0.6)
    return f"did you mean '{by_lower[near[0]]}'? " if near else ""


def _field(path: list) -> str:
    """How a message names the value at `path`: 'dtype', item 1 of 'tags', the record."""
    if not path:
        return "the record"
    last = path[-1]
    if isinstance(last, int):
        return f"item {last}" + (f" of {_field(path[:-1])}" if len(path) > 1 else "")
    return f"'{last}'"


def _bound(v: str, schema: dict) -> str:
    return {"minimum": f"use a value of at least {schema.get('minimum')}",
            "exclusiveMinimum": f"use a value greater than {schema.get('exclusiveMinimum')}",
            "maximum": f"use a value of at most {schema.get('maximum')}",
            "exclusiveMaximum": f"use a value less than {schema.get('exclusiveMaximum')}"}[v]


def _pattern_hint(schema: dict) -> str:
    desc = schema.get("description", "")
    if not desc and schema.get("format") == "date-time":
        desc = "An ISO 8601 date and time with a time zone, e.g. 2026-11-21T10:00:00Z."
    return (desc + " " if desc else "") + f"(pattern {schema['pattern']})"


def _explain(err: ValidationError) -> Iterator[tuple[list, str, str]]:
    """(path parts, message, hint) for one leaf error."""
    path = list(err.absolute_path)
    v, schema, inst = err.validator, err.schema, err.instance
    field = _field(path)
    if "propertyNames" in err.absolute_schema_path:
        # The error is about a member's name (the instance is the name); point at that member.
        if v == "enum":
            hint = _close(inst, schema["enum"]) + "use one of: " + ", ".join(map(str, schema["enum"]))
        elif v == "pattern":
            hint = _pattern_hint(schema)
        else:
            hint = err.message
        yield path + [inst], f"name {inst!r} is not allowed in {field}", hint
    elif v == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        yield path + [missing], f"missing required field '{missing}'", f"add '{missing}' to {pointer_to_path(make_pointer(*path)) if path else 'the record'}"
    elif v == "additionalProperties" and isinstance(inst, dict):
        allowed = list(schema.get("properties", {}))
        patterns = schema.get("patternProperties", {})
        extras = [k for k in inst if k not in allowed and not any(re.search(p, str(k)) for p in patterns)]
        for k in extras or ["?"]:
            hint = _close(k, allowed) + (f"allowed fields: {', '.join(allowed)}" if allowed else "remove it")
            yield path + [k], f"unknown field '{k}'", hint
    elif v == "enum":
        choices = schema["enum"]
        yield path, f"{inst!r} is not an allowed value of {field}", _close(inst, choices) + "use one of: " + ", ".join(map(str, choices))
    elif v == "const":
        yield path, f"{field} must be {schema['const']!r}, not {inst!r}", f"set it to {schema['const']!r}"
    elif v == "type":
        yield path, f"{field} must be {_type_name(schema['type'])}, not {_json_type(inst)}", f"write {_type_name(schema['type'])} here"
    elif v == "pattern":
        yield path, f"{inst!r} is not a valid value of {field}", _pattern_hint(schema)
    elif v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        yield path, f"{field} is {inst!r}: {err.message.split(' is ', 1)[-1]}", _bound(v, schema)
    elif v in ("minItems", "minProperties", "minLength"):
        yield path, f"{field} must not be empty", "add at least one entry"
    elif v == "uniqueItems":
        yield path, f"{field} has duplicate entries", "remove the repeated entries"
    else:
        yield path, err.message, "see the schema in generator/model/schema/ for what is allowed here"


def _branch_score(errors: list[ValidationError]) -> tuple:
    # The branch the author meant: its shape matches the value (no type/const error on the
    # value itself), and its errors go deepest (it got furthest before failing).
    shape_mismatch = any(not e.path and e.validator in ("type", "const") for e in errors)
    return (not shape_mismatch, max(len(e.path) for e in errors), -len(errors))


def _leaves(err: ValidationError) -> Iterator[ValidationError]:
    if err.validator in ("oneOf", "anyOf") and err.context:
        branches: dict[Any, list[ValidationError]] = {}
        for e in err.context:
            branches.setdefault(e.relative_schema_path[0], []).append(e)
        chosen = max(branches.values(), key=_branch_score)
        types: list[str] = []  # when no branch has the value's shape: the shapes allowed
        if not _branch_score(chosen)[0]:
            for e in err.context:
                if not e.path and e.validator == "type":
                    types += [t for t in (e.validator_value if isinstance(e.validator_value, list)
                                          else [e.validator_value]) if t not in types]
        if not types:
            for e in chosen:
                yield from _leaves(e)
            return
        yield ValidationError(err.message, validator="type", path=err.absolute_path, instance=err.instance,
                              schema={"type": types}, schema_path=err.absolute_schema_path)
    else:
        yield err


_PRIORITY = {"const": 2, "type": 1}  # at one place, report an enum or pattern before a restating const


def schema_diagnostics(kind: str, data: Any, source: Source, pointer_prefix: str = "") -> list[Diagnostic]:
    """Every schema error of `data` against the `kind` schema, as diagnostics."""
    try:
        if fast_check_for(kind)(data):
            return []
        return _explained(kind, data, source, pointer_prefix)
    except RecursionError:  # comparing or printing values nested hundreds deep
        return [Diagnostic(source.path, source.line, pointer_prefix, ERROR, "values are nested too deeply to check",
                           "flatten the structure")]


def _explained(kind: str, data: Any, source: Source, pointer_prefix: str) -> list[Diagnostic]:
    leaves = [leaf for err in validator_for(kind).iter_errors(data) for leaf in _leaves(err)]
    leaves.sort(key=lambda e: _PRIORITY.get(e.validator, 0))  # stable: schema order otherwise
    out, seen = [], set()
    for leaf in leaves:
        for parts, message, hint in _explain(leaf):
            pointer = pointer_prefix + make_pointer(*parts)
            if pointer in seen:  # one problem per place: if/then/else branches restate enum errors
                continue
            seen.add(pointer)
            out.append(Diagnostic(source.path, source.line_of(pointer), pointer, ERROR, message, hint,
                                  "/".join(map(str, leaf.absolute_schema_path))))
    return out


def yaml_key_diagnostics(data: Any, source: Source, path: tuple = ()) -> list[Diagnostic]:
    """Mapping keys that YAML read as something other than a string (ON, off, yes, no are booleans in YAML 1.1;
    1 is a number): a schema sees names only, and code that takes keys for names fails on them."""
    out: list[Diagnostic] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str):
                what = f"the boolean {str(key).lower()}" if isinstance(key, bool) else f"the {type(key).__name__} {key!r}"
                out.append(Diagnostic(source.path, source.line_of(make_pointer(*path)), make_pointer(*path), ERROR,
                                      f"a key of this mapping is read by YAML as {what}, not as a name (YAML reads "
                                      "on, off, yes, no, true and false, in any case, as booleans)",
                                      "quote the key (\"ON\": ...) or choose another name"))
            else:
                out += yaml_key_diagnostics(value, source, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += yaml_key_diagnostics(value, source, (*path, i))
    return out
