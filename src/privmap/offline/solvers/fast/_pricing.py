"""The fast solver's pricing: which outputs each row may use, and the exact bound over all pairs.

The smoothed dual (:mod:`._newton`) runs over a short *candidate list* per active row, not
over all K_out outputs; this part builds and grows those lists, and makes the passes over the
full distortion matrix D (shape ``(K, K_out)``, ``inf`` = forbidden) that the certificate
(:mod:`._certify`) needs.

For a codebook G (shape ``(A, K_out)``, G[a, j] = log r_j(a) - log p(a), nats) and a multiplier
mu >= 0 (nats per unit distortion), the *reduced cost* of pair (c, j) is

    z(c, j) = sum_a p(a|c) G[a, j] + mu D(c, j)     (+inf where D(c, j) = inf),

and sum_c p(c) min_j z(c, j) - mu delta is the exact Lagrangian dual bound (module docstring of
:mod:`._solver`). A pass (:func:`pass`) evaluates z for all pairs in row chunks
of about settings.chunk_elements elements (O(K * K_out * |A|) flops, D read once) and returns that sum
and, on request, the pairs that beat their row's candidates.

**Candidates and pricing.** The soft minimum runs over a candidate list per
row, not over all K_out outputs. The list starts as the row's cheapest output
and its best outputs under the starting duals, and grows by pricing: one pass
over all pairs (row chunks, O(K * K_out * |A|) flops) evaluates the exact LB
and adds every pair whose z beats the row's minimum over its candidates. A pass
follows every halving of tau, so new pairs come in while they are still cheap
to absorb (a pass costs about one Newton step). Rows
are never *restricted* to nearby outputs; nearness only seeds the list.

**Widening intake.** A pass adds at most _N_ADD pairs to a row the first time
it finds that row wanting, and twice as many at each later pass that finds it
wanting again (up to 2**settings.widen_max times _N_ADD). Absorbing new pairs is what
costs Newton steps: they beat their rows by margins well above tau, so the
path re-centres at a larger tau (``_path._REHEAT``) from duals that no longer fit, and
that re-centring takes many damped steps, while a plain shrink of tau along
the tangent is nearly free. At loose budgets the codebook entries all lie near
p(a), many outputs are nearly tied for each row, and as outputs empty along
the path their rows migrate, so a fixed intake leaves the same rows short pass
after pass (on UCI Adult at 0.6 x Delta0, about a quarter of the rows at each
of 15 passes). Widening only the rows that fell short before absorbs them in a
few passes; where the lists settle after two or three passes (the synthetic
instances) few rows are found wanting twice and pricing is nearly as before
(benchmarks/README.md has the figures).

**Guards.** An output fed only by rows of one class gets a nearly pure posterior, which makes
it look unboundedly attractive to every other row; each output therefore starts with the
settings.n_guard cheapest rows leaning to each class (:func:`guards`), and a pass takes only
the most violated rows of any one output.

Candidate lists are kept flat, sorted by row: ``cr`` (active-row index) and ``cj`` (output),
``start`` (first position of each row), and per candidate ``c_alpha`` (``(A, n)``, the row's
posterior), ``c_pc`` (p(c)), ``c_d`` (D(c, j), finite) and ``c_low`` (the row's cheapest output).
"""
from __future__ import annotations

import time

import numpy as np

from ..._errors import SolverError

_N_ADD = 4                       # candidates priced in per row and pass, at a row's first pass with any;


