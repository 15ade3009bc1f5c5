"""privmap's own solver of program (19), with a certified gap.

Problem
-------
Given the joint prior p(a, c) (shape ``(|A|, K)``), a distortion matrix
D (shape ``(K, K_out)``, ``inf`` = forbidden) and a budget delta, find a
row-stochastic q (``K x K_out``) minimising the leakage

    J(q) = I(A; C_hat) = sum_{a, j} P(a, j) log( P(a, j) / (p(a) P(j)) ),
    P(a, j) = sum_c p(a, c) q(c, j),

subject to sum_{c, j} p(c) q(c, j) D(c, j) <= delta.

Why this method
---------------
J depends on the K x K_out table only through the |A| x K_out matrix P, and
optimal tables are very sparse (1.2 to 1.8 entries per row), like vertices of
a linear program. A generic conic solver (cvxpy + Clarabel) pays for all
K * K_out variables and for an exponential-cone lifting of every entry of P.
This module instead combines three pieces:

1. **Column generation over a working support.** Only pairs (c, j) in a small
   support S carry mass. The initial support is each row's few cheapest
   outputs plus, for every output, its cheapest inputs (so every output has a
   posterior). Rows are not *restricted* to their nearest outputs: pricing
   below adds any pair with a negative reduced cost, wherever it lies, and
   pairs that keep negligible mass are pruned.

2. **A log-barrier interior-point method on the restricted problem**, in
   float64, with Newton steps that exploit the structure: the Hessian of J in
   the support variables is M^T H M with H block-diagonal per output
   (|A| x |A| blocks, H_j = (diag(1/r_j) - 1 1^T) / P(j), r_j the posterior of
   output j), the barrier adds a diagonal, the budget a rank-one term
   (Sherman-Morrison), and the row-sum constraints are eliminated row by row.
   What is left is one sparse symmetric positive-definite system of size
   |A| x (outputs in use), coupled only through rows with several support
   entries, factorised with SuperLU. Newton's method converges in a few
   dozen steps to any accuracy, which first-order methods (Frank-Wolfe,
   mirror descent) do not reach in reasonable time on this ill-conditioned
   objective (its gradient is unbounded near pure posteriors).

3. **A Lagrangian dual certificate.** For any "codebook" R = (r_j) of
   distributions on A with positive entries and any mu >= 0, Gibbs'
   inequality gives, for every feasible q,

       J(q) >= sum_{c, j} q(c, j) W(c, j),   W(c, j) = sum_a p(a, c) log(r_j(a) / p(a)),

   and adding mu * (E d - delta) <= 0 and minimising each row over its
   allowed outputs,

       J* >= LB(R, mu) = sum_c min_{j : D(c, j) < inf} [W(c, j) + mu p(c) D(c, j)] - mu delta.

   This is an exact evaluation of the dual of the full problem (all K x K_out
   pairs, the budget included), not of the restricted one, so it proves the
   answer optimal over every table. It is tight at the optimum (minimax
   theorem; R = posteriors of the optimal table, mu = its multiplier). We take
   R from the barrier solution, mu from the barrier multiplier refined by a
   1-D concave search, and subtract a floating-point safety margin. The same
   pass prices columns: pairs whose value beats their row's current value are
   added to the support.

The reported ``gap_bits`` is leakage(returned table) - LB, recomputed from the
returned table; the loop stops when it is at most ``tol_bits``.

Costs: each pricing pass reads D once (O(K * K_out) flops, in row chunks, no
K x K_out temporaries besides one chunk); each Newton step is a sparse
factorisation whose size is set by the support, not by K * K_out.
"""
from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ._errors import SolverError
from ._information import expected_distortion, leakage_bits
from ._problem import check_instance
from ._result import SolveResult

_LN2 = math.log(2.0)
_EPS = np.finfo(float).eps
_CHUNK_ELEMENTS = 1 << 22        # elements of one row-chunk of the pricing pass
_N_NEAREST = 3                   # cheapest outputs per row in the initial support
_N_COVER = 2                     # cheapest inputs per output in the initial support
_N_ADD = 3                       # columns priced in per row and round
_N_CAND = 6                      # candidates per row kept for the search over mu
_LINESEARCH = False
_SMOOTH = 1e-15                  # codebook smoothing r <- (1 - s) r + s p(a)


# ----------------------------------------------------------------------------------------------
# public entry point
# ----------------------------------------------------------------------------------------------

