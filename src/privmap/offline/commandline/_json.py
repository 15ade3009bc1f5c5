"""``--json`` output: one strict JSON object on stdout."""
from __future__ import annotations

import json
import math

import click


def _clean(obj):
    """Strict-JSON version of ``obj``: numpy scalars to Python, tuples to lists, NaN/inf to None."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and getattr(obj, "ndim", None) == 0:  # numpy scalar
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def emit(obj: dict) -> None:
    """Print ``obj`` as one JSON object on stdout."""
    click.echo(json.dumps(_clean(obj), indent=2, sort_keys=True, allow_nan=False))
