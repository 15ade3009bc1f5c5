"""Released rows chosen for utility: a privacy-aware Lloyd iteration.

Leakage I(A; C^) depends only on which output the table draws, not on what the
output holds, so at a fixed table every released row can be moved to the point
that minimises its expected distortion to the raw rows sent to it:

- ``l2`` (Euclidean distance): the weighted geometric median (Weiszfeld's iteration,
  started at the weighted mean),
- ``l1``: the per-column weighted median,
- ``hamming``: the per-column weighted mode,

then made domain-valid (integers rounded, values clipped to the observed range; the
cost of that rounding is measured). A new output is kept only where it lowers that
output's cost, so step A never raises the distortion and never touches the table.

Step B re-solves program (19) with the new distortion matrix
D'(c, j) = mean over raw rows b with psi(b) = c of d(b, y_j), at the budget the
current table now meets (or the perfect-privacy linear program when the build asked
for perfect privacy). The current table is feasible there, so the optimum leaks at
most as much; the new table is kept only if it leaks no more (up to
:data:`LEAKAGE_ROUNDOFF_BITS`) and distorts no more. The two steps alternate until the distortion stops falling.

The input representatives (what the device looks up) do not move; only the outputs
(what it releases) do, so a bundle's ``inputs`` and ``outputs`` become different points.

The module knows no metric itself: it is written against a raw-distance function and a
weighted-centre function (see :func:`metric_center`), so a masked distance for missing
cells can be passed in without changing it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.spatial.distance import cdist

from .._errors import InfeasibleError, SolverError
from .._information import expected_distortion, leakage_bits
from ..data._distortion import pairwise
from ..solvers._perfect import perfect_privacy_solution
from ..solvers._result import SolveResult
from ..solvers._solve import solve

#: d(X, Y) -> (n, m) distances between raw rows X (n, d) and points Y (m, d).
Distance = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: centre(X, W, Y0) -> (m, d): for each column j of weights W (n, m) the point minimising
#: sum_i W[i, j] d(X[i], y); Y0 (m, d) is the current point (a warm start).
Centre = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
#: project(Y) -> Y made valid for the service (rounded, clipped).
Project = Callable[[np.ndarray], np.ndarray]

#: Most alternations of steps A and B.
MAX_ITERATIONS = 12
#: Relative fall of the distortion below which the alternation stops.
RELATIVE_TOLERANCE = 1e-4
#: Round-off allowed when comparing a re-solved table's leakage with the current one (bits).
LEAKAGE_ROUNDOFF_BITS = 1e-9
_WEISZFELD_STEPS = 40


@dataclass(frozen=True)
class Codebook:
    """Result of :func:`refine`.

    Attributes
    ----------
    outputs : ndarray, shape (K_out, d)
        Released rows, domain-valid.
    table : ndarray, shape (K_in, K_out)
        Row-stochastic mapping for these outputs.
    distortion_matrix : ndarray, shape (K_in, K_out)
        D'(c, j), mean raw distance from the rows of input c to output j (metric's unit).
    distortion : float
        E_p D'(C, C^) of ``table`` on the prior (metric's unit).
    leakage_bits : float
        I(A; C^) of ``table`` on the prior, in bits.
    start_distortion, start_leakage_bits : float
        The same figures for the table and outputs the step started from.
    rounding_cost : float
        Expected distortion added by making the last moved outputs domain-valid
        (>= 0 for a true optimum; reported, not a bound).
    iterations : int
        Alternations run (at most :data:`MAX_ITERATIONS`).
    history : list of (leakage_bits, distortion)
        After each alternation; both non-increasing.
    solved : SolveResult or None
        The last re-solve that was kept (its solver, multiplier and gap), None when
        every re-solve was refused and ``table`` is the starting table.
    """

    outputs: np.ndarray
    table: np.ndarray
    distortion_matrix: np.ndarray
    distortion: float
    leakage_bits: float
    start_distortion: float
    start_leakage_bits: float
    rounding_cost: float
    iterations: int
    history: list
    solved: SolveResult | None


def conditional_distortion(X: np.ndarray, labels: np.ndarray, n_inputs: int, outputs: np.ndarray,
                           distance: Distance) -> np.ndarray:
    """D'(c, j): mean of d(b, y_j) over raw rows b with psi(b) = c; shape (n_inputs, K_out).

    An input with no row gets zeros (the quantizer drops such inputs, so this does
    not occur in a build).
    """
    total = np.zeros((n_inputs, outputs.shape[0]))
    np.add.at(total, labels, distance(X, outputs))
    counts = np.bincount(labels, minlength=n_inputs)[:, None]
    return total / np.where(counts > 0, counts, 1)


def move_outputs(X: np.ndarray, weights: np.ndarray, outputs: np.ndarray, *, distance: Distance,
                 centre: Centre, project: Project) -> tuple[np.ndarray, float]:
    """Step A: each output to its weighted optimum, kept only where that lowers its cost.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Raw rows.
    weights : ndarray, shape (n, K_out)
        Mass each row sends to each output (its share of the prior times q(j | psi(b))).
    outputs : ndarray, shape (K_out, d)
        Current released rows.

    Returns
    -------
    (outputs, rounding_cost)
        New released rows (shape (K_out, d)) and the weighted cost the projection
        added to the moved outputs' optima (in the metric's unit, summed over outputs).
    """
    current = np.sum(weights * distance(X, outputs), axis=0)
    optimum = centre(X, weights, outputs)
    valid = project(optimum)
    exact_cost = np.sum(weights * distance(X, optimum), axis=0)
    valid_cost = np.sum(weights * distance(X, valid), axis=0)
    better = valid_cost < current - 1e-12 * np.maximum(current, 1.0)
    moved = np.where(better[:, None], valid, outputs)
    return moved, float(np.sum((valid_cost - exact_cost)[better]))


def refine(X: np.ndarray, labels: np.ndarray, p_ac: np.ndarray, table: np.ndarray, outputs: np.ndarray, *,
           distance: Distance, centre: Centre, project: Project, perfect: bool = False, solver: str = "fast",
           tol_bits: float = 1e-5, max_iterations: int = MAX_ITERATIONS,
           progress: Callable[[float], None] | None = None) -> Codebook:
    """Alternate step A (move outputs) and step B (re-solve) until the distortion stops falling.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Raw rows of the build data.
    labels : ndarray of int, shape (n,)
        psi(b), the input symbol of each row.
    p_ac : ndarray, shape (n_private, K_in)
        The build's prior (the distortion and leakage are measured on it).
    table : ndarray, shape (K_in, K_out)
        The solved mapping to start from.
    outputs : ndarray, shape (K_out, d)
        Its released rows.
    distance, centre, project : callables
        See :data:`Distance`, :data:`Centre`, :data:`Project` and :func:`metric_center`.
    perfect : bool
        Re-solve with the perfect-privacy linear program (zero leakage) instead of program (19).
    solver, tol_bits : as :func:`privmap.offline.solvers.solve`.
    max_iterations : int
        Cap on the alternations (the loop always terminates).

    Raises
    ------
    SolverError
        Only from the perfect-privacy linear program (a failed program (19) re-solve
        keeps the current table).
    """
    X = np.asarray(X, dtype=float)
    labels = np.asarray(labels, dtype=np.int64)
    p_c = p_ac.sum(axis=0)
    n_in = p_ac.shape[1]
    per_row = (p_c / np.maximum(np.bincount(labels, minlength=n_in), 1))[labels]   # prior mass of each row
    outputs = np.asarray(outputs, dtype=float)
    table = np.asarray(table, dtype=float)
    D = conditional_distortion(X, labels, n_in, outputs, distance)
    dist = start_dist = expected_distortion(p_c, table, D)
    leak = start_leak = leakage_bits(p_ac, table)
    history, rounding, accepted = [], 0.0, None
    iterations = 0
    for iterations in range(1, max_iterations + 1):
        outputs, rounding = move_outputs(X, table[labels] * per_row[:, None], outputs, distance=distance,
                                         centre=centre, project=project)
        D = conditional_distortion(X, labels, n_in, outputs, distance)
        moved_dist = expected_distortion(p_c, table, D)
        candidate = _resolve(p_ac, D, moved_dist, perfect=perfect, solver=solver, tol_bits=tol_bits)
        if candidate is not None:
            new_leak = leakage_bits(p_ac, candidate.table)
            new_dist = expected_distortion(p_c, candidate.table, D)
            if new_leak <= leak + LEAKAGE_ROUNDOFF_BITS and new_dist <= moved_dist * (1 + 1e-12):
                table, leak, moved_dist, accepted = candidate.table, new_leak, new_dist, candidate
        fell = dist - moved_dist
        dist = min(dist, moved_dist)
        history.append((leak, dist))
        if progress:
            progress(iterations / max_iterations)
        if fell <= RELATIVE_TOLERANCE * max(dist, 1e-300):
            break
    return Codebook(outputs=outputs, table=table, distortion_matrix=D, distortion=dist, leakage_bits=leak,
                    start_distortion=start_dist, start_leakage_bits=start_leak, rounding_cost=rounding,
                    iterations=iterations, history=history, solved=accepted)


def _resolve(p_ac, D, budget, *, perfect, solver, tol_bits) -> SolveResult | None:
    """Step B's solution, or None when program (19)'s solver fails."""
    if perfect:
        return perfect_privacy_solution(p_ac, D)
    try:
        return solve(p_ac, D, budget, solver=solver, tol_bits=tol_bits)
    except (InfeasibleError, SolverError):
        return None


# --------------------------------------------------------------------------- the metrics' optima

def metric_center(metric: str, *, integer: np.ndarray, lo: np.ndarray, hi: np.ndarray
                  ) -> tuple[Distance, Centre, Project]:
    """The raw distance, weighted optimum and domain projection of a quantized metric.

    Parameters
    ----------
    metric : {"l2", "l1", "hamming"}
    integer : ndarray of bool, shape (d,)
        Columns whose released values must be integers.
    lo, hi : ndarray, shape (d,)
        Each column's domain (declared or inferred); released values are clipped to it.

    Raw rows may hold NaN for missing answers: distances and optima are taken over each row's
    observed cells, as under the builder's "mask" policy and the device's lookup.

    Raises
    ------
    ValueError
        Unknown metric.
    """
    centres = {"l2": _geometric_median, "l1": _weighted_median, "hamming": _weighted_mode}
    if metric not in centres:
        raise ValueError(f"no codebook optimum for metric {metric!r}; expected one of {', '.join(centres)}")

    def distance(X, Y):
        return pairwise(X, Y, metric)

    def project(Y):
        return np.clip(np.where(integer, np.round(Y), Y), lo, hi)

    return distance, centres[metric], project


def _weighted_mean(X, W, Y0):
    """Per column, the W-weighted mean of the observed (non-NaN) cells; Y0 where none has weight."""
    observed = ~np.isnan(X)
    total = W.T @ observed                                   # (m, d) weight of observed cells
    sums = W.T @ np.where(observed, X, 0.0)
    return np.where(total > 0, sums / np.where(total > 0, total, 1.0), Y0)


def _geometric_median(X, W, Y0):
    """Weiszfeld's iteration for every column of W at once, from the weighted mean; distances over
    each row's observed cells (a missing cell is skipped, as the device skips it)."""
    Y = _weighted_mean(X, W, Y0)
    complete = not np.isnan(X).any()
    for _ in range(_WEISZFELD_STEPS):
        # BLAS-speed distances on complete data: only the iterate, not a release
        dist = cdist(X, Y) if complete else pairwise(X, Y, "l2")
        Y = _weighted_mean(X, W / np.maximum(dist, 1e-9), Y)
    return Y


