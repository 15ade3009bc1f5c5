"""privmap's own solver of program (19), with a certified gap.

Problem
-------
Given the joint prior p(a, c) (shape ``(|A|, K)``), a distortion matrix D
(shape ``(K, K_out)``, ``inf`` = forbidden) and a budget delta, find a
row-stochastic q (``K x K_out``) minimising the leakage

    J(q) = I(A; C_hat) = sum_{a, j} P(a, j) log( P(a, j) / (p(a) P(j)) ),
    P(a, j) = sum_c p(a, c) q(c, j),

subject to sum_{c, j} p(c) q(c, j) D(c, j) <= delta.

Why this method
---------------
J depends on q only through the |A| x K_out matrix P, and optimal tables are
very sparse (1.2 to 1.8 entries per row), like vertices of a linear program. A
generic conic solver pays for all K * K_out variables and an exponential-cone
lifting of each. This solver works on the *dual*, which has only
K_out * (|A| - 1) + 1 variables, and proves every answer.

**The dual.** For a codebook R = (r_j) of distributions on A (one per output)
and mu >= 0, Gibbs' inequality gives J(q) >= sum_{c,j} q(c,j) W(c,j) with
W(c, j) = sum_a p(a, c) log(r_j(a) / p(a)), so for every feasible q

    J* >= LB(R, mu) = sum_c p(c) min_{j : D(c,j) < inf} z(c, j) - mu delta,
    z(c, j) = sum_a p(a|c) log(r_j(a) / p(a)) + mu D(c, j).

LB is the exact Lagrangian dual of the full problem (all K x K_out pairs), so
it certifies optimality over every table, and it is tight at the optimum
(minimax theorem: R = posteriors of the optimal outputs, mu = the multiplier).

**Smoothing and Newton's method.** LB is concave but not smooth (a sum of row
minima). Replacing each row minimum by a soft minimum at temperature tau,

    Phi_tau(theta, mu) = sum_c p(c) * (-tau) log sum_j exp(-z(c, j) / tau) - mu delta,

with r_j = softmax(theta_j), gives a smooth concave function whose maximiser
is the dual of the primal problem regularised by tau * sum_c p(c) H(q(.|c)).
Its gradient is (P(., j) - P(j) r_j, E d - delta) for the soft table
q(c, j) = softmax_j(-z(c, j) / tau) (so at the maximiser r_j is exactly the
posterior of output j), and its Hessian is sparse: a block per output plus,
for each row, the covariance of its candidates, and a border for mu. We
maximise Phi_tau by Newton's method with a backtracking line search and follow
the path tau -> 0, the entropic analogue of an interior-point method: each
halving of tau costs a few Newton steps (up to about ten late on the path,
where Newton converges only linearly), each a linear solve of size
K_out * (|A| - 1): dense Cholesky for small systems, above that conjugate
gradients with exact Hessian products, preconditioned by the sparse LU factors
of a copy of the Hessian whose weak cross terms (pairs with q_k q_l < 1e-4) are
moved onto the diagonal, which keeps it positive definite and cuts the fill of
the factorisation several-fold. Early on the path (tau above 0.0003 times its
start) rows spread over several candidates, those factors fill in, and the
centre only guides the way down: there CG is preconditioned by the diagonal
and stopped at a loose tolerance. On synthetic instances that cut the time
2.5x to 4x at K = 2048 and 4096 with the switch at 0.003; moving it to 0.0003
cut another 17 to 30% at K = 2048 to 8192 and 13% at 16384 (single runs),
because the factors of the steps in between filled in most (mean fill of the
LU factors 377k at K = 8192 against 58k after the move).
First-order methods (mirror descent, Frank-Wolfe, Blahut-Arimoto alternation)
stall long before 1e-6 bits on this ill-conditioned objective.

**Certificates from the path's tangent.** Near tau = 0 the dual path is nearly
linear, x(tau) = x* + tau x'(tau) + O(tau^2), and its tangent x' costs one more
solve with the same factors. Extrapolating to tau = 0 gives duals whose
exact LB is within O(tau^2) of the optimum, while the soft table's leakage is
within O(tau^2) too; so a certificate of 1e-6 bits needs tau near 1e-4, not
1e-7. The same tangent predicts the duals at the next, smaller tau.

**Nearly pure codebook entries.** An output fed only by rows of one class gets a
nearly pure posterior, which makes it look unboundedly attractive to every
other row. Each output therefore starts with three candidate rows leaning to each
class, a Newton step may be replaced by a jump of the codebook to the soft
table's posteriors (logistic Newton moves one unit per step), and pricing
takes only the most violated rows of any one output per pass.

**The answer.** The table is the soft table on the candidates, mixed with the
cheapest-output table just enough to meet the budget. Its leakage and
distortion are recomputed from it; ``gap_bits`` is leakage minus the full LB
(with a floating-point safety margin), and the solver stops once that is at
most ``tol_bits``.

Costs: memory O(K * K_out) only for the caller's D and the returned table,
plus O(number of candidates); time per Newton step O(candidates * |A|) plus a
sparse factorisation and a few conjugate-gradient iterations; per pricing pass
O(K * K_out * |A|).
"""
from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from threadpoolctl import threadpool_limits

