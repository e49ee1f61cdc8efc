"""`kerneltrace definitions`: the definition families (dataset/families/) render the committed files byte for byte;
an edited rendered file, and a family file that is wrong, fail with the file, the field and the fix."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from generator.cli import main
from generator.definitions import definitions, render
from generator.definitions.family import read_families
from generator.load import DEFAULT_DATASET
from generator.model.errors import KernelTraceError


def test_the_committed_families_are_what_they_render(capsys):
    assert main(["definitions", "--check", "--dataset", str(DEFAULT_DATASET)]) == 0
    assert "family files up to date" in capsys.readouterr().out
    rendered = render(DEFAULT_DATASET)
    families = read_families(DEFAULT_DATASET)
    assert families and len(rendered) == 3 * sum(len(f.siblings) for f in families)


def test_what_a_sibling_does_not_name_is_its_templates():
    """The renderer's promise, on every committed sibling: a field, tensor, axis or text the family entry does not
    change is the template's (so a template edit reaches every sibling)."""
    for family in read_families(DEFAULT_DATASET):
        template = json.loads((DEFAULT_DATASET / "definitions" / family.type / f"{family.template}.json").read_text())
        for s in family.siblings:
            d = json.loads((DEFAULT_DATASET / "definitions" / family.type / f"{s['name']}.json").read_text())
            kept = set(template) - set(s.get("set", {})) - {"name", "axes", "inputs", "outputs", "reference"}
            assert all(d.get(k) == template.get(k) for k in kept), s["name"]
            assert (d["reference"] == template["reference"]) == (not s.get("replace")), s["name"]
            for side in ("axes", "inputs", "outputs"):
                named = s.get(side, {})
                assert {n: x for n, x in d[side].items() if n not in named} == \
                    {n: x for n, x in template[side].items() if n not in named}, (s["name"], side)
                assert [n for n in d[side] if n in template[side]] == [n for n in template[side] if n in d[side]]


@pytest.fixture
def family_dataset(tmp_path) -> Path:
    """A copy of the bundled dataset's families and the files they read and render."""
    root = tmp_path / "ds"
    files = set(render(DEFAULT_DATASET))
    for family in read_families(DEFAULT_DATASET):
        t, ty = family.template, family.type
        files |= {f"families/{family.path.name}", f"definitions/{ty}/{t}.json", f"einsums/{ty}/{t}.yaml",
                  f"solutions/baseline/{ty}/{t}/{t}_torch.json"}
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DEFAULT_DATASET / rel, root / rel)
    return root


def test_an_edited_rendered_file_fails_the_check_and_the_command_restores_it(family_dataset, capsys):
    rel = sorted(render(family_dataset))[0]
    original = (family_dataset / rel).read_text()
    (family_dataset / rel).write_text(original.replace("bfloat16", "float16", 1))
    assert main(["definitions", "--check", "--dataset", str(family_dataset)]) == 1
    assert f"{rel}: differs from what its family renders" in capsys.readouterr().err
    report = definitions(family_dataset)
    assert [p.relative_to(family_dataset).as_posix() for p in report.changed] == [rel]
    assert (family_dataset / rel).read_text() == original


