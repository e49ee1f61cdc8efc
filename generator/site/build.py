"""`kerneltrace build`: load, render, then the real mkdocs build (serve.py rebuilds on edits).

build_site reads like its steps: load the dataset (validated in a second process meanwhile: refused if
it has errors before anything is published) -> render the pages
-> copy site_src/ with the generated list pages into a build folder next to the output (never
into the source tree) -> mkdocs build --strict of those few pages and one page shell -> the
per-item pages (thousands, HTML from data) put into that shell and into the search index -> swap
the built folder in. Nothing half-built ever sits at the output path.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Optional

from ..load import load
from ..model.dataset import Dataset
from ..model.errors import KernelTraceError
from ..model.frozen import left_to_exit
from ..validate.aside import validated_aside
from . import shell
from .render import current_umask, render_pages, write_pages

# The checkout this package sits in: holds mkdocs.yml and site_src/ (hand-written pages), used
# when the current folder has none.
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


def load_dataset(dataset_root: Path) -> Dataset:
    """The dataset as loaded (build_site validates it aside while it renders)."""
    return load(dataset_root)


MARKER = re.compile(r"^<!-- kerneltrace:include (generated/[A-Za-z0-9_./-]+) -->$", re.MULTILINE)


def _home(text: str, generated: dict[str, str]) -> str:
    """The hand-written home page with its include markers replaced by the generated tables."""
    def include(match: re.Match) -> str:
        rel = match.group(1)[len(GENERATED_DIR) + 1:]
        if rel not in generated:
            raise KernelTraceError(f"{DOCS_DIR}/index.md includes {match.group(1)}, which kerneltrace build does "
                                   f"not generate (it generates {', '.join(sorted(p for p in generated if p.endswith('.txt')))})")
        return generated[rel].rstrip("\n")
    return MARKER.sub(include, text)


LINKS_MARKER = "<!-- kerneltrace:links -->"


def _links(config_file: Path) -> str:
    """Where the project lives, from mkdocs.yml's repo_url and extra (issues_url, hub_url), as markdown."""
    import yaml

    class Loader(yaml.SafeLoader):  # mkdocs.yml may carry tags such as !ENV: read them as plain values
        pass
    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    try:
        config = yaml.load(config_file.read_text(encoding="utf-8"), Loader=Loader) or {}
    except (OSError, yaml.YAMLError) as e:
        raise KernelTraceError(f"cannot read {config_file}: {e}") from None
    extra = config.get("extra") or {}
    parts = [f"the repository <{config['repo_url']}>" if config.get("repo_url") else "",
             f"the issue tracker <{extra['issues_url']}>" if extra.get("issues_url") else "",
             f"the dataset on the Hugging Face Hub <{extra['hub_url']}>" if extra.get("hub_url") else ""]
    parts = [p for p in parts if p]
    return ("Where it lives: " + ", ".join(parts) + ". Open pull requests against the repository and report "
            "problems in the issue tracker.") if parts else ""


def render_site(ds: Dataset, project_root: Path, docs: Path, dataset_label: str = "dataset", boards=None,
                speed_of_light=None):
    """Write the site's markdown sources into `docs` (a build folder): site_src/ with the home page's
    tables filled in, the generated list pages and the page shell under generated/. Returns
    (the plan of the per-item pages, whether anything changed). `boards`, `speed_of_light`: see render_pages."""
    pages, plan = render_pages(ds, dataset_label, boards, speed_of_light)
    source = project_root / DOCS_DIR
    links = _links(project_root / CONFIG_FILE)
    files: dict = {}
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if not path.is_file() or rel.parts[0] == GENERATED_DIR or any(part.startswith(".") for part in rel.parts):
            continue
        if rel.suffix == ".md":
            text = path.read_text(encoding="utf-8").replace(LINKS_MARKER, links)
            files[rel.as_posix()] = _home(text, pages) if rel.as_posix() == "index.md" else text
        else:
            files[rel.as_posix()] = path  # copied as bytes
    for rel, text in pages.items():
        if rel.endswith(".md"):
            files[f"{GENERATED_DIR}/{rel}"] = text
    files[f"{GENERATED_DIR}/{shell.SHELL_PAGE}"] = shell.SHELL_SOURCE
    changed = write_pages(files, docs)
    return plan, changed


