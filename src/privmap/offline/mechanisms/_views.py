"""Which evaluation view measures a bundle: the registry :mod:`privmap.offline.evaluation`
dispatches on by the payload's ``mechanism``.

Every view here is a :class:`~privmap.offline.mechanisms.quantized.MappingView` (what a device
does with the bundle, as arrays), measured by
:func:`~privmap.offline.mechanisms.quantized.evaluate_view`.
"""
from __future__ import annotations

from typing import Callable

from .._errors import BuildError
from .quantized import MappingView, view_from_payload
from .ranking import view_of_ranking
from .recommender import view_of_recommender

__all__ = ["VIEWS", "view_of"]

#: payload ``mechanism`` -> the function making its view from the payload.
VIEWS: dict[str, Callable[[dict], MappingView]] = {
    "quantized": view_from_payload,
    "exact": view_from_payload,
    "recommender": view_of_recommender,
    "ranking": view_of_ranking,
}


def view_of(payload: dict) -> MappingView:
    """The evaluation view of ``payload`` (its mechanism's, :data:`VIEWS`).

    Raises
    ------
    BuildError
        A mechanism without a table view here (its own command evaluates it).
    """
    mechanism = payload.get("mechanism")
    make = VIEWS.get(mechanism) if isinstance(mechanism, str) else None
    if make is None:
        raise BuildError(f"no evaluation view of a {payload.get('mechanism')!r} bundle here; expected one of "
                         f"{', '.join(VIEWS)}")
    return make(payload)