def _weighted_median(X, W, Y0):
    """Per column, over its observed cells, the lowest value where the cumulative weight reaches
    half the total."""
    Y = np.array(Y0, dtype=float, copy=True)
    for k in range(X.shape[1]):
        rows = np.flatnonzero(~np.isnan(X[:, k]))
        column, weights = X[rows, k], W[rows]
        total = weights.sum(axis=0)
        has = total > 0
        order = np.argsort(column, kind="stable")
        cum = np.cumsum(weights[order], axis=0)
        at = np.argmax(cum >= 0.5 * total[None, :], axis=0)
        Y[has, k] = column[order[at[has]]]
    return Y


def _weighted_mode(X, W, Y0):
    """Per column, over its observed cells, the value carrying the most weight (ties to the
    smallest value)."""
    Y = np.array(Y0, dtype=float, copy=True)
    for k in range(X.shape[1]):
        rows = np.flatnonzero(~np.isnan(X[:, k]))
        if rows.size == 0:
            continue
        values, codes = np.unique(X[rows, k], return_inverse=True)
        scores = np.zeros((values.size, W.shape[1]))
        np.add.at(scores, codes.reshape(-1), W[rows])
        has = W[rows].sum(axis=0) > 0
        Y[has, k] = values[np.argmax(scores, axis=0)[has]]
    return Y
