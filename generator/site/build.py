"""`kerneltrace build` and `kerneltrace serve`: load, render, then the real mkdocs build.

build_site reads like its steps: load the dataset (refuse if it has errors) -> render the
generated pages into site_src/generated/ -> mkdocs build --strict into a hidden folder next to
the output -> swap that folder in. Nothing half-built ever sits at the output path.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Optional

from ..model.dataset import Dataset
from ..model.diagnostics import count_errors
from ..model.errors import KernelTraceError
from ..load import load
from .render import current_umask, render_pages, write_pages

# The checkout holding mkdocs.yml and site_src/ (hand-written pages; generated/ goes inside).
PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFIG_FILE = "mkdocs.yml"
DOCS_DIR = "site_src"
GENERATED_DIR = "generated"
# Pages carry mkdocs' build date (sitemap lastmod, gzip header); a fixed date unless the caller
# sets SOURCE_DATE_EPOCH (e.g. to the last commit's time) keeps the output the same bytes.
DEFAULT_SOURCE_DATE_EPOCH = "0"


def _say(command: str, message: str) -> None:
    print(f"kerneltrace {command}: {message}", file=sys.stderr, flush=True)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def load_checked(dataset_root: Path) -> Dataset:
    """The dataset, or KernelTraceError if loading found errors (the site shows valid data only)."""
    ds = load(dataset_root)
    errors = count_errors(ds.load_diagnostics)
    if errors:
        raise KernelTraceError(
            f"the dataset at {dataset_root} has {_plural(errors, 'error')}; "
            f"run 'kerneltrace validate --dataset {dataset_root}' to see them, fix them, then build again")
    return ds


def render_site(ds: Dataset, project_root: Path) -> tuple[int, bool]:
    """Write the generated pages (and the snippets and scripts they use) into
    <project>/site_src/generated/; (page count, whether anything changed)."""
    pages = render_pages(ds)
    changed = write_pages(pages, project_root / DOCS_DIR / GENERATED_DIR)
    return sum(1 for path in pages if path.endswith(".md")), changed


def _project(project_root: Optional[Path]) -> Path:
    root = Path(project_root) if project_root is not None else PROJECT_ROOT
    if not (root / CONFIG_FILE).is_file() or not (root / DOCS_DIR).is_dir():
        raise KernelTraceError(f"no {CONFIG_FILE} and {DOCS_DIR}/ in {root}; the site is built from a checkout "
                               "of the KernelTrace repository")
    return root


class _Messages(logging.Handler):
    """Collects mkdocs' warnings and errors so that they can be reported in one message."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname}: {record.getMessage()}")


@contextlib.contextmanager
def _mkdocs_session(project: Optional[Path] = None) -> Iterator[_Messages]:
    """Quiet, reproducible mkdocs: its messages collected, a fixed build date unless one is set, and
    the project root as the working folder (snippet paths in mkdocs.yml are relative to it)."""
    saved = {key: os.environ.get(key) for key in ("SOURCE_DATE_EPOCH", "NO_MKDOCS_2_WARNING")}
    cwd = os.getcwd()
    if project is not None:
        os.chdir(project)
    os.environ.setdefault("SOURCE_DATE_EPOCH", DEFAULT_SOURCE_DATE_EPOCH)
    os.environ["NO_MKDOCS_2_WARNING"] = "1"  # Material's end-of-life notice, printed on import
    logger = logging.getLogger("mkdocs")
    handler = _Messages()
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        os.chdir(cwd)
        logger.removeHandler(handler)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _mkdocs_error(e: BaseException, messages: _Messages) -> KernelTraceError:
    text = e.format_message() if hasattr(e, "format_message") else str(e)
    details = "".join(f"\n  {line}" for line in messages.lines)
    return KernelTraceError(f"mkdocs failed: {text}{details}")


HOME_HOOK = Path(__file__).with_name("home_hook.py")


def run_mkdocs(config_file: Path, site_dir: Path, strict: bool) -> list[str]:
    """`mkdocs build [--strict]` through its Python API; its warnings, or KernelTraceError."""
    with _mkdocs_session(config_file.resolve().parent) as messages:
        from mkdocs.commands.build import build
        from mkdocs.config import load_config
        from mkdocs.exceptions import MkDocsException

        try:
            config = load_config(config_file=str(config_file), site_dir=str(site_dir), strict=strict,
                                 hooks=[str(HOME_HOOK)])
            config.plugins.on_startup(command="build", dirty=False)
            try:
                build(config)
            finally:
                config.plugins.on_shutdown()
        except (MkDocsException, OSError) as e:
            raise _mkdocs_error(e, messages) from None
        return messages.lines


