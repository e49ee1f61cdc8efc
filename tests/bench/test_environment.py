"""The GPU a run is filed under is named by the dataset's hardware specs (their aliases list the names torch
reports), never by a table of patterns beside them."""

from __future__ import annotations

from generator.bench.trusted.environment import gpu_hardware_name
from generator.load import DEFAULT_DATASET, load


def test_every_alias_of_a_spec_names_that_spec_and_an_unknown_gpu_keeps_its_own_name():
    ds = load(DEFAULT_DATASET)
    gpus = [spec for spec in ds.hardware.values() if spec.aliases]
    assert gpus, "the bundled specs list the names torch reports for their GPUs"
    for spec in gpus:
        assert gpu_hardware_name(spec.name, ds) == spec.name
        for alias in spec.aliases:
            assert gpu_hardware_name(alias, ds) == spec.name, alias
    # No spec, no floor: filed under its own name (the old pattern table filed any H100 as the SXM part).
    assert gpu_hardware_name("NVIDIA H100 PCIe", ds) == "NVIDIA_H100_PCIe"
    assert gpu_hardware_name("NVIDIA H100 80GB HBM3", None) == "NVIDIA_H100_80GB_HBM3"
