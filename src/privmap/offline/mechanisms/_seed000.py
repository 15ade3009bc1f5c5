"""The options seed 000's two mechanisms, quantized and exact, share.

They are the budget, the solver, the table's precision, and the named guarantees a build may add
to program (19).

Each guarantee is a small frozen option object, checked at construction; a build has it or
not (None):

- :class:`CrossFitting`: the cross-fitted (new-user) leakage written beside the in-sample one;
- :class:`RobustCertificate`: the leakage certified over a confidence set of priors;
- :class:`OutputLimit`: a per-output leakage limit the shipped table meets.

The options classes (:class:`privmap.offline.mechanisms.quantized.QuantizedOptions`,
:class:`privmap.offline.mechanisms.exact.ExactOptions`) extend :class:`Seed000Options`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from .._errors import BuildError
from ..solvers import DEFAULT_BITS, SOLVERS
from ._header import HeaderOptions, check_header

if TYPE_CHECKING:
    from ..data import Declared

__all__ = ["CrossFitting", "RobustCertificate", "OutputLimit", "Seed000Options", "DEFAULT_FOLDS"]

#: Folds of the cross-fitted leakage a build measures unless told otherwise.
DEFAULT_FOLDS = 5


@dataclass(frozen=True, kw_only=True)
class CrossFitting:
    """The cross-fitted leakage a new user faces, written into the bundle.

    It is measured on ``folds`` folds (2..20) and declared as ``holdout_leakage_bits`` with its
    interval (:mod:`privmap.offline.mechanisms.quantized`).

    Raises
    ------
    BuildError
        At construction, ``folds`` outside 2..20.
    """

    folds: int = DEFAULT_FOLDS

    def __post_init__(self):
        if not 2 <= self.folds <= 20:
            raise BuildError(f"holdout folds must be 0 (off) or in 2..20, got {self.folds}")


@dataclass(frozen=True, kw_only=True)
class RobustCertificate:
    """The leakage certified over a confidence set of priors.

    The set holds the population's prior with probability ``confidence`` (in (0, 1)); the table
    of least certified worst case is chosen and ``robust_leakage_bits`` declared
    (docs/guarantees.md).

    Raises
    ------
    BuildError
        At construction, ``confidence`` outside (0, 1).
    """

    confidence: float

    def __post_init__(self):
        if not 0.0 < self.confidence < 1.0:
            raise BuildError(f"robust confidence must lie in (0, 1), got {self.confidence}")


@dataclass(frozen=True, kw_only=True)
class OutputLimit:
    """A per-output leakage limit eps, in bits, that the shipped table meets.

    On the training prior, |log2 p(a | c_hat) - log2 p(a)| <= eps for every output of positive
    mass (:func:`privmap.offline.solvers.solve_for_shipping`; the reference solver).

    Raises
    ------
    BuildError
        At construction, ``bits`` not a finite number > 0 (posteriors of a rounded table equal
        the prior only up to floating-point error).
    """

    bits: float

    def __post_init__(self):
        if not (math.isfinite(self.bits) and self.bits > 0):
            raise BuildError(f"max output leakage must be a finite number of bits > 0, got {self.bits}")


@dataclass(frozen=True, kw_only=True)
class Seed000Options(HeaderOptions):
    """The options both seed-000 mechanisms take (with the header's: :class:`HeaderOptions`).

    Parameters
    ----------
    delta, delta_fraction : float, optional
        The distortion budget, absolute (the metric's unit) or as a fraction of the
        perfect-privacy distortion; exactly one is given (a subclass may let a search choose it).
    seed : int
        Seeds k-means, the folds and the posteriors prior (>= 0).
    solver : str
        ``"fast"`` (privmap's certified solver) or ``"cvxpy"`` (the Clarabel reference).
    tol_bits : float
        The fast solver's certified gap, in bits.
    bits : int
        Every table row's integer weights sum to 2^bits (1..32).
    smoothing : float, optional
        Additive smoothing of the prior's counts (>= 0); None only where a subclass lets a search
        choose it (:class:`~privmap.offline.mechanisms.quantized.QuantizedOptions` with ``auto``).
    cross_fitting, robust, output_limit
        The guarantees (module docstring); None leaves one out. Cross-fitting on 5 folds is the
        default.

    Raises
    ------
    BuildError
        At construction, for an option out of range or two that do not combine.
    """

    #: The payload's ``mechanism``.
    mechanism: ClassVar[str]
    #: Whether its alphabet is k-means representatives of numeric rows, a row looked up by its
    #: nearest one (the quantized mechanism), rather than the observed tuples and their erasures,
    #: a row looked up by its equal tuple (the exact mechanism): what the seed-000 stages branch on.
    quantizes: ClassVar[bool]

    delta: float | None = None
    delta_fraction: float | None = None
    seed: int = 0
    solver: str = "fast"
    tol_bits: float = 1e-5
    bits: int = DEFAULT_BITS
    smoothing: float | None = 0.0
    cross_fitting: CrossFitting | None = CrossFitting()
    robust: RobustCertificate | None = None
    output_limit: OutputLimit | None = None

    if TYPE_CHECKING:
        # What each mechanism chooses for its alphabet and prior, read by the seed-000 stages:
        # QuantizedOptions has them as fields, ExactOptions fixes them as class constants.
        @property
        def metric(self) -> str: ...
        @property
        def clusters(self) -> int | None: ...
        @property
        def missing(self) -> str: ...
        @property
        def declared(self) -> Declared | None: ...
        @property
        def prior(self) -> str: ...
        @property
        def codebook(self) -> bool: ...
        @property
        def class_blind(self) -> bool: ...

    def __post_init__(self):
        self._check_budget()
        if self.delta is not None and not (math.isfinite(self.delta) and self.delta >= 0):
            raise BuildError(f"delta must be a finite number >= 0, got {self.delta}")
        if self.delta_fraction is not None and not (math.isfinite(self.delta_fraction) and self.delta_fraction >= 0):
            raise BuildError(f"delta fraction must be a finite number >= 0, got {self.delta_fraction}")
        if self.solver not in SOLVERS:
            raise BuildError(f"unknown solver {self.solver!r}; expected one of {', '.join(SOLVERS)}")
        if not 1 <= self.bits <= 32:
            raise BuildError(f"bits must be in 1..32, got {self.bits}")
        if self.smoothing is not None and not (math.isfinite(self.smoothing) and self.smoothing >= 0):
            raise BuildError(f"smoothing must be >= 0, got {self.smoothing}")
        check_header(self)
        if self.seed < 0:
            raise BuildError(f"seed must be >= 0, got {self.seed}")
        if self.output_limit is not None and self.robust is not None:
            raise BuildError("a per-output leakage limit and --robust do not combine: the robust search "
                             "re-solves without the limit")

    def _check_budget(self) -> None:
        """Exactly one of ``delta`` and ``delta_fraction``."""
        if (self.delta is None) == (self.delta_fraction is None):
            raise BuildError("give exactly one of --delta and --delta-fraction")

    @property
    def folds(self) -> int:
        """Folds of the cross-fitted leakage, 0 without :attr:`cross_fitting`."""
        return self.cross_fitting.folds if self.cross_fitting is not None else 0
