"""A small stand-in for the Hugging Face Hub, for testing `kerneltrace publish` with the real
huggingface_hub client and no network.

It speaks the few endpoints the client calls to read a dataset repo and create one commit,
found by logging what the client sends:

    GET  /api/datasets/{repo}[/revision/{rev}]          repo info (head commit sha, files)
    GET  /api/datasets/{repo}/tree/{rev}[/{path}]       file listing (oid, size, lfs)
    POST /api/datasets/{repo}/paths-info/{rev}          info on named paths
    POST /api/datasets/{repo}/preupload/{rev}           upload mode per file (always "regular")
    POST /api/datasets/{repo}/commit/{rev}[?create_pr=1] NDJSON: header, files (base64), deletions
    POST /api/validate-yaml                             README front matter check
    GET  /api/whoami-v2                                 who the token belongs to

State lives in memory: each repo has branches of commits, each commit a full snapshot of
{path: bytes}. Tests read `stub.commits` (every commit received, parsed) and
`repo.files()` to check exactly what was committed. Git LFS is not implemented: every file is
"regular", which the client accepts for any size; the tree listing reports *.parquet and
*.safetensors the way the Hub lists LFS files (sha256 under "lfs"), so comparisons by sha256
are exercised.

Authentication mirrors the Hub closely enough for error messages: an unknown token gets 401
with "Invalid credentials in Authorization header"; writing without a token, or reading a
private or missing repo, gets 401/404 with X-Error-Code RepoNotFound; a read-only token gets
403 on writes; a commit whose parentCommit is not the branch head gets 412.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

# Files the tree listing reports as stored with Git LFS (the uploads themselves stay "regular").
LFS_SUFFIXES = (".parquet", ".safetensors")


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Commit:
    oid: str
    parent: Optional[str]
    title: str
    files: dict[str, bytes]


@dataclass
class StubRepo:
    repo_id: str
    private: bool = False
    branches: dict[str, list[Commit]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if "main" not in self.branches:
            gitattributes = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"
            self.branches["main"] = [self._make_commit(None, "initial commit", {".gitattributes": gitattributes})]

    def _make_commit(self, parent: Optional[str], title: str, files: dict[str, bytes]) -> Commit:
        n = sum(len(c) for c in self.branches.values())
        oid = hashlib.sha1(f"{self.repo_id}\0{n}\0{parent}\0{title}".encode()).hexdigest()
        return Commit(oid=oid, parent=parent, title=title, files=dict(files))

    def head(self, rev: str = "main") -> Commit:
        if rev in self.branches:
            return self.branches[rev][-1]
        for commits in self.branches.values():
            for c in commits:
                if c.oid == rev:
                    return c
        raise KeyError(rev)

    def files(self, rev: str = "main") -> dict[str, bytes]:
        return dict(self.head(rev).files)

    def commit(self, files: dict[str, bytes], *, deleted: tuple[str, ...] = (), title: str = "a commit",
               branch: str = "main", parent: Optional[Commit] = None) -> Commit:
        """Adds a commit on `branch` (or a new branch from `parent`): files update, `deleted` removed."""
        base = parent if parent is not None else self.head(branch)
        snapshot = dict(base.files)
        snapshot.update(files)
        for path in deleted:
            snapshot.pop(path, None)
        new = self._make_commit(base.oid, title, snapshot)
        self.branches.setdefault(branch, [base]).append(new)
        return new


@dataclass
class ReceivedCommit:
    repo_id: str
    revision: str
    create_pr: bool
    header: dict
    added: dict[str, bytes]
    deleted: list[str]


class HubStub:
    """Threaded HTTP server on 127.0.0.1:<free port>. Use as a context manager."""

    def __init__(self, tokens: Optional[dict[str, str]] = None) -> None:
        # token -> "write" or "read"
        self.tokens: dict[str, str] = dict(tokens or {"hf_write": "write", "hf_read": "read"})
        self.repos: dict[str, StubRepo] = {}
        self.requests: list[tuple[str, str]] = []
        self.commits: list[ReceivedCommit] = []
        # Called with the repo when a commit request arrives, before its parent is checked:
        # lets a test slip in a concurrent commit.
        self.before_commit: Optional[Callable[[StubRepo], None]] = None
        # (status, message) to refuse the next commit with, as the Hub does for a rule it enforces.
        self.reject_commit: Optional[tuple[int, str]] = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def add_repo(self, repo_id: str, files: Optional[dict[str, bytes]] = None, *, private: bool = False) -> StubRepo:
        repo = StubRepo(repo_id, private=private)
        if files:
            repo.commit(files, title="seed")
        self.repos[repo_id] = repo
        return repo

    def __enter__(self) -> "HubStub":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _make_handler(stub: HubStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class names it; quiet
            pass

        # ---- plumbing -------------------------------------------------------------------
        def _send(self, status: int, body: object = None, headers: Optional[dict[str, str]] = None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, code: Optional[str] = None) -> None:
            headers = {"X-Error-Message": message}
            if code:
                headers["X-Error-Code"] = code
            self._send(status, {"error": message}, headers)

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _token_scope(self) -> Optional[str]:
            """None: anonymous; 'read'/'write'; raises _Denied for an unknown token."""
            auth = self.headers.get("Authorization", "")
            if not auth.startswith("Bearer "):
                return None
            scope = stub.tokens.get(auth[len("Bearer "):])
            if scope is None:
                raise _Denied(401, "Invalid credentials in Authorization header")
            return scope

        def _repo(self, repo_id: str, scope: Optional[str], write: bool) -> StubRepo:
            repo = stub.repos.get(repo_id)
            if repo is None or (repo.private and scope is None):
                if scope is None:
                    raise _Denied(401, "Repository not found", "RepoNotFound")
                raise _Denied(404, "Repository not found", "RepoNotFound")
            if write and scope is None:
                raise _Denied(401, "You must be authenticated to write", "RepoNotFound")
            if write and scope != "write":
                raise _Denied(403, "You don't have the rights to write to this repository")
            return repo

        def _head(self, repo: StubRepo, rev: str) -> Commit:
            try:
                return repo.head(rev)
            except KeyError:
                raise _Denied(404, f"Invalid rev id: {rev}", "RevisionNotFound") from None

        def _route(self, method: str) -> None:
            url = urlsplit(self.path)
            parts = [unquote(p) for p in url.path.split("/")[1:]]
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            body = self._body()
            with stub._lock:
                stub.requests.append((method, url.path))
            try:
                scope = self._token_scope()
                with stub._lock:
                    self._dispatch(method, parts, query, body, scope)
            except _Denied as e:
                self._error(e.status, e.message, e.code)

        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def do_HEAD(self) -> None:
            self._route("HEAD")

        # ---- endpoints ------------------------------------------------------------------
        def _dispatch(self, method: str, parts: list[str], query: dict[str, str], body: bytes,
                      scope: Optional[str]) -> None:
            if parts[:2] == ["api", "whoami-v2"] and method == "GET":
                if scope is None:
                    raise _Denied(401, "Invalid credentials in Authorization header")
                return self._send(200, {"type": "user", "name": "tester", "auth": {"accessToken": {"role": scope}}})
            if parts[:2] == ["api", "validate-yaml"] and method == "POST":
                return self._validate_yaml(json.loads(body or b"{}"))
            if len(parts) >= 4 and parts[:2] == ["api", "datasets"]:
                repo_id = f"{parts[2]}/{parts[3]}"
                rest = parts[4:]
                if not rest and method == "GET":
                    return self._repo_info(repo_id, "main", scope)
                if rest and rest[0] == "revision" and method == "GET":
                    return self._repo_info(repo_id, "/".join(rest[1:]), scope)
                if rest and rest[0] == "tree" and method == "GET":
                    return self._tree(repo_id, rest[1], "/".join(rest[2:]), query, scope)
                if rest and rest[0] == "paths-info" and method == "POST":
                    return self._paths_info(repo_id, "/".join(rest[1:]), body, scope)
                if rest and rest[0] == "preupload" and method == "POST":
                    return self._preupload(repo_id, "/".join(rest[1:]), json.loads(body), scope)
                if rest and rest[0] == "commit" and method == "POST":
                    return self._commit(repo_id, "/".join(rest[1:]), query, body, scope)
            raise _Denied(404, f"stub: no route for {method} /{'/'.join(parts)}")

        def _validate_yaml(self, payload: dict) -> None:
            content = payload.get("content", "")
            errors = []
            if content.startswith("---"):
                front = content.split("---", 2)[1] if content.count("---") >= 2 else ""
                try:
                    meta = yaml.safe_load(front)
                    if meta is not None and not isinstance(meta, dict):
                        errors.append({"message": "metadata must be a mapping"})
                except yaml.YAMLError as e:
                    errors.append({"message": f"invalid YAML: {e}"})
            if errors:
                return self._send(400, {"errors": errors, "warnings": []})
            self._send(200, {"errors": [], "warnings": []})

        def _repo_info(self, repo_id: str, rev: str, scope: Optional[str]) -> None:
            repo = self._repo(repo_id, scope, write=False)
            head = self._head(repo, rev)
            self._send(200, {
                "_id": repo_id, "id": repo_id, "author": repo_id.split("/")[0], "sha": head.oid,
                "private": repo.private, "disabled": False, "gated": False, "tags": [],
                "siblings": [{"rfilename": p} for p in sorted(head.files)],
                "lastModified": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z",
            })

        @staticmethod
        def _entry(path: str, data: bytes) -> dict:
            if not path.endswith(LFS_SUFFIXES):
                return {"type": "file", "oid": git_blob_sha1(data), "size": len(data), "path": path}
            # What the Hub lists for an LFS file: the git oid is the pointer's, the content's sha256 is in "lfs".
            sha256 = hashlib.sha256(data).hexdigest()
            pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {len(data)}\n".encode()
            return {"type": "file", "oid": git_blob_sha1(pointer), "size": len(data), "path": path,
                    "lfs": {"oid": sha256, "size": len(data), "pointerSize": len(pointer)}}

        def _tree(self, repo_id: str, rev: str, prefix: str, query: dict[str, str], scope: Optional[str]) -> None:
            repo = self._repo(repo_id, scope, write=False)
            head = self._head(repo, rev)
            recursive = query.get("recursive", "false").lower() in ("1", "true")
            base = prefix.rstrip("/") + "/" if prefix else ""
            entries: list[dict] = []
            folders: set[str] = set()
            for path in sorted(head.files):
                if not path.startswith(base):
                    continue
                rel = path[len(base):]
                if "/" in rel:
                    # every folder on the way is listed once when recursive, the first one otherwise
                    segments = rel.split("/")[:-1]
                    depth = len(segments) if recursive else 1
                    for i in range(1, depth + 1):
                        folders.add(base + "/".join(segments[:i]))
                    if not recursive:
                        continue
                entries.append(self._entry(path, head.files[path]))
            entries += [{"type": "directory", "oid": hashlib.sha1(f.encode()).hexdigest(), "size": 0, "path": f}
                        for f in sorted(folders)]
            if prefix and not entries:
                raise _Denied(404, f"{prefix} does not exist", "EntryNotFound")
            self._send(200, sorted(entries, key=lambda e: e["path"]))

        def _paths_info(self, repo_id: str, rev: str, body: bytes, scope: Optional[str]) -> None:
            repo = self._repo(repo_id, scope, write=False)
            head = self._head(repo, rev)
            form = parse_qs(body.decode())
            paths = form.get("paths", [])
            self._send(200, [self._entry(p, head.files[p]) for p in paths if p in head.files])

        def _preupload(self, repo_id: str, rev: str, payload: dict, scope: Optional[str]) -> None:
            repo = self._repo(repo_id, scope, write=True)
            try:
                files = repo.head(rev).files
            except KeyError:
                files = {}
            out = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                    "oid": git_blob_sha1(files[f["path"]]) if f["path"] in files else None}
                   for f in payload.get("files", [])]
            self._send(200, {"files": out, "commitOid": self._head(repo, "main").oid})

        def _commit(self, repo_id: str, rev: str, query: dict[str, str], body: bytes, scope: Optional[str]) -> None:
            repo = self._repo(repo_id, scope, write=True)
            create_pr = query.get("create_pr") == "1"
            lines = [json.loads(line) for line in body.splitlines() if line.strip()]
            if not lines or lines[0].get("key") != "header":
                raise _Denied(400, "the first line must be the header")
            header = lines[0]["value"]
            added: dict[str, bytes] = {}
            deleted: list[str] = []
            for line in lines[1:]:
                key, value = line["key"], line["value"]
                if key == "file":
                    if value.get("encoding") != "base64":
                        raise _Denied(400, f"unsupported encoding {value.get('encoding')!r}")
                    added[value["path"]] = base64.b64decode(value["content"])
                elif key == "deletedFile":
                    deleted.append(value["path"])
                else:
                    raise _Denied(400, f"stub: unsupported commit operation {key!r}")
            if stub.reject_commit is not None:
                status, message = stub.reject_commit
                raise _Denied(status, message)
            if stub.before_commit is not None:
                hook, stub.before_commit = stub.before_commit, None
                hook(repo)
            head = self._head(repo, rev)
            parent_oid = header.get("parentCommit")
            if parent_oid and not create_pr and not head.oid.startswith(parent_oid):
                raise _Denied(412, "A commit has happened since. Please refresh and try again.")
            missing = [p for p in deleted if p not in head.files]
            if missing:
                raise _Denied(404, f"A file with this name doesn't exist: {missing[0]}", "EntryNotFound")
            stub.commits.append(ReceivedCommit(repo_id, rev, create_pr, header, added, deleted))
            if create_pr:
                base = self._head(repo, parent_oid) if parent_oid else head
                n = sum(1 for b in repo.branches if b.startswith("refs/pr/")) + 1
                new = repo.commit(added, deleted=tuple(deleted), title=header.get("summary", ""),
                                  branch=f"refs/pr/{n}", parent=base)
                return self._send(200, {
                    "success": True, "commitOid": new.oid,
                    "commitUrl": f"{stub.endpoint}/datasets/{repo_id}/commit/{new.oid}",
                    "pullRequestUrl": f"{stub.endpoint}/datasets/{repo_id}/discussions/{n}",
                })
            new = repo.commit(added, deleted=tuple(deleted), title=header.get("summary", ""), branch=rev)
            self._send(200, {"success": True, "commitOid": new.oid,
                             "commitUrl": f"{stub.endpoint}/datasets/{repo_id}/commit/{new.oid}"})

    return Handler


class _Denied(Exception):
    def __init__(self, status: int, message: str, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code