from .._errors import SolverError
from .._information import expected_distortion, leakage_bits
from ._fast_instance import _LN2, _Instance, _leakage_nats
from ._fast_pricing import _N_ADD, _Pricing
from ._negligible import merge_negligible_outputs
from ._problem import check_instance
from ._result import SolveResult

_EPS = np.finfo(float).eps
_START_MIX = 0.1                 # starting codebook: posterior of the cheapest input, mixed with p(a)
_BLAS_THREADS = 1                # the solver's products have an inner dimension of |A| or are
                                 # sparse, so BLAS threads gain nothing; with another process on
                                 # the cores, OpenBLAS's spinning threads made a K = 128 hard
                                 # instance 8x slower (2.1 s against 0.26 s)
_TAU_SHRINK = 0.1                # first factor by which tau shrinks once centred (then adapted)
_EXTRAP_MAX = 0.5                # outputs whose logits would move more are not extrapolated
_PASS_EVERY = 0.5                # a pricing pass whenever tau fell by this factor since the last
_RESET_BELOW = 0.25              # a posterior reset is tried when the line search cut the step below this
_REHEAT = 0.3                    # after pricing, tau >= _REHEAT * median margin of new pairs
_CENTRED = 0.1                   # Newton decrement^2 <= _CENTRED * tau: near the centre
_TIGHT = 1e-3                    # centring tightly: decrement^2 <= tau * (_TIGHT * tol)^2
_TAU_MIN = 1e-6                  # give up below tau = _TAU_MIN * tol
_DENSE_MAX = 600                 # dense Cholesky of the Newton system up to this many unknowns
_EXP_CUT = 700.0                 # softmax weights below exp(-_EXP_CUT) are raised to it: exp is ~8x slower
                                 # where it underflows, and the soft minimum moves by < 1e-300 relative
_Q_DROP = 1e-300                 # entries of the returned table below this are dropped
_Q_PAIR = 1e-13                  # softmax weights below this do not enter Hessian cross terms
_Q_PRECOND = 1e-4                # sparse path: cross terms with q_k q_l below this leave the preconditioner
_CG_RTOL = 1e-7                  # relative residual of the preconditioned conjugate gradients
_CG_MAXITER = 200                # CG iterations per solve; an unconverged solve still gives an ascent direction
_JACOBI_TAU = 3e-4               # above this fraction of the starting tau: CG with the diagonal as preconditioner,
_JACOBI_RTOL = 1e-3              # to this relative residual,
_JACOBI_MAXITER = 100            # in at most this many iterations
_WARM_Q = 1e-9                   # warm start: table entries above this become starting candidates


# ----------------------------------------------------------------------------------------------
# public entry point
# ----------------------------------------------------------------------------------------------

