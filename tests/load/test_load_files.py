"""The loader's file by file reading: a LoadCache re-reads only changed files, and trace files read in a
helper process join the dataset as if read in order here. Each gives exactly what a plain load gives."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import generator.load.builder as builder
import generator.load.parallel as parallel
from generator.load import LoadCache, load
from generator.validate import validate

from dataset_factory import TRACE, dump_lines, write_dataset


def snapshot(ds):
    """Everything a load gives, comparable (records with their sources and JSON text, diagnostics)."""
    return ({n: (d, d.source.path) for n, d in ds.definitions.items()},
            [(w, w.source.path, w.source.line) for w in ds.workloads],
            {n: (s, s.source.path) for n, s in ds.solutions.items()},
            [(t, t.raw, t.source.path, t.source.line) for t in ds.traces],
            dict(ds.models), dict(ds.hardware), dict(ds.einsums), list(ds.agent_traces),
            {k: sorted(v) for k, v in ds.rejected.items() if v}, validate(ds))


def traced_dataset(root: Path) -> Path:
    """Four authors' trace files, one with a bad line and one with a schema error, one duplicate name."""
    write_dataset(root)
    for k, author in enumerate(("alice", "bob", "carol", "dave")):
        rows = [json.dumps({**TRACE, "evaluation": {**TRACE["evaluation"], "timestamp": f"2026-11-2{k}T10:00:00Z"}})
                for _ in range(3)]
        if author == "bob":
            rows.append("{not json")
        if author == "carol":
            rows.append(json.dumps({**TRACE, "evaluation": {**TRACE["evaluation"], "status": "MAYBE"}}))
        path = root / f"traces/{author}/norm/rmsnorm_h128.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(rows) + "\n")
    return root


def test_trace_files_read_in_a_helper_process_give_the_same_dataset(tmp_path, monkeypatch):
    root = traced_dataset(tmp_path / "dataset")
    plain = snapshot(load(root))
    assert any("invalid JSON" in d.message for d in plain[-1]) and any("MAYBE" in d.message for d in plain[-1])
    monkeypatch.setattr(parallel, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    monkeypatch.setattr(parallel, "idle_cpus", lambda: 1.0)  # whatever else runs on the test machine
    here = []  # files read in this process (the helper's own list stays in the helper)
    real = builder.read_one
    monkeypatch.setattr(builder, "read_one", lambda root, rel, *rest: here.append(rel) or real(root, rel, *rest))
    assert snapshot(load(root)) == plain
    traces = [rel for rel in here if rel.startswith("traces/")]
    assert 0 < len(traces) < 4, f"the helper process read none of the 4 trace files: {traces}"
    assert snapshot(load(root, LoadCache())) == plain


def test_no_helper_without_a_cpu_to_spare(monkeypatch):
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    big = [parallel.PARALLEL_BYTES]
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (1.0, 1.0, 1.0))  # this process alone: one CPU free
    assert parallel.worth_a_helper("trace", big) and not parallel.worth_a_helper("workload", big)
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (1.8, 1.0, 1.0))  # the other CPU busy: no helper
    assert not parallel.worth_a_helper("trace", big)


def test_a_load_cache_rereads_only_changed_files_and_gives_a_plain_load(tmp_path):
    root = traced_dataset(tmp_path / "dataset")
    cache = LoadCache()
    assert snapshot(load(root, cache)) == snapshot(load(root))
    assert len(cache.changed) == len(cache.files) > 5  # the first load reads everything
    assert snapshot(load(root, cache)) == snapshot(load(root)) and cache.changed == {}

    bob = root / "traces/bob/norm/rmsnorm_h128.jsonl"
    bob.write_text(bob.read_text().replace("{not json\n", ""))
    (root / "traces/dave/norm/rmsnorm_h128.jsonl").unlink()
    dump_lines(root / "traces/erin/norm/rmsnorm_h128.jsonl", [TRACE])
    os.utime(root / "traces/alice/norm/rmsnorm_h128.jsonl")  # touched, same bytes: read again, same result
    after = load(root, cache)
    assert snapshot(after) == snapshot(load(root))
    changed = {rel: (before is not None, now is not None) for rel, (before, now) in cache.changed.items()}
    assert changed == {"traces/bob/norm/rmsnorm_h128.jsonl": (True, True),
                       "traces/dave/norm/rmsnorm_h128.jsonl": (True, False),
                       "traces/erin/norm/rmsnorm_h128.jsonl": (False, True),
                       "traces/alice/norm/rmsnorm_h128.jsonl": (True, True)}
    assert cache.changed["traces/bob/norm/rmsnorm_h128.jsonl"][1].definitions() == {"rmsnorm_h128"}
    assert not any("invalid JSON" in d.message for d in validate(after))


def test_lines_read_by_orjson_give_what_json_gives(tmp_path):
    """load reads JSON with orjson where it reads alike (load/reading.py), json elsewhere: an integer past 64 bits
    (orjson would give a float; json reads its file), a value nested past json's limit (orjson would read it), a NaN
    and a bad line (json's messages) come out as json alone gives them."""
    big, deep = 2**64 + 1, "[" * 1500 + "]" * 1500
    root = write_dataset(tmp_path / "dataset")
    good = json.dumps(TRACE)
    lines = {"long": [good, json.dumps({**TRACE, "evaluation": {**TRACE["evaluation"], "seed": big}})],
             "odd": [good, good.replace('"log": ""', f'"log": "", "x": {deep}'), good.replace("0.02", "NaN"),
                     good[:-1]]}
    for author, rows in lines.items():
        path = root / f"traces/{author}/norm/rmsnorm_h128.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("\n".join(rows) + "\n")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)  # as a process that compiled with inductor has it: json then reads 1,500 deep
    try:
        ds = load(root)
    finally:
        sys.setrecursionlimit(limit)
    seeds = [t.evaluation.seed for t in ds.traces if t.source.path.startswith("traces/long/")]
    assert seeds == [None, big] and type(seeds[1]) is int
    said = {d.line: d.message for d in ds.load_diagnostics if d.file.startswith("traces/odd/")}
    assert said == {2: "invalid JSON: nested too deeply", 3: "invalid JSON: NaN is not a JSON value",
                    4: f"invalid JSON: Expecting ',' delimiter (column {len(good)})"}, said
