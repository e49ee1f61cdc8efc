"""validate in a second process while the caller already works on the loaded dataset (the site's build renders
while its dataset is checked): the verdict is the same as load_valid's, given when the caller's work is done and
before it publishes anything."""

from __future__ import annotations

import contextlib
import multiprocessing
from pathlib import Path
from typing import Iterator, Optional

from ..load.parallel import can_fork_a_helper
from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic, sort_diagnostics
from . import refuse, refuse_errors, validate

_DATASET: Optional[Dataset] = None  # set before the helper forks (it inherits the loaded dataset)


def _errors() -> tuple[int, list[Diagnostic]]:
    """In the helper: how many errors validate finds, and the first five (all the refusal names)."""
    errors = sort_diagnostics([d for d in validate(_DATASET) if d.is_error])
    return len(errors), errors[:5]


# Below this many traces, validate takes less than a second and the dataset is validated before the block (a
# helper process costs a fork); at 1,000 definitions x 10 solutions x 50 workloads (500,000 traces) it is seconds.
ASIDE_TRACES = 20_000


@contextlib.contextmanager
def validated_aside(ds: Dataset, root: Path | str, doing: str, aside_from: int = ASIDE_TRACES) -> Iterator[None]:
    """Run the block while a forked helper validates `ds`; on leaving it, KernelTraceError (load_valid's) if the
    dataset has errors. The errors win over what the block raised (bad data may break what it does, and they say
    why). With fewer than `aside_from` traces, one CPU or no fork, the dataset is validated before the block."""
    global _DATASET
    if len(ds.traces) < aside_from or not can_fork_a_helper():
        refuse_errors(validate(ds), root, doing)
        yield
        return
    _DATASET = ds
    try:
        pool = multiprocessing.get_context("fork").Pool(1)  # forks now
    finally:
        _DATASET = None
    with pool:
        pending = pool.apply_async(_errors)
        try:
            yield
        except Exception:
            refuse(*pending.get(), root, doing)
            raise
        refuse(*pending.get(), root, doing)
