"""The JSON Schemas (generator/model/schema/*.json): the data contract, and the shared vocabulary.

Every list of allowed values (types, dtypes, statuses, ...) lives in schema/common.json;
Python reads it from there so that there is only one place to change.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Optional

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from .kinds import KINDS

SCHEMA_DIR = Path(__file__).parent / "schema"

# Record kind -> schema file stem (kinds.py is the registry). The order is the order of the schema reference page.
RECORD_KINDS = tuple(k.name for k in KINDS)


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    """The parsed schema document `schema/<name>.json`."""
    with open(SCHEMA_DIR / f"{name}.json", encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=None)
def _registry() -> Registry:
    resources = []
    for name in RECORD_KINDS + ("common",):
        doc = load_schema(name)
        resources.append((doc["$id"], Resource.from_contents(doc)))
    return Registry().with_resources(resources)


@lru_cache(maxsize=None)
def validator_for(kind: str) -> Draft202012Validator:
    """A compiled validator for one record kind (cached: building one is the slow part)."""
    return Draft202012Validator(load_schema(kind), registry=_registry())


@lru_cache(maxsize=None)
def fast_check_for(kind: str):
    """A compiled yes/no check for one record kind, agreeing with validator_for(kind)."""
    from .fastschema import FastSchema

    docs = {load_schema(n)["$id"]: load_schema(n) for n in RECORD_KINDS + ("common",)}
    return FastSchema(docs).compile_id(load_schema(kind)["$id"])


def _enum(name: str) -> tuple[str, ...]:
    return tuple(load_schema("common")["$defs"][name]["enum"])


DEFINITION_TYPES = _enum("definition_type")
DTYPES = _enum("dtype")
TRACE_STATUSES = _enum("trace_status")
LANGUAGES = _enum("language")
FRAMEWORKS = _enum("framework")
TAG_NAMESPACES = ("stage", "model", "quantization", "status", "tp", "ep")
# Other names of the definition types (FlashInfer-Trace op_type values) -> the canonical type.
DEFINITION_TYPE_ALIASES = {alias: node["const"] for alias, node in
                           load_schema("common")["$defs"]["definition_type_alias"]["properties"].items()}
_ATTENTION_TYPES = ("mha", "gqa", "mla", "dsa")


def type_named_in(name: str, *, aliases: bool = False) -> Optional[str]:
    """The canonical type a definition name names, the one rule for it: a type it starts with or holds as a word
    (the longest), then (with `aliases`) an alias inside it, then a type of 4+ letters inside it ('rmsnorm' ->
    norm; short types such as 'mha' only as whole words); None when none."""
    import re

    low = name.lower()
    tokens = re.split(r"[^a-z0-9]+", low)
    by_length = sorted(DEFINITION_TYPES, key=len, reverse=True)
    for t in by_length:
        if low.startswith(t + "_") or t in tokens:
            return t
    if aliases:
        for alias, t in DEFINITION_TYPE_ALIASES.items():
            if alias in low:
                return t
    for t in by_length:
        if len(t) >= 4 and t in low:
            return t
    return None


def closest_definition_types(word: str) -> tuple[str, ...]:
    """The canonical type(s) a foreign or misspelt type name means: an alias's type, a canonical
    type named inside it ('gqa_paged_decode' -> gqa, 'fused_add_rmsnorm' -> norm), the attention
    families for 'attention', else a near spelling; () when nothing fits."""
    import difflib
    import re

    low = word.lower()
    if low in DEFINITION_TYPE_ALIASES:
        return (DEFINITION_TYPE_ALIASES[low],)
    named = type_named_in(low, aliases=True)
    if named is not None:
        return (named,)
    if "attention" in low or "attn" in re.split(r"[^a-z0-9]+", low):
        return _ATTENTION_TYPES
    return tuple(difflib.get_close_matches(low, DEFINITION_TYPES, n=1, cutoff=0.75))
