"""mkdocs hook: put the generated tables into the hand-written home page.

site_src/index.md holds markers like `<!-- kerneltrace:include generated/coverage.txt -->`; this
hook replaces each with that file's text, on the home page only. (pymdownx.snippets would do the
same on every page, including inside contributors' reference code, where a line starting with
`--8<--` would pull files into the page.)
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.exceptions import PluginError

MARKER = re.compile(r"^<!-- kerneltrace:include (generated/[A-Za-z0-9_./-]+) -->$", re.MULTILINE)


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    if page.file.src_uri != "index.md":
        return markdown
    docs = Path(config["docs_dir"])

    def include(match: re.Match) -> str:
        path = docs / match.group(1)
        if ".." in Path(match.group(1)).parts or not path.is_file():
            raise PluginError(f"index.md includes {match.group(1)}, which kerneltrace build did not generate")
        return path.read_text(encoding="utf-8").rstrip("\n")

    return MARKER.sub(include, markdown)
