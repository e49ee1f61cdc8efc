import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from dataset_factory import write_dataset  # noqa: E402


@pytest.fixture
def good_dataset(tmp_path: Path) -> Path:
    """A complete, valid dataset with one record of every kind."""
    return write_dataset(tmp_path / "ds")