@pytest.mark.parametrize("edit, where", [
    (lambda f: f["siblings"][0]["set"].update(reference="def run(): pass"),
     "$.siblings[0].set.reference: cannot be set outright"),
    (lambda f: f["siblings"][0].update(baseline_set={"spec": {}}), "$.siblings[0].baseline_set.spec: cannot be set"),
    (lambda f: f["siblings"][0].update(shape={}), "$.siblings[0].shape: is not a sibling field"),
    (lambda f: f["siblings"][0].update(replace=[["no such text", "x"]]), "$.siblings[0].replace[0]: 'no such text' is not"),
    (lambda f: f["siblings"][0]["axes"].update(Q={"value": 1}), "$.siblings[0].axes.Q: is new here and has no type"),
    (lambda f: f.update(template="gemm_nowhere"), "$.template: gemm_nowhere's definitions/"),
    (lambda f: f["siblings"][0].update(inputs={"A": {"stride": 1}}), "$.siblings[0].inputs.A: cannot change stride"),
    (lambda f: f["siblings"][0].update(inputs={"A_scale": {"dtype": "float32"}}),
     "$.siblings[0].inputs.A_scale: is new here and has no shape"),
    (lambda f: f["siblings"][0].update(outputs={"nothing": None}),
     "$.siblings[0].outputs.nothing: drops an entry the template does not have"),
    (lambda f: f["siblings"][0].update(einsum_replace=[["no such text", "x"]]),
     "$.siblings[0].einsum_replace[0]: 'no such text' is not exactly once in the Einsum cascade"),
    (lambda f: f["siblings"][0].update(baseline_replace=["just one string"]),
     "$.siblings[0].baseline_replace[0]: is not a pair of strings"),
])
def test_a_wrong_family_file_names_the_field_and_the_fix(family_dataset, edit, where):
    path = family_dataset / "families" / "minimax_m2_public_gemms.json"  # a GEMM family: tensors A, B, C
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(KernelTraceError) as caught:
        definitions(family_dataset, check=True)
    assert str(path) in str(caught.value) and where in str(caught.value), str(caught.value)


def test_a_sibling_named_by_two_families_is_refused(family_dataset):
    [path] = sorted((family_dataset / "families").glob("minimax_m2_public_gemms.json"))
    twin = path.with_name("zz_twin.json")
    twin.write_text(path.read_text())
    with pytest.raises(KernelTraceError, match="which another family renders too"):
        definitions(family_dataset, check=True)


def test_a_sibling_may_change_a_tensor_add_one_and_drop_one(family_dataset):
    """What the FP8-query and FP8-KV siblings use: a dtype changed, a scale added after the template's tensors, a
    field and a tensor dropped; the rest of the tensor as the template has it."""
    path = family_dataset / "families" / "minimax_m2_public_gemms.json"
    data = json.loads(path.read_text())
    sibling = data["siblings"][0]
    template = json.loads((family_dataset / "definitions" / data["type"] / f"{data['template']}.json").read_text())
    first, last = list(template["inputs"])[0], list(template["inputs"])[-1]
    sibling["inputs"] = {first: {"dtype": "float8_e4m3", "random": None},
                         "A_scale": {"shape": [], "dtype": "float32", "description": "A's scale."}, last: None}
    path.write_text(json.dumps(data))
    rel = f"definitions/{data['type']}/{sibling['name']}.json"
    d = json.loads(render(family_dataset)[rel])
    assert list(d["inputs"]) == [n for n in template["inputs"] if n != last] + ["A_scale"]
    assert d["inputs"][first] == {k: v for k, v in {**template["inputs"][first], "dtype": "float8_e4m3"}.items()
                                  if k != "random"}
    assert d["inputs"]["A_scale"]["shape"] == [] and d["outputs"] == template["outputs"]


WRITES = re.compile(r"\.write_(text|bytes)\(|write_atomic\(|open\([^)]*[\"'][wax]b?[\"']|shutil\.(copy|move)")


def test_no_module_under_tests_writes_into_the_dataset():
    """The dataset is written by the generator's stages (`kerneltrace definitions`, `workloads`, `contenders`, ...);
    the checks under tests/reference_cases and tests/triton_cases only read it."""
    tests = Path(__file__).resolve().parents[1]
    writers = [p.relative_to(tests).as_posix() for folder in ("reference_cases", "triton_cases")
               for p in sorted((tests / folder).rglob("*.py")) if WRITES.search(p.read_text(encoding="utf-8"))]
    assert not writers, f"{writers} write files: render them from dataset/families/ with `kerneltrace definitions`"
    assert WRITES.search('(DATASET / rel).write_text(text, encoding="utf-8")')  # the rule catches the old writer
    assert WRITES.search('with open(path, "w") as f:')