def solve_fast(p_ac, distortion, delta, *, tol_bits: float = 1e-5, max_iter: int = 40,
               progress: Callable[[float], None] | None = None) -> SolveResult:
    """Solve program (19) by column generation with an interior-point master and a dual certificate.

    Parameters
    ----------
    p_ac : array_like, shape (n_private, K)
        Joint prior p(a, c); non-negative, sums to 1.
    distortion : array_like, shape (K, K_out)
        d(c, c_hat) >= 0, same unit as ``delta``; ``inf`` forbids a transition.
        Every row needs one finite entry.
    delta : float
        Budget on the expected distortion sum_c p(c) sum_j q(c, j) d(c, j).
    tol_bits : float, keyword-only
        Gap to certify, in bits: the solver stops when leakage(table) minus a
        proven lower bound on the optimum is at most ``tol_bits``.
    max_iter : int, keyword-only
        Most rounds of column generation (each: an interior-point solve of the
        restricted problem and one pricing pass over all K x K_out pairs).
    progress : callable(float) or None, keyword-only
        Called with an estimate of the fraction done, in [0, 1].

    Returns
    -------
    SolveResult
        ``table`` (K, K_out) row-stochastic with zero mass on forbidden pairs;
        ``leakage_bits`` and ``distortion`` recomputed from ``table``;
        ``multiplier`` (bits per unit distortion) of the budget;
        ``gap_bits`` <= ``tol_bits``, a proven bound on leakage_bits - optimum;
        ``info`` with rounds, Newton steps, support size, lower bound, timings.

    Raises
    ------
    ValueError
        Malformed instance (shapes, signs, prior not summing to 1, a row with no
        allowed output) or ``tol_bits`` not positive.
    InfeasibleError
        ``delta`` below sum_c p(c) min_j d(c, j), the least distortion any table reaches.
    SolverError
        The gap could not be certified within ``max_iter`` rounds.
    """
    started = time.perf_counter()
    p_ac, D, delta = check_instance(p_ac, distortion, delta)
    if not (tol_bits > 0 and math.isfinite(tol_bits)):
        raise ValueError(f"tol_bits must be positive and finite, got {tol_bits}")
    solver = _FastSolver(p_ac, D, delta, tol_bits, max_iter, progress)
    result = solver.run()
    result.info["time_s"] = time.perf_counter() - started
    return result


# ----------------------------------------------------------------------------------------------
# implementation
# ----------------------------------------------------------------------------------------------

