"""Records -> Arrow tables, one per config, and back: the one registry of the Hub configs.

A config per exported record kind (record_configs.py), in the kind registry's order, then the derived
`roofline` config (roofline_table.py); columns.py holds the machinery they are made of. Optional
fields are null when the record omits them, so `record_from_row` rebuilds the record with exactly
the keys it had (`$schema`, an editor hint, is not exported).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..model.kinds import KINDS
from .columns import Config
from .record_configs import DEFINITIONS, EINSUMS, HARDWARE, MODELS, SOLUTIONS, TRACES, WORKLOADS
from .roofline_table import ROOFLINE

# One config per exported record kind, in the registry's order (the card's); `definitions` is the default config.
_BY_NAME = {c.name: c for c in (DEFINITIONS, WORKLOADS, SOLUTIONS, TRACES, MODELS, EINSUMS, HARDWARE)}
# Derived (not a record kind): last.
CONFIGS: tuple[Config, ...] = tuple(_BY_NAME[k.config] for k in KINDS if k.config) + (ROOFLINE,)
CONFIG_NAMES = tuple(c.name for c in CONFIGS)


def config(name: str) -> Config:
    for c in CONFIGS:
        if c.name == name:
            return c
    raise KeyError(name)


# -- back from rows ------------------------------------------------------------------------

def record_from_row(config_name: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """The record a row was made from (its `data`, without `$schema`). JSON columns may come as
    dicts (datasets) or as text (pandas, pyarrow); convenience columns are ignored."""
    cfg = config(config_name)
    out: dict[str, Any] = dict(cfg.constants)
    for col in cfg.columns:
        if col.is_convenience:
            continue
        value = row[col.name]
        if col.optional and _is_null(value):
            continue
        if col.is_json and isinstance(value, (str, bytes)):
            value = json.loads(value)
        value = _from_arrow(value)
        if col.drop_nulls:
            value = _without_nulls(value)
        _put(out, col.path, value)
    return out


def _without_nulls(value: Any) -> Any:
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if not _is_null(v)}
    return value


def _is_null(value: Any) -> bool:
    # pandas reads a null in an integer or float column as NaN
    return value is None or (isinstance(value, float) and value != value)


def _from_arrow(value: Any) -> Any:
    # pandas gives numpy arrays for list columns
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, list):
        return [_from_arrow(v) for v in value]
    if isinstance(value, dict):
        return {k: _from_arrow(v) for k, v in value.items()}
    return value


def _put(out: dict, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        out = out.setdefault(key, {})
    out[path[-1]] = value
