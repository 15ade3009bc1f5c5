"""The kinds' registry and the dispatch.

The kinds' registry: one :class:`Kind` per payload ``mechanism`` (its body's parse and its
release), and the dispatch.

The load workflow (:mod:`privmap.device.load`), above this layer, hands a header-checked payload
to :func:`load_body`, and the state layer releases through :meth:`Kind.release`; neither tests a
bundle's class or its mechanism's name, and the kinds never import them. Table kinds share one
body dict and one :class:`~privmap.device.kinds.table.Bundle`: each has its body's parse (the
shared table parse under its :class:`~privmap.device.kinds.table.TableRules`, or its module's
own) and the check of its declared figures. Real-valued kinds validate the fields they share here
(``features`` as column names, ``metrics``, ``provenance``) and hand ``parameters`` to the kind's
``make``. A new kind is one line of :data:`KINDS` (docs/adding-a-mechanism.md).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Any, Protocol

from ..errors import BundleFormatError
from ..format import Limits, fail, parse_metrics, parse_provenance
from . import funnel, gaussian, max_correlation, nullspace, ranking, recommender, table
from ._real import MAX_REAL_DIM, RealBundle, names
from .gaussian import GaussianBundle
from .nullspace import NullspaceBundle
from .table import Bundle

__all__ = ["Kind", "TableKind", "RealKind", "KINDS", "TABLE_KINDS", "REAL_KINDS", "kind_of", "load_body",
           "parse_table_body", "check_declared_metrics", "load_real_body"]


class Kind(Protocol):
    """What a bundle kind is to the layers above it.

    Two things: the payload's parse into its bundle object, and the release of a row through
    that object.
    """

    #: The payload's ``mechanism``.
    name: str
    #: Whether its bundle releases through an integer table (:class:`~privmap.device.kinds.table.Bundle`).
    table: bool

    def load(self, obj: dict, limits: Limits, **facts: Any) -> Bundle | NullspaceBundle | GaussianBundle:
        """The bundle object of a header-checked payload.

        ``facts`` are the header and envelope facts. Raises BundleFormatError, TableError,
        WorkLimitError or MetricsError.
        """

    def release(self, bundle: Any, row: Sequence[object], secret: bytes) -> list:
        """The cells a device with ``secret`` releases for ``row``.

        The same on every ask. Raises InputError (a row the bundle refuses) or the kind's own
        release errors.
        """


@dataclass(frozen=True)
class TableKind:
    """A :class:`Kind` whose bundle is a table :class:`~privmap.device.kinds.table.Bundle`.

    Parameters
    ----------
    name : str
        The payload's ``mechanism``.
    parse_body : callable
        ``parse_body(obj, limits) -> dict``: every field after the header, validated.
    check_figures : callable
        ``check_figures(body)``: raises MetricsError (or TableError) for a declared figure the
        parsed body contradicts.
    exact_lookup : bool
        A row is matched to the input tuple equal to it (exact, funnel, max-correlation: a
        matched row equals its input); otherwise to its nearest representative.
    model_keys : tuple of str
        The keys of its ``model`` map in canonical order (recommender, ranking: the way between
        a row and the table's space); empty for a kind without one.
    """

    name: str
    parse_body: Callable[[dict, Limits], dict]
    check_figures: Callable[[dict], None]
    exact_lookup: bool = False
    model_keys: tuple[str, ...] = ()
    table = True

    def load(self, obj: dict, limits: Limits, **facts: Any) -> Bundle:
        body = parse_table_body(obj, limits)
        bundle = table.build(body, exact_lookup=self.exact_lookup, **facts)
        self.check_figures(body)
        return bundle

    def release(self, bundle: Any, row: Sequence[object], secret: bytes) -> list:
        return table.release(bundle, row, secret)


@dataclass(frozen=True)
class RealKind:
    """A :class:`Kind` whose bundle releases real-valued cells (a :class:`RealBundle`).

    Parameters
    ----------
    name : str
        The payload's ``mechanism``.
    metrics : tuple of str
        The metrics its payload must declare.
    make : callable
        ``make(obj, limits, **fields)``: its bundle object from the payload and the shared fields.
    release : callable
        ``release(bundle, row, secret)``: :meth:`Kind.release`.
    """

    name: str
    metrics: tuple[str, ...]
    make: Callable[..., NullspaceBundle | GaussianBundle]
    release: Callable[[Any, Any, bytes], list]
    table = False

    def load(self, obj: dict, limits: Limits, **facts: Any) -> NullspaceBundle | GaussianBundle:
        return load_real_body(obj, limits, **facts)


#: Payload ``mechanism`` -> its kind; the table kinds first, in the order their refusals list them.
KINDS: MappingProxyType[str, TableKind | RealKind] = MappingProxyType({kind.name: kind for kind in (
    TableKind("quantized", partial(table.parse_body, rules=table.QUANTIZED_RULES), table.check_figures),
    TableKind("exact", partial(table.parse_body, rules=table.EXACT_RULES), table.check_figures, exact_lookup=True),
    TableKind(funnel.MECHANISM, funnel.parse_body, funnel.check_figures, exact_lookup=True),
    TableKind(max_correlation.MECHANISM, max_correlation.parse_body, max_correlation.check_figures,
              exact_lookup=True),
    TableKind(recommender.MECHANISM, recommender.parse_body, recommender.check_figures,
              model_keys=recommender.MODEL_KEYS),
    TableKind(ranking.MECHANISM, ranking.parse_body, ranking.check_figures, model_keys=ranking.MODEL_KEYS),
    RealKind(nullspace.MECHANISM, nullspace.NULLSPACE_METRICS, nullspace.make, nullspace.release),
    RealKind(gaussian.MECHANISM, gaussian.GAUSSIAN_METRICS, gaussian.make, gaussian.release),
)})
#: The table kinds of :data:`KINDS`, by mechanism.
TABLE_KINDS = MappingProxyType({name: kind for name, kind in KINDS.items() if isinstance(kind, TableKind)})
#: The real-valued kinds of :data:`KINDS`, by mechanism.
REAL_KINDS = MappingProxyType({name: kind for name, kind in KINDS.items() if isinstance(kind, RealKind)})


def kind_of(mechanism: object) -> TableKind | RealKind | None:
    """The kind of a payload's ``mechanism`` value, from :data:`KINDS`.

    None for any other value, of any type (a decoded payload's field may be anything).
    """
    return KINDS.get(mechanism) if type(mechanism) is str else None


def load_body(obj: dict, limits: Limits, **facts: Any) -> Bundle | NullspaceBundle | GaussianBundle:
    """The bundle object of a header-checked payload, by its kind.

    A table :class:`Bundle`, or a ``NullspaceBundle`` / ``GaussianBundle``: what the kind's
    :meth:`Kind.load` makes of ``obj``.

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
    kind = kind_of(obj["mechanism"])
    if kind is None:
        fail(f"mechanism must be one of {tuple(TABLE_KINDS)}")
    return kind.load(obj, limits, **facts)


def parse_table_body(obj: dict, limits: Limits) -> dict:
    """Every validated field of a table payload after the header.

    Validate every field of a table payload after the header (the mechanism's own
    ``parse_body``); returns plain validated values by field name (a recommender's ``model``
    parsed into its :class:`~privmap.device.kinds.recommender.FactorModel`). Raises
    BundleFormatError, TableError or WorkLimitError.
    """
    mechanism, metric = obj["mechanism"], obj["metric"]
    if type(mechanism) is not str or mechanism not in TABLE_KINDS:
        fail(f"mechanism must be one of {tuple(TABLE_KINDS)}")
    if type(metric) is not str or metric not in table.METRICS:
        fail(f"metric must be one of {table.METRICS}")
    return TABLE_KINDS[mechanism].parse_body(obj, limits)


def check_declared_metrics(body: dict) -> None:
    """The check of a parsed table body's declared figures.

    Recompute what a parsed table body declares and raise :class:`MetricsError` (or
    TableError) if it disagrees: the leakage on the prior for every mechanism that has one, and
    the mechanism's own figures for ``"funnel"`` (disclosure) and ``"max-correlation"``
    (rho_m^2, S* bound, distortion; it has no prior).
    """
    TABLE_KINDS[body["mechanism"]].check_figures(body)


def load_real_body(obj: dict, limits: Limits, **facts: Any) -> NullspaceBundle | GaussianBundle:
    """Validate a header-checked real-valued payload ``obj``; returns its bundle object.

    ``facts`` are the header values and the envelope facts (version, issued_at, expires,
    device_class, sha256, key_id, data). Raises BundleFormatError or MetricsError.
    """
    mechanism = obj["mechanism"]
    if type(mechanism) is not str or mechanism not in REAL_KINDS:
        raise BundleFormatError(f"mechanism must be one of {tuple(REAL_KINDS)}")
    kind = REAL_KINDS[mechanism]
    columns = names(obj["features"], "features", 1, min(MAX_REAL_DIM, limits.max_features), limits)
    metrics = parse_metrics(obj["metrics"], limits, kind.metrics)
    provenance = parse_provenance(obj["provenance"], limits)
    return kind.make(obj, limits, mechanism=mechanism, features=RealBundle.make_features(columns),
                     metrics=MappingProxyType(metrics), provenance=MappingProxyType(provenance), **facts)
