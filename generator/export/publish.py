"""Publish the exported dataset to a Hugging Face Hub dataset repo (publish stage).

`publish()` reads like its steps: export into a temporary folder, resolve the branch head,
list what the repo holds there, compare file by file, and send only what changed in one
commit whose parent is the head that was listed, so a concurrent change makes the commit fail
instead of being overwritten. With `dry_run` it stops after the comparison.

Files are compared by content: a regular file by its git blob sha1, an LFS file by its sha256.
Remote files the export no longer has are deleted, except `.gitattributes` (the repo's LFS
rules, which the Hub manages). Every failure of the Hub or the network becomes one
KernelTraceError that says what to do.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional

from .. import __version__
from ..model.errors import KernelTraceError
from ..model.repo_id import check_repo_id

if TYPE_CHECKING:  # pragma: no cover
    from huggingface_hub import HfApi

REPO_TYPE = "dataset"
# Remote files that publishing never deletes, although the export does not write them.
PROTECTED_PATHS = frozenset({".gitattributes"})
# Files of an export folder that stay local: the marker `kerneltrace export` leaves so that it
# may replace the folder later (generator/export/staging.py MARKER).
LOCAL_ONLY_PATHS = frozenset({".kerneltrace-export"})
_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class LocalFile:
    path: str  # relative, POSIX separators: the path in the repo
    size_bytes: int
    git_sha1: str  # sha1 of the git blob ("blob <size>\0" + content)
    sha256: str  # what Git LFS names the content by


@dataclass(frozen=True)
class RemoteFile:
    path: str
    size_bytes: int
    git_sha1: str
    lfs_sha256: Optional[str]  # set when the file is stored with LFS (or Xet)

    def has_content_of(self, local: LocalFile) -> bool:
        if self.lfs_sha256:
            return self.lfs_sha256 == local.sha256
        return self.git_sha1 == local.git_sha1


@dataclass(frozen=True)
class Change:
    kind: str  # "add" (new file), "update" (content differs) or "delete"
    path: str
    size_bytes: int  # the local size for add/update, the remote size for delete


@dataclass(frozen=True)
class PublishResult:
    repo_id: str
    revision: str
    endpoint: str
    parent_commit: str  # head of `revision` that was compared with (and committed onto)
    changes: tuple[Change, ...]
    unchanged: int  # files identical on both sides
    dry_run: bool
    create_pr: bool = False
    commit_oid: Optional[str] = None
    commit_url: Optional[str] = None
    pr_url: Optional[str] = None

    @property
    def is_committed(self) -> bool:
        return self.commit_oid is not None

    def report(self) -> str:
        """What was (or, for a dry run, would be) sent, one line per file, then the outcome."""
        counts = {kind: sum(1 for c in self.changes if c.kind == kind) for kind in ("add", "update", "delete")}
        head = (f"{self.repo_id}@{self.revision} (head {self.parent_commit[:12]}): "
                f"{counts['add']} to add, {counts['update']} to update, {counts['delete']} to delete, "
                f"{self.unchanged} unchanged")
        lines = [head]
        lines += [f"  {c.kind:<7} {c.path} ({_human_size(c.size_bytes)})" for c in self.changes]
        if not self.changes:
            lines.append("nothing changed: no commit made")
        elif self.dry_run:
            lines.append("dry run: nothing sent")
        elif self.pr_url:
            lines.append(f"opened pull request {self.pr_url} (commit {self.commit_oid})")
        else:
            lines.append(f"committed {self.commit_oid}: {self.commit_url}")
        return "\n".join(lines)


def publish(dataset_root: Path, repo_id: str, *, revision: str = "main", create_pr: bool = False,
            dry_run: bool = False, endpoint: Optional[str] = None, token: Optional[str] = None,
            export_dir: Optional[Path] = None, commit_message: Optional[str] = None) -> PublishResult:
    """Exports `dataset_root` (or takes the already exported `export_dir`) and uploads what differs
    from `repo_id` at `revision` in one commit (a pull request with `create_pr`).

    The token comes from `token`, else HF_TOKEN, else huggingface_hub's saved login. A dry run
    needs none for a public repo. Raises KernelTraceError for everything the user can fix.
    """
    check_repo_id(repo_id)
    token = resolve_token(token)
    if token is None and not dry_run:
        raise KernelTraceError(
            "no Hugging Face token: set HF_TOKEN to a token with write access to "
            f"{repo_id} (https://huggingface.co/settings/tokens), or run `hf auth login`")
    if export_dir is not None:
        return _publish_folder(Path(export_dir), repo_id, revision=revision, create_pr=create_pr,
                               dry_run=dry_run, endpoint=endpoint, token=token, commit_message=commit_message)
    from . import export_dataset  # heavy (pyarrow): only when publishing

    with tempfile.TemporaryDirectory(prefix="kerneltrace-publish-") as tmp:
        folder = Path(tmp) / "hub"
        export_dataset(Path(dataset_root), folder, fmt="hub", repo_id=repo_id)
        return _publish_folder(folder, repo_id, revision=revision, create_pr=create_pr, dry_run=dry_run,
                               endpoint=endpoint, token=token, commit_message=commit_message)


def resolve_token(token: Optional[str] = None) -> Optional[str]:
    """`token`, else HF_TOKEN, else huggingface_hub's own lookup (saved login); None if none."""
    if token and token.strip():
        return token.strip()
    env = os.environ.get("HF_TOKEN", "").strip()
    if env:
        return env
    from huggingface_hub import get_token

    return get_token() or None


