"""A contributor's text on the site: its blocks (prose or formula), paragraphs, first sentence, anchor ids."""

from __future__ import annotations

import re

_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")  # keeps the next block's indent: 4 spaces mark a formula
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def blocks(text: object) -> list[tuple[bool, str]]:
    """A contributor's text as (is_formula, text) blocks, blank-line separated. A block whose every line
    is indented by 4 spaces is a formula (as in Markdown's code blocks): its lines are kept as written,
    less the indent. Any other block is prose, its lines joined with plain spaces."""
    value = str(text).replace("\r\n", "\n").replace("\r", "\n").strip("\n").rstrip()
    out = []
    for raw in _BLANK_LINES.split(value):
        lines = [line for line in raw.split("\n") if line.strip()]
        if lines and all(line.startswith("    ") for line in lines):
            out.append((True, "\n".join(line[4:].rstrip() for line in lines)))
        elif lines:
            out.append((False, " ".join(line.strip() for line in lines)))
    return out


def paragraphs(text: object) -> list[str]:
    """The prose paragraphs of a contributor's text (formula blocks left out: search and summaries are prose)."""
    return [p for is_formula, p in blocks(text) if not is_formula]


def summary(text: str, limit: int = 100) -> str:
    """The first sentence of a description (at most `limit` characters)."""
    first = paragraphs(text)
    if not first:
        return ""
    sentence = _SENTENCE_END.split(first[0], 1)[0]
    return sentence if len(sentence) <= limit else sentence[:limit - 1].rstrip() + "…"


def anchor_id(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", str(text).lower()).strip("-") or "page"
