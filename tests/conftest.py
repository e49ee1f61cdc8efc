import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
# The helpers (dataset_factory, results_dataset, hub_stub, tolerances, reference_cases) are imported by
# their bare names, as pytest imports the test files themselves (tests/ has no __init__.py).
sys.path.insert(0, str(TESTS))

from dataset_factory import write_dataset  # noqa: E402


def pytest_collection_finish(session):
    """`tests.dataset_factory` next to `dataset_factory` would be a second copy of the module (its own
    globals, its own constants): every test file must import the helpers by their bare names."""
    twins = sorted(name for name, module in list(sys.modules.items())
                   if name.startswith("tests.") and Path(getattr(module, "__file__", None) or "/").parent == TESTS)
    if twins:
        raise pytest.UsageError(f"test helpers imported as {', '.join(twins)}: import them by their bare names "
                                "(from dataset_factory import ...), as conftest.py does")


@pytest.fixture
def good_dataset(tmp_path: Path) -> Path:
    """A complete, valid dataset with one record of every kind."""
    return write_dataset(tmp_path / "ds")
