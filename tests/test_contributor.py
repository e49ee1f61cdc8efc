"""The contributor's path: a fresh clone, `kerneltrace` installed from elsewhere (this checkout's
editable install, run from the clone's folder), a new model's definition added by the contributing
guide's steps, and the checks that must catch mistakes in it: the pre-commit hook's own command,
`kerneltrace validate` without --dataset (it must read the clone's ./dataset, not the installed
package's), GitHub annotations with repository-relative paths, `workloads --check` for a line added
by hand and a workload file no recipe writes, the model-tag check, and the guide's CPU check of a
Triton solution.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "site_src" / "contributing.md"
NAME = "gelu_tanh_and_mul_i10240"
MODEL = "gemma-3-4b"

GELU = {
    "name": NAME,
    "description": "GeGLU of Gemma-3-4B's MLP: input row = [gate | up], output = gelu_tanh(gate) * up, "
                   "intermediate_size = 10240 (google/gemma-3-4b-it config.json). Numerics: float32, one "
                   "rounding to bfloat16.",
    "type": "activation",
    "tags": ["status:draft", f"model:{MODEL}", "stage:decode", "stage:prefill"],
    "axes": {
        "num_tokens": {"type": "var", "description": "Tokens in the step."},
        "intermediate_size": {"type": "const", "value": 10240, "description": "intermediate_size."},
        "gate_up_size": {"type": "const", "value": 20480, "description": "2 * intermediate_size."},
    },
    "constraints": ["gate_up_size == 2 * intermediate_size"],
    "inputs": {"input": {"shape": ["num_tokens", "gate_up_size"], "dtype": "bfloat16"}},
    "outputs": {"output": {"shape": ["num_tokens", "intermediate_size"], "dtype": "bfloat16"}},
    "reference": "import math\nimport torch\n\n\ndef run(input):\n    n = input.shape[1] // 2\n"
                 "    x = input.to(torch.float32)\n    gate, up = x[:, :n], x[:, n:]\n"
                 "    inner = math.sqrt(2.0 / math.pi) * (gate + 0.044715 * gate ** 3)\n"
                 "    return {\"output\": (0.5 * gate * (1.0 + torch.tanh(inner)) * up).to(torch.bfloat16)}\n",
}
EINSUM = """workload:
  rank_sizes:
    T: {{ num_tokens }}
    GU: {{ gate_up_size }}
    I: {{ intermediate_size }}
  einsums:
  - name: GeluAndMul
    tensor_accesses:
    - {name: input, projection: [t, gu]}
    - {name: output, projection: {T: t, I: gu // 2}, output: true}
"""


def run(cmd: list[str], cwd: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env})


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A fresh clone of the committed repository, without the generator on its import path."""
    where = tmp_path_factory.mktemp("contributor") / "kerneltrace"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(where)], check=True, timeout=300)
    return where


def guide_recipe() -> str:
    """The recipe the guide's "Add a workload" section shows."""
    section = GUIDE.read_text(encoding="utf-8").split("## Add a workload", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


def add_the_model(clone: Path) -> Path:
    """The guide's steps for a new model: calling record, definition with its tags, Einsum cascade,
    workloads from the recipe the guide shows (`kerneltrace workloads`), a baseline solution."""
    ds = clone / "dataset"
    (ds / "models" / f"{MODEL}.json").write_text(json.dumps({
        "model": "google/gemma-3-4b-it", "framework": "vLLM",
        "kernels": [{"id": NAME, "count": 34, "note": "one per decoder layer"}]}, indent=2) + "\n")
    definition = ds / "definitions" / "activation" / f"{NAME}.json"
    definition.write_text(json.dumps(GELU, indent=2) + "\n")
    (ds / "einsums" / "activation" / f"{NAME}.yaml").write_text(EINSUM)
    (ds / "recipes" / f"{MODEL}.yaml").write_text(guide_recipe())
    made = run([sys.executable, "-m", "generator.cli", "workloads"], clone)  # the clone's own generator
    assert made.returncode == 0 and f"activation/{NAME}.jsonl" in made.stdout, made.stdout + made.stderr
    folder = ds / "solutions" / "baseline" / "activation" / NAME
    folder.mkdir(parents=True)
    (folder / f"{NAME}_torch.json").write_text(json.dumps({
        "name": f"{NAME}_torch", "definition": NAME, "author": "baseline", "description": "F.gelu(tanh) * up.",
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "destination_passing_style": False, "dependencies": ["torch"]},
        "sources": [{"path": "main.py", "content": "import torch\nimport torch.nn.functional as F\n\n\ndef run(input):\n"
                     "    gate, up = input.float().chunk(2, dim=-1)\n"
                     "    return {'output': (F.gelu(gate, approximate='tanh') * up).to(torch.bfloat16)}\n"}]},
        indent=2) + "\n")
    return definition


def test_the_guide_states_each_step_the_test_takes():
    guide = GUIDE.read_text(encoding="utf-8")
    for step in ("dataset/models/<model>.json", "model:<model>", "dataset/definitions/<type>/<name>.json",
                 "dataset/einsums/<type>/<name>.yaml", "workloads/<type>/<definition>.jsonl", "`baseline` solution",
                 "dataset/recipes/<model>.yaml", "kerneltrace workloads", "tests/reference_cases/<model>.py", "status:verified",
                 "at least 5 workloads", "TRITON_INTERPRET=1", "truncates", "Traces you run yourself",
                 "./dataset", "pre-commit install"):
        assert step in guide, step