def chunk_rows(state):
    """Active rows per chunk of a pass over D (about settings.chunk_elements elements)."""
    return max(1, state.settings.chunk_elements // max(1, state.K_out))


def chunks(state):
    """(lo, hi) bounds of the chunks of active rows, in order."""
    step = chunk_rows(state)
    for lo in range(0, state.rows.size, step):
        yield lo, min(state.rows.size, lo + step)


def scan_minima(state):
    """One pass over D: each active row's and each output's cheapest counterpart.

    Per active row its cheapest output and cost; per output its cheapest active row, whether it
    has one, and sum_c p(c) D(c, j) (the cost of the constant table).
    """
    R = state.rows.size
    jmin = np.empty(R, dtype=np.int64)
    col_best = np.full(state.K_out, np.inf)
    col_arg = np.zeros(state.K_out, dtype=np.int64)
    col_cost = np.zeros(state.K_out)
    pc_row = state.p_c[state.rows]
    for lo, hi in chunks(state):
        blk = d_rows(state, lo, hi)
        jmin[lo:hi] = np.argmin(blk, axis=1)
        col_cost += pc_row[lo:hi] @ blk
        i = np.argmin(blk, axis=0)
        v = blk[i, np.arange(state.K_out)]
        better = v < col_best
        col_best[better] = v[better]
        col_arg[better] = lo + i[better]
    dmin = state.D[state.rows, jmin]
    return jmin, dmin, col_arg, np.isfinite(col_best), col_cost


def d_rows(state, lo, hi):
    """D at active rows lo:hi: a view (no copy) when those rows are consecutive in D."""
    first, last = state.rows[lo], state.rows[hi - 1]
    if last - first == hi - lo - 1:
        return state.D[first:last + 1]
    return state.D[state.rows[lo:hi]]


def z_block(state, lo, hi, G, mu):
    """z(c, j) for active rows lo:hi and all outputs; +inf where not allowed.

    Written into buffers that every call reuses (fresh arrays of this size cost as much
    as the arithmetic), so the block is valid until the next call.
    """
    if state.zbuf is None:
        shape = (min(state.rows.size, chunk_rows(state)), state.K_out)
        state.zbuf = (np.empty(shape), np.empty(shape))
    blk = d_rows(state, lo, hi)
    Z, T = state.zbuf[0][:hi - lo], state.zbuf[1][:hi - lo]
    np.matmul(state.alpha_t[lo:hi], G, out=Z)
    if state.tight:
        Z[blk > state.tie[lo:hi, None]] = np.inf
    elif mu > 0:
        np.multiply(blk, mu, out=T)
        Z += T                                        # inf stays inf
    elif state.has_inf:
        Z[~np.isfinite(blk)] = np.inf
    return Z


def pricing_pass(state, G, mu, cand_min, n_add):
    """Exact dual value over all pairs; optionally the pairs that beat the candidates.

    With ``n_add`` > 0, each row takes its most violated pairs, at most
    n_add * 2**min(h, settings.widen_max) of them, where h counts the earlier passes that found
    pairs for that row (``row_hits``): a row whose list fell short before sits among many
    near-tied outputs (loose budgets, where the codebook entries all lie near p(a)) and
    keeps falling short as the duals move, so its intake widens geometrically, while rows
    found wanting once take n_add as before.

    Returns (sum_c p(c) min_j z, sum_c p(c) |min_j z|, new rows, new columns, margins by
    which they beat their row); rows are indices into the active rows.
    """
    tp = time.perf_counter()
    zmin = np.empty(state.rows.size)
    new_r, new_c, new_m = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0)]
    if n_add:
        thr = cand_min - 1e-12 * (1.0 + np.abs(cand_min))
        allow = n_add << np.minimum(state.row_hits, state.settings.widen_max)
    for lo, hi in chunks(state):
        Z = z_block(state, lo, hi, G, mu)
        zm = Z.min(axis=1, out=zmin[lo:hi])
        if n_add:
            bad = np.flatnonzero(zm < thr[lo:hi])     # only these rows have pairs to add
            if bad.size:
                most_violated(Z[bad], lo + bad, thr, cand_min, allow[lo + bad],
                                    new_r, new_c, new_m)
    pc = state.p_c[state.rows]
    total, absolute = float(pc @ zmin), float(pc @ np.abs(zmin))
    state.stats["pricing_passes"] += 1
    state.timing["pricing"] += time.perf_counter() - tp
    if not n_add:
        return total, absolute, None, None, None
    r, j, m = np.concatenate(new_r), np.concatenate(new_c), np.concatenate(new_m)
    state.row_hits[np.unique(r)] += 1
    # an output that every row wants (a codebook entry gone nearly pure) takes only its
    # most violated rows: once they feed it, its posterior moves and the pull is gone
    cap = max(16, 4 * n_add * state.rows.size // max(1, state.K_out))
    order = np.lexsort((-m, j))
    j_sorted = j[order]
    first = np.r_[0, np.flatnonzero(j_sorted[1:] != j_sorted[:-1]) + 1]
    rank = np.arange(order.size) - np.repeat(first, np.diff(np.r_[first, order.size]))
    keep = order[rank < cap]
    return total, absolute, r[keep], j[keep], m[keep]


def most_violated(Zb, rows, thr, cand_min, allow, new_r, new_c, new_m):
    """Append each row's (at most) allow[i] smallest entries of Zb below thr[row] (ties: first).

    Zb (len(rows), K_out) is a scratch copy and may be overwritten. One partial sort per
    row (O(K_out)) instead of one pass over the block per entry taken: with intakes widened
    to 64 per row that was 64 passes. The pairs are appended rank by rank (every row's
    best, then every row's second best, ...), the order the pass's cap per output reads.
    """
    n_rows, n_out = Zb.shape
    k = min(int(allow.max()), n_out)
    if k < n_out:
        # the k smallest per row, ties resolved towards the first output as argmin does:
        # all entries below the k-th value, then the first of those equal to it
        kth = np.partition(Zb, k - 1, axis=1)[:, k - 1:k]
        below = Zb < kth
        need = k - below.sum(axis=1, keepdims=True)
        tied = Zb == kth
        take = below | (tied & (np.cumsum(tied, axis=1) <= need))
        idx = np.nonzero(take)[1].reshape(n_rows, k)  # ascending output within each row
    else:
        idx = np.broadcast_to(np.arange(n_out), (n_rows, n_out))
    vals = np.take_along_axis(Zb, idx, axis=1)
    order = np.argsort(vals, axis=1, kind="stable")
    idx = np.take_along_axis(idx, order, axis=1)
    vals = np.take_along_axis(vals, order, axis=1)
    ok = (vals < thr[rows][:, None]) & (np.arange(k)[None, :] < allow[:, None])
    # rank-major order, like taking each row's best, then its second best, ...
    ok_t = ok.T
    r_at = np.broadcast_to(rows[None, :], ok_t.shape)[ok_t]
    new_r.append(r_at)
    new_c.append(idx.T[ok_t])
    new_m.append(cand_min[r_at] - vals.T[ok_t])


def set_candidates(state, r, j):
    """Set the candidate lists to the pairs (active-row index ``r``, output ``j``).

    Deduplicated and sorted by row (module docstring). Raises SolverError (internal) if a row
    would have none.
    """
    key = np.sort(r.astype(np.int64) * state.K_out + j.astype(np.int64))
    key = key[np.r_[True, key[1:] != key[:-1]]]       # np.unique hashes first: 40x slower
    state.cr = key // state.K_out                       # active-row index, sorted
    state.cj = key % state.K_out
    state.start = np.flatnonzero(np.r_[True, state.cr[1:] != state.cr[:-1]])
    if state.start.size != state.rows.size:
        raise SolverError("internal: a row lost all its candidates")
    state.c_alpha = state.alpha[:, state.cr]             # (A, n)
    state.c_pc = state.p_c[state.rows][state.cr]
    dd = state.D[state.rows[state.cr], state.cj]
    state.c_d = np.where(np.isfinite(dd), dd, 0.0)     # forbidden pairs never become candidates
    state.c_low = state.cj == state.jmin[state.cr]        # the row's cheapest output


def start_candidates(state, G, mu, extra_rows, extra_cols):
    """Set the starting candidate lists.

    Each active row's cheapest output (``jmin``), its settings.n_start best outputs under the
    starting duals (G (A, K_out) = log r_j(a) - log p(a), multiplier ``mu`` in nats per unit
    distortion), the guards (`guards`) and the given extra pairs (active-row indices, outputs; a
    warm start's table), where allowed in D.
    """
    R = state.rows.size
    r_list, j_list = [np.arange(R)], [state.jmin]
    for lo, hi in chunks(state):
        Z = z_block(state, lo, hi, G, mu)
        k = min(state.settings.n_start, state.K_out)
        idx = np.argpartition(Z, k - 1, axis=1)[:, :k] if k < state.K_out else \
            np.broadcast_to(np.arange(state.K_out), Z.shape)
        ok = np.isfinite(np.take_along_axis(Z, idx, axis=1))
        r_list.append(np.broadcast_to(np.arange(lo, hi)[:, None], idx.shape)[ok])
        j_list.append(idx[ok])
    r_g, j_g = guards(state)
    set_candidates(state, np.concatenate(r_list + [r_g, extra_rows]),
                         np.concatenate(j_list + [j_g, extra_cols]))


def add_candidates(state, r, j):
    """Add the pairs (``r``, ``j``) to the candidate lists, counting the new ones."""
    n0 = state.cr.size
    set_candidates(state, np.concatenate([state.cr, r]), np.concatenate([state.cj, j]))
    state.stats["added_candidates"] += int(state.cr.size - n0)


def guards(state):
    """For every output and class, its settings.n_guard cheapest rows whose posterior leans to that class.

    An output fed only by rows of one class gets a nearly pure posterior in the smoothed
    problem, which makes it look unboundedly attractive to every other row; candidate
    rows on each side let the smoothed problem feel that pull from the start. With one
    guard per side the early path went through many pricing passes that each found such
    outputs (K = 4096: 124 of 249 Newton steps). Measured on synthetic instances, Newton
    steps with 2 / 3 / 4 / 8 per side: K = 4096 151 / 113 / 130 / 180, K = 8192
    234 / 146 / 159 / -; more guards also make each step dearer.
    Returns (active-row indices, outputs), flat.
    """
    rows, cols = [], []
    for a in range(state.A):
        lean = np.flatnonzero(state.alpha[a] >= state.p_a[a])
        if lean.size in (0, state.rows.size):
            continue
        k = min(state.settings.n_guard, lean.size)
        for j0 in range(0, state.K_out, state.settings.guard_columns):
            j1 = min(state.K_out, j0 + state.settings.guard_columns)
            # (columns, leaning rows), contiguous: selecting along the last axis is fast
            blk = state.D[state.rows[lean], j0:j1].T.copy()
            if state.tight:
                blk[blk > state.tie[lean]] = np.inf
            top = np.argpartition(blk, k - 1, axis=1)[:, :k]
            ok = np.isfinite(np.take_along_axis(blk, top, axis=1))
            rows.append(lean[top][ok])
            cols.append(np.broadcast_to(np.arange(j0, j1)[:, None], top.shape)[ok])
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(rows), np.concatenate(cols)
