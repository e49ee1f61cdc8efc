"""Put the per-item pages (items.py) into the theme's page shell and into the search index.

mkdocs builds one placeholder page (SHELL_PAGE) at the same depth as every per-item page, so its
relative links (styles, scripts, navigation) hold for all of them; each item page is that HTML
with the title and the body swapped in. Search gets one entry per item (name and prose, with a
boost that ranks drafts low), and the same index is also written as a script, so that the site's
own search fallback works when the pages are opened from disk (file://), where browsers refuse
the theme's search worker.
"""

from __future__ import annotations

import gzip
import html
import json
import multiprocessing
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional
from urllib.parse import quote

from ..model.errors import KernelTraceError

if TYPE_CHECKING:
    from .items import Item, ItemPlan

SHELL_DIR = "_shell"  # in the generated folder; at the depth of definitions/, solutions/, hardware/
SHELL_PAGE = f"{SHELL_DIR}/page.md"
TITLE_MARK, BODY_MARK = "KTSHELLTITLE", "KTSHELLBODY"
SHELL_SOURCE = f"""---
title: {TITLE_MARK}
hide:
  - navigation
  - toc
search:
  exclude: true
---

{BODY_MARK}
"""
SEARCH_SCRIPT = "search/search_index.js"  # read by kerneltrace.js when the site is opened from disk
_TAGS = re.compile(r"<[^>]+>")


def _split_shell(text: str) -> tuple[str, str, str]:
    """(before the body, after the body, and the shell's heading) of the built placeholder page."""
    heading = re.search(rf"<h1[^>]*>{TITLE_MARK}</h1>\s*", text)
    body = re.search(rf"<p>{BODY_MARK}</p>", text)
    if heading is None or body is None:
        raise KernelTraceError("the theme's page shell has no title/body placeholders; mkdocs.yml's theme "
                               "must render page content (generator/site/shell.py)")
    return text[:heading.start()], text[body.end():], text[heading.start():body.start()]


# Set before the worker processes fork (they inherit it): the plan, the shell and the output folder.
_JOB: Optional[tuple] = None


def write_items(folder: Path, head: str, tail: str, items: Iterable["Item"]) -> list[tuple]:
    """Write each item page, put into the shell, under `folder` (a raw item as it is); their entries
    (path, title, search text, boost, definition): the search index takes the pages'."""
    made: set[Path] = set()
    entries = []
    for item in items:
        path = folder / item.path
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        if item.raw:
            path.write_text(item.body, encoding="utf-8", newline="\n")
        else:
            title = html.escape(item.title, quote=False)
            path.write_text(head.replace(TITLE_MARK, title) + item.body + tail.replace(TITLE_MARK, title),
                            encoding="utf-8", newline="\n")
        entries.append((item.path, item.title, item.search_text, item.boost, item.definition))
    return entries


def _fill_share(share: tuple[int, int]) -> list[tuple]:
    """Render one share of the item pages into the shell and write them; their search entries."""
    plan, head, tail, folder = _JOB
    return write_items(folder, head, tail, plan.render(*share))


def _workers(requested: Optional[int]) -> int:
    if requested is not None:
        return max(1, requested)
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1  # the shares read the loaded dataset from the parent's memory
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def read_shell(site: Path, generated: str) -> tuple[str, str]:
    """The page shell mkdocs built, as (before the body, after the body); removes it from the site."""
    shell_file = site / generated / SHELL_DIR / "page.html"
    try:
        text = shell_file.read_text(encoding="utf-8")
    except OSError as e:
        raise KernelTraceError(f"mkdocs did not build the page shell {shell_file}: {e.strerror}") from None
    head, tail, _ = _split_shell(text)
    shutil.rmtree(site / generated / SHELL_DIR)
    return _icons_apart(site, _unindented(head), _unindented(tail))


def _unindented(html: str) -> str:
    """The shell without its indentation and blank lines (a newline stays where there was whitespace, so nothing
    renders differently; the shell has no <pre>): a fifth of the 16 KB every one of 11,000 pages repeats."""
    return re.sub(r"\n\s+", "\n", html)


ICONS_CSS = "assets/kerneltrace-icons.css"  # the shell's icons, written by the build
_SVG = re.compile(r"<svg\b([^>]*)>.*?</svg>", re.S)
_STYLE = re.compile(r'<link rel="stylesheet" href="([^"]*)assets/kerneltrace\.css">')


