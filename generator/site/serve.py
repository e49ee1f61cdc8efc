"""`kerneltrace serve`: the site built once, served, and rebuilt in seconds after each edit.

A SiteMemo keeps what the last build read and made: the files loaded (load.LoadCache), the checks'
findings, the leaderboards per definition, and the item pages written with their search entries.
An edit under definitions/, workloads/, solutions/, traces/, einsums/ or blob/ touches the definitions
those files name (by their path and by the records in them, before and after): only their files are
read, checked, analysed and rendered again. The list pages and the page shell always go through the
real mkdocs build (a second at 1,000 definitions); when the shell changed (mkdocs.yml, site_src/ or the
theme), every item page is rendered again. Any other edit (calling records, hardware, agent traces,
files the loader does not know) and the first build go the full way, still reading only the files
that changed. The served folder is updated in place, file by file (mkdocs' files by a rename each), and
pages open in a browser reload themselves after a rebuild (serve adds a small script to the pages it
serves; the built site has none).
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from ..analyse.leaderboard import definition_leaderboards
from ..analyse.roofline import sol_sections
from ..load import IGNORED_NAMES, LAYOUT, LoadCache, load
from ..model.diagnostics import Diagnostic
from ..model.errors import KernelTraceError
from ..validate import checks_by_kind, refuse_errors, scoped_diagnostics
from . import shell
from .build import (
    CONFIG_FILE,
    DOCS_DIR,
    GENERATED_DIR,
    _label,
    _plural,
    _project,
    _replace_dir,
    _say,
    render_site,
    run_mkdocs,
)
from .render import current_umask

# Dataset folders whose files belong to one definition (the layout's <definition> field names it).
SCOPED_FOLDERS = ("definitions", "workloads", "solutions", "traces", "einsums", "blob")


@dataclass
class SiteMemo:
    """What the last build of a `serve` session read and made (see the module's docstring)."""

    loads: LoadCache = field(default_factory=LoadCache)
    files: Optional[dict[str, tuple]] = None  # dataset file -> (mtime, size) at the last build that worked
    reread: set = field(default_factory=set)  # definitions named by files re-read since that build
    semantic: dict[str, list[Diagnostic]] = field(default_factory=dict)  # each kind's checks' findings, last load
    boards: dict = field(default_factory=dict)  # definition -> its leaderboards, at the last build
    speed_of_light: dict = field(default_factory=dict)  # definition -> its speed-of-light section, likewise
    shell: Optional[tuple[str, str]] = None  # the page shell the item pages in the served folder were put in
    pages: dict[str, tuple] = field(default_factory=dict)  # item page -> its search entry (its definition last)
    mkdocs_files: set = field(default_factory=set)  # files of the served folder that mkdocs made


def dataset_files(root: Path) -> dict[str, tuple]:
    """(mtime, size) of every file under the dataset folder the loader may read (dot-files are editors')."""
    seen: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        folder = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if folder == "." else folder + "/"
        for name in filenames:
            if name.startswith(".") or name in IGNORED_NAMES:
                continue
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:
                continue
            seen[prefix + name] = (st.st_mtime_ns, st.st_size)
    return seen


def _scope(memo: SiteMemo, files: dict[str, tuple]) -> tuple[Optional[set[str]], set[str]]:
    """(the definitions touched since the last build that worked, or None for a full build; the files
    changed since then)."""
    for before, now in memo.loads.changed.values():
        for got in (before, now):
            if got is not None:
                memo.reread.update(got.definitions())
    if memo.files is None:
        return None, set(files)
    changed = {rel for rel in set(files) | set(memo.files) if files.get(rel) != memo.files.get(rel)}
    names = set(memo.reread)
    for rel in changed:
        fields = LAYOUT.fields(rel) if rel.split("/", 1)[0] in SCOPED_FOLDERS else None
        if not fields or "definition" not in fields:
            return None, changed
        names.add(fields["definition"])
    return names, changed


def _copy_if_changed(src: Path, dst: Path) -> None:
    try:
        if dst.stat().st_size == src.stat().st_size and dst.read_bytes() == src.read_bytes():
            return
    except OSError:
        pass
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.new")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def rebuild(memo: SiteMemo, dataset_root: Path, out: Path, project: Path, work: Path) -> str:
    """Build the site into `out` again, redoing only what the edits since the last build touched;
    what was redone, for the log. `work` is a folder of this session's own (the build's sources).
    Raises KernelTraceError as build_site does; `out` then still holds the last site."""
    files = dataset_files(dataset_root)
    ds = load(dataset_root, memo.loads)
    names, changed = _scope(memo, files)
    if names is None:
        memo.semantic = checks_by_kind(ds)
    else:
        memo.semantic = scoped_diagnostics(ds, names, changed, memo.semantic)
    refuse_errors([*ds.load_diagnostics, *(d for found in memo.semantic.values() for d in found)], dataset_root,
                  "building the site")

    by_def = ds.traces_by_definition
    boards = {name: memo.boards[name] if names is not None and name not in names and name in memo.boards
              else definition_leaderboards(ds, name, by_def.get(name, ())) for name in sorted(ds.definitions)}
    if names is None:
        sol = sol_sections(ds)
    else:
        sol = {name: section for name, section in memo.speed_of_light.items()
               if name not in names and name in ds.definitions and name in ds.einsums}
        sol = dict(sorted({**sol, **sol_sections(ds, names)}.items()))
    plan, _ = render_site(ds, project, work / "docs", _label(dataset_root), boards, sol)
    staging = work / "site"
    shutil.rmtree(staging, ignore_errors=True)
    run_mkdocs(project / CONFIG_FILE, work / "docs", staging, True)
    made = {p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file()}
    made.discard(f"{GENERATED_DIR}/{shell.SHELL_PAGE[:-3]}.html")
    head_tail = shell.read_shell(staging, GENERATED_DIR)

    if names is None or head_tail != memo.shell or not out.is_dir():
        entries = shell.fill(staging, GENERATED_DIR, plan, head_tail=head_tail)
        os.chmod(staging, 0o777 & ~current_umask())
        _replace_dir(staging, out)
        memo.pages = {e[0]: e for e in entries}
        did = f"full build, {_plural(len(entries), 'item page')}"
    else:
        folder = out / GENERATED_DIR
        entries = shell.write_items(folder, *head_tail, replace(plan, only=frozenset(names)).render())
        fresh = {e[0] for e in entries}
        for path, entry in list(memo.pages.items()):
            if (entry[4] in names or not entry[4]) and path not in fresh:  # a page of theirs that is gone
                (folder / path).unlink(missing_ok=True)
                del memo.pages[path]
        memo.pages.update((e[0], e) for e in entries)
        for rel in sorted(made):
            _copy_if_changed(staging / rel, out / rel)
        for rel in memo.mkdocs_files - made:
            (out / rel).unlink(missing_ok=True)
        shell.finish(out, GENERATED_DIR, memo.pages.values())
        did = f"{_plural(len(names), 'definition')} redone, {_plural(len(entries), 'item page')}"
    memo.files, memo.reread, memo.boards, memo.speed_of_light = files, set(), boards, sol
    memo.shell, memo.mkdocs_files = head_tail, made
    return did


def serve_site(dataset_root: Path, addr: str, *, project_root: Optional[Path] = None, poll_s: float = 1.0,
               stop: Optional[threading.Event] = None) -> None:
    """Build the site into a temporary folder and serve it on `addr` (host:port); edits to the dataset,
    to site_src/ or to mkdocs.yml rebuild what they touch (the old site stays up while a rebuild runs
    or fails). Runs until Ctrl+C, or until `stop` is set."""
    project = _project(project_root)
    dataset_root = Path(dataset_root)
    session = Path(tempfile.mkdtemp(prefix="kerneltrace-serve-"))
    out, work = session / "site", session / "work"
    watched = [dataset_root, project / DOCS_DIR, project / CONFIG_FILE]
    host, _, port = addr.rpartition(":")
    memo = SiteMemo()
    try:
        started = time.monotonic()
        _say("serve", f"building the site from {dataset_root}")
        rebuild(memo, dataset_root, out, project, work)
        _say("serve", f"built in {time.monotonic() - started:.1f} s")
        builds = [1]
        handler = functools.partial(_QuietHandler, directory=str(out), builds=builds)
        server = http.server.ThreadingHTTPServer((host or "127.0.0.1", int(port)), handler)
    except OSError as e:
        shutil.rmtree(session, ignore_errors=True)
        raise KernelTraceError(f"cannot serve on {addr}: {e.strerror}") from None
    except BaseException:
        shutil.rmtree(session, ignore_errors=True)
        raise
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _say("serve", f"serving on http://{addr}/ (Ctrl+C to stop); watching {dataset_root}, {DOCS_DIR}/ and {CONFIG_FILE}")
    seen = _snapshot(watched)
    stop = stop or threading.Event()
    try:
        while not stop.wait(poll_s):
            now = _snapshot(watched)
            if now == seen:
                continue
            seen = now
            started = time.monotonic()
            try:
                did = rebuild(memo, dataset_root, out, project, work)
                builds[0] += 1  # open pages reload
                _say("serve", f"rebuilt in {time.monotonic() - started:.1f} s ({did}); open pages reload")
            except KernelTraceError as e:
                _say("serve", f"rebuild failed, still serving the last site: {e}")
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        shutil.rmtree(session, ignore_errors=True)


def _snapshot(paths: list[Path]) -> dict[str, float]:
    """Modification times of every file under `paths` (what a rebuild depends on)."""
    seen: dict[str, float] = {}
    for root in paths:
        if root.is_file():
            seen[str(root)] = root.stat().st_mtime
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                path = os.path.join(dirpath, name)
                try:
                    seen[path] = os.stat(path).st_mtime
                except OSError:
                    continue
    return seen


# What an open page asks serve for every second; it reloads itself when the answer changes. Added to
# served pages only (the built site has no such script): the same host, so nothing leaves the machine.
BUILD_PATH = "/__kerneltrace__/build"
RELOAD_SCRIPT = (
    '<script>(function(){var seen=null;setInterval(function(){fetch("' + BUILD_PATH + '",{cache:"no-store"})'
    '.then(function(r){return r.text()}).then(function(t){if(seen!==null&&t!==seen)location.reload();seen=t})'
    '.catch(function(){})},1000)})();</script>').encode("utf-8")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site folder; each HTML page gets RELOAD_SCRIPT, and BUILD_PATH answers the number of
    the last build that worked (`builds`, a one-item list the serve loop updates)."""

    def __init__(self, *args, builds: list, **kwargs):
        self.builds = builds
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        route = self.path.split("?", 1)[0].split("#", 1)[0]
        if route == BUILD_PATH:
            return self._send(str(self.builds[0]).encode("ascii"), "text/plain; charset=utf-8")
        path = self.translate_path(self.path)
        if os.path.isdir(path) and route.endswith("/"):
            path = os.path.join(path, "index.html")
        if path.endswith(".html") and os.path.isfile(path):
            try:
                with open(path, "rb") as f:
                    page = f.read()
            except OSError:
                return super().do_GET()  # gone between the two calls (a rebuild): the stdlib says 404
            end = page.rfind(b"</body>")
            page = page[:end] + RELOAD_SCRIPT + page[end:] if end >= 0 else page + RELOAD_SCRIPT
            return self._send(page, "text/html; charset=utf-8")
        return super().do_GET()

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's name; requests are not news
        pass
