"""The result object every solver of program (19) returns."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class SolveResult:
    """Solution of min I(A; C_hat) s.t. E d(C, C_hat) <= delta, rows of q on the simplex.

    Attributes
    ----------
    table : ndarray, shape (n_inputs, n_outputs)
        The mapping q(c_hat | c); each row sums to 1, entries are >= 0.
    leakage_bits : float
        I(A; C_hat) of ``table`` on the prior, recomputed from the table (bits).
    distortion : float
        E d(C, C_hat) of ``table`` on the prior, recomputed from the table.
    multiplier : float
        Lagrange multiplier of the distortion constraint, in bits per unit of
        distortion (0 when the constraint is slack).
    gap_bits : float
        Certified upper bound on ``leakage_bits - optimum`` (bits). ``inf`` when the
        solver gives no certificate.
    status : str
        ``"optimal"`` on success; solvers raise :class:`SolverError` otherwise.
    solver : str
        Name of the method that produced the answer (``"cvxpy-clarabel"``, ``"fast"``,
        ``"interior-primal-dual"``, ``"interior-barrier"``).
    message : str
        Human-readable summary.
    info : dict
        Solver-specific diagnostics (iterations, timings); JSON-serialisable.
    codebook : ndarray, shape (n_private, n_outputs), or None
        The answer's dual codebook, log r_j(a) - log p(a) in nats with each r_j a distribution
        on the classes with mass (rows of classes without mass are 0), where the solver gives
        one (the conic reference: the duals of its linking equality, defined for outputs the
        table leaves empty too). A polish (``solve_fast(polish=)``) certifies by it.
    """

    table: np.ndarray
    leakage_bits: float
    distortion: float
    multiplier: float
    gap_bits: float
    status: str
    solver: str
    message: str = ""
    info: dict = field(default_factory=dict)
    codebook: np.ndarray | None = None

    @property
    def lower_bound_bits(self) -> float:
        """A proven lower bound on the optimum of the program (bits)."""
        return max(self.leakage_bits - self.gap_bits, 0.0)