def _icons_apart(site: Path, head: str, tail: str) -> tuple[str, str]:
    """The shell with each inline icon (a quarter of the shell: 3.6 KB that 11,000 pages would repeat) drawn from
    one stylesheet instead: an empty <svg> keeps its viewBox, so the theme sizes it as before, and is painted in
    its text colour through the icon as a mask, as the theme paints its own CSS icons. Left inline when the shell
    does not load kerneltrace.css (the link the stylesheet's own goes beside)."""
    style = _STYLE.search(head)
    if style is None:
        return head, tail
    icons: dict[str, int] = {}

    def empty(match: re.Match) -> str:
        n = icons.setdefault(match.group(0), len(icons))
        attributes = re.sub(r'\s*xmlns="[^"]*"', "", match.group(1))  # the HTML parser puts <svg> in SVG's namespace
        mark = f"kt-i kt-i{n}"
        if ' class="' in attributes:
            return "<svg" + attributes.replace(' class="', f' class="{mark} ', 1) + "></svg>"
        return f'<svg{attributes} class="{mark}"></svg>'

    head, tail = _SVG.sub(empty, head), _SVG.sub(empty, tail)
    rules = [".kt-i{background-color:currentcolor;-webkit-mask:var(--kt-i) center/contain no-repeat;"
             "mask:var(--kt-i) center/contain no-repeat}"]
    rules += [f'.kt-i{n}{{--kt-i:url("data:image/svg+xml;charset=utf-8,{quote(svg, safe=" =:/.,-")}")}}'
              for svg, n in icons.items()]
    css = site / ICONS_CSS
    css.parent.mkdir(parents=True, exist_ok=True)
    css.write_text("/* The icons of the item pages (generator/site/shell.py). */\n" + "\n".join(rules) + "\n",
                   encoding="utf-8")
    link = f'{style.group(0)}\n<link rel="stylesheet" href="{style.group(1)}{ICONS_CSS}">'
    return head[:style.start()] + link + head[style.end():], tail


def fill(site: Path, generated: str, plan: "ItemPlan", workers: Optional[int] = None,
         head_tail: Optional[tuple[str, str]] = None) -> list[tuple]:
    """Write every item page into the built site (under `generated`/) from the shell mkdocs built (or
    `head_tail`, read_shell's), in `workers` processes (default: one per CPU, at most 4); add them to the
    search index. Returns their search entries (see write_items)."""
    global _JOB
    head, tail = head_tail or read_shell(site, generated)
    n = _workers(workers)
    _JOB = (plan, head, tail, site / generated)
    try:
        if n == 1:
            shares = [_fill_share((0, 1))]
        else:
            with multiprocessing.get_context("fork").Pool(n) as pool:
                shares = pool.map(_fill_share, [(k, n) for k in range(n)])
    finally:
        _JOB = None
    entries = sorted(e for share in shares for e in share)
    finish(site, generated, entries)
    return entries


def finish(site: Path, generated: str, entries: Iterable[tuple]) -> None:
    """The item pages' entries into mkdocs' search index (and its file:// copy); the shell out of its sitemap."""
    _search(site, generated, sorted(entries))
    _sitemap(site, generated)


def _search(site: Path, generated: str, entries) -> None:
    index_file = site / "search" / "search_index.json"
    if not index_file.is_file():
        return
    index = json.loads(index_file.read_text(encoding="utf-8"))
    docs = [d for d in index.get("docs", ()) if f"{generated}/{SHELL_DIR}/" not in d.get("location", "")]
    for rel, title, text, boost, _ in entries:
        if not rel.endswith(".html"):
            continue  # a data file (items.Item.raw), not a page
        docs.append({"location": f"{generated}/{rel}", "title": html.escape(title, quote=False),
                     "text": html.escape(text, quote=False), "boost": boost})
    index["docs"] = docs
    text = json.dumps(index, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    index_file.write_text(text, encoding="utf-8")
    # The fallback needs titles and text only; "</" cannot end the script early.
    fallback = [{"location": d["location"], "title": _TAGS.sub("", d.get("title", "")),
                 "text": _TAGS.sub("", d.get("text", ""))[:300], "boost": d.get("boost", 1)} for d in docs]
    script = json.dumps(fallback, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    (site / SEARCH_SCRIPT).write_text(f"window.__ktSearchIndex = {script};\n", encoding="utf-8")


def _sitemap(site: Path, generated: str) -> None:
    """Drop the shell from mkdocs' sitemap (the item pages are reached from the lists)."""
    sitemap = site / "sitemap.xml"
    if not sitemap.is_file():
        return
    text = re.sub(rf"\s*<url>\s*<loc>[^<]*{generated}/{SHELL_DIR}/[^<]*</loc>.*?</url>", "",
                  sitemap.read_text(encoding="utf-8"), flags=re.S)
    sitemap.write_text(text, encoding="utf-8")
    gz = site / "sitemap.xml.gz"
    if gz.is_file():
        gz.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
