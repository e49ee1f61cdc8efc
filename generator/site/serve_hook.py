"""mkdocs hook used by `kerneltrace serve`: re-render the generated pages before each rebuild.

Loaded by mkdocs from this file's path (config option `hooks`); serve_site passes the dataset
and project folders in KERNELTRACE_SERVE_DATASET and KERNELTRACE_SERVE_PROJECT. When nothing
changed the pages are left alone, so the rebuild does not trigger another one.
"""

from __future__ import annotations

import os
from pathlib import Path

from mkdocs.exceptions import PluginError

from generator.model.errors import KernelTraceError
from generator.site.build import load_checked, render_site


def on_pre_build(config, **kwargs) -> None:
    dataset = os.environ.get("KERNELTRACE_SERVE_DATASET")
    project = os.environ.get("KERNELTRACE_SERVE_PROJECT")
    if not dataset or not project:
        return
    try:
        render_site(load_checked(Path(dataset)), Path(project))
    except KernelTraceError as e:
        raise PluginError(str(e)) from None