def solve_fast(p_ac, distortion, delta, *, tol_bits: float = 1e-5, max_iter: int | None = None,
               progress: Callable[[float], None] | None = None,
               warm_start: SolveResult | None = None) -> SolveResult:
    """Solve program (19) by smoothed dual Newton with pricing, and certify the answer.

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
    max_iter : int or None, keyword-only
        Most Newton steps in all; None: max(1000, K_out // 4). Synthetic instances took
        88 to 271 steps from K = 1024 to 16384 (benchmarks/README.md).
    progress : callable(float) or None, keyword-only
        Called with an estimate of the fraction done, in [0, 1].
    warm_start : SolveResult or None, keyword-only
        A previous answer on the same rows, outputs and private classes (its ``table`` of shape
        (K, K_out) and ``multiplier``), typically before the distortion or the budget moved a
        little (the codebook step's re-solve). The path then starts from its duals (each
        output's codebook entry at the posterior of its table column, mu at its multiplier),
        its table's pairs join the starting candidates; the temperature starts where the cold
        start's does (a path started lower from these duals took more Newton steps, not
        fewer: benchmarks/README.md). Only the start changes: the answer is certified
        as without it (the lower bound prices every pair). ValueError if its table's shape
        is not (K, K_out).

    Returns
    -------
    SolveResult
        ``table`` (K, K_out) row-stochastic with zero mass on forbidden pairs;
        ``leakage_bits`` and ``distortion`` recomputed from ``table``;
        ``multiplier`` (bits per unit distortion) of the budget;
        ``gap_bits`` <= ``tol_bits``, a proven bound on leakage_bits - optimum;
        ``info`` with Newton steps, evaluations of the smoothed dual, pricing passes,
        candidates, lower bound, timings.

    Raises
    ------
    ValueError
        Malformed instance (shapes, signs, prior not summing to 1, a row with no
        allowed output) or ``tol_bits`` not positive.
    InfeasibleError
        ``delta`` below sum_c p(c) min_j d(c, j), the least distortion any table reaches.
    SolverError
        The gap could not be certified within ``max_iter`` Newton steps.
    """
    started = time.perf_counter()
    p_ac, D, delta = check_instance(p_ac, distortion, delta)
    if not (tol_bits > 0 and math.isfinite(tol_bits)):
        raise ValueError(f"tol_bits must be positive and finite, got {tol_bits}")
    if max_iter is None:
        max_iter = max(1000, D.shape[1] // 4)
    if warm_start is not None and np.shape(warm_start.table) != D.shape:
        raise ValueError(f"warm_start table has shape {np.shape(warm_start.table)}, "
                         f"expected {D.shape}")
    with threadpool_limits(limits=_BLAS_THREADS):
        result = _DualNewton(p_ac, D, delta, tol_bits, int(max_iter), progress).run(warm_start)
    result.info["time_s"] = time.perf_counter() - started
    return result


# ----------------------------------------------------------------------------------------------
# implementation
# ----------------------------------------------------------------------------------------------

class _DualNewton(_Pricing, _Instance):
    def _lower_bound(self, total, absolute, mu):
        # rounding in the sums: |fl(s) - s| <= ~(K + A + 2) eps sum |terms|; a generous margin
        margin = 8.0 * (self.K + self.A + 8) * _EPS * (absolute + mu * self.delta) + 1e-300
        return total - mu * self.delta - margin

    # ---- the smoothed dual on the candidates -------------------------------------------------

    def _codebook(self, theta):
        """log r_j(a) - log p(a), shape (A, K_out), and r, from logits theta (A, K_out)."""
        m = theta.max(axis=0)
        lse = m + np.log(np.exp(theta - m).sum(axis=0))
        logr = theta - lse
        return logr - self.log_p_a[:, None], np.exp(logr)

    def _evaluate(self, theta, mu, tau):
        self.stats["evaluations"] += 1
        G, r = self._codebook(theta)
        z = self.c_alpha[0] * G[0].take(self.cj)
        for a in range(1, self.A):
            z += self.c_alpha[a] * G[a].take(self.cj)
        if self.budget:
            z += mu * self.c_d
        zmin = np.minimum.reduceat(z, self.start)
        t = (z - zmin[self.cr]) / tau
        e = np.exp(-np.minimum(t, _EXP_CUT, out=t))
        S = np.add.reduceat(e, self.start)
        q = e / S[self.cr]
        pc_row = self.p_c[self.rows]
        phi = float(pc_row @ (zmin - tau * np.log(S))) - (mu * self.delta if self.budget else 0.0)
        return {"G": G, "r": r, "z": z, "zmin": zmin, "e": e, "S": S, "q": q, "phi": phi,
                "theta": theta, "mu": mu, "tau": tau}

    def _primal(self, ev):
        """P (A, K_out), leakage (nats) and distortion of the soft table ev["q"]."""
        w = self.c_pc * ev["q"]
        P = np.empty((self.A, self.K_out))
        for a in range(self.A):
            P[a] = np.bincount(self.cj, weights=w * self.c_alpha[a], minlength=self.K_out)
        return P, _leakage_nats(P, self.log_p_a), float(w @ self.c_d)

    def _gradient(self, ev, P):
        s = P.sum(axis=0)
        g_theta = (P - s * ev["r"])[:-1]                  # (A-1, K_out)
        g_mu = float((self.c_pc * ev["q"]) @ self.c_d) - self.delta
        return g_theta, g_mu

    def _factor(self, ev, P):
        """Factorise N = -Hessian of Phi_tau (sparse, positive semi-definite).

        N = blockdiag_j(P(j) Cov(r_j)) + sum_c (p(c)/tau) Cov_{q_c}(dz_c / dtheta), bordered by
        the multiplier. Up to _DENSE_MAX unknowns N itself is factorised (dense Cholesky).
        Above, N is solved by conjugate gradients (exact products, `_hessian_operator`). Far up
        the path (tau > _JACOBI_TAU times the starting tau) rows spread over several
        candidates, so sparse factors fill in badly, while the centre there only guides the
        path: CG is preconditioned by the diagonal of N and stopped at a loose tolerance.
        Further down it is preconditioned with the LU factors of a sparser matrix M >= N (see
        `_assemble`), whose factorisation has several-fold less fill than that of N.
        Returns solve(rhs_theta (A-1, K_out), rhs_mu) -> (d_theta, d_mu) with N d = rhs.
        """
        A1, n_out = self.A - 1, self.K_out
        nth = A1 * n_out
        tau, q, r = ev["tau"], ev["q"], ev["r"]
        s = P.sum(axis=0)
        cr, cj = self.cr, self.cj
        wk = self.c_pc * q / tau                          # (n,)
        V = self.c_alpha[:A1] - r[:A1, cj]                # (A-1, n): dz/dtheta_j(b)
        floor = 1e-14 * float(s.max()) + 1e-300           # outputs without mass: no curvature
        if nth <= _DENSE_MAX:
            ri, ci, vals, dscale = self._assemble(ev, s, wk, V, floor, sparsify=False)
            Ns = np.bincount(ri * nth + ci, weights=vals, minlength=nth * nth).reshape(nth, nth)
            factor = sla.cho_factor(Ns, check_finite=False)

            def solve_theta(v):
                return dscale * sla.cho_solve(factor, dscale * v, check_finite=False)
        else:
            if tau > _JACOBI_TAU * self.scale:
                inv_diag = 1.0 / self._diagonal(ev, s, wk, V, floor)
                precond = spla.LinearOperator((nth, nth), matvec=lambda v: inv_diag * v)
                rtol, maxiter = _JACOBI_RTOL, _JACOBI_MAXITER
            else:
                ri, ci, vals, dscale = self._assemble(ev, s, wk, V, floor, sparsify=True)
                lu = spla.splu(sp.csc_matrix((vals, (ri, ci)), shape=(nth, nth)),
                               permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                               options={"SymmetricMode": True})
                precond = spla.LinearOperator((nth, nth),
                                              matvec=lambda v: dscale * lu.solve(dscale * v))
                rtol, maxiter = _CG_RTOL, _CG_MAXITER
            hessian = spla.LinearOperator((nth, nth), matvec=self._hessian_operator(ev, s, wk, V, floor))

            def solve_theta(v):
                x, _ = spla.cg(hessian, v, x0=precond.matvec(v), rtol=rtol, maxiter=maxiter,
                               M=precond)
                return x

        def theta(rhs_theta):
            return solve_theta(rhs_theta.T.ravel()).reshape(n_out, A1).T

        if not self.budget:
            def solve(rhs_theta, rhs_mu):
                return theta(rhs_theta), 0.0
            solve.theta = theta
            return solve
        dbar = np.add.reduceat(q * self.c_d, self.start)
        dev = self.c_d - dbar[cr]
        b_vec = np.zeros(nth)
        for b in range(A1):
            b_vec[b::A1] = np.bincount(cj, weights=wk * dev * V[b], minlength=n_out)
        c_mm = float(wk @ (dev * dev))
        y2 = solve_theta(b_vec)
        schur = max(c_mm - float(b_vec @ y2), 1e-300 + 1e-14 * abs(c_mm))

        def solve(rhs_theta, rhs_mu):
            y1 = solve_theta(rhs_theta.T.ravel())
            d_mu = (rhs_mu - float(b_vec @ y1)) / schur
            return (y1 - y2 * d_mu).reshape(n_out, A1).T, d_mu
        solve.theta = theta
        return solve

    def _assemble(self, ev, s, wk, V, floor, *, sparsify):
        """Triplets (rows, cols, values) of N + floor I scaled to unit diagonal, and the scale.

        With ``sparsify``, cross terms of candidate pairs with q_k q_l < _Q_PRECOND are moved
        onto the two diagonal blocks: the matrix becomes M = N + sum c (v_k; v_l)(v_k; v_l)^T
        >= N, still positive semi-definite, with several-fold less fill when factorised.
        """
        A1, n_out = self.A - 1, self.K_out
        q, r, cj = ev["q"], ev["r"], self.cj
        one_minus_q = self._one_minus_q(ev)
        # cross terms within a row: -(p(c)/tau) q_k q_l v_k v_l^T for k != l
        k1, l1 = self._row_pairs(q)
        moved = np.zeros(q.size)
        if sparsify:
            weak = q[k1] * q[l1] < _Q_PRECOND
            moved = np.bincount(k1[weak], weights=q[l1[weak]], minlength=q.size)
            k1, l1 = k1[~weak], l1[~weak]
        coef = -wk[k1] * q[l1]
        ri, ci, vals = [], [], []
        for b in range(A1):
            for b2 in range(A1):
                ri.append(cj[k1] * A1 + b)
                ci.append(cj[l1] * A1 + b2)
                vals.append(coef * V[b, k1] * V[b2, l1])
        bi, bj, bv = self._block_triplets(self._blocks(s, r, floor, wk * (one_minus_q + moved), V))
        ri, ci, vals = np.concatenate([bi] + ri), np.concatenate([bj] + ci), np.concatenate([bv] + vals)
        diag = np.bincount(ri[ri == ci], weights=vals[ri == ci], minlength=A1 * n_out)
        dscale = 1.0 / np.sqrt(diag)
        return ri, ci, vals * dscale[ri] * dscale[ci], dscale

    def _blocks(self, s, r, floor, weights, V):
        """The block-diagonal part of N + floor I, shape (K_out, A-1, A-1).

        Per output j: P(j) Cov(r_j) + floor I + sum over its candidates k of weights_k v_k v_k^T,
        with v_k = V[:, k] (shape (A-1,)).
        """
        A1 = self.A - 1
        r = r[:A1]
        blocks = np.empty((self.K_out, A1, A1))
        for b in range(A1):
            for b2 in range(A1):
                cand = np.bincount(self.cj, weights=weights * V[b] * V[b2], minlength=self.K_out)
                blocks[:, b, b2] = s * ((r[b] if b == b2 else 0.0) - r[b] * r[b2]) + cand
            blocks[:, b, b] += floor
        return blocks

    @staticmethod
    def _block_triplets(blocks):
        """Triplets (rows, cols, values) of a (K_out, A-1, A-1) block diagonal; flat index
        output * (A-1) + b."""
        n_out, A1, _ = blocks.shape
        first = np.arange(n_out)[:, None, None] * A1
        b = np.arange(A1)
        rows = np.broadcast_to(first + b[None, :, None], blocks.shape)
        cols = np.broadcast_to(first + b[None, None, :], blocks.shape)
        return rows.ravel(), cols.ravel(), blocks.ravel()

    def _one_minus_q(self, ev):
        """1 - q per candidate, from the row sums (without the cancellation of 1 - q)."""
        S = ev["S"][self.cr]
        return (S - ev["e"]) / S

    def _diagonal(self, ev, s, wk, V, floor):
        """The diagonal of N + floor I (see _factor), flat in the order output * (A-1) + b.

        A row's cross terms join different outputs, so the diagonal is that of the blocks with
        the candidates weighted by w_k (1 - q_k).
        """
        blocks = self._blocks(s, ev["r"], floor, wk * self._one_minus_q(ev), V)
        return np.diagonal(blocks, axis1=1, axis2=2).ravel()

    def _hessian_operator(self, ev, s, wk, V, floor):
        """v -> N v for the theta block of N (see _factor), v flat in the order output * (A-1) + b.

        N = G - L Rt with G block-diagonal (the codebook blocks plus sum_k w_k v_k v_k^T per
        output), Rt = R Q B (per row, the q-weighted mean of its candidates' dz/dtheta) and
        L = B^T W R^T, where B maps theta to the candidates' dz. Rt and L^T share the sparsity
        of the candidate lists (rows sorted), so both are built as CSR without conversion and
        L is applied as the CSC transpose of L^T; G is applied block by block. Each product
        reads the candidates about twice instead of the nine passes of applying the row
        covariances elementwise.
        """
        A1 = self.A - 1
        nth, R, n = A1 * self.K_out, self.rows.size, self.cr.size
        col = (self.cj[:, None] * A1 + np.arange(A1)).ravel()     # candidate k, class b
        indptr = np.r_[self.start, n] * A1
        VT = V.T                                                  # (n, A-1)
        Rt = sp.csr_matrix(((ev["q"][:, None] * VT).ravel(), col, indptr), shape=(R, nth))
        L = sp.csr_matrix(((wk[:, None] * VT).ravel(), col, indptr), shape=(R, nth)).T
        blocks = self._blocks(s, ev["r"], floor, wk, V)

        def times(v):
            Gv = np.einsum("jab,jb->ja", blocks, v.reshape(self.K_out, A1)).ravel()
            return Gv - L @ (Rt @ v)
        return times

    def _row_pairs(self, q):
        """Index pairs (k, l), k != l, of candidates in one row with softmax weight > _Q_PAIR.

        O(sum over rows of m^2) for m significant candidates per row.
        """
        sig = np.flatnonzero(q > _Q_PAIR)
        counts = np.bincount(self.cr[sig], minlength=self.rows.size)
        multi = sig[counts[self.cr[sig]] > 1]             # sorted by row
        if multi.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        row = self.cr[multi]
        first = np.r_[0, np.flatnonzero(row[1:] != row[:-1]) + 1]
        lens = np.diff(np.r_[first, multi.size])
        m = np.repeat(lens, lens)                         # per element: its row's count
        group = np.repeat(first, lens)                    # per element: its row's first position
        block = np.cumsum(m) - m                          # where each element's pairs begin
        within = np.arange(int(m.sum())) - np.repeat(block, m)
        kk = np.repeat(multi, m)
        ll = multi[np.repeat(group, m) + within]
        ok = kk != ll
        return kk[ok], ll[ok]

    def _tau_derivative(self, ev):
        """d grad / d tau at fixed duals: the right-hand side of the path's tangent."""
        q, z, tau = ev["q"], ev["z"], ev["tau"]
        zbar = np.add.reduceat(q * z, self.start)
        w = self.c_pc * q * (z - zbar[self.cr]) / tau ** 2
        V = self.c_alpha[:-1] - ev["r"][:-1, self.cj]
        g_theta = np.stack([np.bincount(self.cj, weights=w * V[b], minlength=self.K_out)
                            for b in range(self.A - 1)])
        return g_theta, float(w @ self.c_d)

    # ---- main loop ----------------------------------------------------------------------------

    def run(self, warm: SolveResult | None = None) -> SolveResult:
        t0 = time.perf_counter()
        self.jmin, dmin, col_arg, col_ok, col_cost = self._scan_minima()
        pc_row = self.p_c[self.rows]
        least = float(pc_row @ dmin)
        if self.A <= 1:
            return self._trivial("one private class has all the mass: leakage is 0")
        self.tight = self.delta <= least + 1e-12 * max(1.0, least)
        self.tie = dmin + 1e-12 * np.maximum(1.0, dmin)
        self.budget = not self.tight
        constant = float(col_cost.min())
        if constant <= self.delta:
            return self._single_output(int(np.argmin(col_cost)))

        # starting duals: each output's codebook entry near the posterior of its cheapest input; the
        # multiplier and temperature on the scale of the leakage without privacy, I(A; C)
        theta = np.zeros((self.A, self.K_out))
        r0 = np.tile(self.p_a[:, None], (1, self.K_out))
        r0[:, col_ok] = (1 - _START_MIX) * self.alpha[:, col_arg[col_ok]] + _START_MIX * self.p_a[:, None]
        theta[:] = np.log(r0) - np.log(r0[-1])
        scale = max(_leakage_nats(self.p[:, self.rows], self.log_p_a), self.tol)
        mu = 2.0 * scale / max(constant - least, 1e-300) if self.budget else 0.0
        r_w = j_w = np.zeros(0, np.int64)
        if warm is not None:
            mu, r_w, j_w = self._warm_duals(warm, theta, mu)
        G0, _ = self._codebook(theta)
        self._start_candidates(G0, mu, r_w, j_w)
        self.scale = scale
        ev = self._evaluate(theta, mu, scale)
        self.timing["start"] = time.perf_counter() - t0
        return self._follow_path(ev, least)

    def _warm_duals(self, warm, theta, mu):
        """Start from a previous answer: writes the logits of its outputs' posteriors into
        ``theta`` (A, K_out) in place (outputs it left empty keep theirs), and returns its
        multiplier in nats (``mu`` when it had none, NaN, or no budget binds) and its table's
        pairs (active-row indices, outputs) where allowed in D."""
        table = warm.table
        rows, cols = (table.nonzero() if sp.issparse(table) else np.nonzero(np.asarray(table)))
        vals = np.asarray(table[rows, cols]).ravel()
        pos = np.full(self.K, -1, np.int64)
        pos[self.rows] = np.arange(self.rows.size)
        keep = (vals > _WARM_Q) & (pos[rows] >= 0)
        keep[keep] = np.isfinite(self.D[rows[keep], cols[keep]])
        rows, cols, vals = rows[keep], cols[keep], vals[keep]
        P = np.zeros((self.A, self.K_out))
        for a in range(self.A):
            np.add.at(P[a], cols, self.p[a, rows] * vals)
        used = P.sum(axis=0) > 0
        r = (1 - _START_MIX) * P[:, used] / P[:, used].sum(axis=0) + _START_MIX * self.p_a[:, None]
        theta[:, used] = np.log(r) - np.log(r[-1])
        if self.budget and math.isfinite(warm.multiplier) and warm.multiplier > 0:
            mu = float(warm.multiplier) * _LN2
        return mu, pos[rows], cols

    def _follow_path(self, ev, least):
        """Newton steps on Phi_tau; once centred, certify or shrink tau along the path's tangent.

        The dual path is close to linear in tau, x(tau) = x* + tau x' + O(tau^2), so the
        tangent extrapolated to tau = 0 gives duals whose exact bound LB is within O(tau^2)
        of the optimum, while the soft table at tau is within O(tau^2) of it too.
        """
        tn = time.perf_counter()
        best_lb, best_mu = -math.inf, 0.0
        gap0 = None
        priced_tau = math.inf            # tau of the last pricing pass
        shrink = _TAU_SHRINK
        stage_steps = 0
        self._last_gap = math.inf
        while True:
            if self.stats["newton_steps"] >= self.max_iter:
                self.timing["newton"] += time.perf_counter() - tn
                raise SolverError(
                    f"fast solver: no certificate within {self.max_iter} Newton steps "
                    f"(best gap {self._last_gap / _LN2:.3g} bits, tol_bits {self.tol / _LN2:.3g})")
            P, J, Ed = self._primal(ev)
            g_theta, g_mu = self._gradient(ev, P)
            solve = self._factor(ev, P)
            if self.budget and ev["mu"] == 0.0 and g_mu <= 0.0:
                g_mu = 0.0                    # the bound mu >= 0 is active: step in theta only
                solve = self._theta_only(solve)
            d_theta, d_mu = solve(g_theta, g_mu)
            self.stats["newton_steps"] += 1
            stage_steps += 1
            dec = float(np.sum(g_theta * d_theta)) + (g_mu * d_mu if self.budget else 0.0)
            tau = ev["tau"]
            if dec > _CENTRED * tau:
                trial = self._ascend(ev, P, d_theta, d_mu, dec)
                if trial is None:             # no ascent from here: back off to a larger tau
                    if tau > self.scale:
                        self.timing["newton"] += time.perf_counter() - tn
                        raise SolverError(f"fast solver: no ascent direction at tau = {tau:.3g}")
                    ev = self._evaluate(ev["theta"], ev["mu"], 10.0 * tau)
                    shrink = max(shrink, 0.5)
                    continue
                ev = trial
                continue
            # near the centre at this tau: extrapolate the duals to tau = 0, measure the gap
            t_theta, t_mu = solve(*self._tau_derivative(ev))
            step0 = tau * t_theta
            wild = np.abs(step0).max(axis=0) > _EXTRAP_MAX   # outputs with next to no curvature
            step0[:, wild] = 0.0
            theta0 = ev["theta"] - _pad(step0)
            mu0 = max(ev["mu"] - tau * t_mu, 0.0) if self.budget else 0.0
            ev0 = self._evaluate(theta0, mu0, tau)
            J_mix, mix = self._mixed_leakage(ev, P, J, Ed, least)
            cand_lb = float(self.p_c[self.rows] @ ev0["zmin"]) - mu0 * self.delta
            gap = J_mix - cand_lb
            gap0 = gap0 if gap0 is not None else max(gap, self.tol)
            self._report_gap(gap, gap0)
            if gap <= 0.5 * self.tol or (tau <= _PASS_EVERY * min(priced_tau, self.scale)):
                priced_tau = tau
                total, absolute, nr, nc, margin = self._pass(ev0["G"], mu0, ev0["zmin"], _N_ADD)
                lb = self._lower_bound(total, absolute, mu0)
                if lb > best_lb:
                    best_lb, best_mu = lb, mu0
                self._last_gap = J_mix - best_lb
                if J_mix - best_lb <= self.tol:
                    self.timing["newton"] += time.perf_counter() - tn
                    return self._finish(ev, mix, best_lb, best_mu)
                if nr.size:
                    # new candidates beat their rows by some margin: re-centre at a tau that
                    # sees them smoothly, from duals predicted along the tangent
                    self._add_candidates(nr, nc)
                    new_tau = min(max(tau, _REHEAT * float(np.median(margin))), self.scale)
                    priced_tau = new_tau
                    ev = self._along_tangent(ev, t_theta, t_mu, new_tau)
                    stage_steps = 0
                    continue
            # Phi_tau + tau * entropy equals J + mu (E d - delta) at the exact centre; when the
            # soft table is what keeps the gap open, centre tightly before going on
            entropy = -float(self.c_pc @ (ev["q"] * np.log(np.maximum(ev["q"], 1e-300))))
            primal_err = J_mix - (ev["phi"] + tau * entropy)
            if primal_err > 0.25 * gap and dec > tau * (_TIGHT * self.tol) ** 2:
                trial = self._ascend(ev, P, d_theta, d_mu, dec)
                if trial is not None:
                    ev = trial
                    continue
            if tau <= _TAU_MIN * self.tol:
                self.timing["newton"] += time.perf_counter() - tn
                raise SolverError(
                    f"fast solver: the smoothing path reached tau = {tau:.3g} without a certificate "
                    f"(gap {gap / _LN2:.3g} bits, tol_bits {self.tol / _LN2:.3g})")
            # predictor: follow the tangent to the next tau; shrink faster while stages are cheap
            shrink = max(shrink * 0.5, 0.02) if stage_steps <= 2 else \
                min(shrink * 2.0, 0.5) if stage_steps > 5 else shrink
            stage_steps = 0
            ev = self._along_tangent(ev, t_theta, t_mu, tau * shrink)

    def _along_tangent(self, ev, t_theta, t_mu, new_tau):
        """Duals predicted at new_tau from the path's tangent at ev (kept if mu would go < 0)."""
        tau = ev["tau"]
        mu1 = ev["mu"] + (new_tau - tau) * t_mu if self.budget else 0.0
        if self.budget and mu1 <= 0:
            return self._evaluate(ev["theta"], ev["mu"], new_tau)
        return self._evaluate(ev["theta"] + (new_tau - tau) * _pad(t_theta), mu1, new_tau)

    def _ascend(self, ev, P, d_theta, d_mu, dec):
        """A Newton line search, or a posterior reset where that ascends more; None if neither
        ascends. The reset is tried only when Newton's step was cut below _RESET_BELOW (on the
        benchmark instances it never won after a full or half step)."""
        trial, step = self._line_search(ev, d_theta, d_mu, dec)
        if trial is not None and step >= _RESET_BELOW:
            return trial
        reset = self._posterior_reset(ev, P)
        if reset is not None and (trial is None or reset["phi"] > trial["phi"]):
            return reset
        return trial

    @staticmethod
    def _theta_only(solve):
        """The Newton solve with the multiplier held fixed (its bound active)."""
        def solve_fixed(rhs_theta, rhs_mu):
            return solve.theta(rhs_theta), 0.0
        return solve_fixed

    def _line_search(self, ev, d_theta, d_mu, dec):
        """Backtracking (Armijo) ascent step, projected on mu >= 0: (trial, step), or (None, 0.0)
        if Phi_tau cannot rise."""
        step = 1.0
        mu = ev["mu"]
        while step > 1e-12:
            trial = self._evaluate(ev["theta"] + step * _pad(d_theta),
                                   max(mu + step * d_mu, 0.0) if self.budget else 0.0, ev["tau"])
            if trial["phi"] >= ev["phi"] + 0.25 * step * dec:
                return trial, step
            step *= 0.5
        return None, 0.0

    def _posterior_reset(self, ev, P):
        """Codebook set to the soft table's posteriors; None unless that raises Phi_tau.

        Newton's method in logits moves a codebook entry that must become nearly pure by
        about one unit per step; this jump gets there at once.
        """
        s = P.sum(axis=0)
        used = s > 1e-300
        theta = ev["theta"].copy()
        with np.errstate(divide="ignore"):
            logr = np.log(P[:, used] / s[used])
        logr = np.maximum(logr, -30.0)
        theta[:, used] = logr - logr[-1]
        trial = self._evaluate(theta, ev["mu"], ev["tau"])
        return trial if trial["phi"] > ev["phi"] else None

    def _mixed_leakage(self, ev, P, J, Ed, least):
        """Leakage of the soft table mixed with the cheapest-output table to meet the budget."""
        target = self.delta * (1.0 - 1e-13)            # rounding must not carry E d above delta
        if self.tight or Ed <= target:
            return J, 0.0
        mix = min(1.0, (Ed - target) / max(Ed - least, 1e-300))
        w_low = self.c_pc * self.c_low.astype(float)
        P_low = np.empty_like(P)
        for a in range(self.A):
            P_low[a] = np.bincount(self.cj, weights=w_low * self.c_alpha[a], minlength=self.K_out)
        return _leakage_nats((1 - mix) * P + mix * P_low, self.log_p_a), mix

    def _single_output(self, j):
        """Every row on output j, which is allowed for all and within budget: leakage 0, optimal."""
        table = np.zeros((self.K, self.K_out))
        table[self.rows, j] = 1.0
        rows, cols = self._inactive_entries()
        table[rows, cols] = 1.0
        return self._result(table, 0.0, 0.0, "one output within budget for every row: leakage 0 "
                            "(proven optimal)", {"lower_bound_bits": 0.0})

    def _inactive_entries(self):
        """(rows, cols): each row without mass on its cheapest output."""
        inactive = np.setdiff1d(np.arange(self.K), self.rows)
        return inactive, np.argmin(self.D[inactive], axis=1).astype(np.int64)

    def _report_gap(self, gap, gap0):
        if self.progress is None or gap0 is None:
            return
        done = math.log(max(gap0, 1e-300) / max(gap, 1e-300)) / max(math.log(max(gap0, 1e-300) / self.tol), 1e-9)
        self.progress(float(min(max(0.9 * done, 0.0), 0.95)))

    # ---- results ------------------------------------------------------------------------------

    def _finish(self, ev, mix, lb, mu):
        q = ev["q"] * (1 - mix) + mix * self.c_low
        keep = q > _Q_DROP                                # weights at the cut are not entries
        in_rows, in_cols = self._inactive_entries()
        rows = np.concatenate([self.rows[self.cr[keep]], in_rows])
        cols = np.concatenate([self.cj[keep], in_cols])
        vals = np.concatenate([q[keep], np.ones(in_rows.size)])
        lb_bits = max(lb / _LN2, 0.0)
        sq, gap, merged = self._certified(rows, cols, vals, lb_bits)
        if gap > self.tol / _LN2:
            raise SolverError(f"fast solver: gap {gap:.3g} bits of the returned table is above "
                              f"tol_bits = {self.tol / _LN2:.3g}")
        nnz = int(np.count_nonzero(q > 1e-12))
        info = dict(self.stats)
        info.update({
            "lower_bound_bits": lb_bits,
            "candidates": int(self.cr.size),
            "nonzeros_per_row": nnz / max(1, self.rows.size),
            "merged_outputs": merged,
            "timing_s": {k: float(v) for k, v in self.timing.items()},
        })
        return self._result(sq.toarray(), mu / _LN2, gap,
                            f"certified within {gap:.2g} bits of optimal (lower bound {lb_bits:.9g} "
                            f"bits) after {self.stats['newton_steps']} Newton steps", info, sq=sq)

    def _certified(self, rows, cols, vals, lb_bits):
        """The table from these entries with negligible outputs merged away, if that re-certifies.

        Returns (sparse table, gap in bits, outputs merged). The merged table is kept when it
        meets the budget and its gap is within ``tol_bits``; otherwise the table as given.
        """
        m_rows, m_cols, m_vals, merged = merge_negligible_outputs(
            self.p_c, self.D, rows, cols, vals, None if self.tight else self.delta * (1.0 - 1e-13))
        if merged:
            sq = sp.csr_matrix((m_vals, (m_rows, m_cols)), shape=(self.K, self.K_out))
            gap = max(leakage_bits(self.p_full, sq) - lb_bits, 0.0)
            if gap <= self.tol / _LN2 and (
                    self.tight or expected_distortion(self.p_c, sq, self.D) <= self.delta):
                return sq, gap, merged
        sq = sp.csr_matrix((vals, (rows, cols)), shape=(self.K, self.K_out))
        if not self.tight and expected_distortion(self.p_c, sq, self.D) > self.delta:
            raise SolverError("internal: the returned table would exceed the budget")
        return sq, max(leakage_bits(self.p_full, sq) - lb_bits, 0.0), 0

    def _result(self, table, multiplier, gap, message, info, sq=None):
        src = table if sq is None else sq
        if self.progress is not None:
            self.progress(1.0)
        return SolveResult(
            table=table,
            leakage_bits=leakage_bits(self.p_full, src),
            distortion=expected_distortion(self.p_c, src, self.D),
            multiplier=multiplier,
            gap_bits=gap,
            status="optimal",
            solver="fast",
            message=message,
            info=info,
        )

    def _trivial(self, why):
        jmin = np.argmin(self.D, axis=1)
        table = np.zeros((self.K, self.K_out))
        table[np.arange(self.K), jmin] = 1.0
        return self._result(table, 0.0, 0.0, f"{why}; every input on its cheapest output (proven optimal)",
                            {"lower_bound_bits": 0.0})


def _pad(d_theta):
    """Append the fixed last logit row (zeros) to a (A-1, K_out) step."""
    return np.vstack([d_theta, np.zeros((1, d_theta.shape[1]))])
