import pytest

from card_run import run_card_blocks
from offline_datasets import offline_loader


@pytest.fixture(scope="session")
def bundled_card(bundled_export, tmp_path_factory) -> list[tuple[str, str]]:
    """(block, its output) for every Python block of the bundled export's card, run once per test process: the
    export, consumer and roofline tests each ran all of them (the per-step estimate block alone takes seconds)."""
    with pytest.MonkeyPatch.context() as mp:
        return run_card_blocks(bundled_export, offline_loader(mp, tmp_path_factory.mktemp("card")), mp)
