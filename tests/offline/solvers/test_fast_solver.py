"""The fast solver of program (19) agrees with the cvxpy/Clarabel reference and proves its gap."""
import math

import numpy as np
import pytest
from privmap.offline._errors import InfeasibleError
from privmap.offline._information import expected_distortion, leakage_bits
from privmap.offline.solvers._cvxpy_solver import solve_cvxpy
from privmap.offline.solvers._fast_solver import solve_fast

TOL = 1e-5


def h2(x):
    return 0.0 if x in (0.0, 1.0) else -x * math.log2(x) - (1 - x) * math.log2(1 - x)


def bsc(p):
    return np.array([[(1 - p) / 2, p / 2], [p / 2, (1 - p) / 2]]), np.array([[0.0, 1.0], [1.0, 0.0]])


def random_instance(seed, K, n_private=2, dim=3, erasure=False):
    rng = np.random.default_rng(seed)
    p_ac = rng.random((n_private, K)) ** 3
    p_ac /= p_ac.sum()
    X = rng.random((K, dim))
    dist = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    if erasure:
        # outputs: the K inputs themselves plus 2 erasure symbols; moving to another
        # input is forbidden, erasing costs a fixed amount per symbol
        dist = np.full((K, K + 2), np.inf)
        np.fill_diagonal(dist, 0.0)
        dist[:, K] = 0.5
        dist[:, K + 1] = 1.0
    return p_ac, dist


def budget(p_ac, dist, frac):
    finite = np.where(np.isfinite(dist), dist, np.nan)
    return frac * float(np.nansum(p_ac.sum(axis=0) * np.nanmean(finite, axis=1)))


@pytest.mark.parametrize("p, D", [(0.1, 0.05), (0.1, 0.2), (0.25, 0.1), (0.0, 0.3), (0.3, 0.45)])
def test_binary_symmetric_channel_matches_known_answer(p, D):
    p_ac, dist = bsc(p)
    res = solve_fast(p_ac, dist, D)
    expected = 1.0 - h2(p * (1 - D) + (1 - p) * D)
    assert res.status == "optimal" and res.solver == "fast"
    assert abs(res.leakage_bits - expected) <= TOL
    assert res.lower_bound_bits <= expected + 1e-12
    assert res.distortion <= D


@pytest.mark.parametrize("seed, K, n_private, frac", [
    (0, 5, 2, 0.05), (1, 8, 2, 0.2), (2, 12, 3, 0.1), (3, 20, 2, 0.3), (4, 16, 2, 0.6), (5, 10, 4, 0.15),
])
def test_fast_and_cvxpy_agree_and_certificate_is_a_lower_bound_of_cvxpy_optimum(seed, K, n_private, frac):
    p_ac, dist = random_instance(seed, K, n_private)
    delta = budget(p_ac, dist, frac)
    fast = solve_fast(p_ac, dist, delta, tol_bits=TOL)
    ref = solve_cvxpy(p_ac, dist, delta)
    assert abs(fast.leakage_bits - ref.leakage_bits) <= TOL
    assert 0.0 <= fast.gap_bits <= TOL
    # the certificate never claims more than the true optimum (cvxpy's value is >= optimum)
    assert fast.lower_bound_bits <= ref.leakage_bits + 1e-7
    assert fast.distortion <= delta


@pytest.mark.parametrize("seed, frac", [(10, 0.1), (11, 0.3)])
def test_erasure_instance_with_forbidden_entries_agrees_with_cvxpy(seed, frac):
    p_ac, dist = random_instance(seed, 8, erasure=True)
    delta = frac * 0.5
    fast = solve_fast(p_ac, dist, delta)
    ref = solve_cvxpy(p_ac, dist, delta)
    assert abs(fast.leakage_bits - ref.leakage_bits) <= TOL
    assert fast.lower_bound_bits <= ref.leakage_bits + 1e-7
    assert np.all(fast.table[~np.isfinite(dist)] == 0.0)
    assert fast.table.shape == dist.shape


def test_reported_metrics_are_recomputed_from_the_returned_table():
    p_ac, dist = random_instance(7, 10)
    delta = budget(p_ac, dist, 0.2)
    res = solve_fast(p_ac, dist, delta)
    assert np.all(res.table >= 0) and np.allclose(res.table.sum(axis=1), 1.0)
    assert res.leakage_bits == pytest.approx(leakage_bits(p_ac, res.table), abs=1e-12)
    assert res.distortion == pytest.approx(expected_distortion(p_ac.sum(axis=0), res.table, dist), abs=1e-12)
    assert res.info["lower_bound_bits"] == pytest.approx(res.leakage_bits - res.gap_bits, abs=1e-12)


