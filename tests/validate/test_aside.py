"""validated_aside: the site's build validates its dataset in a helper process while it renders; the verdict must
be load_valid's, and the errors must win over whatever the bad data broke meanwhile."""

from __future__ import annotations

import copy

import pytest

from generator.load import load
from generator.model.errors import KernelTraceError
from generator.validate import load_valid
from generator.validate.aside import validated_aside

from dataset_factory import TRACE, write_dataset


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    good = write_dataset(tmp_path_factory.mktemp("good"))
    slow = copy.deepcopy(TRACE)
    slow["evaluation"]["performance"]["latency_ms"] = 5e6  # past the bench's timeout: an error
    bad = write_dataset(tmp_path_factory.mktemp("bad"), traces=[slow])
    return good, bad


def test_the_refusal_is_load_valids(datasets) -> None:
    _, bad = datasets
    with pytest.raises(KernelTraceError) as expected:
        load_valid(bad, "building the site")
    ran = []
    with pytest.raises(KernelTraceError) as got:
        with validated_aside(load(bad), bad, "building the site", aside_from=0):  # in the helper, even this small
            ran.append(True)
    assert str(got.value) == str(expected.value) and "latency_ms" in str(got.value) and ran == [True]


def test_the_errors_win_over_what_the_block_raised(datasets) -> None:
    good, bad = datasets
    with pytest.raises(KernelTraceError, match=r"has 2 error\(s\):\n.*latency_ms 5e\+06"):
        with validated_aside(load(bad), bad, "building the site", aside_from=0):
            raise KeyError("what bad data broke")
    with pytest.raises(KeyError):  # a valid dataset: the block's own failure
        with validated_aside(load(good), good, "building the site", aside_from=0):
            raise KeyError("a bug")
    with validated_aside(load(good), good, "building the site", aside_from=0):
        pass  # no error, nothing raised


def test_a_small_dataset_is_refused_before_the_block(datasets) -> None:
    _, bad = datasets
    ran = []
    with pytest.raises(KernelTraceError, match=r"has 2 error\(s\):\n.*latency_ms 5e\+06"):
        with validated_aside(load(bad), bad, "building the site"):
            ran.append(True)
    assert ran == []
