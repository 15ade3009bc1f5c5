"""The exact mechanism's options (Algorithm 1): categorical tuples and their erasures.

The alphabet is the observed tuples (inputs) and every erasure pattern of them (outputs), so
what the quantized mechanism chooses is fixed here: the metric is ``erasures``, there is no K,
no missing-answer policy, no declared domain, no codebook step, and the prior is counted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._seed000 import Seed000Options
from ..table import DEFAULT_MISSING

__all__ = ["ExactOptions"]


@dataclass(frozen=True, kw_only=True)
class ExactOptions(Seed000Options):
    """Everything that decides an exact bundle's bytes, with the data and the key.

    They are the options both seed-000 mechanisms share
    (:class:`~privmap.offline.mechanisms._seed000.Seed000Options`: the budget, solver, precision
    and the guarantees cross-fitting, robust certificate and per-output limit).

    Raises
    ------
    BuildError
        At construction, for any inconsistent or out-of-range option.
    """

    mechanism: ClassVar[str] = "exact"
    quantizes: ClassVar[bool] = False
    #: What the exact mechanism fixes (module docstring), named as the quantized options name it.
    metric: ClassVar[str] = "erasures"
    clusters: ClassVar[None] = None
    missing: ClassVar[str] = DEFAULT_MISSING
    declared: ClassVar[None] = None
    prior: ClassVar[str] = "counts"
    codebook: ClassVar[bool] = False
    class_blind: ClassVar[bool] = False
