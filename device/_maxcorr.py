"""Pure-Python checks of a ``max-correlation`` bundle (seed 002): P_X, rho_m^2 and the S* bound.

The bundle has no private attribute; it carries ``p_x`` (the public marginal over its inputs)
and declares ``rho_m_squared`` (the maximal correlation of X and the released Y, squared) and
``s_star_upper_bound`` (a certified upper bound on S*(X;Y), the factor of the guarantee
I(S;Y) <= S* I(S;X)). The device recomputes both from the integer table and P_X:

- rho_m is the second singular value of Q = D_X^{1/2} W D_Y^{-1/2} (W = table / 2**B,
  P_Y = P_X W). Its top singular pair is known exactly (1; sqrt(P_X), sqrt(P_Y)), so rho_m^2 is
  the largest eigenvalue of M = Q^T Q - sqrt(P_Y) sqrt(P_Y)^T, found by power iteration from a
  fixed start, re-orthogonalised against sqrt(P_Y) at every step. It stops when the residual
  ||M v - lambda v|| is at most ``RESIDUAL_TOLERANCE``; a bundle on which it does not stop within
  ``MAX_ITERATIONS`` is refused (fail closed). The declared value must agree within
  ``RHO_TOLERANCE`` (absolute), in either direction.
- S* <= min(1, eta_TV(W), rho_m^2 / min P_X) (Dobrushin; Makur and Zheng). eta_TV is exact on
  the integers. The declared bound may not be below the recomputed one (beyond round-off), and
  ``s_star_verified = 1`` is accepted only where that bound meets rho_m^2.
"""
from __future__ import annotations

import math

from ._errors import BundleFormatError, MetricsError

__all__ = [
    "parse_p_x", "rho_m_squared_pure", "s_star_upper_pure", "check_max_correlation",
    "MAX_MAXCORR_INPUTS", "RHO_TOLERANCE", "P_X_MASS_TOLERANCE",
]

#: Largest K_in of a max-correlation bundle (the S* bound is O(K^2 |Y|), power iteration O(nnz)).
MAX_MAXCORR_INPUTS = 256
#: Power-iteration budget and stopping residual.
MAX_ITERATIONS = 5000
RESIDUAL_TOLERANCE = 1e-10
#: Declared rho_m^2 must be within this of the recomputed value.
RHO_TOLERANCE = 1e-6
#: Slack on declared bounds and on the S* = rho_m^2 verification (absolute).
BOUND_SLACK = 1e-9
#: Tolerance on P_X's total mass.
P_X_MASS_TOLERANCE = 1e-6


def parse_p_x(obj, n_inputs: int) -> tuple[float, ...]:
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


def _channel(p_x, index, weight, bits):
    scale = 1.0 / (1 << bits)
    rows = [[(j, w * scale) for j, w in zip(idx, wt)] for idx, wt in zip(index, weight)]
    n_out = 1 + max(j for idx in index for j in idx)
    p_y = [0.0] * n_out
    for px, row in zip(p_x, rows):
        for j, w in row:
            p_y[j] += px * w
    return rows, p_y


def rho_m_squared_pure(p_x, index, weight, bits) -> float:
    """rho_m(X;Y)^2 of the integer table on P_X, by deflated power iteration (module docstring).

    Raises :class:`MetricsError` if the iteration does not converge.
    """
    rows, p_y = _channel(p_x, index, weight, bits)
    n_out = len(p_y)
    # sparse Q: per input x, (output j, Q[x][j])
    q = [[(j, math.sqrt(px) * w / math.sqrt(p_y[j])) for j, w in row] for px, row in zip(p_x, rows)]
    top = [math.sqrt(v) for v in p_y]

    def deflate(v):
        dot = math.fsum(a * b for a, b in zip(v, top))
        return [a - dot * b for a, b in zip(v, top)]

    def apply(v):  # M v = Q^T (Q v) - top (top . v); v is kept orthogonal to top
        qv = [math.fsum(c * v[j] for j, c in row) for row in q]
        out = [0.0] * n_out
        for row, s in zip(q, qv):
            for j, c in row:
                out[j] += c * s
        return deflate(out)

    v = deflate([1.0 + ((7919 * (j + 1)) % 104729) / 104729.0 for j in range(n_out)])
    norm = math.sqrt(math.fsum(a * a for a in v))
    if norm == 0.0:
        return 0.0
    v = [a / norm for a in v]
    for _ in range(MAX_ITERATIONS):
        mv = apply(v)
        lam = math.fsum(a * b for a, b in zip(v, mv))
        residual = math.sqrt(math.fsum((a - lam * b) ** 2 for a, b in zip(mv, v)))
        norm = math.sqrt(math.fsum(a * a for a in mv))
        if residual <= RESIDUAL_TOLERANCE or norm <= RESIDUAL_TOLERANCE:
            return max(min(lam, 1.0), 0.0)
        v = [a / norm for a in mv]
    raise MetricsError("rho_m^2: power iteration did not converge; bundle refused")


def s_star_upper_pure(p_x, index, weight, bits, rho2: float) -> float:
    """min(1, eta_TV(W), rho2 / min P_X); eta_TV exact from the integer weights."""
    total = 1 << bits
    dense = [dict(zip(idx, wt)) for idx, wt in zip(index, weight)]
    worst = 0
    for a in range(len(dense)):
        for b in range(a + 1, len(dense)):
            ra, rb = dense[a], dense[b]
            worst = max(worst, sum(abs(ra.get(j, 0) - rb.get(j, 0)) for j in set(ra) | set(rb)))
    return min(1.0, worst / (2 * total), rho2 / min(p_x))


def _hamming_distortion(p_x, index, weight, bits, inputs, outputs) -> float:
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
