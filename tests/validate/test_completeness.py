"""Completeness warnings: a definition nobody can run or rank, and repeated trace keys."""

from __future__ import annotations

import copy
from pathlib import Path

from generator.model.diagnostics import WARNING
from generator.validate import validate_path

from dataset_factory import BLOB_WORKLOAD, DEFINITION, MORE_WORKLOADS, TRACE, WORKLOAD, write_dataset


def _messages(root: Path) -> list[str]:
    diags = validate_path(root)
    assert all(d.severity == WARNING for d in diags), [d.message for d in diags]
    return [d.message for d in diags]


def test_no_workloads_and_no_baseline_are_warned(tmp_path: Path) -> None:
    root = write_dataset(tmp_path, workloads=[], traces=[])
    (root / "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json").unlink()
    (root / "agent_traces/baseline/rmsnorm_h128_torch.json").unlink()
    messages = _messages(root)
    assert any("rmsnorm_h128 has no workloads" in m for m in messages), messages
    assert any("rmsnorm_h128 has no baseline solution" in m for m in messages), messages


def test_verified_definition_below_five_workloads_is_warned(tmp_path: Path) -> None:
    five = [WORKLOAD, BLOB_WORKLOAD, *MORE_WORKLOADS]
    assert _messages(write_dataset(tmp_path / "five", workloads=five)) == []
    [diag] = validate_path(write_dataset(tmp_path / "four", workloads=five[:4]))
    assert (diag.file, diag.pointer) == ("definitions/norm/rmsnorm_h128.json", "/tags")
    assert diag.message == ("rmsnorm_h128 is tagged status:verified but has 4 workloads, below the minimum of 5")
    assert "add 1 more to workloads/norm/rmsnorm_h128.jsonl" in diag.hint
    draft = {**DEFINITION, "tags": [t if t != "status:verified" else "status:draft" for t in DEFINITION["tags"]]}
    assert _messages(write_dataset(tmp_path / "draft", definition=draft, workloads=five[:2])) == []


def test_repeated_trace_keys_are_one_warning_per_file(tmp_path: Path) -> None:
    again = copy.deepcopy(TRACE)
    again["evaluation"]["timestamp"] = "2026-11-22T10:00:00Z"
    root = write_dataset(tmp_path, traces=[TRACE, again, again])
    dupes = [m for m in _messages(root) if m.startswith("duplicate trace")]
    assert dupes == ["duplicate trace: rmsnorm_h128_torch on workload wl-0001 on test_cpu also at "
                     "traces/baseline/norm/rmsnorm_h128.jsonl:1 (2 repeated keys in this file)"]


def test_distinct_keys_are_not_duplicates(tmp_path: Path) -> None:
    other = copy.deepcopy(TRACE)
    other["evaluation"]["environment"]["hardware"] = "another_cpu"
    root = write_dataset(tmp_path, traces=[TRACE, other])
    assert not [m for m in _messages(root) if m.startswith("duplicate trace")]
