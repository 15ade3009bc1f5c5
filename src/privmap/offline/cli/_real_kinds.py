"""The real-valued kinds by payload ``mechanism``, for ``inspect``, ``verify`` and ``evaluate``:
each kind's face gives the facts they show (``describe``, ``print_description``,
``verify_facts``) and its evaluation view (``evaluate_release``)."""
from __future__ import annotations

from ..mechanisms import gaussian, nullspace

__all__ = ["REAL_KINDS"]

#: payload ``mechanism`` -> the kind's face.
REAL_KINDS = {"gaussian": gaussian, "nullspace": nullspace}
