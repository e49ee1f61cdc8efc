"""Bits per value of every tensor access, and the plain document that writes them out.

The access's own bits_per_value wins, then the last matching workload bits_per_value key (a
set expression), then the tensor's dtype in the definition, then DEFAULT_BITS.
"""

from __future__ import annotations

import copy
from typing import Mapping

from ..model.dtypes import DTYPE_BITS  # the default bits_per_value of a definition's tensors
from .model import Cascade, tensor_sets
from .problems import Problem, did_you_mean, ptr
from .sets import KEYWORDS, SetError, parse_set_expression

# A dtype for tensors known only by their bits (intermediates, cascades without a definition).
BITS_DTYPE = {4: "float4_e2m1", 8: "float8_e4m3", 16: "bfloat16", 32: "float32", 64: "float32"}
DEFAULT_BITS = 32  # an intermediate no bits_per_value entry covers: the references compute in float32


def _tensor_resolver(sets: Mapping[str, frozenset], all_tensors: set[str]):
    """Names in a bits_per_value key: set keywords, or tensors (of this Einsum: others give the empty set)."""
    def resolve(name: str) -> frozenset:
        if name in sets:
            return sets[name]
        if name in all_tensors:
            return frozenset({name}) & sets["All"]
        raise SetError(f"names '{name}', which is no tensor of the workload or set keyword")
    return resolve


def access_bits(cascade: Cascade, dtypes: Mapping[str, str]) -> dict[tuple[str, str], tuple[int, str]]:
    """(einsum, tensor) -> (bits per value, where it came from).

    The access's own bits_per_value wins, then the last matching workload bits_per_value key,
    then the tensor's dtype in the definition, then DEFAULT_BITS.
    """
    out: dict[tuple[str, str], tuple[int, str]] = {}
    compiled = []
    for key, bits in cascade.bits_per_value:
        try:
            compiled.append((key, bits, parse_set_expression(key)))
        except SetError:
            continue
    all_tensors = set(cascade.tensors)
    for e in cascade.einsums:
        resolve = _tensor_resolver(tensor_sets(cascade, e), all_tensors)
        matched: dict[str, tuple[int, str]] = {}
        for key, bits, fn in compiled:
            try:
                for t in fn(resolve):
                    matched[t] = (bits, f"bits_per_value {key}")
            except SetError:
                continue
        for a in e.accesses:
            if a.bits is not None:
                out[(e.name, a.tensor)] = (a.bits, "access")
            elif a.tensor in matched:
                out[(e.name, a.tensor)] = matched[a.tensor]
            elif a.tensor in dtypes:
                out[(e.name, a.tensor)] = (DTYPE_BITS.get(dtypes[a.tensor], DEFAULT_BITS), f"dtype {dtypes[a.tensor]}")
            else:
                out[(e.name, a.tensor)] = (DEFAULT_BITS, "default")
    return out


def bits_problems(cascade: Cascade) -> list[Problem]:
    """bits_per_value keys that name unknown things."""
    problems = []
    all_tensors = set(cascade.tensors)
    for key, _ in cascade.bits_per_value:
        try:
            fn = parse_set_expression(key)
        except SetError:
            continue
        for e in cascade.einsums:
            try:
                fn(_tensor_resolver(tensor_sets(cascade, e), all_tensors))
            except SetError as ex:
                problems.append(Problem(ptr("workload", "bits_per_value", key), f"bits_per_value key '{key}' {ex}",
                                        "keys are set expressions: " + ", ".join(KEYWORDS) + " or tensor names"
                                        + did_you_mean(key, all_tensors)))
                break
    return problems


# -- plain YAML (for AccelForge) --------------------------------------------------------------
def plain_document(cascade: Cascade, dtypes: Mapping[str, str]) -> dict:
    """The rendered cascade as a plain workload-and-renames document, with every access's
    bits_per_value written out (a reader without the definition cannot know the dtypes)."""
    data = copy.deepcopy(dict(cascade.data))
    bits = access_bits(cascade, dtypes)
    for e_doc, e in zip(data["workload"]["einsums"], cascade.einsums):
        for a_doc in e_doc["tensor_accesses"]:
            a_doc["bits_per_value"] = bits[(e.name, a_doc["name"])][0]
    return data
