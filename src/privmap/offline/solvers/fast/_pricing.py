"""The fast solver's pricing: which outputs each row may use, and the exact bound over all pairs.

The smoothed dual (:mod:`._fast_newton`) runs over a short *candidate list* per active row, not
over all K_out outputs; this part builds and grows those lists, and makes the passes over the
full distortion matrix D (shape ``(K, K_out)``, ``inf`` = forbidden) that the certificate
(:mod:`._fast_certify`) needs.

For a codebook G (shape ``(A, K_out)``, G[a, j] = log r_j(a) - log p(a), nats) and a multiplier
mu >= 0 (nats per unit distortion), the *reduced cost* of pair (c, j) is

    z(c, j) = sum_a p(a|c) G[a, j] + mu D(c, j)     (+inf where D(c, j) = inf),

and sum_c p(c) min_j z(c, j) - mu delta is the exact Lagrangian dual bound (module docstring of
:mod:`._fast_solver`). A pass (:meth:`_Pricing._pass`) evaluates z for all pairs in row chunks
of about _CHUNK_ELEMENTS elements (O(K * K_out * |A|) flops, D read once) and returns that sum
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
wanting again (up to 2**_WIDEN_MAX times _N_ADD). Absorbing new pairs is what
costs Newton steps: they beat their rows by margins well above tau, so the
path re-centres at a larger tau (``_fast_path._REHEAT``) from duals that no longer fit, and
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
_N_GUARD cheapest rows leaning to each class (:meth:`_Pricing._guards`), and a pass takes only
the most violated rows of any one output.

Candidate lists are kept flat, sorted by row: ``cr`` (active-row index) and ``cj`` (output),
``start`` (first position of each row), and per candidate ``c_alpha`` (``(A, n)``, the row's
posterior), ``c_pc`` (p(c)), ``c_d`` (D(c, j), finite) and ``c_low`` (the row's cheapest output).
"""
from __future__ import annotations

import time

import numpy as np

from ..._errors import SolverError

_CHUNK_ELEMENTS = 1 << 16        # elements of one row chunk of a pass over D: 512 KiB, so a pass
                                 # reads D once from memory and its temporaries stay in cache
_N_START = 8                     # candidates per row from the starting duals
_N_GUARD = 3                     # starting rows per output and class whose posterior leans to it
_GUARD_COLUMNS = 64              # outputs per block when choosing guard rows
_N_ADD = 4                       # candidates priced in per row and pass, at a row's first pass with any;
_WIDEN_MAX = 4                   # doubled at each later pass that adds to the row, up to 2**_WIDEN_MAX times


