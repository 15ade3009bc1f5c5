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
:data:`LEAKAGE_ROUNDOFF_BITS`) and distorts no more. The two steps alternate until the distortion stops falling;
step B is skipped (and the alternation ends) when step A lowered the distortion by less than
:data:`RELATIVE_TOLERANCE` of it: a re-solve held to that budget cannot lower the distortion, and
only a leakage gain on the new D' is given up for the cost of a whole solve.

The input representatives (what the device looks up) do not move; only the outputs
(what it releases) do, so a bundle's ``inputs`` and ``outputs`` become different points.

The module knows no metric itself: it is written against a raw-distance function and a
weighted-centre function (see :func:`metric_center`), so a masked distance for missing
cells can be passed in without changing it.

Cost. Step A's weights are sparse: row b reaches output j only where q(j | psi(b)) > 0, so
the optima are taken over :class:`Pairs` (one entry per (row, output) the table joins, with
weight p(psi(b)) / n_psi(b) * q(j | psi(b))): the work is proportional to
sum over the table's non-zeros (c, j) of the rows of c, not n x K_out (UCI Adult, K = 1024,
0.5 x Delta0: 1.8 million pairs against 50 million). Step B needs every entry of D' (the
solver may use any pair): it is computed once in blocks of bounded memory (no (n, K_out)
matrix) and then only for the columns of outputs that moved. The alternation stops when
an alternation lowers the distortion by less than :data:`RELATIVE_TOLERANCE` of it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from ..._errors import InfeasibleError, SolverError
from ..._information import expected_distortion, leakage_bits
from ..._rows import unique_rows
from ...data import assigned_distance, block_shape, pairwise
from ...solvers import SolveResult, perfect_privacy_solution, solve, starts_from_conic, starts_from_interior

#: d(X, Y) -> (n, m) distances between raw rows X (n, d) and points Y (m, d).
Distance = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: centre(X, W, Y0) -> (m, d): for each output j the point minimising sum_i W[i, j] d(X[i], y),
#: W given dense (n, m) or as :class:`Pairs`; Y0 (m, d) is the current point (a warm start,
#: kept for an output with no weight).
Centre = Callable[[np.ndarray, "np.ndarray | Pairs", np.ndarray], np.ndarray]
#: project(Y) -> Y made valid for the service (rounded, clipped).
Project = Callable[[np.ndarray], np.ndarray]

#: Most alternations of steps A and B.
MAX_ITERATIONS = 12
#: The alternation stops after one that lowers the distortion by less than this fraction of it.
#: On UCI Adult (K = 1024, 0.5 x Delta0) the first alternation gave nearly all the gain and the
#: next two 0.1 % together (175.04 -> 174.87) at 2 x 40 s: 1e-3 stops there.
RELATIVE_TOLERANCE = 1e-3
#: Round-off allowed when comparing a re-solved table's leakage with the current one (bits).
LEAKAGE_ROUNDOFF_BITS = 1e-9
#: Most Weiszfeld steps per geometric median.
WEISZFELD_STEPS = 40
#: Weiszfeld's iteration stops when no output moved by more than this fraction of
#: (1 + its largest coordinate) in a step (each step lowers the cost; the rest is refinement
#: far below the rounding to the domain).
WEISZFELD_TOLERANCE = 1e-6
#: Cells (pairs x columns) of one chunk of a Weiszfeld step's distances: about 1 MiB per float64 temporary.
WEISZFELD_CHUNK_CELLS = 1 << 17
#: Passes of Weiszfeld's iteration in the step read in passes (:func:`refine_in_passes`), after the
#: weighted-mean pass.
WEISZFELD_PASSES = 3
#: Table entries at or below this are left out of :func:`refine_in_passes`' weights (a solver's table is
#: dense with vanishing entries; at most K_out x this of a row's mass is ignored when choosing where
#: outputs move).
SUPPORT_FLOOR = 1e-9


