"""No number a solution can report makes the trace store unloadable (issue 38, "a number that breaks the dataset").

A reported latency of 5e-324 ms on hardware without a spec had no floor: its speedup was infinite, the trace was
written with `Infinity`, and every later run refused the dataset. The bench's floors (bench.floors_ms) now keep
every latency at MIN_CALL_MS or above; behind them, store.storable turns a timing JSON or the schema refuses into
a RUNTIME_ERROR saying why, and write_trace never writes a non-finite number; validate names such numbers.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from generator.bench.trusted.store import make_trace, write_trace
from generator.load import load
from generator.model.errors import KernelTraceError
from generator.validate import validate

from dataset_factory import WORKLOAD, write_dataset

PAIR = SimpleNamespace(definition=SimpleNamespace(name="rmsnorm_h128"), workload=SimpleNamespace(data=WORKLOAD),
                       solution=SimpleNamespace(name="rmsnorm_h128_torch"))
ENV = {"hardware": "test_cpu"}
CORRECT = {"max_absolute_error": 0.0, "max_relative_error": 0.0, "matched_ratio": 1.0, "input_sets": 3}


def passed(latency_ms: float, speedup: float) -> dict:
    return {"status": "PASSED", "log": "", "correctness": CORRECT,
            "performance": {"latency_ms": latency_ms, "reference_latency_ms": 1.0, "speedup_factor": speedup}}


def strict_lines(path) -> list[dict]:
    """The file's lines as a reader that refuses JSON's non-standard constants would read them."""
    def refuse(name):
        raise ValueError(f"{name} in a trace line")
    return [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("latency, speedup, why", [
    (5e-324, float("inf"), "not a finite number"),  # the reported case: the speedup overflows
    (0.0, 0.0, "latency_ms"),  # the schema's exclusiveMinimum: a line the loader would reject
    (float("nan"), float("nan"), "not a finite number"),
])
def test_a_timing_no_reader_could_load_is_stored_as_a_runtime_error(tmp_path, latency, speedup, why):
    root = write_dataset(tmp_path / "ds", traces=[])
    record = make_trace(PAIR, passed(latency, speedup), ENV)
    assert record["evaluation"]["status"] == "RUNTIME_ERROR" and record["evaluation"]["performance"] is None
    assert "cannot be a measurement" in record["evaluation"]["log"] and why in record["evaluation"]["log"]
    path = root / "traces/baseline/norm/rmsnorm_h128.jsonl"
    write_trace(path, record)
    (line,) = strict_lines(path)
    assert line["evaluation"]["status"] == "RUNTIME_ERROR"
    ds = load(root)  # the dataset stays loadable and valid: later runs read it
    assert [d.format_human() for d in validate(ds) if d.is_error] == []


def test_an_honest_timing_is_stored_as_it_came(tmp_path):
    record = make_trace(PAIR, passed(0.02, 50.0), ENV)
    assert record["evaluation"]["status"] == "PASSED" and record["evaluation"]["performance"]["latency_ms"] == 0.02


def test_write_trace_never_writes_a_non_finite_number(tmp_path):
    record = make_trace(PAIR, passed(0.02, 50.0), ENV)
    record["evaluation"]["performance"]["speedup_factor"] = float("inf")  # past storable: a caller's bug
    path = tmp_path / "t.jsonl"
    with pytest.raises(ValueError):
        write_trace(path, record)
    assert not path.exists() or path.read_text() == ""


def test_a_record_the_bench_itself_got_wrong_stops_instead_of_blaming_the_solution():
    with pytest.raises(KernelTraceError, match="a bug of the bench"):
        make_trace(PAIR, passed(0.02, 50.0), {"hardware": ""})  # the schema wants a hardware name
