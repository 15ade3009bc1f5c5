"""Delta0 for a binary private attribute as a transportation problem (the fast path of ``_linear_program``).

With |A| = 2 the balance of output j is sum_c w_c q(c, j) = 0 with w_c = p(c|a1) - p(c|a0).
In units of flow f(c, j) = |w_c| q(c, j), the rows with w_c > 0 (suppliers S) send w_c,
the rows with w_c < 0 (demanders T) receive |w_c|, and every output j is a hub where what
arrives from S equals what leaves to T; one unit from c to j costs a(c, j) = p_c d(c, j) / |w_c|.
Rows with w_c = 0 take their cheapest output alone. Without hub capacities a unit goes from s
to t through the hub of least a(s, j) + a(t, j), so the program is the transportation problem

    minimise sum_{s, t} C(s, t) f(s, t)  subject to  sum_t f(s, t) = w_s,  sum_s f(s, t) = |w_t|,

C(s, t) = min_j a(s, j) + a(t, j), which has |S| + |T| rows instead of K + K_out and none of the
hub rows whose degenerate duals make the hub program's column generation slow. C over all hubs is
a min-plus product (K^3 flops), so C is taken over three candidate hubs per pair: the cheapest
output of s, that of t, and the best constant output. That is exact when d is a metric whose
outputs are the inputs (d(c, c) = 0): then a(s, j) + a(t, j) >= min(a_s, a_t) d(s, t) per unit
mass, reached at j = s or j = t. Otherwise the answer is only an upper bound, and the certificate
says so.

**Certificate.** From transport potentials (pi_s, pi_t) the hub duals v_j = min_s a(s, j) - pi_s
make every supplier's hub-program dual feasible; :func:`solve_binary` returns them and the caller
evaluates the exact lower bound L(v) of ``_linear_program`` over *all* pairs. Where the candidate hubs
were enough the bound meets the table's cost; where not, ``_linear_program`` goes on with its general
column generation from this table.

The transport is solved in two steps. POT's network simplex (``ot.emd``, compiled) finds a
vertex of the dense |S| x |T| problem in about a second at K = 4096; its tolerances leave it short
of a certificate (UCI Adult at K = 4096: its cost 3e-10 relative above the optimum, its potentials
1e-4 off feasibility), so its pairs are only the first master of a column generation on the same
cost matrix: HiGHS on a few pairs per row, pricing every (s, t) pair, primal simplex from the last
basis, and a master kept narrow by dropping pairs of positive reduced cost (:func:`_transport`).
From that vertex it certifies in a few rounds (5 at K = 4096, 7 at K = 8192); without it the optimal
pairs, far apart (the median optimal pair is the 163rd cheapest of its row of 1,597), took 161
rounds and 18 CPU-s at K = 4096 (benchmarks/README.md, "Delta0 by network simplex").
Where outputs are the inputs the pair costs are read off D at the two endpoints
(:func:`_endpoint_pair_costs`); :func:`_candidate_pair_costs` is the general form and the
reference the tests hold it to.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from ..._errors import SolverError

_MAX_ROUNDS = 1000
_SIMPLEX_ITERATIONS = 100    # network simplex iterations per transport row (|S| + |T|) at most;
                             # Adult's instances need about 10
_KEEP = 3                    # master pairs kept between rounds, per transport row (|S| + |T|)
_PRUNE_ROUNDS = 400          # rounds after which no master pair is dropped any more
_CHUNK_ELEMENTS = 1 << 17     # elements of one row chunk of D (1 MiB of float64)


def solve_binary(p_c, w, D, j_const, new_highs):
    """Transport solution of the binary-A program and hub duals for its certificate.

    Parameters
    ----------
    p_c : ndarray, shape (K,)
        p(c).
    w : ndarray, shape (K,)
        p(c|a1) - p(c|a0), with positive and negative entries.
    D : ndarray, shape (K, K_out)
        Distortion, ``inf`` = forbidden.
    j_const : int
        An output allowed from every row (the best constant output).
    new_highs : callable
        Returns a silent, configured ``highspy`` model.

    Returns
    -------
    (table, v, rounds, pairs) : ndarray of shape (K, K_out) with rows on the simplex, ndarray of
        shape (K_out,), int, int
        The table has zero leakage; v are hub duals whose bound L(v) certifies it when tight;
        ``rounds`` and ``pairs`` are the transport's column-generation rounds and pairs.

    Raises
    ------
    SolverError
        HiGHS failed, or the transport did not converge.
    """
    K, K_out = D.shape
    sup, dem = np.flatnonzero(w > 0), np.flatnonzero(w < 0)
    unit = np.zeros(K)
    unit[w != 0] = p_c[w != 0] / np.abs(w[w != 0])
    hub = _cheapest_outputs(D)
    cost = _pair_costs(D, unit, sup, dem, hub, j_const)
    supply, demand = w[sup], -w[dem]
    flow, pi_s, rounds, pairs = _transport(cost, supply, demand, new_highs,
                                           start=_network_simplex_pairs(cost, supply, demand))
    s_idx, t_idx = np.nonzero(flow > 0)
    f = flow[s_idx, t_idx]
    s, t = sup[s_idx], dem[t_idx]
    j = _best_hubs(D, unit, s, t, hub, j_const)
    rows = np.concatenate([s, t])
    cols = np.concatenate([j, j])
    mass = np.concatenate([f / w[s], f / -w[t]])
    shipped = np.bincount(rows, weights=mass, minlength=K)
    alone = np.flatnonzero(shipped == 0)              # w = 0, or |w| of rounding noise (1e-17)
    rows = np.concatenate([rows, alone])              # that shipped nothing: cheapest output
    cols = np.concatenate([cols, hub[alone]])
    mass = np.concatenate([mass / shipped[rows[:mass.size]], np.ones(alone.size)])
    keys, where = np.unique(rows.astype(np.int64) * K_out + cols, return_inverse=True)
    table = np.zeros((K, K_out))
    table.flat[keys] = np.bincount(where, weights=mass)    # (np.add.at: 1.6 s at K = 4096)
    return table, _hub_duals(D, unit[sup], sup, pi_s), rounds, pairs


def _cheapest_outputs(D):
    """Each row's cheapest output, shape (K,).

    The row itself where d(c, c) = 0 (a tie broken towards c keeps the metric fast path of
    :func:`_pair_costs`).
    """
    hub = np.argmin(D, axis=1)
    if D.shape[0] == D.shape[1]:
        zero = np.flatnonzero(np.diagonal(D) == 0)
        hub[zero] = zero
    return hub


def _pair_costs(D, unit, sup, dem, hub, j_const):
    """C(s, t) over the candidate hubs, shape (|S|, |T|).

    :func:`_endpoint_pair_costs` when every row's cheapest output is itself (outputs = inputs,
    d(c, c) = 0), else :func:`_candidate_pair_costs` (the same value, by fancy indexing: 3 x
    slower at K = 4096).
    """
    if D.shape[0] == D.shape[1] and (hub == np.arange(hub.size)).all():
        return _endpoint_pair_costs(D, unit, sup, dem, j_const)
    return _candidate_pair_costs(D, unit, sup, dem, hub, j_const)


def _endpoint_pair_costs(D, unit, sup, dem, j_const):
    """C(s, t) = min(unit_s d(s, t), unit_t d(t, s), a(s, j_const) + a(t, j_const)).

    The three candidate hubs s, t and the constant output, for square D with hub[c] = c.
    """
    with np.errstate(invalid="ignore"):
        best = unit[sup, None] * D[np.ix_(sup, dem)]
        np.minimum(best, unit[dem][None, :] * D[np.ix_(dem, sup)].T, out=best)
        np.minimum(best, (unit[sup] * D[sup, j_const])[:, None] + (unit[dem] * D[dem, j_const])[None, :],
                   out=best)
    best[np.isnan(best)] = np.inf
    return best


def _candidate_pair_costs(D, unit, sup, dem, hub, j_const):
    """C(s, t) over the hubs hub[s], hub[t] and j_const for any D (the reference form)."""
    best = np.full((sup.size, dem.size), np.inf)
    with np.errstate(invalid="ignore"):
        for hubs in (hub[sup][:, None], hub[dem][None, :], np.array([[j_const]])):
            hubs = np.broadcast_to(hubs, best.shape)
            c = unit[sup, None] * D[sup[:, None], hubs] + unit[dem][None, :] * D[dem[None, :], hubs]
            c[np.isnan(c)] = np.inf
            np.minimum(best, c, out=best)
    return best


def _best_hubs(D, unit, s, t, hub, j_const):
    """The candidate hub reaching C(s, t) for each pair (s[i], t[i]).

    The same order of candidates as :func:`_pair_costs`, so the same least cost.
    """
    cand = np.stack([hub[s], hub[t], np.full(s.size, j_const)])
    with np.errstate(invalid="ignore"):
        c = unit[s] * D[s, cand] + unit[t] * D[t, cand]
    c[np.isnan(c)] = np.inf
    return cand[np.argmin(c, axis=0), np.arange(s.size)]


def _hub_duals(D, unit_sup, sup, pi_s):
    """v_j = min_s a(s, j) - pi_s, shape (K_out,), in row chunks of D (0 where no s reaches j)."""
    v = np.full(D.shape[1], np.inf)
    step = max(1, _CHUNK_ELEMENTS // D.shape[1])
    for lo in range(0, sup.size, step):
        rows = sup[lo:lo + step]
        with np.errstate(invalid="ignore"):
            a = unit_sup[lo:lo + step, None] * D[rows]
        a[np.isnan(a)] = np.inf
        a -= pi_s[lo:lo + step, None]
        np.minimum(v, a.min(axis=0), out=v)
    v[~np.isfinite(v)] = 0.0
    return v


def _network_simplex_pairs(cost, supply, demand):
    """The pairs carrying flow in POT's network simplex answer (``ot.emd``) to the transport of ``cost``.

    ``cost`` (n_s, n_t); as (row positions, column positions): at most n_s + n_t - 1 of them.

    A start for :func:`_transport`, not an answer (module docstring): an iteration cap
    (``_SIMPLEX_ITERATIONS`` per row) reached or a loose tolerance only costs rounds there.
    """
    import ot
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # "numItermax reached": the rounds make up for it
        flow = ot.emd(supply, demand, cost,
                      numItermax=_SIMPLEX_ITERATIONS * (cost.shape[0] + cost.shape[1]))
    return np.nonzero(flow > 0)


def _transport(cost, supply, demand, new_highs, *, start=None):
    """Least-cost flow (shape of ``cost``) with row sums ``supply`` and column sums ``demand``.

    Column generation on the pairs: the first master is a north-west-corner vertex (feasible) and
    the pairs ``start`` ((row positions, column positions), optional: the network simplex's
    vertex); each round adds each row's and column's pair of most negative reduced cost. The
    first master is solved by dual simplex, the later ones by primal simplex from the previous
    basis (the new pairs enter at zero, so that basis stays primal feasible: HiGHS's dual
    simplex redid about a full solve each round).
    Pairs of positive reduced cost beyond the ``_KEEP`` (|S| + |T|) cheapest are dropped from the
    master after each round (a basic pair has reduced cost 0, so the basis stays valid): a
    simplex iteration costs about the master's width, and the optimal pairs are far apart, so
    kept pairs were mostly dead weight (the benchmarks notebook in git, 1dfd9dc:benchmarks/README.md, "Delta0 on the build's own
    instance"). A dropped pair can be priced again; after
    ``_PRUNE_ROUNDS`` none is dropped, which keeps plain column generation's finite end.

    Returns the flow, the row potentials pi_s (shape (n_s,)), the rounds and the pairs
    generated (a pair generated again counts again).

    Raises
    ------
    SolverError
        HiGHS did not report an optimum, or the rounds ran out.
    """
    n_s, n_t = cost.shape
    rows, cols = _north_west(supply, demand)
    if start is not None:
        rows, cols = np.concatenate([rows, start[0]]), np.concatenate([cols, start[1]])
    finite = np.isfinite(cost)
    highs = new_highs()
    b = np.concatenate([supply, demand])
    highs.addRows(b.size, b, b, 0, np.zeros(b.size + 1, np.int32), np.empty(0, np.int32), np.empty(0))
    have = np.zeros(cost.shape, bool)                 # pairs now in the master
    in_r, in_c = np.empty(0, np.int64), np.empty(0, np.int64)   # the master's pairs, column order
    generated = 0
    keep_width = _KEEP * (n_s + n_t)
    red = np.empty_like(cost)
    cost_t = np.ascontiguousarray(cost.T)
    red_t = np.empty_like(cost_t)
    for round_ in range(1, _MAX_ROUNDS + 1):
        keep = ~have[rows, cols] & finite[rows, cols]
        key = np.unique(rows[keep] * n_t + cols[keep])
        rows, cols = np.divmod(key, n_t)
        if rows.size:
            have[rows, cols] = True
            n = rows.size
            A = sp.csc_matrix((np.ones(2 * n), np.stack([rows, n_s + cols], 1).ravel(),
                               np.arange(0, 2 * n + 1, 2)), shape=(n_s + n_t, n))
            highs.addCols(n, cost[rows, cols], np.zeros(n), np.full(n, np.inf), A.nnz,
                          A.indptr.astype(np.int32), A.indices.astype(np.int32), A.data)
            in_r, in_c = np.concatenate([in_r, rows]), np.concatenate([in_c, cols])
            generated += n
        sol = _run(highs)
        if round_ == 1:
            highs.setOptionValue("simplex_strategy", 4)          # primal simplex from now on
        dual = np.asarray(sol.row_dual)
        pi_s, pi_t = dual[:n_s], dual[n_s:]
        np.subtract(cost, pi_s[:, None], out=red)
        red -= pi_t[None, :]
        np.subtract(cost_t, pi_t[:, None], out=red_t)  # the columns' minima on a transposed copy:
        red_t -= pi_s[None, :]                         # argmin along axis 0 is 10 x slower
        scale = max(1.0, float(np.abs(dual).max()))
        r_arg = np.argmin(red, axis=1)
        c_arg = np.argmin(red_t, axis=1)
        r_ok = red[np.arange(n_s), r_arg] < -1e-12 * scale
        c_ok = red_t[np.arange(n_t), c_arg] < -1e-12 * scale
        rows = np.concatenate([np.flatnonzero(r_ok), c_arg[c_ok]])
        cols = np.concatenate([r_arg[r_ok], np.flatnonzero(c_ok)])
        if not (~have[rows, cols]).any():
            break
        if round_ <= _PRUNE_ROUNDS and in_r.size > keep_width:
            rbar = red[in_r, in_c]
            drop = rbar > 1e-9 * scale                 # nonbasic (a basic pair's rbar is 0) ...
            drop[np.argpartition(rbar, keep_width - 1)[:keep_width]] = False   # ... and not cheap
            if drop.any():
                highs.deleteCols(int(drop.sum()), np.flatnonzero(drop).astype(np.int32))
                have[in_r[drop], in_c[drop]] = False
                in_r, in_c = in_r[~drop], in_c[~drop]
    else:
        raise SolverError(f"perfect-privacy transport did not converge in {_MAX_ROUNDS} rounds")
    flow = np.zeros(cost.shape)
    flow[in_r, in_c] = np.maximum(np.asarray(sol.col_value), 0.0)
    return flow, pi_s, round_, generated


def _run(highs):
    """Optimise the master from its basis; returns HiGHS's solution.

    Once more from scratch if HiGHS reports anything but an optimum: the master is always
    feasible, since it starts with a north-west-corner vertex and the pairs dropped between rounds
    are never basic.

    Raises
    ------
    SolverError
        No optimum either way.
    """
    highs.run()
    if highs.getModelStatus().name != "kOptimal":
        highs.clearSolver()
        highs.run()
    if highs.getModelStatus().name != "kOptimal":
        raise SolverError("perfect-privacy transport: HiGHS "
                          f"{highs.modelStatusToString(highs.getModelStatus())}")
    return highs.getSolution()


def _north_west(supply, demand):
    """The pairs of the north-west-corner rule: a feasible basis of the transportation problem."""
    cum_s = np.cumsum(supply)
    cum_d = np.cumsum(demand)
    cum_s[-1] = cum_d[-1] = max(cum_s[-1], cum_d[-1])
    cuts = np.unique(np.concatenate([cum_s, cum_d]))
    mids = np.concatenate([[0.0], cuts[:-1]]) + np.diff(np.concatenate([[0.0], cuts])) / 2
    rows = np.minimum(np.searchsorted(cum_s, mids), supply.size - 1)
    cols = np.minimum(np.searchsorted(cum_d, mids), demand.size - 1)
    return rows, cols
