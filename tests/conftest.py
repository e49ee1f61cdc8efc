import os
import sys
from pathlib import Path

import pytest

# Two test processes share two cores (addopts: -n 2): torch's intra-op pool would start a thread per core in
# each, and four spinning threads on two cores make numeric tests several times slower. Set before any test
# module imports torch; the subprocesses tests start inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

TESTS = Path(__file__).parent
# The helpers (dataset_factory, results_dataset, hub_stub, tolerances, reference_cases) are imported by
# their bare names, as pytest imports the test files themselves (tests/ has no __init__.py).
sys.path.insert(0, str(TESTS))

from dataset_factory import write_dataset  # noqa: E402
from offline_datasets import offline_loader  # noqa: E402


def pytest_collection_finish(session):
    """`tests.dataset_factory` next to `dataset_factory` would be a second copy of the module (its own
    globals, its own constants): every test file must import the helpers by their bare names."""
    twins = sorted(name for name, module in list(sys.modules.items())
                   if name.startswith("tests.") and Path(getattr(module, "__file__", None) or "/").parent == TESTS)
    if twins:
        raise pytest.UsageError(f"test helpers imported as {', '.join(twins)}: import them by their bare names "
                                "(from dataset_factory import ...), as conftest.py does")


# The files (groups, below) that take longest in the suite, longest first (seconds on one of the two workers,
# 2-core host, 2026-11-27: bench 118 (test_bench.py, since split: test_cheats.py ~35 s alone, test_run.py ~20 s),
# the bundled_export group 74, references 57, bench_checks 46, contributor 45, browser 42, gpu_kit 32, site 32,
# triton_solutions 23, workloadgen 15, fuzz 14). pytest-xdist hands whole
# groups to the two workers in collection order (--no-loadscope-reorder in addopts: by default it orders them by
# their number of tests instead): starting the long ones first keeps one worker from running a long file alone
# at the end while the other idles.
LONGEST_FIRST = ("test_cheats.py", "test_contenders.py", "test_export.py", "test_consumer.py", "test_export_roofline.py", "test_references.py",
                 "test_bench_checks.py", "test_run.py", "test_contributor.py", "test_browser.py", "test_gpu_kit.py", "test_site.py",
                 "test_library_contenders.py", "test_triton_solutions.py", "test_workloadgen.py", "test_fuzz.py", "test_einsums.py", "test_serve.py",
                 "test_layering.py")


# pytest-xdist's --dist loadgroup (addopts) hands a group's tests to one worker, a group being a file here,
# except that the files reading the session's Hub export of the bundled dataset (bundled_export, ~12 s alone)
# are one group: split over the two workers, they made it twice.
GROUPS = {"test_export.py": "bundled_export", "test_consumer.py": "bundled_export",
          "test_export_roofline.py": "bundled_export"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into the test ids
def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
    for item in items:
        item.add_marker(pytest.mark.xdist_group(GROUPS.get(item.path.name, item.path.name)))


@pytest.fixture
def good_dataset(tmp_path: Path) -> Path:
    """A complete, valid dataset with one record of every kind."""
    return write_dataset(tmp_path / "ds")


@pytest.fixture(scope="module")
def one_torch_thread():
    """The reference checks are many small tensor operations: on a 2-core host shared with other jobs, torch's
    intra-op threads spend more time waiting for each other than computing (one set of a sampling check
    took 71 s of wall time and 26 s of CPU with 2 threads, 9.6 s and 4.3 s with 1, on a loaded host).
    One thread for the module that asks, the previous count restored after it."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# Shared by the export, consumer and roofline tests.
@pytest.fixture(scope="session")
def bundled_export(tmp_path_factory) -> Path:
    """The Hub export of the bundled dataset, made once per test process (the export, consumer and roofline
    tests each made their own: three exports of the whole dataset). Read it; never write into it."""
    from generator.export import export_dataset
    from generator.load import DEFAULT_DATASET

    out = tmp_path_factory.mktemp("bundled-export") / "hub"
    export_dataset(DEFAULT_DATASET, out)
    return out


@pytest.fixture
def load_offline(monkeypatch, tmp_path):
    """`datasets.load_dataset(DIR, CONFIG, split='train')`, offline, with a private cache."""
    return offline_loader(monkeypatch, tmp_path)
