"""The Hub repository id: its form and the project's default, owned here (the export's card, publish and the
command line read them)."""

from __future__ import annotations

import re

from .errors import KernelTraceError

DEFAULT_REPO_ID = "kerneltrace/kerneltrace"
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def check_repo_id(repo_id: str) -> None:
    """KernelTraceError unless `repo_id` is ORG/NAME in the Hub's characters ('..' and '--' are refused)."""
    if not _REPO_ID.match(repo_id or "") or ".." in repo_id or "--" in repo_id:
        raise KernelTraceError(f"--repo must look like ORG/NAME (letters, digits, '-', '_', '.'), got {repo_id!r}")
