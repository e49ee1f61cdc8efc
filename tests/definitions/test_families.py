"""`kerneltrace definitions`: the definition families (dataset/families/) render the committed files byte for byte;
an edited rendered file, and a family file that is wrong, fail with the file, the field and the fix."""

from __future__ import annotations

import json
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


def test_a_sibling_is_its_template_with_other_constants():
    for family in read_families(DEFAULT_DATASET):
        template = json.loads((DEFAULT_DATASET / "definitions" / family.type / f"{family.template}.json").read_text())
        for s in family.siblings:
            d = json.loads((DEFAULT_DATASET / "definitions" / family.type / f"{s['name']}.json").read_text())
            same = ("constraints",) + (() if s.get("replace") else ("reference",))
            assert all(d.get(k) == template.get(k) for k in same), s["name"]
            for side in ("inputs", "outputs"):  # descriptions aside, the template's tensors
                strip = [{n: {k: v for k, v in x.items() if k != "description"} for n, x in y[side].items()}
                         for y in (d, template)]
                assert strip[0] == strip[1], (s["name"], side)
            assert list(d["axes"]) == list(template["axes"]), s["name"]


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
    (lambda f: f["siblings"][0]["set"].update(reference="def run(): pass"), "$.siblings[0].set.reference: cannot differ"),
    (lambda f: f["siblings"][0].update(shape={}), "$.siblings[0].shape: is not a sibling field"),
    (lambda f: f["siblings"][0].update(replace=[["no such text", "x"]]), "$.siblings[0].replace[0]: 'no such text' is not"),
    (lambda f: f["siblings"][0]["axes"].update(Q={"value": 1}), "$.siblings[0].axes.Q: "),
    (lambda f: f.update(template="gemm_nowhere"), "$.template: gemm_nowhere's definitions/"),
    (lambda f: f["siblings"][0].update(inputs={"A": {"dtype": "float16"}}), "$.siblings[0].inputs.A: may only change"),
    (lambda f: f["siblings"][0].update(einsum_replace=[["no such text", "x"]]),
     "$.siblings[0].einsum_replace[0]: 'no such text' is not exactly once in the Einsum cascade"),
    (lambda f: f["siblings"][0].update(baseline_replace=["just one string"]),
     "$.siblings[0].baseline_replace[0]: is not a pair of strings"),
])
def test_a_wrong_family_file_names_the_field_and_the_fix(family_dataset, edit, where):
    [path] = sorted((family_dataset / "families").glob("*.json"))[:1]
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
