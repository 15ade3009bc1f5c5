"""The kinds' registry: which module parses and releases each ``mechanism``, and the dispatch.

The load workflow (:mod:`privmap.device.load`), above this layer, hands a header-checked payload
to :func:`load_body`; the kinds never import the loader. Table kinds share one body dict and one
:class:`~privmap.device.kinds.table.Bundle`; each table kind module has ``parse_body(obj,
limits)`` and ``check_figures(body)``. Real-valued kinds validate the fields they share here
(``features`` as column names, ``metrics``, ``provenance``) and hand ``parameters`` to the kind's
``make``.
"""
from __future__ import annotations

from types import MappingProxyType

from ..errors import BundleFormatError
from ..format import Limits, fail, parse_metrics, parse_provenance
from . import funnel, gaussian, max_correlation, nullspace, ranking, recommender, table
from ._real import MAX_REAL_DIM, RealBundle, names

__all__ = ["TABLE_KINDS", "REAL_KINDS", "load_body", "parse_table_body", "check_declared_metrics",
           "load_real_body"]

#: Table mechanism -> the module with its ``parse_body`` and ``check_figures``.
TABLE_KINDS = MappingProxyType({"quantized": table, "exact": table, "funnel": funnel, "max-correlation": max_correlation,
                                "recommender": recommender, "ranking": ranking})
#: Real-valued mechanism -> (the metrics it must declare, the ``make`` that builds its bundle).
REAL_KINDS = MappingProxyType({"nullspace": (nullspace.NULLSPACE_METRICS, nullspace.make),
                               "gaussian": (gaussian.GAUSSIAN_METRICS, gaussian.make)})


def load_body(obj: dict, limits: Limits, **facts):
    """The bundle object of a header-checked payload ``obj``: a table :class:`Bundle`, or a
    ``NullspaceBundle`` / ``GaussianBundle``.

    Parameters
    ----------
    obj : dict
        The decoded payload, its header already checked (``parse_header``).
    limits : Limits
        Resource limits.
    **facts
        version, issued_at, expires, device_class (the header), sha256, key_id, data (the
        envelope).

    Raises BundleFormatError (unknown mechanism, any field), TableError, WorkLimitError or
    MetricsError (declared figures the body contradicts).
    """
    mechanism = obj["mechanism"]
    if type(mechanism) is str and mechanism in REAL_KINDS:
        return load_real_body(obj, limits, **facts)
    body = parse_table_body(obj, limits)
    bundle = table.build(body, **facts)
    check_declared_metrics(body)
    return bundle


def parse_table_body(obj: dict, limits: Limits) -> dict:
    """Validate every field of a table payload after the header (the mechanism's own
    ``parse_body``); returns plain validated values by field name (a recommender's ``model``
    parsed into its :class:`~privmap.device.kinds.recommender.FactorModel`). Raises
    BundleFormatError, TableError or WorkLimitError."""
    mechanism, metric = obj["mechanism"], obj["metric"]
    if type(mechanism) is not str or mechanism not in TABLE_KINDS:
        fail(f"mechanism must be one of {tuple(TABLE_KINDS)}")
    if type(metric) is not str or metric not in table.METRICS:
        fail(f"metric must be one of {table.METRICS}")
    return TABLE_KINDS[mechanism].parse_body(obj, limits)


def check_declared_metrics(body: dict) -> None:
    """Recompute what a parsed table body declares and raise :class:`MetricsError` (or
    TableError) if it disagrees: the leakage on the prior for every mechanism that has one, and
    the mechanism's own figures for ``"funnel"`` (disclosure) and ``"max-correlation"``
    (rho_m^2, S* bound, distortion; it has no prior)."""
    TABLE_KINDS[body["mechanism"]].check_figures(body)


def load_real_body(obj: dict, limits: Limits, **facts) -> RealBundle:
    """Validate a header-checked real-valued payload ``obj``; returns its bundle object.

    ``facts`` are the header values and the envelope facts (version, issued_at, expires,
    device_class, sha256, key_id, data). Raises BundleFormatError or MetricsError.
    """
    mechanism = obj["mechanism"]
    if type(mechanism) is not str or mechanism not in REAL_KINDS:
        raise BundleFormatError(f"mechanism must be one of {tuple(REAL_KINDS)}")
    required, make = REAL_KINDS[mechanism]
    columns = names(obj["features"], "features", 1, min(MAX_REAL_DIM, limits.max_features), limits)
    metrics = parse_metrics(obj["metrics"], limits, required)
    provenance = parse_provenance(obj["provenance"], limits)
    return make(obj, limits, mechanism=mechanism, features=RealBundle.make_features(columns),
                metrics=MappingProxyType(metrics), provenance=MappingProxyType(provenance), **facts)
