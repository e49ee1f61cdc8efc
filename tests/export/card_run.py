"""The dataset card's Python blocks, run as a consumer reads them: against an export folder standing in for the
Hub repository. Shared by the export, consumer and roofline tests (the bundled export's run once per process:
the `bundled_card` fixture of tests/export/conftest.py)."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import yaml


def read_card(out: Path) -> tuple[dict, str]:
    text = (out / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    meta, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(meta), body


def card_blocks(out: Path) -> list[str]:
    _, body = read_card(out)
    return [b.split("```", 1)[0] for b in body.split("```python\n")[1:]]


def run_card_blocks(out: Path, load, monkeypatch) -> list[tuple[str, str]]:
    """Run every Python block of the card against the exported folder (the Hub repository replaced by
    it: `load_dataset` offline through `load`, downloads answered from the folder); returns (block, its output)s."""
    import datasets
    import huggingface_hub

    monkeypatch.setattr(datasets, "load_dataset", lambda repo, cfg, split: load(Path(repo), cfg))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda repo, repo_type: repo)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda repo, path, repo_type: str(Path(repo) / path))
    monkeypatch.setattr(sys, "path", list(sys.path))  # a block puts the folder on it
    monkeypatch.delitem(sys.modules, "kerneltrace_inputs", raising=False)
    printed, namespace = [], {}  # read top to bottom, as a consumer would: later blocks may use earlier names
    for block in card_blocks(out):
        # The Hub id, and the export folder of the local-folder example, both mean the exported folder here.
        code = block.replace('"kerneltrace/kerneltrace"', repr(str(out))).replace('"kerneltrace-export"', repr(str(out)))
        with contextlib.redirect_stdout(io.StringIO()) as shown:
            exec(compile(code, "<card>", "exec"), namespace)
        printed.append((block, shown.getvalue()))
    return printed


def output_of(printed: list[tuple[str, str]], marker: str) -> str:
    """The output of the one block whose code contains `marker`."""
    (out,) = [o for b, o in printed if marker in b]
    return out
