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
import re
from pathlib import Path
from typing import Mapping

from ..model.errors import KernelTraceError
from .items import Item

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


def fill(site: Path, generated: str, items: Mapping[str, Item]) -> None:
    """Write every item page into the built site (under `generated`/), from the shell mkdocs built."""
    shell_file = site / generated / SHELL_DIR / "page.html"
    try:
        text = shell_file.read_text(encoding="utf-8")
    except OSError as e:
        raise KernelTraceError(f"mkdocs did not build the page shell {shell_file}: {e.strerror}") from None
    head, tail, _ = _split_shell(text)
    for sub in (site / generated / SHELL_DIR).iterdir():
        sub.unlink()
    (site / generated / SHELL_DIR).rmdir()
    made: set[Path] = set()
    for rel, item in items.items():
        path = site / generated / rel
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        title = html.escape(item.title, quote=False)
        path.write_text(head.replace(TITLE_MARK, title) + item.body + tail.replace(TITLE_MARK, title),
                        encoding="utf-8", newline="\n")
    _search(site, generated, items)
    _sitemap(site, generated, items)


def _search(site: Path, generated: str, items: Mapping[str, Item]) -> None:
    index_file = site / "search" / "search_index.json"
    if not index_file.is_file():
        return
    index = json.loads(index_file.read_text(encoding="utf-8"))
    docs = [d for d in index.get("docs", ()) if f"{generated}/{SHELL_DIR}/" not in d.get("location", "")]
    for rel, item in items.items():
        docs.append({"location": f"{generated}/{rel}", "title": html.escape(item.title, quote=False),
                     "text": html.escape(item.search_text, quote=False), "boost": item.boost})
    index["docs"] = docs
    text = json.dumps(index, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    index_file.write_text(text, encoding="utf-8")
    # The fallback needs titles and text only; "</" cannot end the script early.
    fallback = [{"location": d["location"], "title": _TAGS.sub("", d.get("title", "")),
                 "text": _TAGS.sub("", d.get("text", ""))[:300], "boost": d.get("boost", 1)} for d in docs]
    script = json.dumps(fallback, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    (site / SEARCH_SCRIPT).write_text(f"window.__ktSearchIndex = {script};\n", encoding="utf-8")


def _sitemap(site: Path, generated: str, items: Mapping[str, Item]) -> None:
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
