"""What the cascade code reports instead of raising: problems located by a JSON pointer."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Problem:
    pointer: str  # JSON pointer into the rendered YAML document
    message: str
    hint: str
    severity: str = "error"


class CascadeProblem(ValueError):
    """The cascade cannot be counted; carries the problems (the validator reports them in full)."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        first = problems[0] if problems else Problem("", "unknown problem", "")
        super().__init__(f"{first.pointer or '$'}: {first.message}")


def ptr(*parts: object) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def ptr_join(pointer: str, key: object) -> str:
    return pointer + ptr(key)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""
