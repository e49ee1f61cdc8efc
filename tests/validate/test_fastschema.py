"""The fast schema gate must agree with jsonschema: a record it wrongly accepts is never explained,
and a record it wrongly rejects costs time (and, if jsonschema finds nothing, is silently dropped)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from test_fuzz import FUZZ, GOOD, KIND_OF, json_values, mutated, mutated_records

from generator.model.fastschema import FastSchema
from generator.model.schemas import RECORD_KINDS, fast_check_for, validator_for


def agree(kind: str, data) -> None:
    fast, slow = fast_check_for(kind)(data), validator_for(kind).is_valid(data)
    assert fast == slow, f"fastschema says {fast}, jsonschema says {slow} for a {kind}: {data!r}"


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_records_pass_both(name: str) -> None:
    assert fast_check_for(KIND_OF[name])(GOOD[name])
    agree(KIND_OF[name], GOOD[name])


@FUZZ
@given(named=mutated_records)
def test_agrees_with_jsonschema_on_mutated_records(named) -> None:
    name, data = named
    agree(KIND_OF[name], data)


@FUZZ
@given(kind=st.sampled_from(RECORD_KINDS), data=json_values)
def test_agrees_with_jsonschema_on_random_values(kind: str, data) -> None:
    agree(kind, data)


@st.composite
def with_float_twins(draw, data):
    """Each number replaced by itself, its float twin (1 -> 1.0), NaN or an infinity, as YAML can produce."""
    if isinstance(data, bool):
        return data
    if isinstance(data, (int, float)):
        return draw(st.sampled_from([data, float(data), math.nan, math.inf, -math.inf]))
    if isinstance(data, list):
        return [draw(with_float_twins(x)) for x in data]
    if isinstance(data, dict):
        return {k: draw(with_float_twins(x)) for k, x in data.items()}
    return data


@FUZZ
@given(named=st.sampled_from(sorted(GOOD)).flatmap(
    lambda n: st.tuples(st.just(n), (st.just(GOOD[n]) | mutated(GOOD[n])).flatmap(with_float_twins))))
def test_agrees_on_non_finite_and_integral_floats(named) -> None:
    name, data = named
    agree(KIND_OF[name], data)


# -- unit tests of the compiler on small schemas -----------------------------------------------------
def compile_schema(schema: dict):
    doc = {"$id": "urn:test", **schema}
    return FastSchema({"urn:test": doc}).compile_id("urn:test"), Draft202012Validator(doc)


@pytest.mark.parametrize("schema, value, valid", [
    ({"type": "integer"}, True, False),  # bool is not an integer
    ({"type": "integer"}, False, False),
    ({"type": "integer"}, 1.0, True),  # 1.0 is an integer in JSON Schema
    ({"type": "integer"}, 1.5, False),
    ({"type": "integer"}, math.inf, False),
    ({"type": "integer"}, 2**80, True),
    ({"type": "number"}, True, False),
    ({"type": "number"}, math.nan, True),
    ({"type": ["string", "null"]}, None, True),
    ({"type": ["string", "null"]}, 0, False),
    ({"minimum": 1}, 1, True),
    ({"minimum": 1}, 0.5, False),
    ({"minimum": 1}, "zero", True),  # bounds ignore non-numbers
    ({"minimum": 1}, math.nan, True),  # as jsonschema: NaN < 1 is false, so no error
    ({"exclusiveMinimum": 0}, 0, False),
    ({"exclusiveMinimum": 0}, math.nan, True),
    ({"maximum": 1}, 1.0000001, False),
    ({"maximum": 1}, math.nan, True),
    ({"enum": ["a", "b"]}, "a", True),
    ({"enum": ["a", "b"]}, ["a"], False),
    ({"enum": [1, "a"]}, 1.0, True),
    ({"enum": [1, "a"]}, True, False),  # True is not 1
    ({"const": 0}, False, False),
    ({"const": "function"}, "function", True),
    ({"const": "function"}, ["function"], False),
    ({"const": [1, {"a": True}]}, [1.0, {"a": True}], True),
    ({"const": [1, {"a": True}]}, [1, {"a": 1}], False),
    ({"uniqueItems": True}, [1, 1.0], False),
    ({"uniqueItems": True}, [1, True], True),
    ({"uniqueItems": True}, [{"a": [1]}, {"a": [1.0]}], False),
    ({"pattern": "^a"}, "ba", False),
    ({"pattern": "a"}, "ba", True),  # search, not match
    ({"pattern": "^a$"}, 5, True),
    ({"minLength": 1}, "", False),
    ({"minItems": 1}, [], False),
    ({"minProperties": 1}, {}, False),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, {"ok": 1, "Bad": 2}, False),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, ["Bad"], True),
    ({"required": ["a"]}, {"b": 1}, False),
    ({"required": ["a"]}, [], True),  # object keywords ignore non-objects
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": False}, {"a": "x", "b": 1}, False),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}, {"a": "x", "b": 1}, True),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}, {"a": 1}, False),
    ({"items": {"type": "integer"}}, [1, 2, "3"], False),
    ({"items": {"type": "integer"}}, "not a list", True),
    ({"allOf": [{"minimum": 0}, {"maximum": 1}]}, 2, False),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1, True),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, None, False),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 1, False),  # matches both: not exactly one
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 1.5, True),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, "x", False),
    ({"oneOf": [{"type": "null"}, {"type": "object"}, {"type": "object", "required": ["a"]}]}, {"a": 1}, False),
    ({"if": {"properties": {"t": {"const": "c"}}}, "then": {"required": ["v"]}, "else": {"required": ["p"]}},
     {"t": "c"}, False),
    ({"if": {"properties": {"t": {"const": "c"}}}, "then": {"required": ["v"]}, "else": {"required": ["p"]}},
     {"t": "x", "p": 1}, True),
    ({"if": {"properties": {"t": {"const": "c"}}}, "then": {"required": ["v"]}}, {"t": "x"}, True),
    ({"$defs": {"pos": {"type": "integer", "minimum": 1}}, "items": {"$ref": "#/$defs/pos"}}, [1, 0], False),
    ({"title": "t", "description": "d", "default": 1, "examples": [1], "format": "date-time"}, "not a date", True),
    ({}, None, True),
])
def test_keyword(schema: dict, value, valid: bool) -> None:
    fast, slow = compile_schema(schema)
    assert slow.is_valid(value) == valid, "the expectation itself disagrees with jsonschema"
    assert fast(value) == valid


def test_recursive_ref() -> None:
    tree = {"$defs": {"node": {"type": "object", "required": ["v"], "additionalProperties": False,
                               "properties": {"v": {"type": "integer"},
                                              "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "$ref": "#/$defs/node"}
    fast, slow = compile_schema(tree)
    good = {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]}
    bad = {"v": 1, "kids": [{"v": 2, "kids": [{"v": "3"}]}]}
    assert fast(good) and slow.is_valid(good)
    assert not fast(bad) and not slow.is_valid(bad)


def test_boolean_schemas() -> None:
    fast, _ = compile_schema({"properties": {"a": True, "b": False}})
    assert fast({"a": [1]}) and not fast({"b": 1})


def test_refs_across_documents() -> None:
    common = {"$id": "urn:common", "$defs": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}
    main = {"$id": "urn:main", "items": {"$ref": "urn:common#/$defs/id"}}
    fast = FastSchema({"urn:common": common, "urn:main": main}).compile_id("urn:main")
    assert fast(["abc"]) and not fast(["ABC"]) and not fast([1])


@pytest.mark.parametrize("schema", [
    {"prefixItems": [{"type": "integer"}]},
    {"exclusiveMaximum": 1},
    {"properties": {"a": {"type": "string"}}, "patternProperties": {"^x": {"type": "integer"}}},
    {"items": {"dependentRequired": {"a": ["b"]}}},
    {"$defs": {"x": {"not": {"type": "string"}}}, "$ref": "#/$defs/x"},
])
def test_unsupported_keyword_raises_at_compile_time(schema: dict) -> None:
    """A keyword the compiler does not know must never be silently accepted."""
    with pytest.raises(NotImplementedError):
        compile_schema(schema)


def test_every_record_schema_compiles() -> None:
    for kind in RECORD_KINDS:
        assert callable(fast_check_for(kind))
