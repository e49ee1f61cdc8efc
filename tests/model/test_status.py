"""model/status.py and model/evaluation.py own what records mean: the trace statuses (the schema's list),
which evaluation parts each carries, one rule for a draft definition that the site and the export share, and
the typed evaluation a trace is loaded with."""

import json

from generator.model.evaluation import Evaluation, performance_is_unstable
from generator.model.records import Definition, Source, Trace
from generator.model.schemas import TRACE_STATUSES
from generator.model.status import DefinitionStatus, TraceStatus


def test_trace_statuses_are_the_schemas_and_stay_strings():
    assert tuple(TraceStatus) == TRACE_STATUSES
    assert json.dumps({"status": TraceStatus.PASSED}) == '{"status": "PASSED"}'
    assert f"{TraceStatus.TIMEOUT}" == "TIMEOUT" and str(TraceStatus.TIMEOUT) == "TIMEOUT"
    assert {s for s in TraceStatus if s.carries_correctness} == {"PASSED", "INCORRECT_NUMERICAL"}
    assert {s for s in TraceStatus if s.carries_performance} == {"PASSED"}


def _definition(tags):
    data = {"name": "k", "type": "norm", "axes": {}, "inputs": {}, "outputs": {}, "reference": "", "tags": tags}
    return Definition.from_data(data, Source("definitions/norm/k.json"))


def test_one_draft_rule_shared_by_the_site_and_the_export():
    from generator.export.record_configs import DEFINITIONS
    from generator.model.dataset import Dataset
    from generator.site.render import definition_rows

    status = next(c for c in DEFINITIONS.columns if c.name == "status").derive
    for tags, expected in (([], "draft"), (["status:draft"], "draft"), (["status:verified"], "verified"),
                           (["model:x"], "draft")):
        d = _definition(tags)
        ds = Dataset(root=None, definitions={"k": d})
        assert d.status == expected == DefinitionStatus.of(tags)
        assert status(d, ds) == expected  # the export's status column
        assert definition_rows(ds)[0].draft == (expected == "draft")  # the site's mark, order and search boost


def test_a_trace_is_loaded_with_its_typed_evaluation():
    ev = {"status": "PASSED", "log": None, "correctness": {"max_absolute_error": 0.0, "atol": 1e-3},
          "performance": {"latency_ms": 3.9, "p20_ms": 1.27, "p80_ms": 11.3, "min_ms": 1.0, "timer": "cuda_event"},
          "environment": {"hardware": "H100", "provenance": {"kind": "recorded", "tool": "x"}},
          "timestamp": "2025-01-01T00:00:00Z"}
    data = {"definition": "k", "workload": {"uuid": "w", "axes": {}, "inputs": {}}, "solution": "s", "evaluation": ev}
    t = Trace.from_data(data, Source("traces/a/norm/k.jsonl"))
    assert t.status is TraceStatus.PASSED and t.is_passed and t.hardware == "H100" and t.evaluation.log == ""
    assert t.evaluation.correctness.atol == 1e-3 and t.evaluation.correctness.max_relative_error is None
    assert t.latency_ms == 3.9 and t.evaluation.performance.timer == "cuda_event"
    assert t.unstable  # the spread rule (model/stability.py)
    assert t.provenance == "recorded" and t.provenance_record["tool"] == "x"
    failed = Evaluation.from_data({**ev, "status": "RUNTIME_ERROR", "correctness": None, "performance": None})
    assert not failed.passed and not failed.unstable and failed.environment is t.evaluation.environment  # shared
    assert not performance_is_unstable(None) and not performance_is_unstable({"latency_ms": 1.0})
    assert performance_is_unstable({"latency_ms": 1.0, "unstable": True})


def test_traces_cross_processes_whole():
    # load/parallel.py's helper process sends its traces back pickled: the typed evaluation must survive it.
    import pickle

    ev = {"status": "INCORRECT_NUMERICAL", "log": "off by 1", "correctness": {"max_absolute_error": 1.0},
          "performance": None, "environment": {"hardware": "cpu", "libs": {"torch": "2"}},
          "timestamp": "2025-01-01T00:00:00Z"}
    data = {"definition": "k", "workload": {"uuid": "w", "axes": {}, "inputs": {}}, "solution": "s", "evaluation": ev}
    t = Trace.from_data(data, Source("traces/a/norm/k.jsonl"))
    back = pickle.loads(pickle.dumps(t))
    assert back == t and back.status is TraceStatus.INCORRECT_NUMERICAL and back.evaluation.log == "off by 1"
    assert back.evaluation.environment is t.evaluation.environment  # shared again on arrival
