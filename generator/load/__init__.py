"""Read the dataset folder once into typed records (load stage).

One pass over the files; each record is parsed, normalised from other dialects, checked
against its JSON Schema and turned into an immutable record that remembers its file and
line. Nothing here raises on bad data: problems become diagnostics on the Dataset.

walk.py finds the files, reading.py and loaders.py (one per record kind) read one, builder.py joins
them in order (with cache.py, serve's cache, and parallel.py, a helper process for many traces).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..model.dataset import Dataset
from ..model.frozen import many_records
from .builder import DatasetBuilder
from .cache import LoadCache
from .loaders import LOADERS
from .walk import IGNORED_NAMES, LAYOUT

__all__ = ["DEFAULT_DATASET", "IGNORED_NAMES", "LAYOUT", "LOADERS", "LoadCache", "load"]

# The dataset of this checkout (what the tests read). Commands default to ./dataset of the current
# folder instead (cli.py), so an installed kerneltrace never checks its own copy by mistake.
DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "dataset"


def load(root: Path | str = Path("dataset"), cache: Optional[LoadCache] = None) -> Dataset:
    """Load the dataset at `root` into typed records; problems go to `Dataset.load_diagnostics`.
    With a `cache`, files unchanged since its last load are not read again (see LoadCache)."""
    # Loading makes millions of small, acyclic, long-lived containers: the cyclic collector would
    # walk them again and again as the heap grows, so cost would grow faster than the data.
    with many_records():
        if cache is not None:
            if cache.root != Path(root).resolve():
                cache.root, cache.files = Path(root).resolve(), {}
            cache.changed = {}
        return DatasetBuilder(Path(root), cache).run()
