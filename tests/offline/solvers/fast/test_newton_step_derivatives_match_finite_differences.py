"""The dual Newton core of the fast solver (src/privmap/offline/solvers/fast/_newton.py): the gradient and the
Hessian of the smoothed dual are those of its value, the matrix-free Hessian products equal the
assembled matrix, and the conjugate-gradient solves reach the optimum the dense ones reach."""
import numpy as np
import pytest

from privmap.offline.solvers import solve_fast
from privmap.offline.solvers.fast import _newton, _path, _pricing, _state

TOL = 1e-5


def _unscaled(assembled):
    """The dense matrix N + floor I (``_dense_matrix``) or M (``_assemble``, after checking that its
    CSC arrays are canonical as flagged: each column's rows strictly increasing) from the scaled
    matrix and its scale."""
    matrix, dscale = assembled
    if not isinstance(matrix, np.ndarray):
        rows = np.split(matrix.indices, matrix.indptr[1:-1])
        assert matrix.has_canonical_format and all((np.diff(r) > 0).all() for r in rows)
        matrix = matrix.toarray()
    return matrix / np.outer(dscale, dscale)


def _all_pairs_solver(random_instance, budget, n_private, K=15, seed=7):
    """A solver on a random instance with every pair a candidate and a free multiplier."""
    p_ac, dist = random_instance(seed, K, n_private)
    solver = _state.set_up(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100)
    solver.tight, solver.budget = False, True
    solver.jmin = np.argmin(dist, axis=1)
    _pricing.set_candidates(solver, np.repeat(np.arange(K), K), np.tile(np.arange(K), K))
    return solver


@pytest.mark.parametrize("n_private", [2, 3, 5])
def test_gradient_and_hessian_of_the_smoothed_dual_match_finite_differences(n_private, random_instance,
                                                                               budget):
    """grad Phi_tau (theta without its fixed last row, and mu) is the central difference of
    Phi_tau, and N = -Hessian (the matrix the dense path factorises) is the central difference of
    that gradient, at a point with split rows."""
    solver = _all_pairs_solver(random_instance, budget, n_private)
    rng = np.random.default_rng(1)
    theta, mu, tau = rng.normal(size=(n_private, 15)), 0.3, 0.05

    def grad(theta, mu):
        ev = _newton.evaluate(solver, theta, mu, tau)
        P, _, _ = _newton.primal(solver, ev)
        g_theta, g_mu = _newton.gradient(solver, ev, P)
        return ev, P, g_theta, g_mu

    ev, P, g_theta, g_mu = grad(theta, mu)
    h = 1e-6
    for _ in range(4):
        d_theta = np.vstack([rng.normal(size=(n_private - 1, 15)), np.zeros((1, 15))])
        d_mu = float(rng.normal())
        up = _newton.evaluate(solver, theta + h * d_theta, mu + h * d_mu, tau)["phi"]
        down = _newton.evaluate(solver, theta - h * d_theta, mu - h * d_mu, tau)["phi"]
        assert (up - down) / (2 * h) == pytest.approx(
            float(np.sum(g_theta * d_theta[:-1])) + g_mu * d_mu, rel=1e-5, abs=1e-9)

    A1 = n_private - 1
    s = P.sum(axis=0)
    wk = solver.c_pc * ev["q"] / tau
    V = solver.c_alpha[:A1] - ev["r"][:A1, solver.cj]
    n = A1 * 15
    N = _unscaled(_newton.dense_matrix(solver, ev, s, wk, V, 0.0))
    for _ in range(3):
        v = rng.normal(size=n)                           # flat in the order output * (A-1) + b
        step = np.vstack([v.reshape(15, A1).T, np.zeros((1, 15))])
        g_up = grad(theta + h * step, mu)[2]
        g_down = grad(theta - h * step, mu)[2]
        fd = -((g_up - g_down) / (2 * h)).T.ravel()
        assert np.allclose(fd, N @ v, rtol=1e-4, atol=1e-6 * np.abs(N @ v).max())


