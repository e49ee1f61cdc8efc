"""`kerneltrace serve`'s quick rebuilds (generator/site/serve.py): an edit redoes only the definitions it
touches, and the served site is then the same, file for file and byte for byte, as a full build of the
edited dataset. Real loads, real checks, the real mkdocs build."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from test_site import make_project

from generator.model.errors import KernelTraceError
from generator.site.build import build_site
from generator.site.serve import SiteMemo, rebuild

from dataset_factory import DEFINITION, MODEL, dump
from results_dataset import DEF, browser_dataset

OTHER = "planted_h128"


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_same_site(served: Path, full: Path) -> None:
    a, b = files(served), files(full)
    assert sorted(a) == sorted(b), (f"only served: {sorted(set(a) - set(b))[:5]}; "
                                    f"only built: {sorted(set(b) - set(a))[:5]}")
    differ = [rel for rel in a if a[rel] != b[rel]]
    assert not differ, f"served and fully built files differ: {differ[:5]}"


def test_an_edit_redoes_only_its_definition_and_serves_what_a_full_build_makes(tmp_path):
    root = browser_dataset(tmp_path / "dataset")
    project = make_project(tmp_path / "project")
    memo, out, work = SiteMemo(), tmp_path / "served", tmp_path / "work"
    assert rebuild(memo, root, out, project, work).startswith("full build")
    page = out / f"generated/definitions/{DEF}.html"
    other_page = out / f"generated/definitions/{OTHER}.html"
    slow_page = out / "generated/solutions/rmsnorm_h128_slow.html"
    assert slow_page.is_file()
    other_before = other_page.stat().st_mtime_ns

    # Edit one definition's description and one of its trace files; delete a solution and its traces.
    d = json.loads((root / f"definitions/norm/{DEF}.json").read_text())
    d["description"] = "Edited while serving. " + d["description"]
    dump(root / f"definitions/norm/{DEF}.json", d)
    alice = root / f"traces/alice/norm/{DEF}.jsonl"
    alice.write_text(alice.read_text().replace('"max_absolute_error": 0.0,', '"max_absolute_error": 0.125,'))
    (root / f"solutions/bob/norm/{DEF}/rmsnorm_h128_slow.json").unlink()
    (root / f"traces/bob/norm/{DEF}.jsonl").unlink()

    did = rebuild(memo, root, out, project, work)
    assert did.startswith("1 definition redone"), did
    assert "Edited while serving." in page.read_text()
    assert not slow_page.exists()
    assert '"1.2e-01"' in (out / f"generated/data/{DEF}.js").read_text()  # the trace file's edit, in its results file
    assert other_page.stat().st_mtime_ns == other_before, "a page of a definition not edited was rewritten"
    assert_same_site(out, _full(root, tmp_path, "full-1"))

    # An edit with an error: refused, the last site stays served; fixed, it is redone.
    good = alice.read_text()
    alice.write_text(good + "{not json\n")
    with pytest.raises(KernelTraceError, match=rf"traces/alice/norm/{DEF}.jsonl"):
        rebuild(memo, root, out, project, work)
    assert "Edited while serving." in page.read_text()
    alice.write_text(good.replace('"max_absolute_error": 0.125,', '"max_absolute_error": 0.25,'))
    assert rebuild(memo, root, out, project, work).startswith("1 definition redone")
    assert '"2.5e-01"' in (out / f"generated/data/{DEF}.js").read_text()

    # A calling record is not one definition's: everything is redone.
    model = copy.deepcopy(MODEL)
    model["kernels"][0]["count"] = 7
    dump(root / "models/test-model.json", model)
    assert rebuild(memo, root, out, project, work).startswith("full build")
    assert_same_site(out, _full(root, tmp_path, "full-3"))


def _full(root: Path, tmp_path: Path, name: str) -> Path:
    out = tmp_path / name
    build_site(root, out, strict=True, project_root=make_project(tmp_path / f"project-{name}"))
    return out


def test_a_new_definition_gets_its_page_a_row_and_a_search_entry(tmp_path):
    root = browser_dataset(tmp_path / "dataset")
    project = make_project(tmp_path / "project")
    memo, out, work = SiteMemo(), tmp_path / "served", tmp_path / "work"
    rebuild(memo, root, out, project, work)
    new = dict(copy.deepcopy(DEFINITION), name="rmsnorm_h256", description="A new kernel.", tags=["status:draft"])
    new["axes"] = {**new["axes"], "hidden_size": {"type": "const", "value": 256}}
    dump(root / "definitions/norm/rmsnorm_h256.json", new)
    did = rebuild(memo, root, out, project, work)
    assert did.startswith("1 definition redone"), did
    assert (out / "generated/definitions/rmsnorm_h256.html").is_file()
    assert "rmsnorm_h256" in (out / "generated/definitions.html").read_text()
    assert "rmsnorm_h256" in (out / "search/search_index.json").read_text()
    # An edit to one definition that a calling record's checks see (the record calls it, its tag now
    # names another model): refused at once, although the record's file did not change.
    d_path = root / f"definitions/norm/{DEF}.json"
    d = json.loads(d_path.read_text())
    d["tags"] = ["model:other-model" if t.startswith("model:") else t for t in d["tags"]]
    dump(d_path, d)
    with pytest.raises(KernelTraceError, match="models/test-model.json"):
        rebuild(memo, root, out, project, work)
