"""Find the line of a JSON pointer inside a JSON text.

Used only when a diagnostic is emitted, so loading stays a plain json.loads per record.
Walks the text with the standard decoder's pieces; any value on the way is skipped with
raw_decode, so the cost is linear in the part of the text before the target.
"""

from __future__ import annotations

import json
from json.decoder import scanstring

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def _child_offset(text: str, i: int, key: str) -> tuple[int, int] | None:
    """Offsets (of the key or index token, of the value) of `key` in the container at i."""
    i = _skip_ws(text, i)
    if i >= len(text):
        return None
    if text[i] == "{":
        i = _skip_ws(text, i + 1)
        while i < len(text) and text[i] == '"':
            key_at = i
            name, i = scanstring(text, i + 1)
            i = _skip_ws(text, i)
            if i >= len(text) or text[i] != ":":
                return None
            i = _skip_ws(text, i + 1)
            if name == key:
                return key_at, i
            _, i = _DECODER.raw_decode(text, i)
            i = _skip_ws(text, i)
            if i < len(text) and text[i] == ",":
                i = _skip_ws(text, i + 1)
        return None
    if text[i] == "[" and key.isdigit():
        want = int(key)
        i = _skip_ws(text, i + 1)
        index = 0
        while i < len(text) and text[i] != "]":
            if index == want:
                return i, i
            _, i = _DECODER.raw_decode(text, i)
            i = _skip_ws(text, i)
            if i < len(text) and text[i] == ",":
                i = _skip_ws(text, i + 1)
            index += 1
    return None


def line_of_pointer(text: str, pointer: str, base_line: int = 1) -> int:
    """Line (1-based, offset by base_line - 1) where `pointer` is in `text`.

    Points at the key of an object member (people look for the key), or at the deepest
    existing ancestor when the pointer names something missing.
    """
    pos = 0
    i = 0
    try:
        for raw in pointer.split("/")[1:] if pointer else []:
            key = raw.replace("~1", "/").replace("~0", "~")
            found = _child_offset(text, i, key)
            if found is None:
                break
            pos, i = found
    except (ValueError, IndexError, RecursionError):
        pass  # malformed or too deeply nested text: keep the deepest position found
    if pos == 0:
        pos = _skip_ws(text, 0)
    return base_line + text.count("\n", 0, pos)
