"""Records made by the hundred thousand (traces, their sources, leaderboard results): made quickly.

A frozen dataclass's own __init__ sets each field through object.__setattr__ (its __setattr__ refuses): at
1,000 definitions x 10 solutions x 50 workloads that is seconds of the site's build. `quick_init` gives the
class an __init__ with the same signature that fills the instance's __dict__ directly; the class stays frozen
(assignment still raises), equal, hashable and printable as before.

`left_to_exit` keeps a build's records to the end of the process, where the operating system takes their memory
back at once: freeing them one by one took 1-2 s at the end of the site's build at that scale.

`many_records` pauses the cyclic garbage collector while they are made: they are long-lived and hold no
cycles, and the collector would walk them again and again as the heap grows (the analysis of that scale took
14 s with it and 9 s without).
"""

from __future__ import annotations

import contextlib
import gc
import inspect
from dataclasses import MISSING, fields, is_dataclass
from typing import Iterator


def quick_init(cls: type) -> type:
    """Decorate a @dataclass(frozen=True) class (above the @dataclass line): same fields, defaults and
    __post_init__, no per-field object.__setattr__."""
    if not is_dataclass(cls) or not cls.__dataclass_params__.frozen or hasattr(cls, "__slots__"):
        raise TypeError(f"quick_init: {cls.__name__} is not a frozen dataclass with a __dict__")
    own = inspect.signature(cls.__init__).parameters.values()
    if [(p.name, p.kind) for p in own][1:] != [(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for f in fields(cls)]:
        raise TypeError(f"quick_init: {cls.__name__}'s __init__ takes more than its fields, positionally")
    params, lines, scope = [], [], {"MISSING": MISSING}
    for f in fields(cls):
        if f.default is not MISSING:
            scope[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        elif f.default_factory is not MISSING:
            scope[f"_f_{f.name}"] = f.default_factory
            params.append(f"{f.name}=MISSING")
            lines.append(f" if {f.name} is MISSING: {f.name} = _f_{f.name}()")
        else:
            params.append(f.name)
        lines.append(f" d[{f.name!r}] = {f.name}")
    if hasattr(cls, "__post_init__"):
        lines.append(" self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n d = self.__dict__\n" + "\n".join(lines) + "\n"
    exec(source, scope)  # noqa: S102 -- the source is built from the class's own field names
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    return cls


@contextlib.contextmanager
def many_records() -> Iterator[None]:
    """Pause the cyclic collector while the block makes many long-lived records, then freeze everything made so
    far out of its reach (reference counting still frees them)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        gc.freeze()
    finally:
        if was_enabled:
            gc.enable()


_LEFT: list = []  # what left_to_exit keeps, and itself (a cycle)


def left_to_exit(*objects: object) -> None:
    """Keep `objects` (a build's dataset and what was made of it) until the next call or the end of the process,
    and there leave them to the operating system. What the call before kept is freed now: a long-lived process
    (tests) holds one build's at most."""
    _LEFT.clear()
    _LEFT.extend(objects)
    # A cycle out of the collector's reach: when the interpreter clears the modules at exit it neither frees the
    # list by its count nor collects it, so its millions of objects are not freed one by one.
    _LEFT.append(_LEFT)
    gc.freeze()