def test_rows_without_mass_get_a_valid_row_on_their_cheapest_output():
    p_ac, dist = random_instance(8, 6)
    p_ac[:, 2] = 0.0
    p_ac /= p_ac.sum()
    res = solve_fast(p_ac, dist, budget(p_ac, dist, 0.2))
    assert res.table[2].sum() == pytest.approx(1.0)
    assert res.table[2, np.argmin(dist[2])] == 1.0


def test_budget_below_least_distortion_is_a_clear_error():
    p_ac = np.array([[0.5, 0.0], [0.0, 0.5]])
    dist = np.array([[1.0, 2.0], [np.inf, 1.0]])
    with pytest.raises(InfeasibleError, match="below the least distortion"):
        solve_fast(p_ac, dist, 0.5)


def test_budget_at_least_distortion_keeps_every_row_on_its_cheapest_outputs():
    p_ac, dist = random_instance(9, 6)
    dist = dist + 0.1
    least = float(p_ac.sum(axis=0) @ dist.min(axis=1))
    res = solve_fast(p_ac, dist, least)
    assert res.distortion <= least * (1 + 1e-9)
    assert res.gap_bits <= TOL


def test_large_budget_reaches_perfect_privacy():
    p_ac, dist = random_instance(12, 8)
    res = solve_fast(p_ac, dist, 10.0 * float(dist.max()))
    assert res.leakage_bits <= TOL and res.gap_bits <= TOL


def test_progress_is_reported_up_to_one():
    seen = []
    p_ac, dist = random_instance(13, 8)
    solve_fast(p_ac, dist, budget(p_ac, dist, 0.2), progress=seen.append)
    assert seen and seen[-1] == 1.0 and all(0.0 <= f <= 1.0 for f in seen)


def test_rows_with_pure_posteriors_agree_with_cvxpy():
    # clusters holding one class only give outputs with nearly pure posteriors, which look
    # unboundedly attractive to every other row until they are fed by both classes
    p_ac, dist = random_instance(14, 16)
    p_ac[0, :5] = 0.0
    p_ac[1, 5:9] = 0.0
    p_ac /= p_ac.sum()
    delta = budget(p_ac, dist, 0.2)
    fast = solve_fast(p_ac, dist, delta)
    ref = solve_cvxpy(p_ac, dist, delta)
    assert abs(fast.leakage_bits - ref.leakage_bits) <= TOL
    assert fast.lower_bound_bits <= ref.leakage_bits + 1e-7


def test_budget_with_a_slack_smoothed_multiplier_is_certified():
    # twelve inputs of one class, one of the other, erasure outputs: at large smoothing the
    # multiplier sits at its bound 0, which the path must step past
    p_ac = np.array([[12 / 13, 0.0], [0.0, 1 / 13]])
    inf = np.inf
    dist = np.array([[0.0, inf, 1.0, inf, 1.0, inf, 2.0], [inf, 0.0, inf, 1.0, inf, 1.0, 2.0]])
    fast = solve_fast(p_ac, dist, 1.5)
    ref = solve_cvxpy(p_ac, dist, 1.5)
    assert abs(fast.leakage_bits - ref.leakage_bits) <= TOL
    assert fast.gap_bits <= TOL and fast.distortion <= 1.5


@pytest.mark.parametrize("seed, K, n_private, frac", [(3, 20, 2, 0.3), (2, 12, 3, 0.1), (6, 40, 2, 0.2)])
def test_preconditioned_conjugate_gradient_path_matches_the_dense_path(seed, K, n_private, frac, monkeypatch):
    """Above _DENSE_MAX unknowns the Newton systems are solved by preconditioned CG; forcing
    that path on small instances must give the same certified optimum as dense Cholesky."""
    import privmap.offline.solvers._fast_newton as newton

    p_ac, dist = random_instance(seed, K, n_private)
    delta = budget(p_ac, dist, frac)
    dense = solve_fast(p_ac, dist, delta)
    monkeypatch.setattr(newton, "_DENSE_MAX", 0)
    iterative = solve_fast(p_ac, dist, delta)
    assert iterative.gap_bits <= TOL
    assert abs(iterative.leakage_bits - dense.leakage_bits) <= TOL
    assert iterative.lower_bound_bits <= dense.leakage_bits + 1e-12
    assert iterative.distortion <= delta


