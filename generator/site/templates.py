"""The one template environment of the site, with the one table of its filters.

Markdown pages (*.md.j2, rendered by render.py and results.py, then built by mkdocs) are not
autoescaped: contributor text goes through the escaping filters (`md`, `md_block`, `h`). Every
other template (the HTML item pages of items.py, *.html.j2) is autoescaped: every value from the
dataset is text, and only what a filter marks safe (Markup) is HTML.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from ..model.records import TensorSpec
from ..model.stability import MAX_SPREAD, MIN_OVER_MEDIAN
from .escape import escape_block, escape_html, escape_inline, fence_for, highlight_html
from .prose import anchor_id, blocks, paragraphs
from .results import (
    fmt_bytes,
    fmt_err,
    fmt_ms,
    fmt_pct,
    fmt_sol_pct,
    fmt_speedup,
    fmt_value,
    fmt_when,
    kind_label,
    machines_note,
    sort_key,
    trend,
)
from .rows import fmt_spread, provenance_summary
from .urls import (
    LIST_PAGES,
    board_anchor,
    data_link,
    definition_link,
    hardware_page,
    html_link,
    model_link,
    solution_link,
)

TEMPLATE_DIR = Path(__file__).parent / "templates"
MARKDOWN_SUFFIX = ".md.j2"


def _shape(tensor: TensorSpec) -> str:
    return "[" + ", ".join(tensor.shape) + "]"


FILTERS = {
    # contributor text into Markdown and raw HTML (the Markdown pages escape by hand)
    "md": escape_inline, "md_block": escape_block, "fence": fence_for, "h": escape_html,
    "jsonattr": lambda items: escape_html(json.dumps(list(items), ensure_ascii=False)),
    # contributor text in the HTML pages
    "paragraphs": paragraphs, "blocks": blocks, "anchorid": anchor_id,
    "highlight": lambda code, path="", language="": Markup(highlight_html(code, path, language)),
    # links
    "url": lambda path: quote(str(path)), "hwpage": hardware_page, "html_page": html_link, "anchor": board_anchor,
    "definition_link": definition_link, "solution_link": solution_link, "model_link": model_link,
    # numbers
    "shape": _shape, "ms": fmt_ms, "speedup": fmt_speedup, "pct": fmt_pct, "solpct": fmt_sol_pct, "err": fmt_err,
    "sortkey": sort_key, "trend": trend, "value": fmt_value, "when": fmt_when, "spread": fmt_spread, "bytes": fmt_bytes,
    # what a contender is, which machines have results
    "kind": kind_label, "machines": machines_note,
    # the data file each definition's per-workload tables are drawn from (data.py)
    "datafile": data_link,
    "zip": lambda a, b: zip(a, b), "provenance": provenance_summary,
}


def _share(x: float) -> str:
    """0.5 -> "half", 0.25 -> "a quarter"; other shares as "0.3 times"."""
    return {0.5: "half", 0.25: "a quarter", 1 / 3: "a third"}.get(x, f"{x:g} times")


# The unstable rule as the pages state it, from the one place it lives.
UNSTABLE_RULE = {"spread": _share(MAX_SPREAD), "fastest": _share(MIN_OVER_MEDIAN)}


def _autoescape(name: str | None) -> bool:
    """Every template but the Markdown ones (a template made from a string is HTML too)."""
    return not (name or "").endswith(MARKDOWN_SUFFIX)


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)), undefined=jinja2.StrictUndefined,
                             autoescape=_autoescape, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(FILTERS)
    env.globals["unstable"] = UNSTABLE_RULE
    env.globals["site_links"] = LIST_PAGES  # the list and hand-written pages' links, from urls.py
    return env
