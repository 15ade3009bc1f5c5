"""The quantized mechanism's options (Algorithm 2) and its own guarantee, :class:`Auto`.

:class:`QuantizedOptions` extends the options both seed-000 mechanisms share
(:class:`privmap.offline.mechanisms._seed000.Seed000Options`: budget, solver, precision,
cross-fitting, robust certificate, per-output limit) with what only k-means representatives
have: the metric, K, the missing-answer policy, declared domains, the prior's estimator and the
codebook step; and with :class:`Auto`, which chooses K, the smoothing and the budget fraction
against a target a new user's leakage (or an attacker's AUC) must stay under.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from ..._errors import BuildError
from ...data import METRICS, Declared
from .._seed000 import Seed000Options
from ..table import DEFAULT_MISSING, MISSING_POLICIES

__all__ = ["Auto", "QuantizedOptions", "PRIORS", "AUTO_NEEDS_FOLDS"]

#: How p(a, c) is estimated: ``counts`` (the empirical prior) or ``posteriors`` (a classifier's
#: cross-fitted posteriors summed per cluster, :func:`privmap.offline.data.posterior_prior`).
PRIORS = ("counts", "posteriors")

#: Why a search needs cross-fitting: it judges candidates by their new-user leakage.
AUTO_NEEDS_FOLDS = "--clusters auto judges candidates by cross-fitting; --holdout-folds must be at least 2"


@dataclass(frozen=True, kw_only=True)
class Auto:
    """The ``auto`` search: what the options leave unset, chosen by the cross-fitted leakage.

    It chooses ``clusters``, ``smoothing``, and with ``clusters`` the budget fraction: of the
    candidates, the least held-out distortion whose new-user leakage stays under
    ``target_leakage_bits`` and whose out-of-sample attacker ROC AUC stays under ``target_auc``
    (:mod:`._autotune`). ``column_targets`` holds ``(column, bits)`` pairs: with several private
    columns, the new-user leakage of that column alone must stay under its bits too
    (``--target-leakage COL=BITS``; every named target is met). Without any target, 1 % of H(A)
    is the leakage target. ``class_blind`` holds the codebooks searched (False: k-means on the
    points, True: class-blind clusters, :mod:`privmap.offline.mechanisms.table._class_blind`),
    each with its own budget search; empty: the options' own. A build whose target no candidate
    meets fails (:class:`~privmap.offline._errors.TargetNotMetError`) unless ``allow_unmet``:
    then it ships the candidate nearest the target by the target's own measure.

    Raises
    ------
    BuildError
        At construction, a negative or non-finite leakage target, an AUC target outside [0, 1],
        a column given two targets, or a codebook named twice.
    """

    target_leakage_bits: float | None = None
    target_auc: float | None = None
    column_targets: tuple[tuple[str, float], ...] = ()
    class_blind: tuple[bool, ...] = ()
    allow_unmet: bool = False

    def __post_init__(self) -> None:
        if self.target_leakage_bits is not None and not self.target_leakage_bits >= 0:
            raise BuildError(f"the leakage target must be >= 0 bits, got {self.target_leakage_bits}")
        if self.target_auc is not None and not 0.0 <= self.target_auc <= 1.0:
            raise BuildError(f"the AUC target must lie in [0, 1], got {self.target_auc}")
        seen: set[str] = set()
        for column, bits in self.column_targets:
            if not (isinstance(bits, (int, float)) and math.isfinite(bits) and bits >= 0):
                raise BuildError(f"the leakage target of column {column!r} must be a finite number >= 0 bits, got {bits}")
            if column in seen:
                raise BuildError(f"column {column!r} is given two leakage targets")
            seen.add(column)
        if len(set(self.class_blind)) != len(self.class_blind) or any(type(b) is not bool for b in self.class_blind):
            raise BuildError(f"the codebooks searched must be distinct bools, got {self.class_blind}")

    @property
    def given(self) -> bool:
        """Whether any target was given (else the default applies)."""
        return self.target_leakage_bits is not None or self.target_auc is not None or bool(self.column_targets)


@dataclass(frozen=True, kw_only=True)
class QuantizedOptions(Seed000Options):
    """Everything that decides a quantized bundle's bytes (with the data and the key).

    Parameters
    ----------
    metric : str
        ``"l2"`` (default), ``"l1"`` or ``"hamming"``.
    clusters : int, optional
        K, the number of k-means representatives (>= 1); None only with :attr:`auto`, which
        chooses it (and, when neither ``delta`` nor ``delta_fraction`` is given, the budget
        fraction with it).
    smoothing : float, optional
        Additive smoothing of the prior's counts; None only with :attr:`auto`, which chooses it.
    missing : str
        Missing answers: ``"mask"`` (distances over observed cells) or ``"impute"``.
    declared : Declared, optional
        Declared feature domains, completed by inference (:func:`privmap.offline.data.declare`).
    prior : str
        ``"counts"`` or ``"posteriors"`` (:data:`PRIORS`; the latter without smoothing).
    codebook : bool
        Run the codebook step after solving (:mod:`privmap.offline.mechanisms.table._codebook`).
    class_blind : bool
        Form the clusters with the private classes' mean differences projected out
        (:mod:`privmap.offline.mechanisms.table._class_blind`; the l2 metric on complete rows, in memory).
    auto : Auto, optional
        The search above; it judges candidates by cross-fitting, which it needs.
    Other parameters are :class:`~privmap.offline.mechanisms._seed000.Seed000Options`'.

    Raises
    ------
    BuildError
        At construction, for any inconsistent or out-of-range option (a per-output limit needs
        the codebook step off: that step re-solves without the limit).
    """

    mechanism: ClassVar[str] = "quantized"
    quantizes: ClassVar[bool] = True

    metric: str = "l2"
    clusters: int | None = None
    missing: str = DEFAULT_MISSING
    declared: Declared | None = None
    prior: str = "counts"
    codebook: bool = True
    class_blind: bool = False
    auto: Auto | None = None

    def __post_init__(self):
        if self.metric not in METRICS:
            raise BuildError(f"metric {self.metric!r} does not fit the quantized mechanism; "
                             f"expected one of {', '.join(METRICS)}")
        super().__post_init__()
        if self.clusters is None and self.auto is None or self.clusters is not None and self.clusters < 1:
            raise BuildError("the quantized mechanism needs clusters >= 1")
        if self.smoothing is None and self.auto is None:
            raise BuildError("smoothing None is chosen by auto; without it give a number >= 0")
        if self.missing not in MISSING_POLICIES:
            raise BuildError(f"unknown missing policy {self.missing!r}; expected one of {', '.join(MISSING_POLICIES)}")
        if self.prior not in PRIORS:
            raise BuildError(f"unknown prior {self.prior!r}; expected one of {', '.join(PRIORS)}")
        if self.prior == "posteriors" and (self.smoothing is None or self.smoothing):
            raise BuildError("the posteriors prior applies to the quantized mechanism without smoothing")
        if self.output_limit is not None and self.codebook:
            raise BuildError("a per-output leakage limit needs the codebook step off: that step re-solves "
                             "without the limit")
        if self.auto is not None and self.cross_fitting is None:
            raise BuildError(AUTO_NEEDS_FOLDS)
        if (self.class_blind or self.auto is not None and True in self.auto.class_blind) and self.metric != "l2":
            raise BuildError("the class-blind codebook needs the l2 metric")

    def _check_budget(self) -> None:
        """Refuse a budget that is not exactly one of ``delta`` and ``delta_fraction``.

        Neither is allowed when :attr:`auto` chooses K: it then chooses the fraction with it.
        """
        searched = self.auto is not None and self.clusters is None
        if self.delta is not None and self.delta_fraction is not None or (
                self.delta is None and self.delta_fraction is None and not searched):
            raise BuildError("give exactly one of --delta and --delta-fraction"
                             + (" (or neither: --clusters auto then searches it)" if searched else ""))

    @property
    def searches_budget(self) -> bool:
        """Whether :attr:`auto` chooses the budget fraction (neither budget is given)."""
        return self.delta is None and self.delta_fraction is None