@pytest.mark.parametrize("n_private", [2, 3])
def test_matrix_free_hessian_product_and_diagonal_equal_the_assembled_hessian(n_private):
    """CG multiplies by the Hessian without forming it, and early on the path preconditions
    with its diagonal; both must match the matrix that the dense path factorises
    (unscaled), at a point with split rows."""
    from privmap.offline.solvers._fast_path import _DualNewton

    p_ac, dist = random_instance(7, 15, n_private)
    solver = _DualNewton(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100, None)
    solver.tight, solver.budget = False, True
    solver.jmin = np.argmin(dist, axis=1)
    rows = np.repeat(np.arange(15), 15)
    solver._set_candidates(rows, np.tile(np.arange(15), 15))
    rng = np.random.default_rng(0)
    ev = solver._evaluate(rng.normal(size=(n_private, 15)), 0.3, 0.05)
    P, _, _ = solver._primal(ev)
    s = P.sum(axis=0)
    A1 = n_private - 1
    wk = solver.c_pc * ev["q"] / ev["tau"]
    V = solver.c_alpha[:A1] - ev["r"][:A1, solver.cj]
    ri, ci, vals, dscale = solver._assemble(ev, s, wk, V, 0.0, sparsify=False)
    n = A1 * 15
    N = np.zeros((n, n))
    np.add.at(N, (ri, ci), vals / (dscale[ri] * dscale[ci]))
    assert np.allclose(solver._diagonal(ev, s, wk, V, 0.0), np.diag(N), rtol=1e-10, atol=1e-12)
    times = solver._hessian_operator(ev, s, wk, V, 0.0)
    for _ in range(3):
        v = rng.normal(size=n)
        assert np.allclose(times(v), N @ v, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n_private", [2, 3])
def test_guards_are_the_cheapest_rows_leaning_to_each_class(n_private, monkeypatch):
    """Every output starts with its _N_GUARD cheapest rows among those whose posterior leans to
    each class (a brute-force reference), also when the outputs are taken in several blocks."""
    import privmap.offline.solvers._fast_pricing as pricing
    import privmap.offline.solvers._fast_path as fast

    monkeypatch.setattr(pricing, "_GUARD_COLUMNS", 6)      # blocks of 6, 6, 6 and 2 outputs
    p_ac, dist = random_instance(11, 20, n_private)
    solver = fast._DualNewton(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100, None)
    solver.tight = False
    rows, cols = solver._guards()
    got = set(zip(rows.tolist(), cols.tolist()))
    want = set()
    for a in range(n_private):
        lean = np.flatnonzero(solver.alpha[a] >= solver.p_a[a])
        if 0 < lean.size < solver.rows.size:
            for j in range(dist.shape[1]):
                cheapest = lean[np.argsort(dist[solver.rows[lean], j])[:pricing._N_GUARD]]
                want |= {(int(r), j) for r in cheapest}
    assert want and got == want


@pytest.mark.parametrize("n_add", [1, 2, 4])
def test_pricing_pass_finds_each_rows_most_violated_pairs_and_the_exact_bound(n_add, monkeypatch):
    """One pass over D equals a brute-force evaluation of every pair: the exact row minima and,
    per row, its n_add smallest z below the threshold; also with row chunks that straddle rows
    without mass (so D is read through copies and through views)."""
    import privmap.offline.solvers._fast_pricing as pricing
    import privmap.offline.solvers._fast_path as fast

    monkeypatch.setattr(pricing, "_CHUNK_ELEMENTS", 60)   # 3 rows per chunk at K_out = 20
    p_ac, dist = random_instance(7, 20, 2)
    p_ac[:, [4, 11]] = 0.0                               # two rows without mass
    p_ac /= p_ac.sum()
    solver = fast._DualNewton(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100, None)
    solver.tight, solver.has_inf = False, False
    rng = np.random.default_rng(3)
    G = rng.normal(size=(2, 20))
    mu = 0.7
    Z = solver.alpha.T @ G + mu * dist[solver.rows]      # (active rows, outputs)
    R = solver.rows.size
    cand_min = np.sort(Z, axis=1)[np.arange(R), rng.integers(0, 8, R)]   # 0 to 7 pairs beat each row
    total, absolute, r, j, m = solver._pass(G, mu, cand_min, n_add)
    pc = p_ac.sum(axis=0)[solver.rows]
    assert np.isclose(total, pc @ Z.min(axis=1), rtol=1e-13)
    assert np.isclose(absolute, pc @ np.abs(Z.min(axis=1)), rtol=1e-13)
    want = {(c, int(k)) for c in range(R)
            for k in np.argsort(Z[c])[:n_add] if Z[c, k] < cand_min[c]}
    assert want and set(zip(r.tolist(), j.tolist())) == want
    assert np.allclose(m, cand_min[r] - Z[r, j])


def test_pricing_widens_the_intake_of_rows_found_wanting_in_earlier_passes(monkeypatch):
    """A row that h earlier passes found wanting takes its n_add * 2**min(h, _WIDEN_MAX) most
    violated pairs (a brute-force reference), and the pass counts every row it found wanting."""
    import privmap.offline.solvers._fast_pricing as pricing
    import privmap.offline.solvers._fast_path as fast

    monkeypatch.setattr(pricing, "_WIDEN_MAX", 2)
    p_ac, dist = random_instance(5, 20, 2)
    solver = fast._DualNewton(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100, None)
    solver.tight, solver.has_inf = False, False
    rng = np.random.default_rng(4)
    G = rng.normal(size=(2, 20))
    Z = solver.alpha.T @ G + 0.5 * dist[solver.rows]
    R = solver.rows.size
    cand_min = np.sort(Z, axis=1)[np.arange(R), rng.integers(0, 10, R)]   # 0 to 9 pairs beat each row
    hits = rng.integers(0, 4, R)
    solver.row_hits = hits.copy()
    _, _, r, j, _ = solver._pass(G, 0.5, cand_min, 1)
    allow = 1 << np.minimum(hits, 2)                                        # 1, 2, 4, 4
    want = {(c, int(k)) for c in range(R)
            for k in np.argsort(Z[c])[:allow[c]] if Z[c, k] < cand_min[c]}
    assert want and set(zip(r.tolist(), j.tolist())) == want
    wanting = (Z < cand_min[:, None]).any(axis=1)
    assert np.array_equal(solver.row_hits, hits + wanting)
    assert (allow[wanting] > 1).any() and (np.bincount(r, minlength=R)[wanting] > 1).any()


@pytest.mark.parametrize("seed, n_private", [(0, 2), (1, 3)])
@pytest.mark.parametrize("shift", [0.0, 0.05])
def test_a_warm_started_solve_certifies_the_same_optimum_as_a_cold_one(seed, n_private, shift):
    # The warm start comes from the instance before its distortion moved (as in the codebook
    # step); both answers are certified within tol_bits, so their leakages differ by at most that.
    p_ac, dist = random_instance(seed, 60, n_private)
    delta = budget(p_ac, dist, 0.3)
    before = solve_fast(p_ac, dist, delta, tol_bits=1e-6)
    moved = dist * (1 + shift * np.random.default_rng(seed).random(dist.shape))
    cold = solve_fast(p_ac, moved, delta, tol_bits=1e-6)
    warm = solve_fast(p_ac, moved, delta, tol_bits=1e-6, warm_start=before)
    assert warm.gap_bits <= 1e-6 and cold.gap_bits <= 1e-6
    assert abs(warm.leakage_bits - cold.leakage_bits) <= 1e-6
    assert warm.leakage_bits - warm.info["lower_bound_bits"] <= 1e-6
    assert warm.distortion <= delta * (1 + 1e-12)


def test_a_warm_start_from_a_table_without_a_multiplier_is_certified_too():
    import dataclasses
    p_ac, dist = random_instance(2, 50)
    delta = budget(p_ac, dist, 0.4)
    cold = solve_fast(p_ac, dist, delta, tol_bits=1e-6)
    bare = dataclasses.replace(cold, multiplier=math.nan)
    warm = solve_fast(p_ac, dist, delta, tol_bits=1e-6, warm_start=bare)
    assert abs(warm.leakage_bits - cold.leakage_bits) <= 1e-6


def test_a_warm_start_of_another_shape_is_a_clear_error():
    p_ac, dist = random_instance(3, 30)
    delta = budget(p_ac, dist, 0.4)
    other = solve_fast(p_ac[:, :20] / p_ac[:, :20].sum(), dist[:20, :20], budget(p_ac, dist, 0.4))
    with pytest.raises(ValueError, match="warm_start table has shape"):
        solve_fast(p_ac, dist, delta, warm_start=other)
