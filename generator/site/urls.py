"""Every page's path and every results anchor of the site, in one place (paths relative to the generated
folder; the per-item pages are HTML, rendered outside Markdown: items.py)."""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def hardware_slug(name: str) -> str:
    """A file name for a hardware name (traces may name a machine with any characters)."""
    if _SAFE_NAME.match(name):
        return name
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:60] or "hardware"
    return f"{base}-{hashlib.sha1(name.encode('utf-8')).hexdigest()[:8]}"


# The list pages and the hand-written pages the item pages link to, relative to the generated folder (the
# hand-written ones sit one floor up, in site_src/).
LIST_PAGES = {"definitions": "definitions.html", "hardware": "hardware.html", "authors": "authors.html",
              "roofline": "../roofline.html", "contributing": "../contributing.html"}


def definition_page(name: str) -> str:
    return f"definitions/{name}.html"


def solution_page(name: str) -> str:
    return f"solutions/{name}.html"


def data_file(definition: str) -> str:
    """A definition's per-workload results, drawn into its page and its solutions' pages (data.py)."""
    return f"data/{definition}.js"


def data_link(definition: str) -> str:
    """That file as a link (quoted), relative to the generated folder."""
    return quote(data_file(definition))


def model_page(name: str) -> str:
    """A calling record's page (Markdown, built by mkdocs), by its file stem."""
    return f"models/{name}.md"


def hardware_page(name: str) -> str:
    return f"hardware/{hardware_slug(name)}.html"


def hardware_part_pages(name: str, parts: int) -> list[str]:
    """A machine's page and its continuations (-2, -3, ...) when its rows are cut into `parts` pages."""
    base = html_link(hardware_page(name))
    return [base] + [base[:-5] + f"-{k}.html" for k in range(2, parts + 1)]


def definition_link(name: str) -> str:
    """A definition's built page as a link (quoted), relative to the generated folder."""
    return quote(html_link(definition_page(name)))


def solution_link(name: str) -> str:
    """A solution's built page as a link (quoted), relative to the generated folder."""
    return quote(html_link(solution_page(name)))


def model_link(name: str) -> str:
    """A calling record's page as a Markdown link (quoted), relative to the generated folder."""
    return quote(model_page(name))


def html_link(page: str) -> str:
    """A page path (relative to the generated folder, .md) as the built page's path (.html)."""
    return page[:-3] + ".html" if page.endswith(".md") else page


def board_anchor(hardware: str) -> str:
    """The id of a hardware's results section on a page."""
    return "results-" + hardware_slug(hardware).lower().replace(".", "-")
