"""Loading the real-valued bundle kinds after the header and signature checks.

:func:`load_real_body` validates the fields the kinds share (``features`` as column names,
``metrics``, ``provenance``) and hands ``parameters`` to the kind's own closed parser:
``nullspace`` (:mod:`._nullspace`) or ``gaussian`` (:mod:`._gaussian`).
"""
from __future__ import annotations

from types import MappingProxyType

from .._errors import BundleFormatError
from ._gaussian import GAUSSIAN_METRICS, make_gaussian
from ._nullspace import NULLSPACE_METRICS, make_nullspace
from ._realvalued import MAX_REAL_DIM, RealBundle, names
from ..format._schema import _metrics, _provenance

__all__ = ["load_real_body"]

_KINDS = {"nullspace": (NULLSPACE_METRICS, make_nullspace), "gaussian": (GAUSSIAN_METRICS, make_gaussian)}


def load_real_body(obj: dict, limits, **fields) -> RealBundle:
    """Validate a header-checked real-valued payload ``obj``; returns its bundle object.

    ``fields`` are the header values and the envelope facts (version, issued_at, expires,
    sha256, key_id, data). Raises BundleFormatError or MetricsError.
    """
    mechanism = obj["mechanism"]
    if type(mechanism) is not str or mechanism not in _KINDS:
        raise BundleFormatError(f"mechanism must be one of {tuple(_KINDS)}")
    required, make = _KINDS[mechanism]
    columns = names(obj["features"], "features", 1, min(MAX_REAL_DIM, limits.max_features), limits)
    metrics = _metrics(obj["metrics"], limits, required)
    provenance = _provenance(obj["provenance"], limits)
    return make(obj, limits, mechanism=mechanism, features=RealBundle.make_features(columns),
                metrics=MappingProxyType(metrics), provenance=MappingProxyType(provenance), **fields)