class _Pricing:
    """Candidate lists and passes over D; a mixin over :class:`._fast_instance._Instance`.

    Reads the instance (``rows``, ``alpha``, ``D``, ``p_c``), ``jmin``, ``tight`` and ``tie``;
    writes the candidate lists (module docstring), ``row_hits`` and the pricing counters.
    """

    def _chunk_rows(self):
        """Active rows per chunk of a pass over D (about _CHUNK_ELEMENTS elements)."""
        return max(1, _CHUNK_ELEMENTS // max(1, self.K_out))

    def _chunks(self):
        """(lo, hi) bounds of the chunks of active rows, in order."""
        step = self._chunk_rows()
        for lo in range(0, self.rows.size, step):
            yield lo, min(self.rows.size, lo + step)

    def _scan_minima(self):
        """One pass over D: per active row its cheapest output and cost; per output its cheapest
        active row, whether it has one, and sum_c p(c) D(c, j) (the cost of the constant table)."""
        R = self.rows.size
        jmin = np.empty(R, dtype=np.int64)
        col_best = np.full(self.K_out, np.inf)
        col_arg = np.zeros(self.K_out, dtype=np.int64)
        col_cost = np.zeros(self.K_out)
        pc_row = self.p_c[self.rows]
        for lo, hi in self._chunks():
            blk = self._d_rows(lo, hi)
            jmin[lo:hi] = np.argmin(blk, axis=1)
            col_cost += pc_row[lo:hi] @ blk
            i = np.argmin(blk, axis=0)
            v = blk[i, np.arange(self.K_out)]
            better = v < col_best
            col_best[better] = v[better]
            col_arg[better] = lo + i[better]
        dmin = self.D[self.rows, jmin]
        return jmin, dmin, col_arg, np.isfinite(col_best), col_cost

    def _d_rows(self, lo, hi):
        """D at active rows lo:hi: a view (no copy) when those rows are consecutive in D."""
        first, last = self.rows[lo], self.rows[hi - 1]
        if last - first == hi - lo - 1:
            return self.D[first:last + 1]
        return self.D[self.rows[lo:hi]]

    def _z_block(self, lo, hi, G, mu):
        """z(c, j) for active rows lo:hi and all outputs; +inf where not allowed.

        Written into buffers that every call reuses (fresh arrays of this size cost as much
        as the arithmetic), so the block is valid until the next call.
        """
        if self._zbuf is None:
            shape = (min(self.rows.size, self._chunk_rows()), self.K_out)
            self._zbuf = (np.empty(shape), np.empty(shape))
        blk = self._d_rows(lo, hi)
        Z, T = self._zbuf[0][:hi - lo], self._zbuf[1][:hi - lo]
        np.matmul(self.alpha_t[lo:hi], G, out=Z)
        if self.tight:
            Z[blk > self.tie[lo:hi, None]] = np.inf
        elif mu > 0:
            np.multiply(blk, mu, out=T)
            Z += T                                        # inf stays inf
        elif self.has_inf:
            Z[~np.isfinite(blk)] = np.inf
        return Z

    def _pass(self, G, mu, cand_min, n_add):
        """Exact dual value over all pairs; optionally the pairs that beat the candidates.

        With ``n_add`` > 0, each row takes its most violated pairs, at most
        n_add * 2**min(h, _WIDEN_MAX) of them, where h counts the earlier passes that found
        pairs for that row (``row_hits``): a row whose list fell short before sits among many
        near-tied outputs (loose budgets, where the codebook entries all lie near p(a)) and
        keeps falling short as the duals move, so its intake widens geometrically, while rows
        found wanting once take n_add as before.

        Returns (sum_c p(c) min_j z, sum_c p(c) |min_j z|, new rows, new columns, margins by
        which they beat their row); rows are indices into the active rows.
        """
        tp = time.perf_counter()
        zmin = np.empty(self.rows.size)
        new_r, new_c, new_m = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0)]
        if n_add:
            thr = cand_min - 1e-12 * (1.0 + np.abs(cand_min))
            allow = n_add << np.minimum(self.row_hits, _WIDEN_MAX)
        for lo, hi in self._chunks():
            Z = self._z_block(lo, hi, G, mu)
            zm = Z.min(axis=1, out=zmin[lo:hi])
            if n_add:
                bad = np.flatnonzero(zm < thr[lo:hi])     # only these rows have pairs to add
                if bad.size:
                    self._most_violated(Z[bad], lo + bad, thr, cand_min, allow[lo + bad],
                                        new_r, new_c, new_m)
        pc = self.p_c[self.rows]
        total, absolute = float(pc @ zmin), float(pc @ np.abs(zmin))
        self.stats["pricing_passes"] += 1
        self.timing["pricing"] += time.perf_counter() - tp
        if not n_add:
            return total, absolute, None, None, None
        r, j, m = np.concatenate(new_r), np.concatenate(new_c), np.concatenate(new_m)
        self.row_hits[np.unique(r)] += 1
        # an output that every row wants (a codebook entry gone nearly pure) takes only its
        # most violated rows: once they feed it, its posterior moves and the pull is gone
        cap = max(16, 4 * n_add * self.rows.size // max(1, self.K_out))
        order = np.lexsort((-m, j))
        j_sorted = j[order]
        first = np.r_[0, np.flatnonzero(j_sorted[1:] != j_sorted[:-1]) + 1]
        rank = np.arange(order.size) - np.repeat(first, np.diff(np.r_[first, order.size]))
        keep = order[rank < cap]
        return total, absolute, r[keep], j[keep], m[keep]

    @staticmethod
    def _most_violated(Zb, rows, thr, cand_min, allow, new_r, new_c, new_m):
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

    def _set_candidates(self, r, j):
        """Set the candidate lists to the pairs (active-row index ``r``, output ``j``), deduplicated and
        sorted by row (module docstring). Raises SolverError (internal) if a row would have none.
        """
        key = np.sort(r.astype(np.int64) * self.K_out + j.astype(np.int64))
        key = key[np.r_[True, key[1:] != key[:-1]]]       # np.unique hashes first: 40x slower
        self.cr = key // self.K_out                       # active-row index, sorted
        self.cj = key % self.K_out
        self.start = np.flatnonzero(np.r_[True, self.cr[1:] != self.cr[:-1]])
        if self.start.size != self.rows.size:
            raise SolverError("internal: a row lost all its candidates")
        self.c_alpha = self.alpha[:, self.cr]             # (A, n)
        self.c_pc = self.p_c[self.rows][self.cr]
        dd = self.D[self.rows[self.cr], self.cj]
        self.c_d = np.where(np.isfinite(dd), dd, 0.0)     # forbidden pairs never become candidates
        self.c_low = self.cj == self.jmin[self.cr]        # the row's cheapest output

    def _start_candidates(self, G, mu, extra_rows, extra_cols):
        """Set the starting candidate lists: each active row's cheapest output (``jmin``), its
        _N_START best outputs under the starting duals (G (A, K_out) = log r_j(a) - log p(a),
        multiplier ``mu`` in nats per unit distortion), the guards (`_guards`) and the given
        extra pairs (active-row indices, outputs; a warm start's table), where allowed in D."""
        R = self.rows.size
        r_list, j_list = [np.arange(R)], [self.jmin]
        for lo, hi in self._chunks():
            Z = self._z_block(lo, hi, G, mu)
            k = min(_N_START, self.K_out)
            idx = np.argpartition(Z, k - 1, axis=1)[:, :k] if k < self.K_out else \
                np.broadcast_to(np.arange(self.K_out), Z.shape)
            ok = np.isfinite(np.take_along_axis(Z, idx, axis=1))
            r_list.append(np.broadcast_to(np.arange(lo, hi)[:, None], idx.shape)[ok])
            j_list.append(idx[ok])
        r_g, j_g = self._guards()
        self._set_candidates(np.concatenate(r_list + [r_g, extra_rows]),
                             np.concatenate(j_list + [j_g, extra_cols]))

    def _add_candidates(self, r, j):
        """Add the pairs (``r``, ``j``) to the candidate lists, counting the new ones."""
        n0 = self.cr.size
        self._set_candidates(np.concatenate([self.cr, r]), np.concatenate([self.cj, j]))
        self.stats["added_candidates"] += int(self.cr.size - n0)

    def _guards(self):
        """For every output and class, its _N_GUARD cheapest rows whose posterior leans to that class.

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
        for a in range(self.A):
            lean = np.flatnonzero(self.alpha[a] >= self.p_a[a])
            if lean.size in (0, self.rows.size):
                continue
            k = min(_N_GUARD, lean.size)
            for j0 in range(0, self.K_out, _GUARD_COLUMNS):
                j1 = min(self.K_out, j0 + _GUARD_COLUMNS)
                # (columns, leaning rows), contiguous: selecting along the last axis is fast
                blk = self.D[self.rows[lean], j0:j1].T.copy()
                if self.tight:
                    blk[blk > self.tie[lean]] = np.inf
                top = np.argpartition(blk, k - 1, axis=1)[:, :k]
                ok = np.isfinite(np.take_along_axis(blk, top, axis=1))
                rows.append(lean[top][ok])
                cols.append(np.broadcast_to(np.arange(j0, j1)[:, None], top.shape)[ok])
        if not rows:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(rows), np.concatenate(cols)