def test_the_guides_checklist_runs_what_ci_runs():
    """The guide's "before you open the pull request" list is the path CI enforces: every check command of the
    CI workflow (validate, the tests, the site build) is in it, with the workload recipes' check."""
    guide = GUIDE.read_text(encoding="utf-8")
    section = guide.split("## Before you open the pull request", 1)[1].split("\n## ", 1)[0]
    listed = {line.split("#")[0].strip() for line in section.split("```sh", 1)[1].split("```", 1)[0].splitlines()}
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    ci = [step["run"].strip() for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
    checks = [c for c in ci if c.startswith(("kerneltrace ", "python -m pytest"))]
    assert checks, ci
    for command in checks:  # the same command, CI's reporting format aside
        assert any(command.split(" --format")[0] == line for line in listed), (command, listed)
    assert "kerneltrace workloads --check" in listed


def test_a_new_model_by_the_guide_and_a_planted_dtype_typo(clone):
    definition = add_the_model(clone)
    hooks = yaml.safe_load((clone / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "kerneltrace-validate"]
    entry = hook["entry"].split()
    assert re.search(hook["files"], f"dataset/definitions/activation/{NAME}.json")
    ok = run(entry, clone)  # pre-commit runs hooks from the repository root
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert NAME not in ok.stdout  # no warning either (validate prints them): workloads and a baseline are there

    text = definition.read_text().replace('"dtype": "bfloat16"', '"dtype": "bfloat_16"', 1)
    definition.write_text(text)
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "bfloat_16" in x)
    bad = run(entry, clone)  # the hook
    assert bad.returncode == 1, (entry, bad.stdout, bad.stderr)
    assert (f"definitions/activation/{NAME}.json:{line}: $.inputs.input.dtype error: 'bfloat_16' is not an "
            "allowed value") in bad.stdout, bad.stdout
    assert "did you mean 'bfloat16'" in bad.stdout
    # The command the guide gives (no --dataset: the clone's ./dataset, not the installed package's, which has no
    # such definition), in CI's reporting format, with the path a pull request shows.
    gh = run(["kerneltrace", "validate", "--format", "github"], clone)
    assert gh.returncode == 1, (gh.stdout, gh.stderr)
    assert f"::error file=dataset/definitions/activation/{NAME}.json,line={line}," in gh.stdout
    assert "bfloat_16" in gh.stdout and "did you mean 'bfloat16'" in gh.stdout
    definition.write_text(text.replace("bfloat_16", "bfloat16"))


def test_model_tags_and_recipes_are_checked(clone):
    if not (clone / "dataset" / "models" / f"{MODEL}.json").exists():
        add_the_model(clone)
    record = clone / "dataset" / "models" / f"{MODEL}.json"
    good = record.read_text()
    data = json.loads(good)
    data["kernels"] = [{"id": "rmsnorm_h4096", "count": 1}]
    record.write_text(json.dumps(data))
    bad = run(["kerneltrace", "validate"], clone)
    assert bad.returncode == 1
    assert f"tagged model:{MODEL} but models/{MODEL}.json does not call {NAME}" in bad.stdout
    assert f"calls rmsnorm_h4096, whose definition has no model:{MODEL} tag" in bad.stdout
    record.write_text(good)
    # A line added by hand to a recipe's file, and a workload file no recipe writes: one check names both.
    workloads = clone / "dataset" / "workloads" / "activation" / f"{NAME}.jsonl"
    made = workloads.read_text()
    workloads.write_text(made + made.splitlines()[-1].replace('"seed": 8', '"seed": 9') + "\n")
    stray = workloads.with_name("gelu_by_hand.jsonl")
    stray.write_text(made)
    bad = run([sys.executable, "-m", "generator.cli", "workloads", "--check"], clone)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert f"workloads/activation/{NAME}.jsonl: differs from what its recipe" in bad.stderr
    assert "workloads/activation/gelu_by_hand.jsonl: no recipe writes it" in bad.stderr
    stray.unlink()
    workloads.write_text(made)


def guide_triton_check() -> str:
    guide = GUIDE.read_text(encoding="utf-8")
    section = guide.split("### Check a Triton solution on the CPU", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_guides_triton_cpu_check_passes_a_good_solution_and_fails_a_wrong_one(clone, tmp_path):
    script = clone / "check_triton.py"
    script.write_text(guide_triton_check())
    solution = clone / "dataset/solutions/kerneltrace/norm/rmsnorm_h4096/rmsnorm_h4096_triton.json"
    good = run([sys.executable, str(script), str(solution.relative_to(clone))], clone, TRITON_INTERPRET="1")
    assert good.returncode == 0, good.stderr[-2000:]
    assert "rmsnorm_h4096_triton: matches the reference" in good.stdout
    wrong = json.loads(solution.read_text())
    source = wrong["sources"][0]["content"]
    wrong["sources"][0]["content"] = source.replace("rstd = 1.0 / tl.sqrt(", "rstd = 1.5 / tl.sqrt(", 1)
    assert wrong["sources"][0]["content"] != source
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(wrong))
    bad = run([sys.executable, str(script), str(broken)], clone, TRITON_INTERPRET="1")
    assert bad.returncode != 0 and "Mismatched elements" in bad.stderr