class _FastSolver:
    def __init__(self, p_ac, D, delta, tol_bits, max_iter, progress):
        self.p_full = p_ac
        self.D = D
        self.delta = float(delta)
        self.tol = tol_bits * _LN2                  # nats
        self.max_iter = int(max_iter)
        self.progress = progress
        self.K, self.K_out = D.shape
        p_a = p_ac.sum(axis=1)
        self.classes = np.flatnonzero(p_a > 0)
        self.p = p_ac[self.classes]                  # (A, K), classes with mass only
        self.p_a = p_a[self.classes]
        self.log_p_a = np.log(self.p_a)
        self.p_c = p_ac.sum(axis=0)
        self.A = self.p.shape[0]
        self.active = self.p_c > 0
        self.stats = {"rounds": 0, "newton_steps": 0, "pricing_passes": 0, "added_columns": 0}
        self.timing = {"init": 0.0, "newton": 0.0, "pricing": 0.0}

    # ---- helpers on the full problem ---------------------------------------------------------

    def _report(self, fraction):
        if self.progress is not None:
            self.progress(float(min(max(fraction, 0.0), 1.0)))

    def _chunks(self):
        step = max(1, _CHUNK_ELEMENTS // max(1, self.K_out))
        for start in range(0, self.K, step):
            yield start, min(self.K, start + step)

    def _row_minima(self):
        """Per row: cheapest allowed output and its distortion."""
        jmin = np.empty(self.K, dtype=np.int64)
        for lo, hi in self._chunks():
            jmin[lo:hi] = np.argmin(self.D[lo:hi], axis=1)
        return jmin, self.D[np.arange(self.K), jmin]

    # ---- main loop ----------------------------------------------------------------------------

    def run(self) -> SolveResult:
        t0 = time.perf_counter()
        jmin, dmin = self._row_minima()
        self.jmin = jmin
        least = float(self.p_c @ dmin)
        self.least = least
        if self.A <= 1:
            return self._finish_trivial(jmin, "one private class has all the mass: leakage is 0")
        slack_total = self.delta - least
        # Degenerate budget (delta at the least distortion): only cheapest outputs are allowed.
        self.tight = slack_total <= 1e-12 * max(1.0, least) + 1e-300
        self._init_support(jmin, dmin)
        self.timing["init"] = time.perf_counter() - t0

        codebook = np.tile(self.p_a[:, None], (1, self.K_out))   # r_j(a); prior where unknown
        bar_goal = max(30.0 * self.tol, 1e-4)                    # IPM gap of early rounds
        self._init_duals(self._initial_tau())
        best = None                                              # (lb, mu)
        for rnd in range(self.max_iter):
            self.stats["rounds"] = rnd + 1
            self._ipm(bar_goal)
            J = self._J(self.x)
            codebook[:, self.uout] = self._posteriors(self.x)
            lb, mu, new_rows, new_cols, rest_lb = self._price(codebook, self.nu)
            self.stats["last_gap_nats"] = J - lb
            if best is None or lb > best[0]:
                best = (lb, mu)
            gap = J - best[0]
            self._report(0.1 + 0.85 * (1.0 - min(1.0, max(0.0, math.log10(max(gap, 1e-300) / self.tol)) / 6.0)))
            if gap <= 0.5 * self.tol:
                break
            n_new = new_rows.size
            if n_new > 0 and lb < rest_lb - 0.05 * self.tol:
                self._add_columns(new_rows, new_cols)
                self.stats["added_columns"] += int(n_new)
            else:
                bar_goal = 0.3 * self.tol if bar_goal > 0.3 * self.tol else bar_goal / 10.0
            self._prune()
        return self._finish(best[0], best[1], codebook)

    def _initial_tau(self):
        g = self._grad_J(self.x)
        w = np.where(self.multi, self.x, 0.0)
        rs = np.bincount(self.sr, weights=w, minlength=self.K)
        gm = np.bincount(self.sr, weights=w * g, minlength=self.K) / np.where(rs > 0, rs, 1.0)
        spread = float(np.sum(np.abs(g - gm[self.sr]) * w))
        m = int(np.sum(self.multi)) + 1
        return max(spread, 1e-3 * self._J(self.x), 1e-12) / m

    # ---- support management -------------------------------------------------------------------

    def _init_support(self, jmin, dmin):
        rows, cols = [], []
        act = np.flatnonzero(self.active)
        if self.tight:
            # only outputs tying with the row's cheapest are feasible
            for lo, hi in self._chunks():
                blk = self.D[lo:hi]
                tol = 1e-12 * np.maximum(1.0, dmin[lo:hi])[:, None]
                r, c = np.nonzero((blk <= dmin[lo:hi, None] + tol) & self.active[lo:hi, None])
                rows.append(r + lo)
                cols.append(c)
        else:
            m = min(_N_NEAREST, self.K_out)
            for lo, hi in self._chunks():
                blk = self.D[lo:hi]
                if m < self.K_out:
                    idx = np.argpartition(blk, m - 1, axis=1)[:, :m]
                else:
                    idx = np.broadcast_to(np.arange(self.K_out), (hi - lo, self.K_out))
                vals = np.take_along_axis(blk, idx, axis=1)
                ok = np.isfinite(vals) & self.active[lo:hi, None]
                r = np.broadcast_to(np.arange(lo, hi)[:, None], idx.shape)
                rows.append(r[ok])
                cols.append(idx[ok])
            rows.append(act)
            cols.append(jmin[act])
            # coverage: every output gets its cheapest active inputs
            if act.size:
                m2 = min(_N_COVER, act.size)
                sub = self.D[act] if act.size < self.K else self.D
                idx = np.argpartition(sub, m2 - 1, axis=0)[:m2] if m2 < sub.shape[0] else \
                    np.broadcast_to(np.arange(sub.shape[0])[:, None], sub.shape)
                vals = np.take_along_axis(sub, idx, axis=0)
                ok = np.isfinite(vals)
                cidx = np.broadcast_to(np.arange(self.K_out)[None, :], idx.shape)
                rows.append(act[idx[ok]])
                cols.append(cidx[ok])
        rows = np.concatenate(rows).astype(np.int64)
        cols = np.concatenate(cols).astype(np.int64)
        self._set_support(rows, cols, None)
        # starting point: mostly the cheapest output, a little elsewhere, strictly within budget
        cost = self.D[self.sr, self.sc]
        is_min = cost <= dmin[self.sr] * (1 + 1e-12) + 1e-300
        n_min = np.bincount(self.sr, weights=is_min.astype(float), minlength=self.K)
        n_all = np.bincount(self.sr, minlength=self.K).astype(float)
        x_min = np.where(is_min, 1.0 / np.maximum(n_min[self.sr], 1), 0.0)
        x_uni = 1.0 / n_all[self.sr]
        if self.tight:
            alpha = 1.0
        else:
            d_min = float(np.sum(self.p_c[self.sr] * cost * x_min))
            d_uni = float(np.sum(self.p_c[self.sr] * cost * x_uni))
            room = self.delta - d_min
            alpha = 0.5 if d_uni <= d_min + 1e-300 else min(0.5, 0.5 * room / (d_uni - d_min))
        self.x = (1 - alpha) * x_min + alpha * x_uni

    def _set_support(self, rows, cols, x, z=None):
        key = rows * self.K_out + cols
        key, first = np.unique(key, return_index=True)      # sorted by row, then column
        self.sr = key // self.K_out
        self.sc = key % self.K_out
        self.uout, self.su = np.unique(self.sc, return_inverse=True)
        self.U = self.uout.size
        self.pa = self.p[:, self.sr]                        # (A, n)
        self.cost = self.p_c[self.sr] * self.D[self.sr, self.sc]   # budget weights
        counts = np.bincount(self.sr, minlength=self.K)
        self.multi = counts[self.sr] > 1                    # rows with a free variable
        self.x = None if x is None else x[first]
        if z is not None:
            self.z = np.where(self.multi, z[first], 0.0)

    def _add_columns(self, rows, cols):
        m = int(np.sum(self.multi)) + (0 if self.tight else 1)
        mu = self._gap_mu() / max(m, 1)
        rows_all = np.concatenate([self.sr, rows])
        cols_all = np.concatenate([self.sc, cols])
        x_all = np.concatenate([self.x, np.zeros(rows.size)])
        z_all = np.concatenate([self.z, np.zeros(rows.size)])
        self._set_support(rows_all, cols_all, x_all, z_all)
        new = self.x == 0
        # new entries start small; the row's largest entry pays for them
        eps = 1e-4
        self.x[new] = eps
        paid = np.bincount(self.sr[new], minlength=self.K) * eps
        big = self._row_argmax(self.x)
        self.x[big] -= paid[self.sr[big]]
        if np.any(self.x <= 0):
            raise SolverError("internal: a support entry lost all its mass when columns were added")
        if not self.tight and self._budget_slack(self.x) <= 0:
            self.x = self._towards_cheapest(self.x)
        # duals: centred for the new and newly free entries, the old ones kept
        mu = 10.0 * mu
        fresh = self.multi & (self.z <= 0)
        self.z[fresh] = mu / self.x[fresh]
        self.z[~self.multi] = 0.0
        if not self.tight:
            self.nu = max(self.nu, mu / self._budget_slack(self.x))

    def _towards_cheapest(self, x):
        is_min = self.sc == self.jmin[self.sr]
        x_min = is_min.astype(float)
        x_min /= np.bincount(self.sr, weights=x_min, minlength=self.K)[self.sr]
        d_x = float(self.cost @ x)
        d_m = float(self.cost @ x_min)
        theta = 0.5
        while theta > 1e-16:
            y = (1 - theta) * x + theta * x_min
            if float(self.cost @ y) < self.delta and np.all(y > 0):
                return y
            theta = min(1.0, 2 * theta) if d_x > d_m else theta / 2
            if theta >= 1.0:
                break
        raise SolverError("internal: could not restore a strictly feasible point")

    def _row_argmax(self, x):
        order = np.lexsort((-x, self.sr))
        first = np.ones(order.size, dtype=bool)
        first[1:] = self.sr[order][1:] != self.sr[order][:-1]
        return order[first]

    def _prune(self):
        """Drop entries that keep negligible mass; the certificate prices them back if needed."""
        small = self.x < 1e-9
        if not np.any(small):
            return
        keep = ~small
        keep[self._row_argmax(self.x)] = True
        if np.all(keep):
            return
        x = self.x[keep]
        rows, cols = self.sr[keep], self.sc[keep]
        x = x / np.bincount(rows, weights=x, minlength=self.K)[rows]
        cost = self.p_c[rows] * self.D[rows, cols]
        if not self.tight and float(cost @ x) >= self.delta:
            return                     # pruning would leave the budget: keep the support
        self._set_support(rows, cols, x, self.z[keep])

    # ---- objective ----------------------------------------------------------------------------

    def _P(self, x):
        P = np.empty((self.A, self.U))
        for a in range(self.A):
            P[a] = np.bincount(self.su, weights=self.pa[a] * x, minlength=self.U)
        return P

    def _J(self, x):
        P = self._P(x)
        S = P.sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(P > 0, P * (np.log(P) - np.log(S)[None, :] - self.log_p_a[:, None]), 0.0)
        return float(terms.sum())

    def _posteriors(self, x):
        P = self._P(x)
        S = P.sum(axis=0)
        return P / S[None, :]

    # ---- primal-dual interior-point method on the restricted problem --------------------------

    def _budget_slack(self, x):
        return self.delta - float(self.cost @ x)

    def _merit(self, x, tau):
        """Barrier merit J(x) - tau * (sum log x + log slack) over the free entries."""
        if np.any(x[self.multi] <= 0):
            return math.inf
        val = self._J(x) - tau * float(np.sum(np.log(x[self.multi])))
        if not self.tight:
            s = self._budget_slack(x)
            if s <= 0:
                return math.inf
            val -= tau * math.log(s)
        return val

    def _init_duals(self, tau):
        self.z = np.where(self.multi, tau / self.x, 0.0)
        self.nu = 0.0 if self.tight else tau / self._budget_slack(self.x)

    def _gap_mu(self):
        g = float(np.sum(self.x[self.multi] * self.z[self.multi]))
        if not self.tight:
            g += self._budget_slack(self.x) * self.nu
        return g

    def _ipm(self, bar_goal, max_steps=200):
        """Primal-dual path following until the complementarity gap is below bar_goal."""
        tn = time.perf_counter()
        multi = self.multi
        m = int(np.sum(multi)) + (0 if self.tight else 1)
        x, z, nu = self.x, self.z, self.nu
        if m == 0 or (self.tight and not np.any(multi)):
            self.timing["newton"] += time.perf_counter() - tn
            return
        for _ in range(max_steps):
            s = 0.0 if self.tight else self._budget_slack(x)
            if not self.tight and s <= 1e-13 * max(self.delta, 1e-300):
                x = self._towards_cheapest(x)       # round-off ate the slack: step back inside
                s = self._budget_slack(x)
                nu = max(nu, 1e-300)
            gap = float(np.sum(x[multi] * z[multi])) + (0.0 if self.tight else s * nu)
            mu = gap / m
            fac = self._factor(x, z, nu, s)
            self.stats["newton_steps"] += 1
            # predictor (tau = 0) to choose the centring weight, Mehrotra style
            dx_a, dz_a, dnu_a = self._pd_step(fac, x, z, nu, s, 0.0)
            ap = self._max_step(x, dx_a, s, -float(self.cost @ dx_a) if not self.tight else 0.0)
            ad = self._max_step(z, dz_a, nu, dnu_a)
            s_a = s - ap * float(self.cost @ dx_a) if not self.tight else 0.0
            gap_a = float(np.sum((x + ap * dx_a)[multi] * (z + ad * dz_a)[multi])) + \
                (0.0 if self.tight else s_a * (nu + ad * dnu_a))
            sigma = min(1.0, max(1e-3, (gap_a / gap) ** 3)) if gap > 0 else 0.1
            tau = max(sigma * mu, 0.2 * bar_goal / m)
            dx, dz, dnu = self._pd_step(fac, x, z, nu, s, tau)
            ds = 0.0 if self.tight else -float(self.cost @ dx)
            ap = 0.995 * self._max_step(x, dx, s, ds)
            ad = 0.995 * self._max_step(z, dz, nu, dnu)
            ap = min(1.0, ap)
            ad = min(1.0, ad)
            # safeguard on the primal: sufficient decrease of the barrier merit
            slope = float(fac["grad"](tau) @ dx)
            f0 = self._merit(x, tau)
            if _LINESEARCH and slope < 0:
                while ap > 1e-10:
                    if self._merit(x + ap * dx, tau) <= f0 + 1e-4 * ap * slope + 1e-15 * abs(f0):
                        break
                    ap *= 0.5
            x = x + ap * dx
            z = np.where(multi, z + ad * dz, 0.0)
            nu = 0.0 if self.tight else nu + ad * dnu
            if self._converged(x, z, nu, bar_goal, ap, ad, dx):
                break
        self.x, self.z, self.nu = x, z, nu
        self.timing["newton"] += time.perf_counter() - tn

    def _converged(self, x, z, nu, bar_goal, ap, ad, dx):
        gap = float(np.sum(x[self.multi] * z[self.multi]))
        if not self.tight:
            gap += self._budget_slack(x) * nu
        if gap > bar_goal:
            return False
        return self._J(x) - self._restricted_bound(x, nu) <= bar_goal

    def _restricted_bound(self, x, nu):
        """Lagrangian bound of the restricted problem: R = posteriors of x, multiplier nu."""
        val = self._grad_J(x) + nu * self.cost
        y = np.full(self.K, np.inf)
        np.minimum.at(y, self.sr, val)
        return float(np.sum(y[np.isfinite(y)])) - nu * self.delta

    @staticmethod
    def _max_step(v, dv, w, dw):
        a = math.inf
        neg = dv < 0
        if np.any(neg):
            a = float(np.min(-v[neg] / dv[neg]))
        if dw < 0:
            a = min(a, -w / dw)
        return min(a, 1.0 / 0.995)

    def _grad_J(self, x):
        P = self._P(x)
        S = P.sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            logratio = np.where(P > 0, np.log(P) - np.log(S)[None, :] - self.log_p_a[:, None], 0.0)
        return np.einsum("an,an->n", self.pa, logratio[:, self.su])

    def _pd_step(self, fac, x, z, nu, s, tau):
        multi = self.multi
        rhs = -fac["grad"](tau)
        u = fac["solve"](rhs)
        if not self.tight:
            v = fac["v"]
            rho = fac["rho"]
            dx = u - v * (float(rho @ u) / (1.0 + float(rho @ v)))
        else:
            dx = u
        dz = np.where(multi, tau / np.where(multi, x, 1.0) - z - fac["zx"] * dx, 0.0)
        dnu = 0.0
        if not self.tight:
            dnu = (tau - s * nu + nu * float(self.cost @ dx)) / s
        return dx, dz, dnu

    def _factor(self, x, z, nu, s):
        """Factorise the Newton system of the primal-dual method at (x, z, nu)."""
        A, U = self.A, self.U
        P = self._P(x)
        S = P.sum(axis=0)
        present = P > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            logratio = np.where(present, np.log(P) - np.log(S)[None, :] - self.log_p_a[:, None], 0.0)
            # Hessian blocks of J in P: (diag(1/r) - 1 1^T) / S, with 1 - r_a summed exactly
            if A == 2:
                others = P[::-1]
            else:
                others = np.stack([P.sum(axis=0) - P[a] for a in range(A)])
            diag = np.where(present, others / np.where(present, P, 1.0), 0.0)
        Hb = -np.ones((U, A, A))
        Hb *= present.T[:, :, None] & present.T[:, None, :]
        Hb[:, np.arange(A), np.arange(A)] = diag.T
        Hb /= S[:, None, None]
        lam, vec = np.linalg.eigh(Hb)
        lam = np.clip(lam, 0.0, None)
        Lb = np.einsum("uab,ub,ucb->uac", vec, np.sqrt(lam), vec)   # symmetric square root

        gJ = np.einsum("an,an->n", self.pa, logratio[:, self.su])
        multi = self.multi
        xs = np.where(multi, x, 1.0)
        zx = np.where(multi, z / xs, 0.0)

        def grad(tau):
            g = gJ - np.where(multi, tau / xs, 0.0)
            if not self.tight:
                g = g + self.cost * (tau / s)
            return g

        # Pi = D - d d^T / sum(d) per row (D = X / Z): the inverse of the diagonal part with the
        # row sum eliminated; 0 on single-entry rows. Written around each row's largest d (its
        # pivot) so that no term cancels when d spans many orders of magnitude.
        dlt = np.where(multi, xs / np.where(multi, z, 1.0), 0.0)
        sr, su, K = self.sr, self.su, self.K
        piv = self._row_argmax(dlt)                 # one per row, sorted by row
        piv_of = np.empty(K, dtype=np.int64)
        piv_of[sr[piv]] = piv
        pv = piv_of[sr]                              # pivot of each entry's row
        nonpiv = multi.copy()
        nonpiv[piv] = False
        dn = np.where(nonpiv, dlt, 0.0)
        dsum = np.bincount(sr, weights=dlt, minlength=K)
        dsum_safe = np.where(dsum > 0, dsum, 1.0)

        def Pi(v):
            u = np.where(multi, v - v[pv], 0.0)
            tc = np.bincount(sr, weights=dn * u, minlength=K) / dsum_safe
            return np.where(multi, dlt * (u - tc[sr]), 0.0)

        def Mop(v):
            out = np.empty((A, U))
            for a in range(A):
                out[a] = np.bincount(su, weights=self.pa[a] * v, minlength=U)
            return out

        def MTop(W):
            return np.einsum("an,an->n", self.pa, W[:, su])

        def Lop(W):
            return np.einsum("uab,bu->au", Lb, W)

        def Hop(W):
            return np.einsum("uab,bu->au", Hb, W)

        # K_sys = I + L M Pi M^T L on index a * U + u, with Pi = B (D' - d' d'^T / sum d) B^T,
        # B the differences e_s - e_pivot: L M B has columns g_s = mt_s - mt_pivot.
        mt = np.einsum("nab,bn->an", Lb[su], self.pa)            # (A, n) columns of L M
        sel = np.flatnonzero(nonpiv)
        psel = pv[sel]
        ar = np.arange(A)[:, None]
        g_rows = np.concatenate([(ar * U + su[sel][None, :]).ravel(), (ar * U + su[psel][None, :]).ravel()])
        g_cols = np.tile(np.arange(sel.size), 2 * A)
        g_vals = np.concatenate([mt[:, sel].ravel(), -mt[:, psel].ravel()])
        G = sp.csr_matrix((g_vals, (g_rows, g_cols)), shape=(A * U, sel.size))
        A1 = G @ sp.diags(dn[sel]) @ G.T
        Hc = G @ sp.csr_matrix((dn[sel], (np.arange(sel.size), sr[sel])), shape=(sel.size, K))
        A2 = Hc @ sp.diags(1.0 / dsum_safe) @ Hc.T
        Ksys = (sp.identity(A * U, format="csr") + (A1 - A2)).tocsc()
        lu = spla.splu(Ksys, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                       options={"SymmetricMode": True})

        def csolve(r):
            b = Mop(Pi(r))
            y = lu.solve(Lop(b).ravel()).reshape(A, U)
            w = b - Mop(Pi(MTop(Lop(y))))
            return Pi(r - MTop(Hop(w)))

        fac = {"grad": grad, "solve": csolve, "zx": zx}
        if not self.tight:
            rho = self.cost * math.sqrt(nu / s)
            fac["rho"] = rho
            fac["v"] = csolve(rho)
        return fac

    # ---- certificate and pricing --------------------------------------------------------------

    def _log_ratio(self, codebook):
        r = (1.0 - _SMOOTH) * codebook + _SMOOTH * self.p_a[:, None]
        return np.log(r) - self.log_p_a[:, None]        # (A, K_out)

    def _pass(self, LR, mu, y_rows, want_columns, keep_cand):
        """One pass over all pairs: sum of row minima, optional new columns and candidates."""
        total = 0.0
        abs_total = 0.0
        new_r, new_c = [], []
        cand_w, cand_d = [], []
        for lo, hi in self._chunks():
            act = self.active[lo:hi]
            if not np.any(act):
                continue
            blk = self.D[lo:hi]
            Z = self.p[:, lo:hi].T @ LR                       # W(c, j)
            W = Z.copy() if keep_cand else None
            pc = self.p_c[lo:hi]
            if mu > 0:
                Z += (mu * pc)[:, None] * blk                 # inf stays inf on forbidden pairs
            else:
                Z[~np.isfinite(blk)] = np.inf
            Z[~act] = 0.0
            vmin = Z.min(axis=1)
            total += float(vmin.sum())
            abs_total += float(np.abs(vmin).sum())
            if want_columns:
                k = min(_N_ADD, self.K_out)
                idx = np.argpartition(Z, k - 1, axis=1)[:, :k] if k < self.K_out else \
                    np.broadcast_to(np.arange(self.K_out), Z.shape)
                vals = np.take_along_axis(Z, idx, axis=1)
                yr = y_rows[lo:hi]
                thr = yr - np.maximum(1e-9 * pc * (1.0 + np.abs(yr) / np.maximum(pc, 1e-300)), 1e-300)
                ok = (vals < thr[:, None]) & act[:, None]
                r = np.broadcast_to(np.arange(lo, hi)[:, None], idx.shape)
                new_r.append(r[ok])
                new_c.append(idx[ok])
            if keep_cand:
                k = min(_N_CAND, self.K_out)
                idx = np.argpartition(Z, k - 1, axis=1)[:, :k] if k < self.K_out else \
                    np.broadcast_to(np.arange(self.K_out), Z.shape)
                cw = np.take_along_axis(W, idx, axis=1)
                cd = pc[:, None] * np.take_along_axis(blk, idx, axis=1)
                bad = ~np.isfinite(cd)
                cw[bad] = np.inf                            # forbidden: never a row's minimum
                cd[bad] = 0.0
                cw[~act] = 0.0
                cd[~act] = 0.0
                cand_w.append(cw)
                cand_d.append(cd)
        self.stats["pricing_passes"] += 1
        out = {"sum": total, "abs": abs_total}
        if want_columns:
            out["rows"] = np.concatenate(new_r) if new_r else np.zeros(0, np.int64)
            out["cols"] = np.concatenate(new_c) if new_c else np.zeros(0, np.int64)
        if keep_cand:
            out["cw"] = np.concatenate(cand_w)
            out["cd"] = np.concatenate(cand_d)
        return out

    def _lb_from(self, res, mu):
        # rounding: |fl(sum) - sum| <= ~(K + A + 2) eps sum|terms|; take a generous margin
        margin = 8.0 * (self.K + self.A + 8) * _EPS * (res["abs"] + mu * self.delta) + 1e-300
        return res["sum"] - mu * self.delta - margin

    def _price(self, codebook, nu):
        tp = time.perf_counter()
        LR = self._log_ratio(codebook)
        # restricted row values y_c = min over the support of W + mu * cost
        Wsup = np.einsum("an,an->n", self.pa, LR[:, self.sc])
        yv = Wsup + nu * self.cost
        y_rows = np.full(self.K, np.inf)
        np.minimum.at(y_rows, self.sr, yv)
        y_rows[~self.active] = 0.0
        LR = self._robust_codebook(codebook, LR, nu, y_rows)
        res = self._pass(LR, nu, y_rows, True, True)
        lb0 = self._lb_from(res, nu)
        rest_lb = float(y_rows.sum()) - nu * self.delta
        # refine mu on the candidates (a concave piecewise-linear function), then re-evaluate fully
        mu_star = self._best_mu(res["cw"], res["cd"], nu)
        lb, mu = lb0, nu
        if mu_star != nu:
            res2 = self._pass(LR, mu_star, y_rows, False, False)
            lb2 = self._lb_from(res2, mu_star)
            if lb2 > lb:
                lb, mu = lb2, mu_star
        self.timing["pricing"] += time.perf_counter() - tp
        return lb, mu, res["rows"], res["cols"], rest_lb

    def _robust_codebook(self, codebook, LR, mu, y_rows):
        """Choose r_j for outputs with (almost) no mass.

        Any codebook gives a valid bound. For an output that carries next to no mass the
        posterior of its few tiny feeders is arbitrary (often nearly pure, which would make
        it look infinitely attractive to every row of the other class); among r_j in
        {posterior mixed with the prior at weights 1e-15 ... 1} keep the one that lowers
        the rows' minima least (sum over rows of max(0, y_c - W(c, j) - mu p(c) D(c, j))).
        """
        mass = np.zeros(self.K_out)
        mass[self.uout] = self._P(self.x).sum(axis=0)
        small = np.flatnonzero(mass < 1e-6 * self.p_c.max())
        if small.size == 0:
            return LR
        weights = (1e-15, 1e-6, 1e-3, 1e-1, 1.0)
        damage = np.zeros((len(weights), small.size))
        cands = []
        for k, lam in enumerate(weights):
            r = (1.0 - lam) * codebook[:, small] + lam * self.p_a[:, None]
            lr = np.log(r) - self.log_p_a[:, None]
            cands.append(lr)
            step = max(1, _CHUNK_ELEMENTS // max(1, small.size))
            for lo in range(0, self.K, step):
                hi = min(self.K, lo + step)
                act = self.active[lo:hi]
                Z = self.p[:, lo:hi].T @ lr
                blk = self.D[lo:hi][:, small]
                with np.errstate(invalid="ignore"):
                    Z += (mu * self.p_c[lo:hi])[:, None] * blk
                Z[~np.isfinite(blk)] = np.inf
                gapc = np.maximum(y_rows[lo:hi, None] - Z, 0.0)
                gapc[~act] = 0.0
                damage[k] += gapc.sum(axis=0)
        best = np.argmin(damage, axis=0)
        LR = LR.copy()
        for k in range(len(weights)):
            sel = best == k
            LR[:, small[sel]] = cands[k][:, sel]
        return LR

    def _best_mu(self, cw, cd, mu0):
        if self.tight:
            hi = max(1.0, mu0)
        else:
            hi = max(mu0 * 4.0, 1e-12)

        forbidden = ~np.isfinite(cd)

        def penalized(mu):
            # cw + mu * cd with forbidden entries at +inf (0 * inf would be NaN at mu = 0)
            with np.errstate(invalid="ignore"):
                return np.where(forbidden, np.inf, cw + mu * cd)

        def slope(mu):
            i = np.argmin(penalized(mu), axis=1)
            return float(cd[np.arange(cd.shape[0]), i].sum()) - self.delta

        # grow the bracket until the slope is negative
        grow = 0
        while slope(hi) > 0 and grow < 60:
            hi *= 4.0
            grow += 1
        lo = 0.0
        if slope(lo) <= 0:
            return 0.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if slope(mid) > 0:
                lo = mid
            else:
                hi = mid
        # the maximum of a concave piecewise-linear function: evaluate both ends
        def value(mu):
            return float(np.min(penalized(mu), axis=1).sum()) - mu * self.delta
        return lo if value(lo) >= value(hi) else hi

    # ---- results ------------------------------------------------------------------------------

    def _table_from(self, x):
        table = np.zeros((self.K, self.K_out))
        table[self.sr, self.sc] = x
        inactive = np.flatnonzero(~self.active)
        table[inactive, :] = 0.0
        table[inactive, self.jmin[inactive]] = 1.0
        return table

    def _sparse_table(self, x):
        rows = np.concatenate([self.sr, np.flatnonzero(~self.active)])
        cols = np.concatenate([self.sc, self.jmin[~self.active]])
        vals = np.concatenate([x, np.ones(int(np.sum(~self.active)))])
        return sp.csr_matrix((vals, (rows, cols)), shape=(self.K, self.K_out))

    def _clean(self, x):
        """Zero entries below 1e-12 of their row, renormalise, repair the budget if needed."""
        y = np.where(x < 1e-12, 0.0, x)
        keep = self._row_argmax(x)
        y[keep] = x[keep]
        y /= np.bincount(self.sr, weights=y, minlength=self.K)[self.sr]
        if self.tight:
            return y
        over = float(self.cost @ y) - self.delta
        if over > 0:
            d_x = float(self.cost @ x)
            # mix with x, which is strictly within budget
            theta = over / max(float(self.cost @ y) - d_x, 1e-300)
            y = (1 - theta) * y + theta * x
            y /= np.bincount(self.sr, weights=y, minlength=self.K)[self.sr]
        return y

    def _finish(self, lb, mu, codebook):
        x_raw = self.x
        x_cln = self._clean(x_raw)
        picks = []
        for x in (x_cln, x_raw):
            sq = self._sparse_table(x)
            J_bits = leakage_bits(self.p_full, sq)
            dist = expected_distortion(self.p_c, sq, self.D)
            picks.append((J_bits, dist, x))
        J_bits, dist, x = picks[0]
        if (picks[0][0] > picks[1][0] + 0.01 * self.tol / _LN2) or \
                (not self.tight and picks[0][1] > self.delta and picks[1][1] <= self.delta):
            J_bits, dist, x = picks[1]
        lb_bits = max(lb / _LN2, 0.0)
        gap = max(J_bits - lb_bits, 0.0)
        if gap > self.tol / _LN2:
            raise SolverError(
                f"fast solver: gap {gap:.3g} bits after {self.stats['rounds']} rounds is above "
                f"tol_bits = {self.tol / _LN2:.3g}; raise max_iter or tol_bits")
        table = self._table_from(x)
        self._report(1.0)
        nnz = int(np.count_nonzero(x))
        info = dict(self.stats)
        info.update({
            "lower_bound_bits": lb_bits,
            "support_size": int(self.sr.size),
            "nonzeros": nnz,
            "nonzeros_per_row": nnz / max(1, int(np.sum(self.active))),
            "timing_s": {k: float(v) for k, v in self.timing.items()},
        })
        info["last_gap_nats"] = float(info.get("last_gap_nats", 0.0))
        return SolveResult(
            table=table,
            leakage_bits=J_bits,
            distortion=dist,
            multiplier=0.0 if self.tight else mu / _LN2,
            gap_bits=gap,
            status="optimal",
            solver="fast",
            message=(f"certified within {gap:.2g} bits of optimal (lower bound {lb_bits:.9g} bits) "
                     f"in {self.stats['rounds']} rounds"),
            info=info,
        )

    def _finish_trivial(self, jmin, why):
        table = np.zeros((self.K, self.K_out))
        table[np.arange(self.K), jmin] = 1.0
        self._report(1.0)
        return SolveResult(
            table=table,
            leakage_bits=leakage_bits(self.p_full, table),
            distortion=expected_distortion(self.p_c, table, self.D),
            multiplier=0.0,
            gap_bits=0.0,
            status="optimal",
            solver="fast",
            message=f"{why}; every input on its cheapest output (proven optimal)",
            info={"rounds": 0, "lower_bound_bits": 0.0},
        )