@pytest.mark.parametrize("seed, K, n_private, frac", [(3, 20, 2, 0.3), (2, 12, 3, 0.1), (6, 40, 2, 0.2)])
def test_preconditioned_conjugate_gradient_path_matches_the_dense_path(seed, K, n_private, frac,
                                                                       random_instance, budget):
    """Above Settings.dense_max unknowns the Newton systems are solved by preconditioned CG (with
    more than two classes, above Settings.product_dense_max or far up the path); forcing that path
    on small instances must give the same certified optimum as dense Cholesky."""
    p_ac, dist = random_instance(seed, K, n_private)
    delta = budget(p_ac, dist, frac)
    dense = solve_fast(p_ac, dist, delta)
    iterative = _path.run(_state.set_up(p_ac, dist, delta, TOL, 2000,
                                        settings=_state.Settings(dense_max=0, product_dense_max=0,
                                                                 woodbury_max_rows=0)))
    assert iterative.gap_bits <= TOL
    assert abs(iterative.leakage_bits - dense.leakage_bits) <= TOL
    assert iterative.lower_bound_bits <= dense.leakage_bits + 1e-12
    assert iterative.distortion <= delta


@pytest.mark.parametrize("n_private", [2, 3, 5])
def test_matrix_free_hessian_product_and_diagonal_blocks_equal_the_assembled_hessian(n_private,
                                                                                     random_instance, budget):
    """CG multiplies by the Hessian without forming it, and early on the path preconditions
    with the inverse of its diagonal blocks (one (|A|-1) x (|A|-1) block per output); both must
    match the matrix that the dense path factorises (unscaled), at a point with split rows."""
    p_ac, dist = random_instance(7, 15, n_private)
    solver = _state.set_up(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100)
    solver.tight, solver.budget = False, True
    solver.jmin = np.argmin(dist, axis=1)
    rows = np.repeat(np.arange(15), 15)
    _pricing.set_candidates(solver, rows, np.tile(np.arange(15), 15))
    rng = np.random.default_rng(0)
    ev = _newton.evaluate(solver, rng.normal(size=(n_private, 15)), 0.3, 0.05)
    P, _, _ = _newton.primal(solver, ev)
    s = P.sum(axis=0)
    A1 = n_private - 1
    wk = solver.c_pc * ev["q"] / ev["tau"]
    V = solver.c_alpha[:A1] - ev["r"][:A1, solver.cj]
    n = A1 * 15
    N = _unscaled(_newton.dense_matrix(solver, ev, s, wk, V, 0.0))
    blocks = np.stack([N[j * A1:(j + 1) * A1, j * A1:(j + 1) * A1] for j in range(15)])
    assert np.allclose(_newton.diagonal_blocks(solver, ev, s, wk, V, 0.0), blocks, rtol=1e-10, atol=1e-12)
    x = rng.normal(size=(15, A1))
    assert np.allclose(_newton.block_jacobi(solver, ev, s, wk, V, 0.0)(np.einsum("jab,jb->ja", blocks, x).ravel()),
                       x.ravel(), rtol=1e-8, atol=1e-10)
    times = _newton.hessian_operator(solver, ev, s, wk, V, 0.0)
    for _ in range(3):
        v = rng.normal(size=n)
        assert np.allclose(times(v), N @ v, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed, K, n_private, frac", [(2, 12, 3, 0.1), (4, 16, 5, 0.3)])
def test_dense_product_path_with_several_classes_matches_the_dense_path(seed, K, n_private, frac,
                                                                        random_instance, budget):
    """With more than two classes and more rows than Settings.woodbury_max_rows, the tight solves
    above Settings.dense_max unknowns factorise N from one rank-R product (`product_matrix`); forced
    on small instances along the whole path (the first Newton system, at the starting tau, is one),
    it must certify the optimum that dense Cholesky of the assembled N certifies."""
    p_ac, dist = random_instance(seed, K, n_private)
    delta = budget(p_ac, dist, frac)
    dense = solve_fast(p_ac, dist, delta)
    state = _state.set_up(p_ac, dist, delta, TOL, 2000,
                          settings=_state.Settings(dense_max=0, jacobi_tau=1.0, woodbury_max_rows=0))
    products = _path.run(state)
    assert _newton.newton_system(state, state.scale) == "product"
    assert products.gap_bits <= TOL
    assert abs(products.leakage_bits - dense.leakage_bits) <= TOL
    assert products.lower_bound_bits <= dense.leakage_bits + 1e-12
    assert products.distortion <= delta


@pytest.mark.parametrize("n_private", [2, 3, 5])
@pytest.mark.parametrize("tau", [0.05, 1e-3])
def test_dense_and_rank_product_matrices_equal_the_hessian_from_its_definition(n_private, tau, random_instance,
                                                                              budget):
    """N summed entry by entry from the candidate pairs (`_dense_matrix`), and N as codebook and
    candidate blocks minus one rank-R product, its diagonal blocks exact (`_product_matrix`, lower
    triangle), are N written out from its definition (unscaled): per output s_j Cov(r_j), per row
    (p(c)/tau) times the q-weighted covariance of its candidates' dz/dtheta. At a point with split
    rows, and at a small tau where rows sit on one candidate. (`_dense_matrix` leaves out pairs
    with q_k q_l < 1e-26, which the product keeps.)"""
    solver = _all_pairs_solver(random_instance, budget, n_private)
    rng = np.random.default_rng(1)
    ev = _newton.evaluate(solver, rng.normal(size=(n_private, 15)), 0.3, tau)
    P, _, _ = _newton.primal(solver, ev)
    s = P.sum(axis=0)
    A1, n = n_private - 1, (n_private - 1) * 15
    q, r = ev["q"], ev["r"][:A1]
    V = solver.c_alpha[:A1] - r[:, solver.cj]
    floor = 1e-14 * float(s.max())
    N = np.zeros((n, n))
    for j in range(15):
        N[j * A1:(j + 1) * A1, j * A1:(j + 1) * A1] = s[j] * (np.diag(r[:, j]) - np.outer(r[:, j], r[:, j]))
    N += floor * np.eye(n)
    for c in range(solver.rows.size):
        k = np.flatnonzero(solver.cr == c)
        U = np.zeros((k.size, n))                         # candidates' dz/dtheta, one per row
        for b in range(A1):
            U[np.arange(k.size), solver.cj[k] * A1 + b] = V[b, k]
        mean = q[k] @ U
        N += solver.p_c[solver.rows[c]] / tau * (U.T @ (q[k][:, None] * U) - np.outer(mean, mean))
    matrix, dscale = _newton.product_matrix(solver, ev, s, solver.c_pc * q / tau, V, floor)
    lower = np.tril(matrix / np.outer(dscale, dscale))
    assert np.allclose(lower, np.tril(N), rtol=1e-9, atol=1e-13 * np.abs(N).max())
    dense = _unscaled(_newton.dense_matrix(solver, ev, s, solver.c_pc * q / tau, V, floor))
    # the definition's row terms cancel where a row sits on one candidate (its own round-off is
    # about 1e-12 of N's largest entry at tau = 1e-3), which `_dense_matrix` avoids (1 - q_k exact)
    assert np.allclose(dense, N, rtol=1e-9, atol=1e-11 * np.abs(N).max())


@pytest.mark.parametrize("n_private", [2, 3, 5])
def test_sparsified_preconditioner_moves_exactly_the_weak_cross_terms_onto_the_diagonal(
        n_private, random_instance, budget):
    """The CG preconditioner M is the Hessian N with each cross term of a candidate pair with
    q_k q_l < _Q_PRECOND moved onto its two diagonal blocks (a brute-force sum over all pairs),
    so M - N is positive semi-definite; checked at a point where rows spread over all 15
    candidates with weights from below 1e-13 to near 1 (the moved mass is got per candidate, not by
    listing the weak pairs)."""
    p_ac, dist = random_instance(5, 15, n_private)
    solver = _state.set_up(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100)
    solver.tight, solver.budget = False, True
    solver.jmin = np.argmin(dist, axis=1)
    _pricing.set_candidates(solver, np.repeat(np.arange(15), 15), np.tile(np.arange(15), 15))
    rng = np.random.default_rng(1)
    ev = _newton.evaluate(solver, rng.normal(size=(n_private, 15)), 0.3, 0.07)
    assert (ev["q"] < 1e-13).any() and ((ev["q"] > 1e-3) & (ev["q"] < 0.5)).sum() >= 5
    P, _, _ = _newton.primal(solver, ev)
    s = P.sum(axis=0)
    A1 = n_private - 1
    wk = solver.c_pc * ev["q"] / ev["tau"]
    V = solver.c_alpha[:A1] - ev["r"][:A1, solver.cj]
    n = A1 * 15

    N, M = _unscaled(_newton.dense_matrix(solver, ev, s, wk, V, 0.0)), _unscaled(_newton.assemble(solver, ev, s, wk, V, 0.0))
    want = N.copy()
    q, cr, cj = ev["q"], solver.cr, solver.cj
    for k in range(q.size):
        for m in range(k + 1, q.size):
            if cr[k] == cr[m] and q[k] * q[m] < solver.settings.q_precond:
                c = wk[k] * q[m]                               # p(c)/tau q_k q_m
                u = np.zeros(n)
                u[cj[k] * A1:(cj[k] + 1) * A1] = V[:, k]
                u[cj[m] * A1:(cj[m] + 1) * A1] = V[:, m]
                want += c * np.outer(u, u)
    assert np.allclose(M, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())
    assert np.linalg.eigvalsh(M - N).min() >= -1e-9 * np.abs(N).max()


@pytest.mark.parametrize("least", [1e-4, 1e-2, 0.05])
def test_strong_pairs_are_exactly_the_pairs_of_a_row_whose_weights_multiply_above_the_threshold(least):
    """The preconditioner lists only pairs with q_k q_l >= least, found as prefixes of each row
    sorted by weight; a brute-force scan of all pairs is the reference, on rows of 1 to 40
    candidates with weights spread from 1e-9 to 1 and with exact ties (rounded weights)."""
    rng = np.random.default_rng(2)
    for trial in range(60):
        lens = rng.integers(1, 40, rng.integers(1, 25))
        cr = np.repeat(np.arange(lens.size), lens)
        q = np.exp(-rng.exponential([1.0, 5.0, 20.0][trial % 3], cr.size))
        if trial % 2:
            q = np.maximum(np.round(q, 2), 1e-3)
        q /= np.bincount(cr, weights=q)[cr]
        first, second = _newton.strong_pairs(cr, q, least)
        want = {(a, b) for a in range(cr.size) for b in range(cr.size)
                if a != b and cr[a] == cr[b] and q[a] * q[b] >= least}
        assert set(zip(first.tolist(), second.tolist())) == want and first.size == len(want)


@pytest.mark.parametrize("n_private", [2, 3])
def test_one_newton_step_on_a_started_state_raises_the_smoothed_dual(n_private, random_instance, budget):
    """The phases alone on one state: after the start, Newton's direction from the factorised
    Hessian is an ascent direction (positive decrement) and the line search takes a step that
    raises Phi_tau at the same tau."""
    p_ac, dist = random_instance(7, 20, n_private)
    state = _state.set_up(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100)
    assert _path.start(state) is None
    ev = _newton.evaluate(state, state.theta, state.mu, state.scale)
    P, _, _ = _newton.primal(state, ev)
    g_theta, g_mu = _newton.gradient(state, ev, P)
    d_theta, d_mu = _newton.factor(state, ev, P)(g_theta, g_mu)
    dec = float(np.sum(g_theta * d_theta)) + g_mu * d_mu
    trial, step = _newton.ascend(state, ev, P, d_theta, d_mu, dec)
    assert dec > 0 and trial is not None and 0 < step <= 1
    assert trial["phi"] > ev["phi"] and trial["tau"] == ev["tau"]