def _project(project_root: Optional[Path]) -> Path:
    """The folder with mkdocs.yml and site_src/: the one given, else the current folder when it is a
    checkout, else the checkout this package is installed from."""
    if project_root is None:
        here = Path.cwd()
        project_root = here if (here / CONFIG_FILE).is_file() and (here / DOCS_DIR).is_dir() else PROJECT_ROOT
    root = Path(project_root)
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


THEME_DIR = Path(__file__).with_name("theme")  # partials that replace Material's (see mkdocs.yml)


def run_mkdocs(config_file: Path, docs_dir: Path, site_dir: Path, strict: bool) -> list[str]:
    """`mkdocs build [--strict]` of `docs_dir` through its Python API; its warnings, or KernelTraceError."""
    with _mkdocs_session(config_file.resolve().parent) as messages:
        from mkdocs.commands.build import build
        from mkdocs.config import load_config
        from mkdocs.exceptions import MkDocsException

        try:
            config = load_config(config_file=str(config_file), docs_dir=str(docs_dir), site_dir=str(site_dir),
                                 strict=strict)
            config.theme.dirs.insert(0, str(THEME_DIR))  # before the theme's own templates
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


def _label(dataset_root: Path) -> str:
    """How pages name the dataset folder: as given on the command line (relative stays relative)."""
    return dataset_root.as_posix().rstrip("/") or "."


def build_site(dataset_root: Path, out_dir: Path, strict: bool = True, *,
               project_root: Optional[Path] = None) -> None:
    """Render the pages for the dataset at `dataset_root` and build the site into `out_dir`.

    `project_root` is the folder holding mkdocs.yml and site_src/ (default: the current folder when
    it has them, else this checkout). Raises KernelTraceError when the dataset has errors, when
    mkdocs fails, or, with `strict`, when mkdocs warns.
    """
    started = time.monotonic()
    project = _project(project_root)
    dataset_root, out_dir = Path(dataset_root), Path(out_dir)
    _check_out_dir(out_dir, project)

    _say("build", f"loading {dataset_root}")
    ds = load_dataset(dataset_root)
    _say("build", f"loaded {_plural(len(ds.definitions), 'definition')}, {_plural(len(ds.workloads), 'workload')}, "
                  f"{_plural(len(ds.solutions), 'solution')}, {_plural(len(ds.traces), 'trace')}; validating it "
                  "while the site is rendered")

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.build-", dir=out_dir.parent))
    staging = work / "site"
    try:
        # The site shows valid data only (the rule of export and bench): nothing is published until validate
        # has found no error; its refusal wins over anything bad data broke meanwhile.
        with validated_aside(ds, dataset_root, "building the site"):
            plan, _ = render_site(ds, project, work / "docs", _label(dataset_root))
            _say("build", f"analysed the results; list pages written to the build folder {work}/docs")
            _say("build", "running mkdocs build" + (" --strict" if strict else ""))
            warnings = run_mkdocs(project / CONFIG_FILE, work / "docs", staging, strict)
            for line in warnings:
                _say("build", f"mkdocs {line}")
            count = sum(1 for entry in shell.fill(staging, GENERATED_DIR, plan) if entry[0].endswith(".html"))
            _say("build", f"rendered {_plural(count, 'page')} of definitions, solutions and hardware from data")
        os.chmod(staging, 0o777 & ~current_umask())  # mkdtemp made it private
        _replace_dir(staging, out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    left_to_exit(ds, plan)  # millions of records at the field's scale: freeing them took 1-2 s
    files = sum(len(names) for _, _, names in os.walk(out_dir))  # os.walk: no stat per file (12,000 at scale)
    _say("build", f"site written to {out_dir}/ ({_plural(files, 'file')}, {time.monotonic() - started:.1f} s)")
