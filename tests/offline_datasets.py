"""`datasets.load_dataset` of an export folder with no network and a cache of its own (the load_offline fixture's
work, callable from a fixture of any scope)."""

from __future__ import annotations

from pathlib import Path


def offline_loader(monkeypatch, cache: Path):
    """`datasets.load_dataset(DIR, CONFIG, split='train')`, offline, with a private cache under `cache`; the
    settings are made through `monkeypatch` (a test's, or a session fixture's MonkeyPatch.context())."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(cache / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache / "hf-cache"))
    import datasets
    import huggingface_hub.constants

    # Both read the environment once, at import; another test may have imported them first.
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    datasets.disable_progress_bars()

    load_dataset = datasets.load_dataset

    def load_config(out: Path, name: str):
        return load_dataset(str(out), name, split="train", cache_dir=str(cache / "hf-cache"))
    return load_config
