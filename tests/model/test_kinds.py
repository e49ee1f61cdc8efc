"""The record-kind registry: every kind has all its parts, and the stages take their lists from it."""

from __future__ import annotations

import dataclasses

from generator.export.tables import CONFIG_NAMES
from generator.load import LOADERS
from generator.model.dataset import Dataset
from generator.model.kinds import KIND_OF_FOLDER, KINDS
from generator.model.layout import CANONICAL
from generator.model.schemas import RECORD_KINDS, SCHEMA_DIR
from generator.site.schema_doc import schema_reference
from generator.validate import CHECKS


def test_every_kind_has_its_parts():
    fields = {f.name for f in dataclasses.fields(Dataset)}
    for kind in KINDS:
        assert (SCHEMA_DIR / f"{kind.name}.json").is_file(), kind.name
        assert kind.folder in CANONICAL.folders and CANONICAL[kind.folder].loaded, kind.name
        assert kind.folder in fields, f"Dataset has no attribute {kind.folder} for {kind.name}"
        assert callable(LOADERS[kind.name]), kind.name
        assert callable(CHECKS[kind.name]), kind.name
    assert set(LOADERS) == set(CHECKS) == {k.name for k in KINDS}
    # Every folder the loader reads belongs to exactly one kind.
    assert {f.name for f in CANONICAL.folders.values() if f.loaded} == set(KIND_OF_FOLDER)


def test_lists_come_from_the_registry():
    assert RECORD_KINDS == tuple(k.name for k in KINDS)
    # Every exported kind has its config, in the registry's order; derived tables (roofline) may follow.
    kind_configs = tuple(k.config for k in KINDS if k.config)
    assert CONFIG_NAMES[:len(kind_configs)] == kind_configs
    assert tuple(d.kind for d in schema_reference()) == RECORD_KINDS
    assert [d.stored_at for d in schema_reference()] == [k.layout.pattern for k in KINDS]


def test_layout_paths_round_trip():
    rel = CANONICAL.solution_file("alice", "gemm", "gemm_n_4096_k_4096", "fast")
    assert rel == "solutions/alice/gemm/gemm_n_4096_k_4096/fast.json"
    assert CANONICAL.fields(rel) == {"author": "alice", "type": "gemm", "definition": "gemm_n_4096_k_4096",
                                     "solution": "fast"}
    assert CANONICAL.trace_file("a", "norm", "rmsnorm_d4096") == "traces/a/norm/rmsnorm_d4096.jsonl"
    assert CANONICAL.blob_file("moe", "m", "u") == "blob/workloads/moe/m/u.safetensors"
    # A path of the wrong shape names nothing, rather than something wrong.
    assert CANONICAL.fields("traces/a/rmsnorm_d4096.jsonl") is None
    assert CANONICAL.fields("solutions/alice/gemm/fast.json") is None
    assert CANONICAL.fields("nowhere/x.json") is None
