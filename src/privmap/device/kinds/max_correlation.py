"""The ``max-correlation`` kind (seed 002).

Its parse and the pure-Python checks of P_X, rho_m^2 and the S* bound; it releases through the
table (:class:`~privmap.device.kinds.table.Bundle`).

The bundle has no private attribute; it carries ``p_x`` (the public marginal over its inputs)
and declares ``rho_m_squared`` (the maximal correlation of X and the released Y, squared) and
``s_star_upper_bound`` (a certified upper bound on S*(X;Y), the factor of the guarantee
I(S;Y) <= S* I(S;X)). The device recomputes both from the integer table and P_X:

- rho_m is the second singular value of Q = D_X^{1/2} W D_Y^{-1/2} (W = table / 2**B,
  P_Y = P_X W). Its top singular pair is known exactly (1; sqrt(P_X), sqrt(P_Y)), so rho_m^2 is
  the largest eigenvalue of the deflated M = Q^T Q - sqrt(P_Y) sqrt(P_Y)^T (|Y| x |Y|). It is
  found by cyclic Jacobi rotations, not power iteration: an optimised channel tends to make
  sigma_2 and sigma_3 (nearly) equal, where power iteration stalls. Jacobi stops when the
  off-diagonal norm is below ``OFF_DIAGONAL_TOLERANCE`` times the matrix norm (eigenvalues then
  exact to about that relative amount); a bundle on which it does not within ``MAX_SWEEPS`` is
  refused (fail closed). Cost O(|Y|^3) per sweep, so K_in <= ``MAX_MAXCORR_INPUTS``. The
  declared value must agree within ``RHO_TOLERANCE`` (absolute), in either direction.
- S* <= min(1, eta_TV(W), rho_m^2 / min P_X) (Dobrushin; Makur and Zheng). eta_TV is exact on
  the integers. The declared bound may not be below the recomputed one (beyond round-off), and
  ``s_star_verified = 1`` is accepted only where that bound meets rho_m^2.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import BundleFormatError, MetricsError
from ..format import Limits
from .table import parse_categorical_body, recompute

__all__ = [
    "MECHANISM", "MAXCORR_METRICS", "parse_body", "check_figures",
    "parse_p_x", "rho_m_squared_pure", "s_star_upper_pure", "check_max_correlation",
    "MAX_MAXCORR_INPUTS", "RHO_TOLERANCE", "P_X_MASS_TOLERANCE",
]

MECHANISM = "max-correlation"
#: Metrics a max-correlation bundle declares (in place of the table kinds' REQUIRED_METRICS).
MAXCORR_METRICS = ("rho_m_squared", "s_star_upper_bound", "s_star_verified", "distortion", "delta", "clusters",
                   "n")

#: Largest K_in (= K_out) of a max-correlation bundle (Jacobi is O(K^3) per sweep in pure Python).
MAX_MAXCORR_INPUTS = 64
#: Jacobi sweeps allowed, and the relative off-diagonal norm at which they stop.
MAX_SWEEPS = 60
OFF_DIAGONAL_TOLERANCE = 1e-13
#: Declared rho_m^2 must be within this of the recomputed value.
RHO_TOLERANCE = 1e-6
#: Slack on declared bounds and on the S* = rho_m^2 verification (absolute).
BOUND_SLACK = 1e-9
#: Tolerance on P_X's total mass.
P_X_MASS_TOLERANCE = 1e-6


def parse_p_x(obj: object, n_inputs: int) -> tuple[float, ...]:
    """Validate ``p_x``: n_inputs finite numbers > 0 summing to 1. Raises BundleFormatError."""
    if type(obj) is not list or len(obj) != n_inputs:
        raise BundleFormatError(f"p_x must be an array of {n_inputs} numbers")
    if n_inputs > MAX_MAXCORR_INPUTS:
        raise BundleFormatError(f"max-correlation bundles have at most {MAX_MAXCORR_INPUTS} inputs")
    for v in obj:
        if type(v) not in (int, float) or not math.isfinite(v) or not v > 0:
            raise BundleFormatError("p_x entries must be finite numbers > 0")
    total = math.fsum(obj)
    if not abs(total - 1.0) <= P_X_MASS_TOLERANCE:
        raise BundleFormatError(f"p_x must sum to 1 (within {P_X_MASS_TOLERANCE}), sums to {total!r}")
    return tuple(float(v) / total for v in obj)


def _channel(p_x: Sequence[float], index: Sequence[Sequence[int]], weight: Sequence[Sequence[int]], bits: int
             ) -> tuple[list[list[tuple[int, float]]], list[float]]:
    scale = 1.0 / (1 << bits)
    rows = [[(j, w * scale) for j, w in zip(idx, wt)] for idx, wt in zip(index, weight)]
    n_out = 1 + max(j for idx in index for j in idx)
    p_y = [0.0] * n_out
    for px, row in zip(p_x, rows):
        for j, w in row:
            p_y[j] += px * w
    return rows, p_y


def _jacobi_max_eigenvalue(m: list) -> float:
    """Largest eigenvalue of a symmetric matrix, by Jacobi rotations.

    Largest eigenvalue of the symmetric matrix ``m`` (list of lists; changed in place) by
    cyclic Jacobi rotations; raises MetricsError if off-diagonal mass does not vanish.
    """
    n = len(m)
    scale = math.fsum(m[i][j] ** 2 for i in range(n) for j in range(n))
    for _ in range(MAX_SWEEPS):
        off = math.fsum(m[i][j] ** 2 for i in range(n) for j in range(n) if i != j)
        if off <= OFF_DIAGONAL_TOLERANCE ** 2 * max(scale, 1e-300):
            return max(m[i][i] for i in range(n))
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = m[p][q]
                if apq == 0.0:
                    continue
                theta = (m[q][q] - m[p][p]) / (2.0 * apq)
                t = math.copysign(1.0, theta) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(n):  # columns p, q
                    mkp, mkq = m[k][p], m[k][q]
                    m[k][p], m[k][q] = c * mkp - s * mkq, s * mkp + c * mkq
                for k in range(n):  # rows p, q
                    mpk, mqk = m[p][k], m[q][k]
                    m[p][k], m[q][k] = c * mpk - s * mqk, s * mpk + c * mqk
    raise MetricsError("rho_m^2: the eigenvalue iteration did not converge; bundle refused")


def rho_m_squared_pure(p_x: Sequence[float], index: Sequence[Sequence[int]], weight: Sequence[Sequence[int]], bits: int) -> float:
    """rho_m(X;Y)^2 of the integer table on P_X (pure Python; module docstring).

    The largest eigenvalue of M = Q^T Q - sqrt(P_Y) sqrt(P_Y)^T, by cyclic Jacobi.
    Raises :class:`MetricsError` if it does not converge.
    """
    rows, p_y = _channel(p_x, index, weight, bits)
    n_out = len(p_y)
    q = [[(j, math.sqrt(px) * w / math.sqrt(p_y[j])) for j, w in row] for px, row in zip(p_x, rows)]
    top = [math.sqrt(v) for v in p_y]
    m = [[-top[a] * top[b] for b in range(n_out)] for a in range(n_out)]
    for row in q:
        for a, ca in row:
            for b, cb in row:
                m[a][b] += ca * cb
    return max(min(_jacobi_max_eigenvalue(m), 1.0), 0.0)


def s_star_upper_pure(p_x: Sequence[float], index: Sequence[Sequence[int]], weight: Sequence[Sequence[int]], bits: int,
                      rho2: float) -> float:
    """min(1, eta_TV(W), rho2 / min P_X); eta_TV exact from the integer weights."""
    total = 1 << bits
    dense = [dict(zip(idx, wt)) for idx, wt in zip(index, weight)]
    worst = 0
    for a in range(len(dense)):
        for b in range(a + 1, len(dense)):
            ra, rb = dense[a], dense[b]
            worst = max(worst, sum(abs(ra.get(j, 0) - rb.get(j, 0)) for j in set(ra) | set(rb)))
    return min(1.0, worst / (2 * total), rho2 / min(p_x))


def _hamming_distortion(p_x: Sequence[float], index: Sequence[Sequence[int]], weight: Sequence[Sequence[int]], bits: int,
                        inputs: Sequence[Sequence[object]], outputs: Sequence[Sequence[object]]) -> float:
    scale = 1.0 / (1 << bits)
    terms = []
    for px, x, idx, wt in zip(p_x, inputs, index, weight):
        for j, w in zip(idx, wt):
            terms.append(px * w * scale * sum(a != b for a, b in zip(x, outputs[j])))
    return math.fsum(terms)


def check_max_correlation(body: dict) -> None:
    """Recompute rho_m^2, the S* bound and the distortion; raise MetricsError on disagreement."""
    p_x, index, weight, bits = body["p_x"], body["index"], body["weight"], body["bits"]
    metrics = body["metrics"]
    rho2 = rho_m_squared_pure(p_x, index, weight, bits)
    declared = metrics["rho_m_squared"]
    if not abs(declared - rho2) <= RHO_TOLERANCE:
        raise MetricsError(f"declared rho_m_squared {declared!r} disagrees with the table's {rho2!r}")
    upper = s_star_upper_pure(p_x, index, weight, bits, rho2)
    if metrics["s_star_upper_bound"] < upper - BOUND_SLACK - RHO_TOLERANCE:
        raise MetricsError(f"declared s_star_upper_bound {metrics['s_star_upper_bound']!r} is below the "
                           f"certified bound {upper!r}")
    verified = metrics["s_star_verified"]
    if verified not in (0, 1) or type(verified) is not int:
        raise MetricsError("s_star_verified must be 0 or 1")
    if verified == 1 and upper > rho2 + BOUND_SLACK + RHO_TOLERANCE:
        raise MetricsError("s_star_verified = 1 but the certified bound on S* exceeds rho_m^2")
    distortion = _hamming_distortion(p_x, index, weight, bits, body["inputs"], body["outputs"])
    if metrics["distortion"] < distortion - max(1e-9 * distortion, 1e-12):
        raise MetricsError(f"declared distortion {metrics['distortion']!r} is below the table's {distortion!r}")


def parse_body(obj: dict, limits: Limits) -> dict:
    """The validated fields of a max-correlation payload after the header.

    Validate a max-correlation payload after the header: the categorical table fields and
    ``p_x`` (no private attribute, no prior). Raises BundleFormatError or TableError.
    """
    body = parse_categorical_body(obj, limits, MAXCORR_METRICS, "hamming")
    body.update(private_name=None, classes=(), prior=None, p_x=parse_p_x(obj["p_x"], len(body["inputs"])))
    return body


def check_figures(body: dict) -> None:
    """The declared figures of a parsed body (:func:`check_max_correlation`); raises MetricsError."""
    recompute(check_max_correlation, body)
