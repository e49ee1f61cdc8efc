"""The site stage: markdown pages rendered from the dataset and the JSON Schemas, built into a
static mkdocs-material site (`kerneltrace build`, `kerneltrace serve`)."""

from .build import build_site
from .serve import serve_site

__all__ = ["build_site", "serve_site"]
