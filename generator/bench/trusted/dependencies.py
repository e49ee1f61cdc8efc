"""Whether a solution's declared dependencies (spec.dependencies) are installed where the bench runs.

A dependency is a distribution name with an optional version range, as pip writes it
("liger-kernel>=0.8.5,<0.9", "torch>=2.6", "torch"). A solution whose dependency is missing, or
installed at a version outside its range, is skipped by the plan with the reason (never run into an
ImportError that would read as the solution's failure). Standard library only: the bench imports
this before the kit's wheels may be on the path, and the GPU image need not have `packaging`.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Optional

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*?)\s*(;.*)?$")
_CLAUSE = re.compile(r"^(>=|<=|==|!=|~=|<|>)\s*([0-9][0-9A-Za-z.*+-]*)$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_version(name: str) -> Optional[str]:
    """The installed version of distribution `name`, or None."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _numbers(version: str) -> tuple[int, ...]:
    """The release numbers of a version (2.13.0+cpu -> (2, 13, 0); 0.8.5.dev1 -> (0, 8, 5))."""
    out = []
    for part in version.split("+")[0].split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group()))
        if m.end() < len(part):
            break
    return tuple(out)


def _cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = max(len(a), len(b))
    a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (a > b) - (a < b)


def satisfies(version: str, clause: str) -> bool:
    m = _CLAUSE.match(clause.strip())
    if m is None:
        raise ValueError(f"cannot read the version clause {clause!r}")
    op, want = m.groups()
    if want.endswith(".*") and op in ("==", "!="):
        prefix = _numbers(want[:-2])
        same = _numbers(version)[:len(prefix)] == prefix
        return same if op == "==" else not same
    c = _cmp(_numbers(version), _numbers(want))
    if op == "~=":  # compatible release: >= want, == want's prefix without its last number
        prefix = _numbers(want)[:-1]
        return c >= 0 and _numbers(version)[:len(prefix)] == prefix
    return {">=": c >= 0, "<=": c <= 0, "==": c == 0, "!=": c != 0, "<": c < 0, ">": c > 0}[op]


def unmet(dependencies: Iterable[str], version_of: Callable[[str], Optional[str]] = installed_version) -> Optional[str]:
    """None when every dependency is installed within its range, else why not (one sentence per dependency)."""
    problems = []
    for dep in dependencies:
        m = _REQUIREMENT.match(dep)
        if m is None or not m.group(1):
            problems.append(f"cannot read the dependency {dep!r} (write it as pip does, e.g. 'liger-kernel>=0.8,<0.9')")
            continue
        name, clauses = m.group(1), [c for c in m.group(3).split(",") if c.strip()]
        have = version_of(canonical(name))
        if have is None:
            problems.append(f"needs {dep.strip()}, which is not installed here (pip install '{dep.strip()}')")
            continue
        try:
            ok = all(satisfies(have, c) for c in clauses)
        except ValueError as exc:
            problems.append(f"{dep!r}: {exc}")
            continue
        if not ok:
            problems.append(f"needs {dep.strip()}, but {name} {have} is installed here")
    return "; ".join(problems) or None
