"""`kerneltrace publish`: the real huggingface_hub client against a local stand-in of the Hub
(tests/hub_stub.py), checking exactly what each publish commits."""

from __future__ import annotations

import socket
import sys
import types
from pathlib import Path

import huggingface_hub.constants  # noqa: E402
import pytest

from generator.export.publish import local_files, plan_changes, publish  # noqa: E402
from generator.model.errors import KernelTraceError  # noqa: E402

from hub_stub import HubStub  # noqa: E402

REPO = "kerneltrace/kerneltrace"
CARD = b"---\nconfigs:\n- config_name: definitions\n  data_files: data/definitions.parquet\n---\n# KernelTrace\n"
EXPORT = {
    "README.md": CARD,
    "data/definitions.parquet": b"PAR1 definitions " + bytes(range(256)),
    "data/workloads.parquet": b"PAR1 workloads " + bytes(range(256))[::-1],
    "blob/workloads/rmsnorm/r1/0000.safetensors": b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ",
}


def write_export(folder: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder


@pytest.fixture(autouse=True)
def hub_env(monkeypatch, tmp_path):
    """No token, saved login, offline switch or OIDC from the machine running the tests."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "no-saved-token"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def hub():
    with HubStub() as stub:
        stub.add_repo(REPO)
        yield stub


@pytest.fixture
def export(tmp_path) -> Path:
    # `kerneltrace export` leaves a marker file in its folder; it is not part of the dataset
    return write_export(tmp_path / "export", {**EXPORT, ".kerneltrace-export": b"{}"})


def run(hub: HubStub, export: Path, **kwargs):
    kwargs.setdefault("token", "hf_write")
    return publish(Path("unused"), REPO, endpoint=hub.endpoint, export_dir=export, **kwargs)


def commit_posts(hub: HubStub) -> list[str]:
    return [path for method, path in hub.requests if method == "POST" and "/commit/" in path]


def test_first_publish_commits_every_file_once_with_the_listed_head_as_parent(hub, export):
    before = hub.repos[REPO].head()

    result = run(hub, export)

    assert len(hub.commits) == 1
    sent = hub.commits[0]
    assert sent.added == EXPORT
    assert sent.deleted == []
    assert sent.header["parentCommit"] == before.oid
    assert hub.repos[REPO].files() == {**EXPORT, ".gitattributes": before.files[".gitattributes"]}
    assert result.is_committed and result.commit_oid == hub.repos[REPO].head().oid
    assert [(c.kind, c.path) for c in result.changes] == [("add", p) for p in sorted(EXPORT)]
    report = result.report()
    assert "4 to add, 0 to update, 0 to delete, 0 unchanged" in report
    assert "  add     data/definitions.parquet (" in report
    assert f"committed {result.commit_oid}" in report


def test_publishing_the_same_export_again_makes_no_commit(hub, export):
    run(hub, export)
    head = hub.repos[REPO].head().oid
    hub.requests.clear()

    result = run(hub, export)

    assert commit_posts(hub) == []
    assert hub.repos[REPO].head().oid == head
    assert result.changes == () and result.unchanged == len(EXPORT) and not result.is_committed
    assert "nothing changed: no commit made" in result.report()


def test_a_changed_file_is_the_only_file_uploaded(hub, export):
    run(hub, export)
    (export / "data/workloads.parquet").write_bytes(b"PAR1 new workloads")

    result = run(hub, export)

    assert len(hub.commits) == 2
    assert hub.commits[1].added == {"data/workloads.parquet": b"PAR1 new workloads"}
    assert hub.commits[1].deleted == []
    assert [(c.kind, c.path) for c in result.changes] == [("update", "data/workloads.parquet")]
    assert hub.repos[REPO].files()["data/workloads.parquet"] == b"PAR1 new workloads"


def test_files_the_export_no_longer_has_are_deleted_but_never_gitattributes(hub, export):
    run(hub, export)
    (export / "data/workloads.parquet").unlink()
    (export / "data/solutions.parquet").write_bytes(b"PAR1 solutions")

    result = run(hub, export)

    sent = hub.commits[-1]
    assert sent.added == {"data/solutions.parquet": b"PAR1 solutions"}
    assert sent.deleted == ["data/workloads.parquet"]
    assert [(c.kind, c.path) for c in result.changes] == [("add", "data/solutions.parquet"),
                                                         ("delete", "data/workloads.parquet")]
    files = hub.repos[REPO].files()
    assert set(files) == {".gitattributes", "README.md", "data/definitions.parquet", "data/solutions.parquet",
                          "blob/workloads/rmsnorm/r1/0000.safetensors"}


def test_a_concurrent_commit_makes_the_publish_fail_cleanly(hub, export):
    hub.before_commit = lambda repo: repo.commit({"notes.txt": b"someone else"}, title="concurrent")

    with pytest.raises(KernelTraceError, match=r"the repo changed while publishing \(412.*run again"):
        run(hub, export)

    assert hub.commits == []
    files = hub.repos[REPO].files()
    assert "README.md" not in files and files["notes.txt"] == b"someone else"


def test_dry_run_lists_the_operations_and_sends_nothing(hub, export):
    run(hub, export)
    (export / "README.md").write_bytes(CARD + b"\nMore words.\n")
    (export / "data/definitions.parquet").unlink()
    hub.requests.clear()

    result = run(hub, export, dry_run=True)

    assert all(method == "GET" for method, _ in hub.requests), hub.requests
    assert len(hub.commits) == 1
    assert [(c.kind, c.path) for c in result.changes] == [("update", "README.md"),
                                                         ("delete", "data/definitions.parquet")]
    report = result.report()
    assert "  update  README.md (" in report and "  delete  data/definitions.parquet (" in report
    assert report.endswith("dry run: nothing sent")


def test_dry_run_of_a_public_repo_needs_no_token(hub, export):
    result = run(hub, export, dry_run=True, token=None)
    assert len(result.changes) == len(EXPORT)
    assert hub.commits == []


def test_dry_run_of_a_private_repo_without_token_says_how_to_fix_it(hub, export):
    hub.add_repo("kerneltrace/private", private=True)
    with pytest.raises(KernelTraceError, match="not found .* if it is private, set HF_TOKEN"):
        publish(Path("unused"), "kerneltrace/private", endpoint=hub.endpoint, export_dir=export, dry_run=True)


def test_the_token_comes_from_hf_token(hub, export, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_write")
    publish(Path("unused"), REPO, endpoint=hub.endpoint, export_dir=export)
    assert len(hub.commits) == 1


def test_a_missing_token_is_reported_before_any_request(hub, export):
    with pytest.raises(KernelTraceError, match=r"^no Hugging Face token: set HF_TOKEN"):
        publish(Path("unused"), REPO, endpoint=hub.endpoint, export_dir=export)
    assert hub.requests == []


def test_a_bad_token_is_reported(hub, export):
    with pytest.raises(KernelTraceError, match=r"the Hub rejected the token \(401.*set HF_TOKEN to a valid token"):
        run(hub, export, token="hf_wrong")
    assert hub.commits == []


def test_a_read_only_token_is_reported(hub, export):
    with pytest.raises(KernelTraceError, match=r"may not write to kerneltrace/kerneltrace \(403"):
        run(hub, export, token="hf_read")
    assert hub.commits == []


def test_a_missing_repo_is_reported(hub, export):
    with pytest.raises(KernelTraceError, match=r"dataset repo kerneltrace/nope not found at http://127\.0\.0\.1:\d+ "
                                               r"\(create it on the Hub first"):
        publish(Path("unused"), "kerneltrace/nope", endpoint=hub.endpoint, export_dir=export, token="hf_write")


def test_a_missing_revision_is_reported(hub, export):
    with pytest.raises(KernelTraceError, match=r"revision 'release' not found in dataset repo"):
        run(hub, export, revision="release")


def test_no_network_is_reported(export):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    with pytest.raises(KernelTraceError, match=rf"^cannot reach the Hub at {endpoint} "):
        publish(Path("unused"), REPO, endpoint=endpoint, export_dir=export, token="hf_write")


def test_offline_mode_is_reported(hub, export, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(KernelTraceError, match="HF_HUB_OFFLINE is set"):
        run(hub, export)
    assert hub.requests == []

def test_an_invalid_dataset_card_is_rejected(hub, export):
    (export / "README.md").write_bytes(b"---\nconfigs: [unclosed\n---\n# card\n")
    with pytest.raises(KernelTraceError, match="rejected the dataset card README.md"):
        run(hub, export)
    assert hub.commits == []



def test_a_rejected_commit_is_reported_with_the_hubs_reason(hub, export):
    hub.reject_commit = (422, "Your push was rejected: files larger than 10 MiB must use LFS")
    with pytest.raises(KernelTraceError, match=r"the Hub rejected the commit to kerneltrace/kerneltrace \(422: "
                                               r"Your push was rejected: files larger .*\); nothing was committed"):
        run(hub, export)
    assert hub.commits == [] and "README.md" not in hub.repos[REPO].files()

def test_create_pr_commits_to_a_pull_request_and_leaves_main_alone(hub, export):
    main_before = hub.repos[REPO].head()

    result = run(hub, export, create_pr=True)

    assert result.pr_url and result.pr_url.endswith("/discussions/1")
    assert hub.commits[0].create_pr and hub.commits[0].header["parentCommit"] == main_before.oid
    assert hub.repos[REPO].head() == main_before
    assert hub.repos[REPO].files("refs/pr/1") == {**EXPORT, ".gitattributes": main_before.files[".gitattributes"]}
    assert "opened pull request" in result.report()


def test_an_export_without_a_card_is_refused(hub, tmp_path):
    folder = write_export(tmp_path / "partial", {"data/definitions.parquet": b"PAR1"})
    with pytest.raises(KernelTraceError, match="no README.md"):
        run(hub, folder)
    assert hub.requests == []


@pytest.mark.parametrize("repo_id", ["kerneltrace", "a/b/c", "org/", "../x", "org/na me"])
def test_a_malformed_repo_name_is_refused(repo_id, export):
    with pytest.raises(KernelTraceError, match="--repo must look like ORG/NAME"):
        publish(Path("unused"), repo_id, export_dir=export, token="hf_write")


def test_lfs_files_are_compared_by_sha256_and_regular_ones_by_git_sha1(export):
    from generator.export.publish import RemoteFile

    local = local_files(export)
    remote = {
        # LFS: the git oid is the pointer's, which never equals the content's
        "data/definitions.parquet": RemoteFile("data/definitions.parquet", 1, "0" * 40,
                                               local["data/definitions.parquet"].sha256),
        "README.md": RemoteFile("README.md", 1, local["README.md"].git_sha1, None),
        "data/workloads.parquet": RemoteFile("data/workloads.parquet", 1, local["data/workloads.parquet"].git_sha1,
                                             "f" * 64),
        ".gitattributes": RemoteFile(".gitattributes", 1, "1" * 40, None),
    }
    changes, unchanged = plan_changes(local, remote)
    assert unchanged == 2
    assert [(c.kind, c.path) for c in changes] == [("add", "blob/workloads/rmsnorm/r1/0000.safetensors"),
                                                   ("update", "data/workloads.parquet")]


def test_publish_exports_into_a_temporary_folder_first(hub, monkeypatch, tmp_path):
    calls = []

    def export_dataset(dataset_root, out_dir, fmt="hub", repo_id=None):
        calls.append((dataset_root, out_dir, fmt, repo_id))
        write_export(out_dir, EXPORT)
        return {"files": len(EXPORT)}

    monkeypatch.setitem(sys.modules, "generator.export", types.SimpleNamespace(export_dataset=export_dataset))

    result = publish(tmp_path / "dataset", REPO, endpoint=hub.endpoint, token="hf_write")

    assert len(calls) == 1 and calls[0][0] == tmp_path / "dataset" and calls[0][2] == "hub"
    assert calls[0][3] == REPO  # the card's examples name the repo it is published to
    assert not calls[0][1].exists()  # the temporary export is gone afterwards
    assert hub.commits[0].added == EXPORT and result.is_committed


def test_the_real_export_publishes_and_a_second_publish_finds_nothing_changed(hub, good_dataset):
    first = publish(good_dataset, REPO, endpoint=hub.endpoint, token="hf_write")
    second = publish(good_dataset, REPO, endpoint=hub.endpoint, token="hf_write")

    files = hub.repos[REPO].files()
    assert first.is_committed and "README.md" in files and any(p.endswith(".parquet") for p in files)
    assert ".kerneltrace-export" not in files
    assert len(hub.commits) == 1  # the export is reproducible: the same dataset gives the same bytes
    assert not second.is_committed and second.changes == ()


def test_cli_prints_the_plan_and_one_line_errors(hub, export, monkeypatch, capsys):
    from generator.cli import main

    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", hub.endpoint)
    assert main(["publish", "--repo", REPO, "--export-dir", str(export), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "4 to add" in out and "dry run: nothing sent" in out

    assert main(["publish", "--repo", REPO, "--export-dir", str(export)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[0]] and err[0].startswith("kerneltrace publish: error: no Hugging Face token")

