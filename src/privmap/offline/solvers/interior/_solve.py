"""The entry point: the primal-dual interior point, and the log barrier where it fails."""
from __future__ import annotations

from typing import Callable

from threadpoolctl import threadpool_limits

from .._result import SolveResult
from ._barrier import barrier
from ._primal_dual import primal_dual
from ._program import LN2, instance


def solve_interior(p_ac, distortion, delta, *, tol_bits: float = 1e-5,
                   progress: Callable[[float], None] | None = None) -> SolveResult:
    """Program (19) by an interior point on every pair: Mehrotra's primal-dual point
    (:mod:`._primal_dual`), or where it fails the log barrier (:mod:`._barrier`), slower and
    steadier.

    Parameters
    ----------
    p_ac : array_like, shape (n_private, K)
        Joint prior p(a, c).
    distortion : array_like, shape (K, K_out)
        d(c, c_hat), finite on every row with mass.
    delta : float
        Budget on the expected distortion, above the least any table reaches.
    tol_bits : float, keyword-only
        The gap (bits) the polish certifies; the points stop on their own estimate of it. The
        answer is not certified here.
    progress : callable(float) or None, keyword-only
        Called with the fraction of the path done (the barrier's, after a failed primal-dual
        point, from where that one stopped).

    Returns
    -------
    SolveResult
        ``table`` (K, K_out) (rows without mass on their cheapest output) with its leakage and
        distortion, which is within ``delta`` up to the path's round-off (a millionth of it at
        most; the polish mixes the table to meet the budget exactly), ``multiplier`` (bits per
        unit distortion), ``codebook`` (n_private, K_out), ``gap_bits`` = inf, ``solver``
        ``"interior-primal-dual"`` or ``"interior-barrier"`` (with ``info["primal_dual"]``, how the
        primal-dual path ended).

    Raises
    ------
    ValueError
        Malformed instance (:func:`.._problem.check_instance`).
    InfeasibleError
        ``delta`` below the least distortion.
    SolverError
        An instance neither point takes (:func:`._program.instance`: a forbidden pair on a row
        with mass, a budget equal to the least distortion, more than
        :data:`._program.MAX_ENTRIES` entries), or both points failed.
    """
    inst = instance(p_ac, distortion, delta)
    done = [0.0]

    def tracked(fraction: float) -> None:
        done[0] = fraction
        if progress is not None:
            progress(fraction)

    with threadpool_limits(limits=1):     # small products: BLAS threads spin (see fast._solver)
        result, message = primal_dual(inst, tol_bits * LN2, tracked)
        if result is not None:
            return result
        first = done[0]
        result = barrier(inst, tol_bits * LN2,
                         None if progress is None else (lambda fraction: progress(first + (1 - first) * fraction)))
    result.info["primal_dual"] = message
    return result
