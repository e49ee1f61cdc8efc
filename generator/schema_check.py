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
from jsonschema.exceptions import best_match

from .diagnostics import ERROR, Diagnostic, make_pointer
from .records import Source
from .schemas import fast_check_for, validator_for

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
    near = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"did you mean '{near[0]}'? " if near else ""


def _explain(err: ValidationError) -> Iterator[tuple[list, str, str]]:
    """(path parts, message, hint) for one leaf error."""
    path = list(err.absolute_path)
    v, schema, inst = err.validator, err.schema, err.instance
    field = str(path[-1]) if path else "the record"
    if v == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        yield path + [missing], f"missing required field '{missing}'", f"add '{missing}' to {('$.' + '.'.join(map(str, path))) if path else 'the record'}"
    elif v == "additionalProperties" and isinstance(inst, dict):
        allowed = list(schema.get("properties", {}))
        patterns = schema.get("patternProperties", {})
        extras = [k for k in inst if k not in allowed and not any(re.search(p, k) for p in patterns)]
        for k in extras or ["?"]:
            hint = _close(k, allowed) + (f"allowed fields: {', '.join(allowed)}" if allowed else "remove it")
            yield path + [k], f"unknown field '{k}'", hint
    elif v == "enum":
        choices = schema["enum"]
        yield path, f"{inst!r} is not an allowed value of '{field}'", _close(inst, choices) + "use one of: " + ", ".join(map(str, choices))
    elif v == "const":
        yield path, f"'{field}' must be {schema['const']!r}, not {inst!r}", f"set it to {schema['const']!r}"
    elif v == "type":
        yield path, f"'{field}' must be {_type_name(schema['type'])}, not {_json_type(inst)}", f"write {_type_name(schema['type'])} here"
    elif v == "pattern":
        desc = schema.get("description", "")
        yield path, f"{inst!r} is not a valid value of '{field}'", (desc + " " if desc else "") + f"(pattern {schema['pattern']})"
    elif v == "propertyNames":
        yield path, f"name {inst!r} is not allowed in '{field}'", "names must be Python identifiers (letters, digits, '_'; not starting with a digit)"
    elif v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        yield path, f"'{field}' is {inst!r}: {err.message.split(' is ', 1)[-1]}", "use a value in range"
    elif v in ("minItems", "minProperties", "minLength"):
        yield path, f"'{field}' must not be empty", "add at least one entry"
    elif v == "uniqueItems":
        yield path, f"'{field}' has duplicate entries", "remove the repeated entries"
    else:
        yield path, err.message, ""


def _leaves(err: ValidationError) -> Iterator[ValidationError]:
    if err.validator in ("oneOf", "anyOf") and err.context:
        # Prefer the branch whose errors go deepest: it is the one the author meant.
        yield from _leaves(best_match(err.context))
    else:
        yield err


def schema_diagnostics(kind: str, data: Any, source: Source, pointer_prefix: str = "") -> list[Diagnostic]:
    """Every schema error of `data` against the `kind` schema, as diagnostics."""
    if fast_check_for(kind)(data):
        return []
    out = []
    for err in validator_for(kind).iter_errors(data):
        for leaf in _leaves(err):
            for parts, message, hint in _explain(leaf):
                pointer = pointer_prefix + make_pointer(*parts)
                out.append(Diagnostic(source.path, source.line_of(pointer), pointer, ERROR, message, hint,
                                      "/".join(map(str, leaf.absolute_schema_path))))
    return out
