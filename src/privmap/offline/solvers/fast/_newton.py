"""The fast solver's dual Newton core: the smoothed dual on the candidates, and Newton's step on it.

At a fixed temperature tau (nats) and candidate lists (:mod:`._pricing`), the smoothed dual

    Phi_tau(theta, mu) = sum_c p(c) * (-tau) log sum_{j in cand(c)} exp(-z(c, j) / tau) - mu delta,
    z(c, j) = sum_a p(a|c) log(r_j(a) / p(a)) + mu D(c, j),   r_j = softmax(theta[:, j]),

is a smooth concave function of the logits theta (shape ``(A, K_out)``, the last row held at 0,
so the unknowns are ``(A-1, K_out)``) and the multiplier mu >= 0 (nats per unit distortion).
This part evaluates it (:func:`evaluate`, which returns the *evaluation* ``ev``, a
dict of the codebook, the candidates' z, the soft table q over the candidates and Phi_tau), its
gradient and its Hessian, and takes one ascent step at that tau
(:func:`ascend`). Following tau towards 0 is :mod:`._path`'s job.

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
centre only guides the way down: there CG is preconditioned by N's diagonal
blocks (each output's (|A| - 1) x (|A| - 1) block, inverted; the diagonal for a
binary attribute) and stopped at a loose tolerance. On synthetic instances that
cut the time 2.5x to 4x at K = 2048 and 4096 with the switch at 0.003; moving it to 0.0003
cut another 17 to 30% at K = 2048 to 8192 and 13% at 16384 (single runs),
because the factors of the steps in between filled in most (mean fill of the
LU factors 377k at K = 8192 against 58k after the move).
With more than two classes those factors are nearly dense even late on the path (each output
holds an (|A| - 1) x (|A| - 1) block, and a row's candidates couple all of theirs). But N is a
block-diagonal matrix less one product of rank R, the number of rows, far below the
(|A| - 1) K_out unknowns there: so, up to settings.woodbury_max_rows rows, every Newton system is
solved exactly by the Woodbury identity (:func:`woodbury`, one R x R Cholesky), at every tau;
beyond that, up to settings.product_dense_max unknowns, N itself is factorised densely once the
solves are tight (:func:`product_matrix`).
First-order methods (mirror descent, Frank-Wolfe, Blahut-Arimoto alternation)
stall long before 1e-6 bits on this ill-conditioned objective.

**Posterior resets.** Newton's method in logits moves a codebook entry that must become nearly
pure by about one unit per step; a step cut short by the line search may therefore be replaced by
a jump of the codebook to the soft table's posteriors (:func:`posterior_reset`).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..._errors import SolverError
from ._state import leakage_nats

_RESET_BELOW = 0.25              # a posterior reset is tried when the line search cut the step below this
_EXP_CUT = 700.0                 # softmax weights below exp(-_EXP_CUT) are raised to it: exp is ~8x slower
                                 # where it underflows, and the soft minimum moves by < 1e-300 relative
_Q_PAIR = 1e-13                  # softmax weights below this do not enter Hessian cross terms
_CG_RTOL = 1e-7                  # relative residual of the preconditioned conjugate gradients
_CG_MAXITER = 200                # CG iterations per solve; an unconverged solve still gives an ascent direction
_JACOBI_RTOL = 1e-3              # to this relative residual,
_JACOBI_MAXITER = 100            # in at most this many iterations
_REFINE_STEPS = 2                # iterative refinement of a Woodbury solve (:func:`woodbury`)
_DENSE_GRAM = 32                 # Woodbury's Y Y^T by dense BLAS while its R^2 nth / 2 multiply-adds are
                                 # at most this many times the sparse product's sum_j m_j^2
                                 # (m_j candidates of output j): R = 256, nth = 3,584 (ratio 9) 9 ms
                                 # against 29, break-even near 40, R = 1,024 (ratio 143) 525 against 198


def codebook(state, theta):
    """The codebook log r_j(a) - log p(a), shape (A, K_out), and r, from logits theta (A, K_out)."""
    m = theta.max(axis=0)
    lse = m + np.log(np.exp(theta - m).sum(axis=0))
    logr = theta - lse
    return logr - state.log_p_a[:, None], np.exp(logr)


def evaluate(state, theta, mu, tau):
    """Phi_tau at logits ``theta`` (A, K_out), multiplier ``mu`` and temperature ``tau`` (nats).

    Returns the evaluation, a dict: ``G`` (A, K_out) log r_j(a) - log p(a) and ``r`` the codebook;
    per candidate ``z``, softmax numerator ``e`` and weight ``q`` (the soft table); per active row
    ``zmin`` and ``S`` (sum of ``e``); ``phi`` = Phi_tau; and ``theta``, ``mu``, ``tau``.
    """
    state.stats["evaluations"] += 1
    G, r = codebook(state, theta)
    z = state.c_alpha[0] * G[0].take(state.cj)
    for a in range(1, state.A):
        z += state.c_alpha[a] * G[a].take(state.cj)
    if state.budget:
        z += mu * state.c_d
    zmin = np.minimum.reduceat(z, state.start)
    t = (z - zmin[state.cr]) / tau
    e = np.exp(-np.minimum(t, _EXP_CUT, out=t))
    S = np.add.reduceat(e, state.start)
    q = e / S[state.cr]
    pc_row = state.p_c[state.rows]
    phi = float(pc_row @ (zmin - tau * np.log(S))) - (mu * state.delta if state.budget else 0.0)
    return {"G": G, "r": r, "z": z, "zmin": zmin, "e": e, "S": S, "q": q, "phi": phi,
            "theta": theta, "mu": mu, "tau": tau}


def primal(state, ev):
    """P (A, K_out), leakage (nats) and distortion of the soft table ev["q"]."""
    w = state.c_pc * ev["q"]
    P = np.empty((state.A, state.K_out))
    for a in range(state.A):
        P[a] = np.bincount(state.cj, weights=w * state.c_alpha[a], minlength=state.K_out)
    return P, leakage_nats(P, state.log_p_a), float(w @ state.c_d)


def gradient(state, ev, P):
    """The gradient of Phi_tau at ``ev``: (d/dtheta (A-1, K_out), d/dmu = E d - delta).

    P (A, K_out) comes from :func:`_primal`.
    """
    s = P.sum(axis=0)
    g_theta = (P - s * ev["r"])[:-1]                  # (A-1, K_out)
    g_mu = float((state.c_pc * ev["q"]) @ state.c_d) - state.delta
    return g_theta, g_mu


def factor(state, ev, P):
    """Factorise N = -Hessian of Phi_tau (sparse, positive semi-definite).

    N = blockdiag_j(P(j) Cov(r_j)) + sum_c (p(c)/tau) Cov_{q_c}(dz_c / dtheta), bordered by the
    multiplier. Up to settings.dense_max unknowns N itself is factorised (dense Cholesky), and so it is
    up to settings.product_dense_max unknowns with more than two classes wherever the systems are solved
    tightly (:func:`product_matrix`). Otherwise N is solved by conjugate gradients (exact
    products, `hessian_operator`). Far up the path (tau > settings.jacobi_tau times the starting tau)
    rows spread over several candidates, so sparse factors fill in badly, while the centre there
    only guides the path: CG is preconditioned by N's diagonal blocks (:func:`block_jacobi`)
    and stopped at a loose tolerance. Further down it is preconditioned with the LU factors of a
    sparser matrix M >= N (see `assemble`), whose factorisation has several-fold less fill than
    that of N.
    Returns solve(rhs_theta (A-1, K_out), rhs_mu) -> (d_theta, d_mu) with N d = rhs.
    """
    A1, n_out = state.A - 1, state.K_out
    nth = A1 * n_out
    tau, q, r = ev["tau"], ev["q"], ev["r"]
    s = P.sum(axis=0)
    cr, cj = state.cr, state.cj
    wk = state.c_pc * q / tau                          # (n,)
    V = state.c_alpha[:A1] - r[:A1, cj]                # (A-1, n): dz/dtheta_j(b)
    floor = 1e-14 * float(s.max()) + 1e-300           # outputs without mass: no curvature
    system = newton_system(state, tau)
    cholesky = None
    if system == "woodbury":
        try:
            solve_theta = woodbury(state, ev, s, wk, V, floor)
        except np.linalg.LinAlgError:
            # C = I - Y^T Y lost its definiteness to cancellation (rows on one candidate whose
            # weight is nearly their output's whole block): N's own dense factor instead
            state.stats["woodbury_fallbacks"] = state.stats.get("woodbury_fallbacks", 0) + 1
            system = "product" if nth <= state.settings.product_dense_max else "sparse-lu"
    if system == "dense":
        matrix, dscale = dense_matrix(state, ev, s, wk, V, floor)
        cholesky = sla.cho_factor(matrix, overwrite_a=True, check_finite=False)
    elif system == "product":
        matrix, dscale = product_matrix(state, ev, s, wk, V, floor)
        try:
            cholesky = sla.cho_factor(matrix, lower=True, overwrite_a=True, check_finite=False)
        except np.linalg.LinAlgError as failure:
            raise SolverError(f"fast solver: the Newton system at tau = {tau:.3g} is not positive definite "
                              f"in floating point ({failure})") from failure
    if cholesky is not None:
        def solve_theta(v):
            return dscale * sla.cho_solve(cholesky, dscale * v, check_finite=False)
    elif system == "woodbury":
        pass
    else:
        if system == "block-jacobi":
            precond = spla.LinearOperator((nth, nth), matvec=block_jacobi(state, ev, s, wk, V, floor))
            rtol, maxiter = _JACOBI_RTOL, _JACOBI_MAXITER
        else:
            matrix, dscale = assemble(state, ev, s, wk, V, floor)
            lu = spla.splu(matrix, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                           options={"SymmetricMode": True})
            precond = spla.LinearOperator((nth, nth),
                                          matvec=lambda v: dscale * lu.solve(dscale * v))
            rtol, maxiter = _CG_RTOL, _CG_MAXITER
        hessian = spla.LinearOperator((nth, nth), matvec=hessian_operator(state, ev, s, wk, V, floor))

        def solve_theta(v):
            x, _ = spla.cg(hessian, v, x0=precond.matvec(v), rtol=rtol, maxiter=maxiter,
                           M=precond)
            return x

    def theta(rhs_theta):
        return solve_theta(rhs_theta.T.ravel()).reshape(n_out, A1).T

    if not state.budget:
        def solve(rhs_theta, rhs_mu):
            return theta(rhs_theta), 0.0
        solve.theta = theta
        return solve
    dbar = np.add.reduceat(q * state.c_d, state.start)
    dev = state.c_d - dbar[cr]
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


def newton_system(state, tau) -> str:
    """How :func:`factor` solves the Newton systems at ``tau``.

    ``"dense"`` (Cholesky of N, up to ``settings.dense_max`` unknowns), ``"woodbury"`` (exact, at
    every tau: more than two classes, :func:`uses_woodbury`), ``"product"`` (Cholesky of N from one
    rank-R product: more than two classes, up to ``settings.product_dense_max`` unknowns, tight
    solves), or conjugate gradients preconditioned by N's diagonal blocks far up the path
    (``"block-jacobi"``) or by the sparse LU factors of M (``"sparse-lu"``).
    """
    nth = (state.A - 1) * state.K_out
    if nth <= state.settings.dense_max:
        return "dense"
    if uses_woodbury(state):
        return "woodbury"
    if state.A > 2 and nth <= state.settings.product_dense_max and solves_tightly(state, tau):
        return "product"
    return "sparse-lu" if solves_tightly(state, tau) else "block-jacobi"


def uses_woodbury(state) -> bool:
    """Whether :func:`factor` solves every Newton system above ``settings.dense_max`` unknowns by :func:`woodbury`.

    More than two classes, and at most ``settings.woodbury_max_rows`` active rows, no more than
    the unknowns (its dense factor is R x R where N's is nth x nth).

    UCI Adult, marital status private (seven classes), K = 256, a cross-fitting fold at 0.5 x
    Delta0: one exact Newton step cost 48 ms with the Cholesky of N (:func:`product_matrix`, 1,536
    unknowns) and about 6 with this; taking exact steps far up the path too, instead of the loose
    block-diagonal CG, the path took 375 Newton steps instead of 572 and the solve 7.6 CPU-s
    instead of 26.6 (benchmarks/README.md, "Many private classes").
    """
    rows = state.rows.size
    return state.A > 2 and rows <= state.settings.woodbury_max_rows and rows <= (state.A - 1) * state.K_out


def solves_tightly(state, tau):
    """Whether :func:`factor` solves the Newton systems at ``tau`` exactly or to _CG_RTOL.

    Dense Cholesky, Woodbury, or CG with sparse LU factors; not the loose block-diagonal CG far up
    the path.
    """
    return ((state.A - 1) * state.K_out <= state.settings.dense_max or uses_woodbury(state)
            or tau <= state.settings.jacobi_tau * state.scale)


def dense_matrix(state, ev, s, wk, V, floor):
    """N + floor I scaled to unit diagonal, dense, shape (nth, nth), and the scale dscale (nth,).

    The matrix is diag(dscale) (N + floor I) diag(dscale). For the dense Cholesky of small
    systems (up to settings.dense_max unknowns).

    The cross terms within a row, -(p(c)/tau) q_k q_l v_k v_l^T for k != l (pairs with weights
    of at least _Q_PAIR), are summed per pair of outputs by one histogram over the K_out^2
    pairs of outputs for each pair of classes, straight into the dense matrix (each entry's
    terms in the order of the pairs): listing them as sparse blocks first, to sort and merge
    their keys, cost as much as the Cholesky factorisation itself at K = 256.
    """
    A1, n_out = state.A - 1, state.K_out
    q, cj = ev["q"], state.cj
    k1, l1 = row_pairs(state.cr, state.rows.size, q, _Q_PAIR)
    key = cj[k1] * n_out + cj[l1]                     # row output * K_out + column output
    coef = -wk[k1] * q[l1]
    matrix = np.empty((n_out, A1, n_out, A1))         # [row output, b, column output, b2]: all set below
    for b in range(A1):
        left = coef * V[b, k1]
        for b2 in range(A1):
            sums = np.bincount(key, weights=left * V[b2, l1], minlength=n_out * n_out)
            matrix[:, b, :, b2] = sums.reshape(n_out, n_out)
    j = np.arange(n_out)
    matrix[j, :, j, :] += blocks(state, s, ev["r"], floor, wk * one_minus_q(state, ev), V)
    matrix = matrix.reshape(A1 * n_out, A1 * n_out)
    dscale = 1.0 / np.sqrt(np.diagonal(matrix))
    matrix *= dscale[:, None] * dscale[None, :]
    return matrix, dscale


def assemble(state, ev, s, wk, V, floor):
    """M + floor I scaled to unit diagonal, as a canonical CSC matrix of shape (nth, nth), and the scale dscale (nth,).

    Canonical form: sorted indices, no duplicates. The matrix is diag(dscale) (M + floor I)
    diag(dscale), the preconditioner of the sparse path.

    M is N with the cross terms of candidate pairs with q_k q_l < settings.q_precond moved onto the
    two diagonal blocks: M = N + sum c (v_k; v_l)(v_k; v_l)^T >= N, still positive
    semi-definite, with several-fold less fill when factorised.

    A cross term joins the outputs of two candidates of one row, and many rows join the same
    two outputs, so the terms are summed per pair of outputs before they are expanded into
    (A-1) x (A-1) blocks and laid out column by column in order (:func:`_block_csc`): listing
    them per pair of classes for scipy to sort and sum cost twice the factorisation itself
    with five classes (UCI Adult, race private, K = 512: 0.31 against 0.15 s a factorisation).
    """
    A1, n_out = state.A - 1, state.K_out
    q, r, cj = ev["q"], ev["r"], state.cj
    rest = one_minus_q(state, ev)
    # cross terms within a row: -(p(c)/tau) q_k q_l v_k v_l^T for k != l; only the strong
    # pairs are listed (`strong_pairs`); each candidate's weak partners hold the rest of its
    # row's mass, moved_k = (1 - q_k) - sum of its strong partners' q_l, got without listing
    # the weak pairs (rows spread over tens of candidates made that list O(m^2) per row: two
    # thirds of the real Adult build's solve at K = 4096)
    k1, l1 = strong_pairs(state.cr, q, state.settings.q_precond)
    partners = np.bincount(k1, weights=q[l1], minlength=q.size)
    moved = np.maximum(rest - partners, 0.0)
    # blocks keyed column output * K_out + row output, the diagonal blocks first
    keys, where = np.unique(np.concatenate([np.arange(n_out) * (n_out + 1), cj[l1] * n_out + cj[k1]]),
                            return_inverse=True)
    on_diagonal, crossing = where[:n_out], where[n_out:]
    values = np.empty((keys.size, A1, A1))            # [block, row class b, column class b2]
    coef = -wk[k1] * q[l1]
    for b in range(A1):
        left = coef * V[b, k1]
        for b2 in range(A1):
            values[:, b, b2] = np.bincount(crossing, weights=left * V[b2, l1], minlength=keys.size)
    values[on_diagonal] += blocks(state, s, r, floor, wk * (rest + moved), V)
    col_out, row_out = np.divmod(keys, n_out)
    dscale = 1.0 / np.sqrt(np.diagonal(values[on_diagonal], axis1=1, axis2=2).ravel())
    by_output = dscale.reshape(n_out, A1)
    values *= by_output[row_out][:, :, None] * by_output[col_out][:, None, :]
    return _block_csc(col_out, row_out, values, n_out), dscale


def product_matrix(state, ev, s, wk, V, floor):
    """N + floor I scaled to unit diagonal, dense, its lower triangle only, and the scale dscale (nth,).

    Shape (nth, nth); the matrix is diag(dscale) (N + floor I) diag(dscale).

    A row c adds (p(c)/tau) (sum_k q_k u_k u_k^T - x_c x_c^T) to N, u_k being candidate k's
    dz/dtheta (v_k at its output's A - 1 places) and x_c = sum_k q_k u_k; so N is the
    codebook blocks plus sum_k w_k u_k u_k^T, minus X X^T for X of shape (nth, R) whose
    column c is sqrt(p(c)/tau) x_c: one symmetric rank-R product (BLAS syrk), at a cost
    independent of how many candidates a row spreads over, where listing the pairs of a
    row's candidates (`assemble`) grows as their square. Off the diagonal blocks
    -X X^T holds exactly the cross terms; on them it nearly cancels the candidates' own
    terms wherever a row sits on one candidate (q_k near 1), so the diagonal blocks are
    taken exact from :func:`diagonal_blocks` (1 - q_k without cancellation) instead.
    """
    A1, n_out = state.A - 1, state.K_out
    X = np.zeros((A1 * n_out, state.rows.size))
    root = np.sqrt(state.c_pc / ev["tau"]) * ev["q"]
    for b in range(A1):
        X[state.cj * A1 + b, state.cr] = root * V[b]
    matrix = sla.blas.dsyrk(-1.0, X, lower=1)
    blocks = diagonal_blocks(state, ev, s, wk, V, floor)
    at = np.arange(n_out) * A1
    for b in range(A1):
        for b2 in range(b + 1):
            matrix[at + b, at + b2] = blocks[:, b, b2]
    dscale = 1.0 / np.sqrt(np.diagonal(matrix))
    matrix *= dscale[:, None]
    matrix *= dscale[None, :]
    return matrix, dscale


def woodbury(state, ev, s, wk, V, floor):
    """The map v -> N^{-1} v for the theta block of N + floor I (see factor).

    v flat in the order output * (A-1) + b, by the Woodbury identity and iterative refinement.

    N = G - X X^T (:func:`product_matrix`): G block-diagonal, the codebook blocks plus
    sum_k w_k u_k u_k^T per output (shape (K_out, A-1, A-1), factorised block by block as
    L L^T), X of shape (nth, R) with column c = sqrt(p(c)/tau) x_c. With Y = L^{-1} X, sparse
    as the candidate lists, N^{-1} = L^{-T} (I + Y C^{-1} Y^T) L^{-1}, C = I - Y^T Y of shape
    (R, R): one dense Cholesky of R x R instead of nth x nth. Wherever a row sits on one
    candidate, C holds the difference of nearly equal terms, so the solve is refined
    (_REFINE_STEPS times) against N's product without that cancellation (:func:`exact_product`).
    """
    A1, n_out, R = state.A - 1, state.K_out, state.rows.size
    nth, cj = A1 * n_out, state.cj
    lower = np.linalg.cholesky(blocks(state, s, ev["r"], floor, wk, V))
    inverse = np.linalg.inv(lower)                               # (K_out, A-1, A-1), lower triangular
    root = np.sqrt(state.c_pc / ev["tau"]) * ev["q"]
    Yk = np.zeros((cj.size, A1))                                  # candidate k's column of Y at its output
    for a in range(A1):
        for b in range(a + 1):
            Yk[:, a] += inverse[:, a, b].take(cj) * V[b]
    Yk *= root[:, None]
    col = (cj[:, None] * A1 + np.arange(A1)).ravel()
    Y = sp.csr_matrix((Yk.ravel(), col, np.r_[state.start, cj.size] * A1), shape=(R, nth))
    per_output = np.bincount(cj, minlength=n_out)
    if R * R * nth <= _DENSE_GRAM * 2 * A1 * float(per_output @ per_output):
        dense = np.zeros((R, nth))                               # Y Y^T by BLAS (lower triangle)
        dense[state.cr[:, None], col.reshape(-1, A1)] = Yk
        C = sla.blas.dsyrk(-1.0, dense.T, trans=1, lower=1)
        C[np.diag_indices(R)] += 1.0
    else:
        C = np.eye(R) - (Y @ Y.T).toarray()
    cholesky = sla.cho_factor(C, lower=True, overwrite_a=True, check_finite=False)
    times = exact_product(state, ev, s, wk, V, floor)

    def apply(v):
        u = np.einsum("jab,jb->ja", inverse, v.reshape(n_out, A1)).ravel()
        u += Y.T @ sla.cho_solve(cholesky, Y @ u, check_finite=False)
        return np.einsum("jba,jb->ja", inverse, u.reshape(n_out, A1)).ravel()

    def solve(v):
        x = apply(v)
        for _ in range(_REFINE_STEPS):
            x += apply(v - times(x))
        return x
    return solve


def exact_product(state, ev, s, wk, V, floor):
    """The map v -> (N + floor I) v for the theta block of N (see factor).

    v flat in the order output * (A-1) + b, without the cancellation of
    :func:`hessian_operator`'s G v - L (Rt v).

    The diagonal blocks are exact (:func:`diagonal_blocks`); a row c's cross terms reach
    candidate k's output as -sqrt(w_k q_k) v_k t_c^{-k}, where t_c^{-k} is the sum over the
    row's other candidates l of sqrt(w_l q_l) v_l . v[output of l]. It is got as the row's
    sum less k's own term, except for the row's heaviest candidate, whose own term would
    cancel most of that sum: its t is summed over the others directly.
    """
    A1, n_out = state.A - 1, state.K_out
    cj, cr, start = state.cj, state.cr, state.start
    diagonal = diagonal_blocks(state, ev, s, wk, V, floor)
    root = np.sqrt(wk * ev["q"])
    heaviest = np.zeros(cj.size, dtype=bool)
    heaviest[start + _row_argmax(ev["q"], start)] = True
    weighted = root * V                                          # (A-1, n)

    def times(v):
        vb = v.reshape(n_out, A1)
        t = np.einsum("bk,kb->k", weighted, vb[cj])
        others = np.add.reduceat(t, start)[cr] - t
        others[heaviest] = np.add.reduceat(np.where(heaviest, 0.0, t), start)
        out = np.einsum("jab,jb->ja", diagonal, vb)
        for b in range(A1):
            out[:, b] -= np.bincount(cj, weights=weighted[b] * others, minlength=n_out)
        return out.ravel()
    return times


def _row_argmax(values, start):
    """Per row (candidates from ``start``), the position within its row of its largest value."""
    top = np.maximum.reduceat(values, start)
    lens = np.diff(np.r_[start, values.size])
    hits = np.flatnonzero(values == np.repeat(top, lens))      # by row, each row at least once
    row = np.searchsorted(start, hits, side="right") - 1
    first = hits[np.r_[True, row[1:] != row[:-1]]]             # the first of each row's ties
    return first - start


def blocks(state, s, r, floor, weights, V):
    """The block-diagonal part of N + floor I, shape (K_out, A-1, A-1).

    Per output j: P(j) Cov(r_j) + floor I + sum over its candidates k of weights_k v_k v_k^T,
    with v_k = V[:, k] (shape (A-1,)).
    """
    A1 = state.A - 1
    r = r[:A1]
    blocks = np.empty((state.K_out, A1, A1))
    for b in range(A1):
        for b2 in range(A1):
            cand = np.bincount(state.cj, weights=weights * V[b] * V[b2], minlength=state.K_out)
            blocks[:, b, b2] = s * ((r[b] if b == b2 else 0.0) - r[b] * r[b2]) + cand
        blocks[:, b, b] += floor
    return blocks


def one_minus_q(state, ev):
    """1 - q per candidate, from the row sums (without the cancellation of 1 - q)."""
    S = ev["S"][state.cr]
    return (S - ev["e"]) / S


def diagonal_blocks(state, ev, s, wk, V, floor):
    """The diagonal blocks of N + floor I (see factor), shape (K_out, A-1, A-1).

    A row's cross terms join different outputs, so these are the blocks of :func:`_blocks`
    with the candidates weighted by w_k (1 - q_k).
    """
    return blocks(state, s, ev["r"], floor, wk * one_minus_q(state, ev), V)


def block_jacobi(state, ev, s, wk, V, floor):
    """The map v -> B^{-1} v for B the block diagonal of N + floor I (:func:`diagonal_blocks`).

    v flat in the order output * (A-1) + b: the preconditioner of CG far up the path.

    An output's A - 1 logits are coupled through P(j) Cov(r_j), most strongly where one
    class is rare, and the diagonal alone ignores that: with five classes (UCI Adult, race
    private, K = 512) the line searches kept under a quarter of its directions' step four
    times in five, and the solves took about twice as long as with the blocks
    (benchmarks/README.md). For a binary attribute the blocks are 1 x 1 and this is the
    diagonal, to the bit.
    """
    A1 = state.A - 1
    inverse = np.linalg.inv(diagonal_blocks(state, ev, s, wk, V, floor))

    def apply(v):
        return np.einsum("jab,jb->ja", inverse, v.reshape(state.K_out, A1)).ravel()
    return apply


def hessian_operator(state, ev, s, wk, V, floor):
    """The map v -> N v for the theta block of N (see factor), v flat in the order output * (A-1) + b.

    N = G - L Rt with G block-diagonal (the codebook blocks plus sum_k w_k v_k v_k^T per
    output), Rt = R Q B (per row, the q-weighted mean of its candidates' dz/dtheta) and
    L = B^T W R^T, where B maps theta to the candidates' dz. Rt and L^T share the sparsity
    of the candidate lists (rows sorted), so both are built as CSR without conversion and
    L is applied as the CSC transpose of L^T; G is applied block by block. Each product
    reads the candidates about twice instead of the nine passes of applying the row
    covariances elementwise.
    """
    A1 = state.A - 1
    nth, R, n = A1 * state.K_out, state.rows.size, state.cr.size
    col = (state.cj[:, None] * A1 + np.arange(A1)).ravel()     # candidate k, class b
    indptr = np.r_[state.start, n] * A1
    VT = V.T                                                  # (n, A-1)
    Rt = sp.csr_matrix(((ev["q"][:, None] * VT).ravel(), col, indptr), shape=(R, nth))
    L = sp.csr_matrix(((wk[:, None] * VT).ravel(), col, indptr), shape=(R, nth)).T
    diagonal = blocks(state, s, ev["r"], floor, wk, V)

    def times(v):
        Gv = np.einsum("jab,jb->ja", diagonal, v.reshape(state.K_out, A1)).ravel()
        return Gv - L @ (Rt @ v)
    return times


def strong_pairs(cr, q, least):
    """Index pairs (k, l), k != l, of candidates in one row with q_k q_l >= ``least`` (<= 1).

    O(number of such pairs + candidates log candidates): within each row the candidates
    are sorted by decreasing weight, so the partners of k are a prefix of its row, whose
    length a binary search finds. (A pair can pass only if both weights are >= ``least``.)
    The search runs on a key row + (1 - q) whose rounding (about 1e-10 at 10^5 rows) can
    miss a pair at the threshold by one place: one more place is read and every listed
    pair is checked exactly, so the result is exact unless several weights tie within
    1e-10 at the threshold, where a pair may be left out (treated as weak; `assemble`
    moves whatever is not listed, so its matrix still bounds N).
    """
    sig = np.flatnonzero(q >= least)
    if sig.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    srt = sig[np.lexsort((-q[sig], cr[sig]))]     # by row, then decreasing weight
    row, qs = cr[srt], q[srt]
    first = np.r_[0, np.flatnonzero(row[1:] != row[:-1]) + 1]
    lens = np.diff(np.r_[first, srt.size])
    seg = np.repeat(first, lens)                      # per element: its row's first position
    key = row * 4.0 + (1.0 - qs)                      # increasing along srt
    ends = np.searchsorted(key, row * 4.0 + (1.0 - least / qs), side="right")
    cnt = np.minimum(ends + 1, seg + np.repeat(lens, lens)) - seg
    total = int(cnt.sum())
    within = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    kk = np.repeat(srt, cnt)
    ll = srt[np.repeat(seg, cnt) + within]
    ok = (kk != ll) & (q[kk] * q[ll] >= least)
    return kk[ok], ll[ok]


def row_pairs(cr, n_rows, q, least):
    """Index pairs (k, l), k != l, of candidates in one row with softmax weight >= ``least``.

    O(sum over rows of m^2) for m such candidates per row.
    """
    sig = np.flatnonzero(q >= least)
    counts = np.bincount(cr[sig], minlength=n_rows)
    multi = sig[counts[cr[sig]] > 1]             # sorted by row
    if multi.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    row = cr[multi]
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


def tau_derivative(state, ev):
    """The derivative d grad / d tau at fixed duals: the right-hand side of the path's tangent."""
    q, z, tau = ev["q"], ev["z"], ev["tau"]
    zbar = np.add.reduceat(q * z, state.start)
    w = state.c_pc * q * (z - zbar[state.cr]) / tau ** 2
    V = state.c_alpha[:-1] - ev["r"][:-1, state.cj]
    g_theta = np.stack([np.bincount(state.cj, weights=w * V[b], minlength=state.K_out)
                        for b in range(state.A - 1)])
    return g_theta, float(w @ state.c_d)


def ascend(state, ev, P, d_theta, d_mu, dec):
    """A Newton line search, or a posterior reset where that ascends more: (evaluation, step).

    step is the fraction of Newton's step taken (1.0 for a reset); (None, 0.0) if neither
    ascends. The reset is tried only when Newton's step was cut below _RESET_BELOW (on the
    benchmark instances it never won after a full or half step).
    """
    trial, step = line_search(state, ev, d_theta, d_mu, dec)
    if trial is not None and step >= _RESET_BELOW:
        return trial, step
    reset = posterior_reset(state, ev, P)
    if reset is not None and (trial is None or reset["phi"] > trial["phi"]):
        return reset, 1.0
    return trial, step


def theta_only(solve):
    """The Newton solve with the multiplier held fixed (its bound active)."""
    def solve_fixed(rhs_theta, rhs_mu):
        return solve.theta(rhs_theta), 0.0
    return solve_fixed


def line_search(state, ev, d_theta, d_mu, dec):
    """Backtracking (Armijo) ascent step, projected on mu >= 0: (trial, step).

    (None, 0.0) if Phi_tau cannot rise.
    """
    step = 1.0
    mu = ev["mu"]
    while step > 1e-12:
        trial = evaluate(state, ev["theta"] + step * pad(d_theta),
                               max(mu + step * d_mu, 0.0) if state.budget else 0.0, ev["tau"])
        if trial["phi"] >= ev["phi"] + 0.25 * step * dec:
            return trial, step
        step *= 0.5
    return None, 0.0


def posterior_reset(state, ev, P):
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
    trial = evaluate(state, theta, ev["mu"], ev["tau"])
    return trial if trial["phi"] > ev["phi"] else None


def _block_csc(col_out, row_out, values, n_out):
    """The CSC matrix, canonical, of shape (n_out A1, n_out A1) whose block (row_out[e], col_out[e]) is values[e].

    values[e] is (A1, A1) (row class, column class); flat index output * A1 + class.

    The blocks come sorted by column output, then row output (``assemble``'s keys), each block
    column holding its diagonal block; each matrix column then lists its rows in increasing order.
    """
    m, A1 = values.shape[0], values.shape[1]
    per_column = np.bincount(col_out, minlength=n_out)     # blocks in each block column
    first = np.cumsum(per_column) - per_column             # their first block
    within = np.arange(m) - first[col_out]
    b = np.arange(A1)
    # entry (e, b2, b) sits in column col_out[e] * A1 + b2, at row row_out[e] * A1 + b
    pos = ((A1 * A1 * first[col_out] + A1 * within)[:, None, None]
           + (A1 * per_column[col_out])[:, None, None] * b[None, :, None] + b[None, None, :])
    indices = np.empty(m * A1 * A1, np.int64)
    data = np.empty(m * A1 * A1)
    indices[pos] = np.broadcast_to(row_out[:, None, None] * A1 + b[None, None, :], pos.shape)
    data[pos] = values.transpose(0, 2, 1)
    indptr = np.concatenate([[0], np.cumsum(np.repeat(A1 * per_column, A1))])
    matrix = sp.csc_matrix((data, indices, indptr), shape=(n_out * A1, n_out * A1))
    matrix.has_canonical_format = True
    return matrix


def pad(d_theta):
    """Append the fixed last logit row (zeros) to a (A-1, K_out) step."""
    return np.vstack([d_theta, np.zeros((1, d_theta.shape[1]))])
