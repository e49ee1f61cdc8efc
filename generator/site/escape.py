"""Escaping contributor text for markdown pages.

Everything that comes from the dataset (names, tags, descriptions, constraints) passes
through one of these filters before it reaches a page, so that text can never become
markup: no raw HTML, no links, no attribute lists, no headings or lists it did not ask for.

Characters that mean something to Python-Markdown or its extensions are written as numeric
character references (`<` -> `&#60;`). Markdown passes references through untouched and the
browser shows the original character, so the reader sees exactly what the contributor wrote.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from pathlib import PurePosixPath

# Characters with a meaning anywhere in a line: inline HTML and entities, code spans,
# emphasis, links and images, attribute lists, table cells, headings' closing hashes,
# backslash escapes. Quotes are included so that the text is also safe inside an attribute.
_INLINE_ACTIVE = frozenset('&<>"\'`*_[]!{}|#\\~$')
# Characters that only matter at the start of a line (lists, headings, quotes, admonitions,
# details, setext underlines, numbered lists as in '1.').
_LINE_START_ACTIVE = frozenset("-+=>:?.")
_WHITESPACE = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")
_LEADING_DIGITS = re.compile(r"^(\d+)([.)])")


def _ref(ch: str) -> str:
    return f"&#{ord(ch)};"


def _escape_chars(text: str) -> str:
    return "".join(_ref(ch) if ch in _INLINE_ACTIVE else ch for ch in text)


def _escape_line(line: str) -> str:
    """One line that may start a markdown block: also neutralise its first character."""
    line = line.strip()
    if not line:
        return ""
    match = _LEADING_DIGITS.match(line)
    if match:  # '1. text' would become a numbered list
        digits, mark = match.groups()
        return digits + _ref(mark) + _escape_chars(line[match.end():])
    first = line[0]
    if first in _LINE_START_ACTIVE:
        return _ref(first) + _escape_chars(line[1:])
    return _escape_chars(line)


def escape_inline(value: object) -> str:
    """Text for one line of markdown (a table cell, a heading, a list item, a link's text).

    Whitespace, newlines included, collapses to single spaces: a table cell cannot span lines.
    """
    return _escape_line(_WHITESPACE.sub(" ", str(value)))


def escape_block(value: object) -> str:
    """Text for a markdown block: paragraphs (separated by blank lines) are kept, each line
    is escaped, and indentation is dropped so that nothing turns into a code block."""
    text = str(value).replace("\r\n", "\n").replace("\r", "\n").strip()
    paragraphs = _BLANK_LINES.split(text) if text else []
    return "\n\n".join("\n".join(_escape_line(line) for line in p.split("\n") if line.strip())
                       for p in paragraphs)


def fence_for(code: str, char: str = "`") -> str:
    """A code fence longer than any run of `char` in `code`, so the code cannot close it."""
    longest = max((len(m.group()) for m in re.finditer(re.escape(char) + "+", code)), default=0)
    return char * max(3, longest + 1)


# -- raw HTML blocks ---------------------------------------------------------------------------
# Tables, code and conversations that need more than markdown are written as raw HTML blocks.
# Markdown leaves those alone, but its preprocessors still see every line: a line that starts
# with a code fence (``` or ~~~) or a snippet marker (--8<--, ;--8<--) would be acted upon. So,
# besides HTML escaping, backticks and tildes are always written as references, and so is the
# first '-' or ';' of a line.
_HTML_EXTRA = {ord("`"): "&#96;", ord("~"): "&#126;"}
_LINE_START_MARK = re.compile(r"^([ \t]*)([-;])", re.M)


def _neutral_lines(text: str) -> str:
    return _LINE_START_MARK.sub(lambda m: m.group(1) + _ref(m.group(2)), text.translate(_HTML_EXTRA))


def escape_html(value: object) -> str:
    """Text for a raw HTML block (element content or a quoted attribute value); newlines are kept."""
    return _neutral_lines(html.escape(str(value), quote=True))


_LEXER_BY_LANGUAGE = {"python": "python", "triton": "python", "cuda": "cuda", "cpp": "cpp"}
# The suffixes solutions and pages use, by lexer name: the same lexer as pygments' lookup by file name, which
# first imports every installed plugin's lexers (IPython's: most of a second in each process that renders pages).
_LEXER_BY_SUFFIX = {".py": "python", ".yaml": "yaml", ".yml": "yaml", ".cu": "cuda", ".cuh": "cuda", ".cpp": "cpp",
                    ".cc": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".json": "json", ".sh": "bash", ".txt": "text"}


@lru_cache(maxsize=256)
def _lexer(suffix: str, language: str):
    """A lexer by file suffix, then by language, else plain text. Pygments scans every lexer's file
    patterns on each name lookup (~25 ms), so the choice is cached by suffix."""
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        lexer = (get_lexer_by_name(_LEXER_BY_SUFFIX[suffix]) if suffix in _LEXER_BY_SUFFIX
                 else get_lexer_for_filename("file" + suffix) if suffix else None)
    except ClassNotFound:
        lexer = None
    if lexer is None:
        lexer = get_lexer_by_name(_LEXER_BY_LANGUAGE.get(language, "text"))
    lexer.stripnl = False
    lexer.ensurenl = True
    return lexer


@lru_cache(maxsize=4096)
def highlight_html(code: str, path: str = "", language: str = "") -> str:
    """`code` as a highlighted block in raw HTML, the same markup (and colours) as a fenced block.

    The lexer is chosen by the file name's suffix, then by the solution's language, else plain text.
    The same source (a file several solutions share) is highlighted once.
    """
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    lexer = _lexer(PurePosixPath(path).suffix.lower() if path else "", language)
    body = highlight(code, lexer, HtmlFormatter(nowrap=True))
    alias = lexer.aliases[0] if lexer.aliases else "text"
    return (f'<div class="language-{alias} highlight"><pre><span></span><code>'
            f"{_neutral_lines(body)}</code></pre></div>")
