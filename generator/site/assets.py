"""Scripts the site ships from installed packages (no CDN): plotly.js from the `plotly` package.

The file is copied into the generated pages at build time (site_src/generated/assets/), so it
ships with the site and never enters the repository. kerneltrace.js loads it on the pages that
have a chart, and only there.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..model.errors import KernelTraceError

PLOTLY_PAGE = "assets/plotly.min.js"  # relative to the generated folder


@lru_cache(maxsize=1)
def _plotly() -> tuple[str, str]:
    try:
        import plotly
        from plotly.offline import get_plotlyjs_version
    except ImportError:
        raise KernelTraceError("the site's charts need the 'plotly' package (it ships plotly.js); "
                               "install it with 'pip install plotly' or 'pip install -e .'") from None
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    try:
        # newline="" keeps the file's bytes: write_pages writes the text back unchanged.
        with open(path, encoding="utf-8", newline="") as f:
            return f.read(), get_plotlyjs_version()
    except OSError as e:
        raise KernelTraceError(f"cannot read plotly.js from the plotly package ({path}): {e.strerror}") from None


def plotly_version() -> str:
    return _plotly()[1]


def vendored_files() -> dict[str, str]:
    """{path relative to the generated folder: text} of every vendored script."""
    return {PLOTLY_PAGE: _plotly()[0]}