def _publish_folder(folder: Path, repo_id: str, *, revision: str, create_pr: bool, dry_run: bool,
                    endpoint: Optional[str], token: Optional[str], commit_message: Optional[str]) -> PublishResult:
    local = local_files(folder)
    if "README.md" not in local:
        raise KernelTraceError(f"{folder}: the export has no README.md (dataset card); refusing to publish "
                               "an incomplete folder, which would delete the repo's other files")
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=token if token else False)
    context = dict(repo_id=repo_id, revision=revision, endpoint=api.endpoint, has_token=token is not None)
    with _hub_errors(action="read", **context):
        head = api.repo_info(repo_id, repo_type=REPO_TYPE, revision=revision).sha
        if not head:
            raise KernelTraceError(f"the Hub did not say which commit {repo_id}@{revision} is at; run again")
        remote = remote_files(api, repo_id, head)
    changes, unchanged = plan_changes(local, remote)
    result = PublishResult(repo_id=repo_id, revision=revision, endpoint=api.endpoint, parent_commit=head,
                           changes=tuple(changes), unchanged=unchanged, dry_run=dry_run, create_pr=create_pr)
    if dry_run or not changes:
        return result
    with _hub_errors(action="commit", **context):
        info = api.create_commit(
            repo_id, _operations(folder, changes), repo_type=REPO_TYPE, revision=revision,
            create_pr=create_pr, parent_commit=head,
            commit_message=commit_message or _default_message(changes),
            commit_description=f"Published with kerneltrace {__version__}.",
        )
    return replace(result, commit_oid=info.oid, commit_url=info.commit_url, pr_url=info.pr_url)


def local_files(folder: Path) -> dict[str, LocalFile]:
    """Every regular file under `folder` but LOCAL_ONLY_PATHS, keyed by its path in the repo."""
    if not folder.is_dir():
        raise KernelTraceError(f"{folder}: no such folder to publish; run `kerneltrace export --out {folder}` first")
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(folder).as_posix()
        if rel not in LOCAL_ONLY_PATHS:
            files[rel] = _hash_file(path, rel)
    return files


def remote_files(api: "HfApi", repo_id: str, commit: str) -> dict[str, RemoteFile]:
    """Every file of `repo_id` at `commit`, keyed by path (folders left out)."""
    files = {}
    for entry in api.list_repo_tree(repo_id, repo_type=REPO_TYPE, revision=commit, recursive=True):
        blob_id = getattr(entry, "blob_id", None)
        if blob_id is None:  # a folder
            continue
        lfs = getattr(entry, "lfs", None)
        files[entry.path] = RemoteFile(path=entry.path, size_bytes=int(entry.size or 0), git_sha1=blob_id,
                                       lfs_sha256=lfs.sha256 if lfs is not None else None)
    return files


def plan_changes(local: dict[str, LocalFile], remote: dict[str, RemoteFile]) -> tuple[list[Change], int]:
    """(changes sorted by path, number of unchanged files): adds, updates, and deletes of remote
    files the export no longer has (never PROTECTED_PATHS)."""
    changes = []
    unchanged = 0
    for path, mine in local.items():
        theirs = remote.get(path)
        if theirs is None:
            changes.append(Change("add", path, mine.size_bytes))
        elif theirs.has_content_of(mine):
            unchanged += 1
        else:
            changes.append(Change("update", path, mine.size_bytes))
    for path, theirs in remote.items():
        if path not in local and path not in PROTECTED_PATHS:
            changes.append(Change("delete", path, theirs.size_bytes))
    changes.sort(key=lambda c: c.path)
    return changes, unchanged