def _check_out_dir(out_dir: Path, project_root: Path) -> None:
    docs = (project_root / DOCS_DIR).resolve()
    out = out_dir.resolve()
    if out == docs or docs in out.parents or out in docs.parents:
        raise KernelTraceError(f"--out {out_dir} overlaps the site's sources ({docs}); choose another folder")
    if out.exists() and not out.is_dir():
        raise KernelTraceError(f"--out {out_dir} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / "index.html").is_file():
        raise KernelTraceError(f"--out {out_dir} is a non-empty folder that does not look like a built site "
                               "(no index.html); refusing to replace it")


def _replace_dir(fresh: Path, target: Path) -> None:
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
        os.replace(target, old)
    try:
        os.replace(fresh, target)
    except OSError:
        if old is not None:
            os.replace(old, target)
            old = None
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def build_site(dataset_root: Path, out_dir: Path, strict: bool = True, *,
               project_root: Optional[Path] = None) -> None:
    """Render the pages for the dataset at `dataset_root` and build the site into `out_dir`.

    `project_root` is the folder holding mkdocs.yml and site_src/ (default: this checkout).
    Raises KernelTraceError when the dataset has errors, when mkdocs fails, or, with `strict`,
    when mkdocs warns.
    """
    started = time.monotonic()
    project = _project(project_root)
    dataset_root, out_dir = Path(dataset_root), Path(out_dir)
    _check_out_dir(out_dir, project)

    _say("build", f"loading {dataset_root}")
    ds = load_checked(dataset_root)
    _say("build", f"loaded {_plural(len(ds.definitions), 'definition')}, {_plural(len(ds.workloads), 'workload')}, "
                  f"{_plural(len(ds.solutions), 'solution')}, {_plural(len(ds.traces), 'trace')}")

    count, changed = render_site(ds, project)
    _say("build", f"rendered {_plural(count, 'page')} into {DOCS_DIR}/{GENERATED_DIR}/"
                  + ("" if changed else " (unchanged)"))

    _say("build", "running mkdocs build" + (" --strict" if strict else ""))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    try:
        warnings = run_mkdocs(project / CONFIG_FILE, staging, strict)
        for line in warnings:
            _say("build", f"mkdocs {line}")
        os.chmod(staging, 0o777 & ~current_umask())  # mkdtemp made it private
        _replace_dir(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    files = sum(1 for p in out_dir.rglob("*") if p.is_file())
    _say("build", f"site written to {out_dir}/ ({_plural(files, 'file')}, {time.monotonic() - started:.1f} s)")


def serve_site(dataset_root: Path, addr: str, *, project_root: Optional[Path] = None) -> None:
    """Render the pages, then `mkdocs serve` on `addr` (host:port); edits to the dataset or to
    site_src/ re-render and reload the page."""
    project = _project(project_root)
    dataset_root = Path(dataset_root)
    _say("serve", f"loading {dataset_root}")
    ds = load_checked(dataset_root)
    count, _ = render_site(ds, project)
    _say("serve", f"rendered {_plural(count, 'page')}; serving on http://{addr}/ (Ctrl+C to stop)")

    # mkdocs re-reads its config on every rebuild, so the re-render hook is passed as a config
    # option (which replaces mkdocs.yml's hooks, hence both); it learns the dataset and project
    # from the environment.
    os.environ["KERNELTRACE_SERVE_DATASET"] = str(dataset_root.resolve())
    os.environ["KERNELTRACE_SERVE_PROJECT"] = str(project.resolve())
    with _mkdocs_session(project) as messages:
        from mkdocs.commands.serve import serve
        from mkdocs.exceptions import MkDocsException

        # mkdocs prints its own progress (and rebuild errors) while serving.
        logging.getLogger("mkdocs").removeHandler(messages)
        _show_mkdocs_log()
        try:
            serve(config_file=str(project / CONFIG_FILE), dev_addr=addr, livereload=True,
                  watch=[str(dataset_root.resolve())], hooks=[str(HOME_HOOK), str(Path(__file__).with_name("serve_hook.py"))])
        except (MkDocsException, OSError) as e:
            raise _mkdocs_error(e, messages) from None


def _show_mkdocs_log() -> None:
    logger = logging.getLogger("mkdocs")
    if not any(isinstance(h, logging.StreamHandler) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("mkdocs %(levelname)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
