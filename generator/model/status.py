"""What the statuses of the records mean: a trace's status and which parts of its evaluation each status
carries, a definition's status (draft or verified) and who the baseline author is. Every stage reads these
words from here. TraceStatus lists schema/common.json's trace_status in its order (tests/model/test_status.py checks).
"""

from __future__ import annotations

from enum import Enum
from typing import Iterable


class _Word(str, Enum):
    """A str-valued enum: a member equals, hashes, formats and serialises (JSON, Parquet) as its value."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return self.value.__format__(spec)


class TraceStatus(_Word):
    """evaluation.status of a trace (schema/common.json#/$defs/trace_status)."""

    PASSED = "PASSED"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    COMPILE_ERROR = "COMPILE_ERROR"
    TIMEOUT = "TIMEOUT"
    REWARD_HACK = "REWARD_HACK"

    @property
    def carries_correctness(self) -> bool:
        """A trace of this status has evaluation.correctness, and no other status may."""
        return self in _CARRIES_CORRECTNESS

    @property
    def carries_performance(self) -> bool:
        """A trace of this status has evaluation.performance, and no other status may."""
        return self in _CARRIES_PERFORMANCE


# Which evaluation parts each status carries: correctness where the outputs were compared and the numbers say how
# close they came (PASSED, INCORRECT_NUMERICAL); performance only where the result is correct (PASSED).
_CARRIES_CORRECTNESS = frozenset({TraceStatus.PASSED, TraceStatus.INCORRECT_NUMERICAL})
_CARRIES_PERFORMANCE = frozenset({TraceStatus.PASSED})


class DefinitionStatus(_Word):
    """A definition's status, from its `status:` tag (site_src/contributing.md, "Drafts and verified").

    verified: tagged status:verified (the reference passed its independent check, the definition has serving
    workloads and a baseline with traces). draft: anything short of that, an untagged definition included: a
    definition is verified only when someone said so."""

    DRAFT = "draft"
    VERIFIED = "verified"

    @property
    def tag(self) -> str:
        return f"status:{self.value}"

    @classmethod
    def of(cls, tags: Iterable[str]) -> "DefinitionStatus":
        return cls.VERIFIED if cls.VERIFIED.tag in tags else cls.DRAFT


# The author whose solution of a definition is the reference point of speedups (analyse/leaderboard.py) and
# whose solution every definition should have (validate/completeness.py).
BASELINE_AUTHOR = "baseline"

# A bench outcome, never a trace status: the definition's reference failed, so the solution was not measured
# (bench/trusted/runner.py's outcomes; the CLI's exit status and summary read it).
NOT_MEASURED = "NOT_MEASURED"
