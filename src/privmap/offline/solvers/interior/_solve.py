"""The entry point: the primal-dual interior point, and the log barrier where it fails.

On every output, or by column generation over the outputs from a few offered ones
(:mod:`._columns`).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from ..._errors import SolverError
from .._result import SolveResult
from ._barrier import barrier
from ._columns import LOSS, MAX_ROUNDS, MIN_OUTPUTS, MOST_SHARE, priced, restricted_outputs, sub_instance
from ._primal_dual import primal_dual
from ._program import LN2, Instance, instance


def solve_interior(p_ac, distortion, delta, *, tol_bits: float = 1e-5,
                   progress: Callable[[float], None] | None = None, start_outputs=None) -> SolveResult:
    """Program (19) by an interior point.

    Mehrotra's primal-dual point (:mod:`._primal_dual`), or where it fails the log barrier
    (:mod:`._barrier`), slower and steadier; on every pair, or with ``start_outputs`` by column
    generation over the outputs (:mod:`._columns`).

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
        Called with the fraction of the work done, never decreasing.
    start_outputs : array_like of int or None, keyword-only
        Indices of the outputs to solve on first (a build offers its Delta0 table's); the others
        are priced and join where they would lower the bound. Where that takes more than
        :data:`._columns.MAX_ROUNDS` rounds or :data:`._columns.MOST_SHARE` of the outputs, the
        point runs on every output (``info["columns"]`` says so), and so it does where neither
        point solves a restricted program (``info["columns"]["failure"]`` says why). None, or
        fewer than :data:`MIN_OUTPUTS` outputs: every output from the start.

    Returns
    -------
    SolveResult
        ``table`` (K, K_out) (rows without mass on their cheapest output) with its leakage and
        distortion, which is within ``delta`` up to the path's round-off (a millionth of it at
        most; the polish mixes the table to meet the budget exactly), ``multiplier`` (bits per
        unit distortion), ``codebook`` (n_private, K_out), ``gap_bits`` = inf, ``solver``
        ``"interior-primal-dual"`` or ``"interior-barrier"`` (with ``info["primal_dual"]``, how the
        primal-dual path ended), ``info["newton_steps"]`` (all rounds) and, with ``start_outputs``,
        ``info["columns"]``: ``rounds`` (restricted programs), ``outputs`` (those of the last
        program solved) and ``whole`` (True where the point ran on every output at the end).

    Raises
    ------
    ValueError
        Malformed instance (:func:`.._problem.check_instance`), or an output index out of range.
    InfeasibleError
        ``delta`` below the least distortion.
    SolverError
        An instance neither point takes (:func:`._program.instance`: a forbidden pair on a row
        with mass, a budget equal to the least distortion, more than
        :data:`._program.MAX_ENTRIES` entries), or both points failed.
    """
    inst = instance(p_ac, distortion, delta)
    tol, K_out = tol_bits * LN2, inst.D.shape[1]
    offered = None if start_outputs is None else _indices(start_outputs, K_out)
    with threadpool_limits(limits=1):     # small products: BLAS threads spin (see fast._solver)
        if offered is None or K_out < MIN_OUTPUTS:
            return point(inst, tol, progress)
        kept = restricted_outputs(inst, offered)
        rounds, steps = _Rounds(progress), 0
        columns: dict[str, int | bool | str] = {"rounds": 0, "outputs": 0, "whole": False}
        try:
            for done in range(1, MAX_ROUNDS + 1):
                if kept.size > MOST_SHARE * K_out:
                    break
                columns.update(rounds=done, outputs=int(kept.size))
                restricted = point(sub_instance(p_ac, inst, kept), tol, rounds.next())
                steps += restricted.info.get("newton_steps", 0)
                answer, kept = priced(inst, kept, restricted, LOSS * tol)
                if answer is not None:
                    answer.info.update(newton_steps=steps, columns=columns)
                    return answer
        except SolverError as failure:         # a restricted program neither point solved
            columns["failure"] = str(failure)
        result = point(inst, tol, rounds.next())
        result.info.update(newton_steps=steps + result.info.get("newton_steps", 0),
                           columns={**columns, "outputs": K_out, "whole": True})
        return result


def point(inst: Instance, tol: float, progress: Callable[[float], None] | None) -> SolveResult:
    """The primal-dual point on ``inst``, or where it fails the log barrier from where its progress stopped.

    ``tol`` in nats. Raises SolverError where both fail.
    """
    done = [0.0]

    def tracked(fraction: float) -> None:
        done[0] = fraction
        if progress is not None:
            progress(fraction)

    result, message = primal_dual(inst, tol, tracked)
    if result is not None:
        return result
    first = done[0]
    result = barrier(inst, tol, None if progress is None else (lambda fraction: progress(first + (1 - first) * fraction)))
    result.info["primal_dual"] = message
    return result


class _Rounds:
    """The progress of successive solves as one never-decreasing fraction.

    The k-th (from 0) maps its own [0, 1] to [1 - 2^-k, 1 - 2^-(k + 1)].
    """

    def __init__(self, progress: Callable[[float], None] | None):
        self._progress, self._k = progress, 0

    def next(self) -> Callable[[float], None] | None:
        if self._progress is None:
            return None
        low, width, self._k = 1.0 - 0.5 ** self._k, 0.5 ** (self._k + 1), self._k + 1
        report = self._progress
        return lambda fraction: report(low + width * fraction)


def _indices(start_outputs, K_out: int) -> np.ndarray:
    """``start_outputs`` as an int array of indices in [0, K_out); raises ValueError otherwise."""
    given = np.asarray(start_outputs)
    if given.ndim != 1 or (given.size and not np.issubdtype(given.dtype, np.integer)):
        raise ValueError("start_outputs must be a one-dimensional array of output indices")
    if given.size and (given.min() < 0 or given.max() >= K_out):
        raise ValueError(f"start_outputs must index the distortion's {K_out} columns")
    return given.astype(np.int64)
