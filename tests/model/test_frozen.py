"""quick_init: a frozen dataclass built without its per-field object.__setattr__ is the same record. left_to_exit:
a build's records are freed by the next build, or by the operating system at exit, never one by one there."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from generator.model.frozen import left_to_exit, quick_init
from generator.model.records import Source, Trace


@quick_init
@dataclass(frozen=True)
class Point:
    x: int
    y: int = 2
    tags: list = field(default_factory=list, compare=False)

    def __post_init__(self):
        if self.x < 0:
            raise ValueError("x < 0")


def test_same_record_as_the_dataclass_would_make() -> None:
    p = Point(1)
    assert (p.x, p.y, p.tags) == (1, 2, []) and Point(1, y=3).y == 3 and Point(x=1, y=3) == Point(1, 3)
    assert p == Point(1, 2, ["other"]) and hash(p) == hash(Point(1)) and repr(p) == "Point(x=1, y=2, tags=[])"
    assert Point(1).tags is not Point(1).tags  # a fresh default per record
    assert dataclasses.asdict(dataclasses.replace(p, y=5)) == {"x": 1, "y": 5, "tags": []}
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3
    with pytest.raises(ValueError):
        Point(-1)  # __post_init__ still runs
    with pytest.raises(TypeError):
        Point()  # the required field is still required
    with pytest.raises(TypeError):
        Point(1, 2, [], 4)


def test_records_made_this_way_keep_their_behaviour() -> None:
    s = Source("traces/a/norm/x.jsonl", 3)
    assert s == Source("traces/a/norm/x.jsonl", 3, "text") and s.text is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.line = 4
    assert dataclasses.is_dataclass(Trace)


def test_refuses_what_it_cannot_copy() -> None:
    @dataclass
    class Mutable:
        x: int

    @dataclass(frozen=True)
    class KeywordOnly:
        x: int = field(kw_only=True)

    for cls in (Mutable, KeywordOnly):
        with pytest.raises(TypeError):
            quick_init(cls)


class Held:
    pass


def test_left_to_exit_keeps_one_call_s_objects_and_leaves_them_to_the_exit() -> None:
    first, second = Held(), Held()
    gone = weakref.ref(first)
    left_to_exit(first)
    del first
    assert gone() is not None  # kept
    left_to_exit(second)
    assert gone() is None  # freed by the next call
    left_to_exit()
    # At exit the interpreter clears its modules: what a module holds is freed then, one object at a time (a
    # __del__ runs); what left_to_exit holds is not.
    said = {}
    for how, keep in (("plainly", "frozen.PLAIN = Noisy()"), ("left", "frozen.left_to_exit(Noisy())")):
        code = ("import sys\nfrom generator.model import frozen\n"
                "class Noisy:\n    def __del__(self): sys.stdout.write('freed')\n" + keep + "\n")
        said[how] = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                   cwd=Path(__file__).resolve().parents[2]).stdout
    assert said == {"plainly": "freed", "left": ""}