@dataclass(frozen=True)
class Pairs:
    """Sparse weights of raw rows on outputs.

    Pair p gives row ``rows[p]`` weight ``weights[p]`` on output ``outs[p]`` (int64, int64,
    float arrays of shape (P,)); ``n_outputs`` is m.

    The sparse form of a dense (n, m) weight matrix (its non-zero entries).
    """

    rows: np.ndarray
    outs: np.ndarray
    weights: np.ndarray
    n_outputs: int

    @classmethod
    def from_dense(cls, W: np.ndarray) -> Pairs:
        """The non-zero entries of W (n, m)."""
        W = np.asarray(W, dtype=float)
        rows, outs = np.nonzero(W)
        return cls(rows, outs, W[rows, outs], W.shape[1])

    @classmethod
    def from_table(cls, labels: np.ndarray, table: np.ndarray, row_mass: np.ndarray) -> Pairs:
        """The pairs of rows and outputs a table's non-zeros give.

        Row b on output j with weight ``row_mass[b] * table[labels[b], j]``, for the table's
        non-zeros only: labels (n,), table (K_in, K_out), row_mass (n,).
        """
        labels = np.asarray(labels, dtype=np.int64)
        order = np.argsort(labels, kind="stable")
        counts = np.bincount(labels, minlength=table.shape[0])
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        c, j = np.nonzero(table)
        sizes = counts[c]
        which = np.repeat(np.arange(c.size), sizes)                    # the non-zero of each pair
        offset = np.arange(which.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        rows = order[starts[c][which] + offset]
        return cls(rows, j[which], row_mass[rows] * table[c, j][which], table.shape[1])

    def of_outputs(self, chosen: np.ndarray) -> Pairs:
        """The pairs of the outputs where ``chosen`` (bool, shape (m,)) is set, in their order.

        Their :meth:`per_output` sums are bitwise those over all pairs (others get 0).
        """
        keep = chosen[self.outs]
        return Pairs(self.rows[keep], self.outs[keep], self.weights[keep], self.n_outputs)

    def per_output(self, values: np.ndarray) -> np.ndarray:
        """The sum over pairs of ``values`` (P,) by output, shape (m,)."""
        return np.bincount(self.outs, weights=values, minlength=self.n_outputs)


def _as_pairs(W: np.ndarray | Pairs) -> Pairs:
    return W if isinstance(W, Pairs) else Pairs.from_dense(W)


class MetricDistance:
    """The raw distance of a quantized metric, on matrices and on pairs.

    d(X, Y) -> (n, m) of a quantized metric (masked over NaN cells of X), with the same
    distance on pairs: ``pairs(X, Y, rows, outs)`` = d(X[rows[p]], Y[outs[p]]), shape (P,).
    """

    def __init__(self, metric: str):
        self.metric = metric

    def __call__(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return pairwise(X, Y, self.metric)

    def pairs(self, X: np.ndarray, Y: np.ndarray, rows: np.ndarray, outs: np.ndarray) -> np.ndarray:
        return assigned_distance(X, Y, outs, self.metric, rows=rows)


def _pair_distance(distance: Distance, X: np.ndarray, Y: np.ndarray, pairs: Pairs) -> np.ndarray:
    """d(X[rows[p]], Y[outs[p]]) for every pair, shape (P,), without an (n, m) matrix."""
    if isinstance(distance, MetricDistance):
        return distance.pairs(X, Y, pairs.rows, pairs.outs)
    out = np.empty(pairs.rows.size)
    for j in np.unique(pairs.outs):              # any other distance: one output at a time
        at = np.flatnonzero(pairs.outs == j)
        out[at] = distance(X[pairs.rows[at]], Y[j:j + 1])[:, 0]
    return out


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

    def solve_result(self, start: SolveResult) -> SolveResult:
        """The step's table as a :class:`~privmap.offline.solvers.SolveResult`.

        Its leakage and distortion, with the solver, multiplier and gap of the last kept
        re-solve (``start``, the solve the step began from, when none was kept).
        """
        last = self.solved or start
        return SolveResult(table=self.table, leakage_bits=self.leakage_bits, distortion=self.distortion,
                           multiplier=last.multiplier, gap_bits=last.gap_bits, status="optimal", solver=last.solver,
                           message=last.message)


def conditional_distortion(X: np.ndarray, labels: np.ndarray, n_inputs: int, outputs: np.ndarray,
                           distance: Distance, *, multiplicity: np.ndarray | None = None) -> np.ndarray:
    """D'(c, j): mean of d(b, y_j) over raw rows b with psi(b) = c; shape (n_inputs, K_out).

    ``multiplicity`` (n,), optional: how many raw rows each row of X stands for (X holding each
    distinct row once); default 1 each. Computed in blocks of rows whose (rows, K_out)
    distances fit the nearest search's block limit
    (:func:`privmap.offline.data.block_shape`), summed per input by a sparse
    product: no (n, K_out) matrix. An input with no row gets zeros (the quantizer drops such
    inputs, so this does not occur in a build).
    """
    labels = np.asarray(labels, dtype=np.int64)
    n = labels.size
    weight = np.ones(n) if multiplicity is None else np.asarray(multiplicity, dtype=float)
    counts = np.bincount(labels, weights=weight, minlength=n_inputs)
    mean = sparse.csc_matrix((weight / counts[labels], (labels, np.arange(n))), shape=(n_inputs, n))
    total = np.zeros((n_inputs, outputs.shape[0]))
    rows = block_shape(n, max(1, outputs.shape[0]), temporaries=6)[0]
    for r0 in range(0, n, rows):
        total += mean[:, r0:r0 + rows] @ distance(X[r0:r0 + rows], outputs)
    return total


def move_outputs(X: np.ndarray, weights: np.ndarray | Pairs, outputs: np.ndarray, *, distance: Distance,
                 centre: Centre, project: Project) -> tuple[np.ndarray, float]:
    """Step A: each output to its weighted optimum, kept only where that lowers its cost.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Raw rows.
    weights : ndarray of shape (n, K_out), or Pairs
        Mass each row sends to each output (its share of the prior times q(j | psi(b))); the
        work is proportional to its non-zeros.
    outputs : ndarray, shape (K_out, d)
        Current released rows.

    Returns
    -------
    (outputs, rounding_cost)
        New released rows (shape (K_out, d)) and the weighted cost the projection
        added to the moved outputs' optima (in the metric's unit, summed over outputs).
    """
    pairs = _as_pairs(weights)

    def cost(Y: np.ndarray, of: Pairs = pairs) -> np.ndarray:
        return of.per_output(of.weights * _pair_distance(distance, X, Y, of))

    current = cost(outputs)
    optimum = centre(X, pairs, outputs)
    valid = project(optimum)
    valid_cost = cost(valid)
    better = valid_cost < current - 1e-12 * np.maximum(current, 1.0)
    moved = np.where(better[:, None], valid, outputs)
    exact_cost = cost(optimum, pairs.of_outputs(better))       # the rounding of the moved outputs only
    return moved, float(np.sum((valid_cost - exact_cost)[better]))


def refine(X: np.ndarray, labels: np.ndarray, p_ac: np.ndarray, table: np.ndarray, outputs: np.ndarray, *,
           distance: Distance, centre: Centre, project: Project, perfect: bool = False, solver: str = "fast",
           tol_bits: float = 1e-5, max_iterations: int = MAX_ITERATIONS, tolerance: float = RELATIVE_TOLERANCE,
           progress: Callable[[float], None] | None = None, warm_start: SolveResult | None = None) -> Codebook:
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
    tolerance : float
        Stop after an alternation that lowers the distortion by less than this fraction of it
        (default :data:`RELATIVE_TOLERANCE`).
    warm_start : SolveResult or None, keyword-only
        The solve that gave ``table``. When given, the first re-solve of the fast solver starts
        from it and each later one from the previous re-solve (``solve_fast(warm_start=)``):
        moving the outputs changes D a little, so the previous duals and pairs are close. A
        warm-started re-solve is certified to the same optimum within ``tol_bits``; its table may
        differ from a cold one's in the last digits. None: every re-solve starts cold.

    Raises
    ------
    SolverError
        Only from the perfect-privacy linear program (a failed program (19) re-solve
        keeps the current table).
    """
    X, labels, times = _distinct_rows(np.asarray(X, dtype=float), np.asarray(labels, dtype=np.int64))
    p_c = p_ac.sum(axis=0)
    n_in = p_ac.shape[1]
    per_row = (p_c / np.maximum(np.bincount(labels, weights=times, minlength=n_in), 1))[labels] * times
    outputs = np.asarray(outputs, dtype=float)
    table = np.asarray(table, dtype=float)
    D = conditional_distortion(X, labels, n_in, outputs, distance, multiplicity=times)
    dist = start_dist = expected_distortion(p_c, table, D)
    leak = start_leak = leakage_bits(p_ac, table)
    history, rounding, accepted = [], 0.0, None
    warm = warm_start
    iterations = 0
    for iterations in range(1, max_iterations + 1):
        moved, rounding = move_outputs(X, Pairs.from_table(labels, table, per_row), outputs, distance=distance,
                                       centre=centre, project=project)
        changed = np.flatnonzero(np.any(moved != outputs, axis=1))
        outputs = moved
        if changed.size:                                  # only the moved outputs' columns change
            D[:, changed] = conditional_distortion(X, labels, n_in, outputs[changed], distance, multiplicity=times)
        moved_dist = expected_distortion(p_c, table, D)
        if dist - moved_dist <= tolerance * max(dist, 1e-300):
            # step A gained less than the tolerance: no re-solve (module docstring)
            dist = min(dist, moved_dist)
            history.append((leak, dist))
            break
        candidate = resolve_at(p_ac, D, moved_dist, perfect=perfect, solver=solver, tol_bits=tol_bits, warm=warm)
        if candidate is not None and warm is not None:
            warm = candidate
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
        if fell <= tolerance * max(dist, 1e-300):
            break
    return Codebook(outputs=outputs, table=table, distortion_matrix=D, distortion=dist, leakage_bits=leak,
                    start_distortion=start_dist, start_leakage_bits=start_leak, rounding_cost=rounding,
                    iterations=iterations, history=history, solved=accepted)


def _distinct_rows(X: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each distinct (psi(b), b) once, with how many raw rows it stands for.

    Returns the rows (m, d), their labels (m,) and the counts (m,). Equal rows of one input
    have equal weights on every output, so the step's optima and D' are the same on them (UCI
    Adult's 48,842 rows on 5 columns: 14,846 distinct). Rows with a NaN cell are never merged
    (NaN equals nothing), which is only a missed saving.
    """
    keyed = np.column_stack([labels.astype(float), X])
    distinct, times = unique_rows(keyed)
    return np.ascontiguousarray(distinct[:, 1:]), distinct[:, 0].astype(np.int64), times.astype(float)


def resolve_at(p_ac: np.ndarray, D: np.ndarray, budget: float, *, perfect: bool, solver: str, tol_bits: float,
               warm: SolveResult | None = None) -> SolveResult | None:
    """Step B's solution, or None when program (19)'s solver fails.

    The fast solver starts from ``warm`` (a previous answer) when given, unless a cold solve
    would start from another solver's answer (many private classes:
    :func:`~privmap.offline.solvers.starts_from_interior`,
    :func:`~privmap.offline.solvers.starts_from_conic`): that start is the faster there (UCI
    Adult, 15 occupation classes, K = 64: the codebook step 17.0 CPU-s warm-started from the
    build's polished answer, 6.3 through the conic reference), or
    :func:`~privmap.offline.solvers.solve` sets the start aside (more than
    ``WARM_START_MAX_CLASSES`` classes).
    """
    if perfect:
        return perfect_privacy_solution(p_ac, D)
    try:
        cold = starts_from_interior(p_ac, D, budget) or starts_from_conic(p_ac, D, budget)
        warm_start = warm if solver == "fast" and not cold else None
        return solve(p_ac, D, budget, solver=solver, tol_bits=tol_bits, warm_start=warm_start)
    except (InfeasibleError, SolverError):
        return None


def refine_in_passes(sweep: Callable, distance_sums: Callable, p_ac: np.ndarray, solved: SolveResult,
                     outputs: np.ndarray, input_rows: np.ndarray, *, project: Project, perfect: bool, solver: str,
                     tol_bits: float, folds: int) -> tuple[Codebook, np.ndarray]:
    """One round of the codebook step with the rows read in passes.

    The rows are read as an out-of-core backend reads them
    (:class:`._partitioned.PartitionedRows`); l2 metric.

    Step A moves each released row towards the geometric median of the raw rows sent to it
    (weights p(c)/n_c q(j | c) over the table's non-zeros only): a pass for the weighted mean,
    then :data:`WEISZFELD_PASSES` Weiszfeld passes; each pass also measures the cost of the
    previous iterate made domain-valid, and an output moves to its cheapest valid iterate only
    where that lowers its cost (as :func:`move_outputs`). :func:`refine` runs 40 Weiszfeld steps
    per round and up to 12 rounds; here one round of few steps, because every step is a pass over
    the data. Step B: one pass of D'(c, j) on the moved outputs, then one re-solve of program (19)
    at the distortion the current table meets there, kept only if it leaks and distorts no more
    (:func:`resolve_kept`).

    Parameters
    ----------
    sweep : callable(table, per_row, Z, P) -> (numer, denom, z_cost, p_cost)
        One pass over the (row, output) pairs where ``table`` (sparse (K_in, K_out)) is non-zero,
        each pair weighted ``per_row[psi] * table[psi, j]`` (divided by d(b, Z_j) when ``Z`` is
        given): Weiszfeld's weighted sums of observed cells (K_out, d) and their weights (K_out, d),
        and the weighted costs of Z and of P per output (K_out,).
    distance_sums : callable(outputs, folds) -> ndarray
        S[f, c, j], the sum over the rows of fold f with psi = c of d(b, y_j), shape (folds, K_in, K_out).
    p_ac : ndarray, shape (|A|, K_in)
    solved : SolveResult
        Program (19)'s answer the step starts from (and the fast solver's warm start).
    outputs : ndarray, shape (K_out, d)
        Its released rows.
    input_rows : ndarray, shape (K_in,)
        Rows assigned to each input.
    project : callable
        Makes points domain-valid (:func:`metric_center`).
    perfect : bool
        The build asked for perfect privacy (the re-solve is then the linear program).
    solver, tol_bits
        As :func:`privmap.offline.solvers.solve`.
    folds : int
        Folds of the distance sums returned (1 without cross-fitting).

    Returns
    -------
    (Codebook, ndarray)
        The step's record and the distance sums S (folds, K_in, K_out) on its final outputs
        (cross-fitting reuses them: :func:`._holdout.cross_fitted_from_counts`).
    """
    q = solved.table
    table = sparse.csr_matrix(np.where(q > SUPPORT_FLOOR, q, 0.0))
    p_c = p_ac.sum(axis=0)
    per_row = p_c / np.maximum(input_rows, 1)
    start = np.asarray(outputs, dtype=float)

    numer, denom, _, start_cost = sweep(table, per_row, None, start)
    Z = np.where(denom > 0, numer / np.where(denom > 0, denom, 1.0), start)
    candidates = []
    for _ in range(WEISZFELD_PASSES):
        P = project(Z)
        numer, denom, z_cost, p_cost = sweep(table, per_row, Z, P)
        candidates.append((P, p_cost, z_cost))
        Z = np.where(denom > 0, numer / np.where(denom > 0, denom, 1.0), Z)
    costs = np.array([c[1] for c in candidates])               # (passes, K_out)
    best = np.argmin(costs, axis=0)
    j = np.arange(start.shape[0])
    best_cost = costs[best, j]
    better = best_cost < start_cost - 1e-12 * np.maximum(start_cost, 1.0)
    moved = np.where(better[:, None], np.array([c[0] for c in candidates])[best, j], start)
    rounding = float(np.sum((best_cost - np.array([c[2] for c in candidates])[best, j])[better]))

    sums = distance_sums(moved, folds)
    D = sums.sum(axis=0) / np.maximum(input_rows, 1)[:, None]
    start_dist = float(start_cost.sum())
    leak0 = leakage_bits(p_ac, q)
    kept, leak, dist, accepted = resolve_kept(p_ac, q, D, perfect=perfect, solver=solver, tol_bits=tol_bits,
                                              warm=solved)
    dist = min(start_dist, dist)
    step = Codebook(outputs=moved, table=kept, distortion_matrix=D, distortion=dist, leakage_bits=leak,
                    start_distortion=start_dist, start_leakage_bits=leak0, rounding_cost=rounding, iterations=1,
                    history=[(leak, dist)], solved=accepted)
    return step, sums


def resolve_kept(p_ac: np.ndarray, q: np.ndarray, D: np.ndarray, *, perfect: bool, solver: str, tol_bits: float,
                 warm: SolveResult | None = None) -> tuple[np.ndarray, float, float, SolveResult | None]:
    """Step B on its own, its table kept only if it leaks and distorts no more.

    Re-solves program (19) with distortion matrix D (K_in, K_out) at the distortion table q
    meets under it (:func:`resolve_at`); the keep rule is :func:`refine`'s. The fast solver
    starts from ``warm``, the solve that gave q, when given.

    Returns ``(table, leakage_bits, distortion, SolveResult or None)``; None when q was kept.
    """
    p_c = p_ac.sum(axis=0)
    dist, leak = expected_distortion(p_c, q, D), leakage_bits(p_ac, q)
    candidate = resolve_at(p_ac, D, dist, perfect=perfect, solver=solver, tol_bits=tol_bits, warm=warm)
    if candidate is not None:
        new_leak, new_dist = leakage_bits(p_ac, candidate.table), expected_distortion(p_c, candidate.table, D)
        if new_leak <= leak + LEAKAGE_ROUNDOFF_BITS and new_dist <= dist * (1 + 1e-12):
            return candidate.table, new_leak, new_dist, candidate
    return q, leak, dist, None


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
    observed cells, as under the builder's "mask" policy and the device's lookup. The optima take
    their weights dense (n, m) or as :class:`Pairs`, in work proportional to the non-zeros.

    Raises
    ------
    ValueError
        Unknown metric.
    """
    centres = {"l2": _geometric_median, "l1": _weighted_median, "hamming": _weighted_mode}
    if metric not in centres:
        raise ValueError(f"no codebook optimum for metric {metric!r}; expected one of {', '.join(centres)}")

    def project(Y: np.ndarray) -> np.ndarray:
        return np.clip(np.where(integer, np.round(Y), Y), lo, hi)

    optimum = centres[metric]

    def centre(X: np.ndarray, W: np.ndarray | Pairs, Y0: np.ndarray) -> np.ndarray:
        return optimum(np.asarray(X, dtype=float), _as_pairs(W), np.asarray(Y0, dtype=float))

    return MetricDistance(metric), centre, project


def _geometric_median(X: NDArray[np.float64], pairs: Pairs, Y0: NDArray[np.float64]) -> NDArray[np.float64]:
    """The geometric median of the rows sent to each output, by Weiszfeld's iteration.

    Weiszfeld's iteration for every output at once, from the weighted mean, for at most
    :data:`WEISZFELD_STEPS` steps; an output stops once a step moves it by at most
    :data:`WEISZFELD_TOLERANCE` x (1 + its largest coordinate), and later steps touch only the
    pairs of outputs still moving. Distances over each row's observed cells (a missing cell is
    skipped, as the device skips it).

    Each step is a weighted mean with weights w_p / ||x - y||: the distances are taken in chunks of
    :data:`WEISZFELD_CHUNK_CELLS` cells gathered from the rows (no (P, d) array), and the means are
    two sparse products of an (m, n) matrix holding the pairs' weights, sorted by output once, with
    the rows' observed values and observed mask (n, d); the distances gather the missing cells as
    bytes and zero their differences, rather than gather the mask as floats to multiply by.
    Gathering every pair's row once per call cost as much as the steps themselves and, at 39 MiB
    a copy on the 14,000 x 50 survey benchmark, a third of a second of page faults in a fresh
    process.
    """
    m = pairs.n_outputs
    order = np.argsort(pairs.outs, kind="stable")
    outs, rows, weights = pairs.outs[order], pairs.rows[order], pairs.weights[order]
    bounds = np.searchsorted(outs, np.arange(m + 1))               # output j's pairs: bounds[j]:bounds[j + 1]
    missing = np.isnan(X)
    values, seen = np.where(missing, 0.0, X), (~missing).astype(float)

    def weighted_mean(w: NDArray[np.float64], Y: NDArray[np.float64]) -> NDArray[np.float64]:
        U = sparse.csr_matrix((w, rows, bounds), shape=(m, X.shape[0]))
        total, sums = U @ seen, U @ values
        return np.where(total > 0, sums / np.where(total > 0, total, 1.0), Y)

    Y = weighted_mean(weights, np.array(Y0, dtype=float))
    moving = np.diff(bounds) > 0
    chunk = max(1, WEISZFELD_CHUNK_CELLS // max(X.shape[1], 1))
    w = np.empty(outs.size)
    for _ in range(WEISZFELD_STEPS):
        active = np.flatnonzero(moving)
        lengths = bounds[active + 1] - bounds[active]
        at_all = np.repeat(bounds[active] - (np.cumsum(lengths) - lengths), lengths) + np.arange(lengths.sum())
        w.fill(0.0)                                                # outputs that stopped keep Y (no weight)
        for c0 in range(0, at_all.size, chunk):
            at = at_all[c0:c0 + chunk]
            r = rows[at]
            diff = values[r] - Y[outs[at]]
            np.copyto(diff, 0.0, where=missing[r])                  # a missing cell adds nothing
            w[at] = weights[at] / np.maximum(np.sqrt(np.einsum("ij,ij->i", diff, diff)), 1e-9)
        new = weighted_mean(w, Y)
        moving &= np.max(np.abs(new - Y), axis=1) > WEISZFELD_TOLERANCE * (1.0 + np.max(np.abs(new), axis=1))
        Y = new
        if not moving.any():
            break
    return Y


def _observed_pairs(X: NDArray[np.float64], pairs: Pairs, k: int
                   ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """Column k's values, outputs and weights over the pairs whose row observed it."""
    column = X[pairs.rows, k]
    keep = ~np.isnan(column) & (pairs.weights > 0)
    return column[keep], pairs.outs[keep], pairs.weights[keep]


def _first_per_output(outs_sorted: np.ndarray, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For pairs sorted by output, the outputs having a chosen pair and the first such pair's index."""
    at = np.flatnonzero(chosen)
    outs, first = np.unique(outs_sorted[at], return_index=True)
    return outs, at[first]


def _weighted_median(X: NDArray[np.float64], pairs: Pairs, Y0: NDArray[np.float64]) -> NDArray[np.float64]:
    """The weighted median of the rows sent to each output.

    Per output and column, over its observed cells, the lowest value where the cumulative weight
    reaches half the total.
    """
    Y = np.array(Y0, dtype=float, copy=True)
    for k in range(X.shape[1]):
        values, outs, weights = _observed_pairs(X, pairs, k)
        if values.size == 0:
            continue
        order = np.lexsort((values, outs))                   # by output, then value
        outs_s, w_s = outs[order], weights[order]
        cum = np.cumsum(w_s)
        group_start = np.flatnonzero(np.r_[True, outs_s[1:] != outs_s[:-1]])
        before = np.repeat(cum[group_start] - w_s[group_start], np.diff(np.r_[group_start, outs_s.size]))
        total = np.bincount(outs_s, weights=w_s, minlength=pairs.n_outputs)
        has, first = _first_per_output(outs_s, cum - before >= 0.5 * total[outs_s])
        Y[has, k] = values[order][first]
    return Y


def _weighted_mode(X: NDArray[np.float64], pairs: Pairs, Y0: NDArray[np.float64]) -> NDArray[np.float64]:
    """The weighted mode of the rows sent to each output.

    Per output and column, over its observed cells, the value carrying the most weight (ties to
    the smallest value).
    """
    Y = np.array(Y0, dtype=float, copy=True)
    for k in range(X.shape[1]):
        values, outs, weights = _observed_pairs(X, pairs, k)
        if values.size == 0:
            continue
        levels, codes = np.unique(values, return_inverse=True)
        keys, inverse = np.unique(outs * levels.size + codes.reshape(-1), return_inverse=True)
        scores = np.bincount(inverse.reshape(-1), weights=weights)
        key_out, key_code = keys // levels.size, keys % levels.size
        order = np.lexsort((key_code, -scores, key_out))     # by output, most weight, smallest value
        has, first = _first_per_output(key_out[order], np.ones(order.size, dtype=bool))
        Y[has, k] = levels[key_code[order][first]]
    return Y
