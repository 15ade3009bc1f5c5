"""Delta0 for a binary private attribute as a transportation problem (the fast path of ``_perfect``).

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
evaluates the exact lower bound L(v) of ``_perfect`` over *all* pairs. Where the candidate hubs
were enough the bound meets the table's cost; where not, ``_perfect`` goes on with its general
column generation from this table.

The transport is solved by column generation too: HiGHS on a few pairs per row, pricing every
(s, t) pair on a precomputed |S| x |T| cost matrix (a quarter of D's size).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._errors import SolverError

_MAX_ROUNDS = 500


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
    table = np.zeros((K, K_out))
    neutral = np.flatnonzero(w == 0)
    table[neutral, np.argmin(D[neutral], axis=1)] = 1.0
    unit = np.zeros(K)
    unit[w != 0] = p_c[w != 0] / np.abs(w[w != 0])
    hub = np.argmin(D, axis=1)                       # each row's cheapest output
    cost, via = _pair_costs(D, unit, sup, dem, hub, j_const)
    flow, pi_s, rounds, pairs = _transport(cost, w[sup], -w[dem], new_highs)
    s_idx, t_idx = np.nonzero(flow > 0)
    f = flow[s_idx, t_idx]
    j = via[s_idx, t_idx]
    s, t = sup[s_idx], dem[t_idx]
    np.add.at(table, (s, j), f / w[s])
    np.add.at(table, (t, j), f / -w[t])
    mass = table.sum(axis=1)
    unshipped = (w != 0) & (mass == 0)               # |w| of rounding noise (1e-17): shipped nothing
    table[unshipped, np.argmin(D[unshipped], axis=1)] = 1.0
    table[w != 0] /= table[w != 0].sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        a_sup = unit[sup, None] * D[sup]             # (|S|, K_out): a(s, j)
    a_sup[np.isnan(a_sup)] = np.inf
    v = np.min(a_sup - pi_s[:, None], axis=0)
    v[~np.isfinite(v)] = 0.0
    return table, v, rounds, pairs


def _pair_costs(D, unit, sup, dem, hub, j_const):
    """C(s, t) over the candidate hubs, shape (|S|, |T|), and the hub reaching it."""
    best = np.full((sup.size, dem.size), np.inf)
    via = np.zeros((sup.size, dem.size), np.int32)
    with np.errstate(invalid="ignore"):
        for hubs in (hub[sup][:, None], hub[dem][None, :], np.array([[j_const]])):
            hubs = np.broadcast_to(hubs, best.shape)
            c = unit[sup, None] * D[sup[:, None], hubs] + unit[dem][None, :] * D[dem[None, :], hubs]
            c[np.isnan(c)] = np.inf
            better = c < best
            best[better] = c[better]
            via[better] = hubs[better]
    return best, via


def _transport(cost, supply, demand, new_highs):
    """Least-cost flow (shape of ``cost``) with row sums ``supply`` and column sums ``demand``.

    Column generation on the pairs: the start is a north-west-corner vertex (feasible) and each
    row's and column's cheapest pair; each round adds each row's and column's pair of most
    negative reduced cost. Returns the flow, the row potentials pi_s (shape (n_s,)), the
    rounds and the pairs generated.
    """
    n_s, n_t = cost.shape
    rows, cols = _north_west(supply, demand)
    finite = np.isfinite(cost)
    rows = np.concatenate([rows, np.arange(n_s), np.argmin(cost, axis=0)])
    cols = np.concatenate([cols, np.argmin(cost, axis=1), np.arange(n_t)])
    highs = new_highs()
    b = np.concatenate([supply, demand])
    highs.addRows(b.size, b, b, 0, np.zeros(b.size + 1, np.int32), np.empty(0, np.int32), np.empty(0))
    have = np.zeros(cost.shape, bool)
    all_r, all_c = [], []
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
            all_r.append(rows)
            all_c.append(cols)
        highs.run()
        if highs.getModelStatus().name != "kOptimal":
            raise SolverError("perfect-privacy transport: HiGHS "
                              f"{highs.modelStatusToString(highs.getModelStatus())}")
        sol = highs.getSolution()
        dual = np.asarray(sol.row_dual)
        pi_s, pi_t = dual[:n_s], dual[n_s:]
        red = cost - pi_s[:, None] - pi_t[None, :]
        tol = -1e-12 * max(1.0, float(np.abs(dual).max()))
        r_arg = np.argmin(red, axis=1)
        c_arg = np.argmin(red, axis=0)
        r_ok = red[np.arange(n_s), r_arg] < tol
        c_ok = red[c_arg, np.arange(n_t)] < tol
        rows = np.concatenate([np.flatnonzero(r_ok), c_arg[c_ok]])
        cols = np.concatenate([r_arg[r_ok], np.flatnonzero(c_ok)])
        if not (~have[rows, cols]).any():
            break
    else:
        raise SolverError(f"perfect-privacy transport did not converge in {_MAX_ROUNDS} rounds")
    flow = np.zeros(cost.shape)
    flow[np.concatenate(all_r), np.concatenate(all_c)] = np.maximum(np.asarray(sol.col_value), 0.0)
    return flow, pi_s, round_, int(have.sum())


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