def _operations(folder: Path, changes: list[Change]) -> list:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    return [CommitOperationDelete(path_in_repo=c.path) if c.kind == "delete"
            else CommitOperationAdd(path_in_repo=c.path, path_or_fileobj=str(folder / c.path))
            for c in changes]


def _default_message(changes: list[Change]) -> str:
    n = {kind: sum(1 for c in changes if c.kind == kind) for kind in ("add", "update", "delete")}
    return f"Publish KernelTrace dataset ({n['add']} added, {n['update']} updated, {n['delete']} deleted)"


def _hash_file(path: Path, rel: str) -> LocalFile:
    size = path.stat().st_size
    sha1 = hashlib.sha1(b"blob %d\0" % size)
    sha256 = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK_BYTES):
            sha1.update(chunk)
            sha256.update(chunk)
    return LocalFile(path=rel, size_bytes=size, git_sha1=sha1.hexdigest(), sha256=sha256.hexdigest())


def _human_size(n_bytes: int) -> str:
    if n_bytes < 1024:
        return f"{n_bytes} B"
    size = float(n_bytes)
    for unit in ("KiB", "MiB", "GiB"):
        size /= 1024
        if size < 1024:
            break
    return f"{size:.1f} {unit}"


@contextmanager
def _hub_errors(*, action: str, repo_id: str, revision: str, endpoint: str, has_token: bool) -> Iterator[None]:
    """Turns huggingface_hub and network failures into one-line KernelTraceErrors."""
    try:
        yield
    except KernelTraceError:
        raise
    except Exception as exc:
        message = explain_hub_error(exc, action=action, repo_id=repo_id, revision=revision, endpoint=endpoint,
                                    has_token=has_token)
        if message is None:
            raise
        raise KernelTraceError(message) from exc


def explain_hub_error(exc: Exception, *, action: str, repo_id: str, revision: str, endpoint: str,
                      has_token: bool) -> Optional[str]:
    """The message for a failure while reading the repo (`action` "read") or committing to it
    ("commit"), or None for an exception that is not about the Hub."""
    from huggingface_hub.errors import (
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set, so huggingface_hub sends no request: unset it to publish"
    if isinstance(exc, _transport_errors()):
        return f"cannot reach the Hub at {endpoint} ({_one_line(str(exc)) or type(exc).__name__}); " \
               "check the network connection (and HF_ENDPOINT)"
    if isinstance(exc, RevisionNotFoundError):
        return f"revision {revision!r} not found in dataset repo {repo_id}: create the branch first, or publish to main"
    if isinstance(exc, RepositoryNotFoundError):
        hint = "check the name and that the token can see it" if has_token else \
            "if it is private, set HF_TOKEN"
        return (f"dataset repo {repo_id} not found at {endpoint} (create it on the Hub first, or {hint}: "
                f"kerneltrace publishes into an existing repo)")
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else None
        server = _one_line(exc.server_message or "")
        said = f": {server}" if server else ""
        if status == 401:
            return (f"the Hub rejected the token (401{said}): set HF_TOKEN to a valid token with write access "
                    f"to {repo_id}")
        if status == 403:
            return (f"the token may not write to {repo_id} (403{said}): use a token with write access "
                    "(a fine-grained token needs 'write' on this repo)")
        if status in (409, 412):
            return f"the repo changed while publishing ({status}{said}); nothing was committed: run again"
        if action == "commit":
            return f"the Hub rejected the commit to {repo_id} ({status}{said}); nothing was committed"
        return f"the Hub refused to list the files of {repo_id}@{revision} ({status}{said}); try again later"
    if isinstance(exc, ValueError) and "README.md" in str(exc):
        return f"the Hub rejected the dataset card README.md: {_one_line(str(exc))}"
    return None


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection and timeout errors of whichever HTTP library huggingface_hub uses."""
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module, name in (("httpx2", "TransportError"), ("httpx", "TransportError"),
                         ("requests", "ConnectionError"), ("requests", "Timeout")):
        try:
            errors.append(getattr(__import__(module), name))
        except (ImportError, AttributeError):
            pass
    return tuple(errors)


def _one_line(text: str) -> str:
    return " ".join(text.split())
