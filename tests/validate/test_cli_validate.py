"""`kerneltrace validate`: exit codes, the three output formats, and clear failures without tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from generator.cli import main

from dataset_factory import DEFINITION, write_dataset

REPO = Path(__file__).resolve().parents[2]
DEF = "definitions/norm/rmsnorm_h128.json"


@pytest.fixture
def broken_dataset(tmp_path: Path) -> Path:
    """One error (an undeclared axis) and one warning (torch.nn.functional in the reference)."""
    d = json.loads(json.dumps(DEFINITION))
    d["inputs"]["weight"]["shape"] = ["hiden_size"]
    d["reference"] = "import torch.nn.functional as F\n" + d["reference"]
    return write_dataset(tmp_path / "broken", definition=d)


@pytest.fixture(autouse=True)
def not_in_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)  # the default format depends on it


def test_good_dataset_exits_0(good_dataset: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["validate", "--dataset", str(good_dataset)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "0 error(s), 0 warning(s)"
    assert err.strip() == f"kerneltrace validate: {good_dataset}: OK"


def test_broken_dataset_exits_1_with_file_line_and_field(broken_dataset: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["validate", "--dataset", str(broken_dataset)]) == 1
    out, err = capsys.readouterr()
    text = (broken_dataset / DEF).read_text(encoding="utf-8")
    line = text.count("\n", 0, text.index('"hiden_size"')) + 1
    assert f"{DEF}:{line}: $.inputs.weight.shape[0] error: axis 'hiden_size' of input 'weight' is not declared" in out
    assert "hint: did you mean 'hidden_size'?" in out
    assert "warning: reference uses torch.nn.functional" in out
    assert out.rstrip().endswith("1 error(s), 1 warning(s)")
    assert "1 error(s)" in err


def test_no_warnings_prints_errors_only(broken_dataset: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["validate", "--dataset", str(broken_dataset), "--no-warnings"]) == 1
    out, _ = capsys.readouterr()
    assert "hiden_size" in out and "torch.nn.functional" not in out


def test_warnings_alone_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    d = dict(DEFINITION, reference="import torch.nn.functional as F\n" + DEFINITION["reference"])
    root = write_dataset(tmp_path / "ds", definition=d)
    assert main(["validate", "--dataset", str(root)]) == 0
    assert "0 error(s), 1 warning(s)" in capsys.readouterr().out


def test_json_format(broken_dataset: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["validate", "--dataset", str(broken_dataset), "--format", "json"]) == 1
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert err == ""  # stdout is the JSON document and nothing else goes to the terminal
    assert [d["severity"] for d in report] == ["error", "warning"]
    first = report[0]
    assert set(first) >= {"file", "line", "pointer", "severity", "message", "hint"}
    assert (first["file"], first["pointer"]) == (DEF, "/inputs/weight/shape/0")
    assert isinstance(first["line"], int) and first["line"] > 1
    assert "hiden_size" in first["message"] and first["hint"]


def test_json_format_of_good_dataset_is_an_empty_list(good_dataset: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["validate", "--dataset", str(good_dataset), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_github_annotations_in_actions(broken_dataset: Path, capsys: pytest.CaptureFixture,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert main(["validate", "--dataset", str(broken_dataset)]) == 1
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    error = next(x for x in lines if x.startswith("::error "))
    assert error.startswith(f"::error file={DEF},line=")
    assert ",title=$.inputs.weight.shape[0]::axis 'hiden_size' of input 'weight' is not declared Hint: " in error
    assert any(x.startswith(f"::warning file={DEF},line=") for x in lines)


def test_github_format_escapes_newlines_and_commas(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # ',' and ':' separate workflow-command properties, so a file name holding them is escaped.
    root = write_dataset(tmp_path / "ds")
    (root / "definitions/norm/a,b:c.txt").write_text("x", encoding="utf-8")
    assert main(["validate", "--dataset", str(root), "--format", "github"]) == 0
    out, _ = capsys.readouterr()
    assert "::warning file=definitions/norm/a%2Cb%3Ac.txt,title=kerneltrace::" in out
    assert all(line.startswith("::") for line in out.splitlines())


def test_missing_dataset_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    missing = tmp_path / "nope"
    assert main(["validate", "--dataset", str(missing)]) == 1
    out, err = capsys.readouterr()
    assert f"{missing}: error: dataset folder does not exist" in out
    assert "hint: pass --dataset DIR" in out
    assert "Traceback" not in out + err


def test_dataset_path_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "file.json"
    path.write_text("{}", encoding="utf-8")
    assert main(["validate", "--dataset", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "is not a folder" in out and "Traceback" not in out + err


def test_unknown_format_is_an_argument_error(good_dataset: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["validate", "--dataset", str(good_dataset), "--format", "xml"])
    assert exc.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


# -- as a real process ----------------------------------------------------------------------------
def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    environ.update(env, PYTHONPATH=str(REPO) + os.pathsep + environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "generator.cli", "validate", *args], cwd=REPO, env=environ,
                          capture_output=True, timeout=120)


def test_subprocess_good_and_broken(good_dataset: Path, broken_dataset: Path) -> None:
    good = run_cli("--dataset", str(good_dataset))
    assert good.returncode == 0, good.stderr.decode()
    broken = run_cli("--dataset", str(broken_dataset))
    assert broken.returncode == 1
    assert b"axis 'hiden_size' of input 'weight' is not declared" in broken.stdout
    assert b"Traceback" not in broken.stderr


def test_subprocess_github_actions(broken_dataset: Path) -> None:
    result = run_cli("--dataset", str(broken_dataset), GITHUB_ACTIONS="true")
    assert result.returncode == 1
    assert f"::error file={DEF},line=".encode() in result.stdout


def test_subprocess_missing_folder_and_unprintable_names(tmp_path: Path) -> None:
    missing = run_cli("--dataset", str(tmp_path / "nope"))
    assert missing.returncode == 1 and b"dataset folder does not exist" in missing.stdout
    assert b"Traceback" not in missing.stderr

    # Lone surrogates (a JSON escape) and a file name that is not UTF-8 still print.
    root = write_dataset(tmp_path / "ds")
    path = root / DEF
    path.write_text(path.read_text(encoding="utf-8").replace('"description"', '"\\ud800"', 1), encoding="utf-8")
    (Path(os.fsdecode(os.fsencode(str(root / "models")) + b"/bad\xff.json"))).write_text("{}", encoding="utf-8")
    for fmt in ("human", "github", "json"):
        result = run_cli("--dataset", str(root), "--format", fmt, PYTHONIOENCODING="utf-8")
        assert result.returncode == 1, result.stderr.decode(errors="replace")
        assert b"Traceback" not in result.stderr
        assert b"\\ud800" in result.stdout and b"bad\\udcff.json" in result.stdout
