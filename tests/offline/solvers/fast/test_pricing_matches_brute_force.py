"""The pricing of the fast solver (src/privmap/offline/solvers/fast/_pricing.py) finds what a brute-force scan of
every pair's reduced cost z(c, j) = sum_a p(a|c) G[a, j] + mu D(c, j) finds: the exact row minima
(the bound's sums), each row's most violated pairs with its widening intake, the starting
candidates and the guard rows."""
import numpy as np
import pytest

from privmap.offline.solvers.fast import _pricing, _state


@pytest.mark.parametrize("n_private", [2, 3])
def test_guards_are_the_cheapest_rows_leaning_to_each_class(n_private, random_instance, budget):
    """Every output starts with its _N_GUARD cheapest rows among those whose posterior leans to
    each class (a brute-force reference), also when the outputs are taken in several blocks."""
    p_ac, dist = random_instance(11, 20, n_private)
    solver = _state.set_up(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100,
                           settings=_state.Settings(guard_columns=6))   # blocks of 6, 6, 6 and 2 outputs
    solver.tight = False
    rows, cols = _pricing.guards(solver)
    got = set(zip(rows.tolist(), cols.tolist()))
    want = set()
    for a in range(n_private):
        lean = np.flatnonzero(solver.alpha[a] >= solver.p_a[a])
        if 0 < lean.size < solver.rows.size:
            for j in range(dist.shape[1]):
                cheapest = lean[np.argsort(dist[solver.rows[lean], j])[:solver.settings.n_guard]]
                want |= {(int(r), j) for r in cheapest}
    assert want and got == want


@pytest.mark.parametrize("n_add", [1, 2, 4])
def test_pricing_pass_finds_each_rows_most_violated_pairs_and_the_exact_bound(n_add,
                                                                              random_instance, budget):
    """One pass over D equals a brute-force evaluation of every pair: the exact row minima and,
    per row, its n_add smallest z below the threshold; also with row chunks that straddle rows
    without mass (so D is read through copies and through views)."""
    p_ac, dist = random_instance(7, 20, 2)
    p_ac[:, [4, 11]] = 0.0                               # two rows without mass
    p_ac /= p_ac.sum()
    solver = _state.set_up(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100,
                           settings=_state.Settings(chunk_elements=60))   # 3 rows per chunk at K_out = 20
    solver.tight, solver.has_inf = False, False
    rng = np.random.default_rng(3)
    G = rng.normal(size=(2, 20))
    mu = 0.7
    Z = solver.alpha.T @ G + mu * dist[solver.rows]      # (active rows, outputs)
    R = solver.rows.size
    cand_min = np.sort(Z, axis=1)[np.arange(R), rng.integers(0, 8, R)]   # 0 to 7 pairs beat each row
    total, absolute, r, j, m = _pricing.pricing_pass(solver, G, mu, cand_min, n_add)
    pc = p_ac.sum(axis=0)[solver.rows]
    assert np.isclose(total, pc @ Z.min(axis=1), rtol=1e-13)
    assert np.isclose(absolute, pc @ np.abs(Z.min(axis=1)), rtol=1e-13)
    want = {(c, int(k)) for c in range(R)
            for k in np.argsort(Z[c])[:n_add] if Z[c, k] < cand_min[c]}
    assert want and set(zip(r.tolist(), j.tolist())) == want
    assert np.allclose(m, cand_min[r] - Z[r, j])


def test_pricing_widens_the_intake_of_rows_found_wanting_in_earlier_passes(random_instance,
                                                                           budget):
    """A row that h earlier passes found wanting takes its n_add * 2**min(h, _WIDEN_MAX) most
    violated pairs (a brute-force reference), and the pass counts every row it found wanting."""
    p_ac, dist = random_instance(5, 20, 2)
    solver = _state.set_up(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100, settings=_state.Settings(widen_max=2))
    solver.tight, solver.has_inf = False, False
    rng = np.random.default_rng(4)
    G = rng.normal(size=(2, 20))
    Z = solver.alpha.T @ G + 0.5 * dist[solver.rows]
    R = solver.rows.size
    cand_min = np.sort(Z, axis=1)[np.arange(R), rng.integers(0, 10, R)]   # 0 to 9 pairs beat each row
    hits = rng.integers(0, 4, R)
    solver.row_hits = hits.copy()
    _, _, r, j, _ = _pricing.pricing_pass(solver, G, 0.5, cand_min, 1)
    allow = 1 << np.minimum(hits, 2)                                        # 1, 2, 4, 4
    want = {(c, int(k)) for c in range(R)
            for k in np.argsort(Z[c])[:allow[c]] if Z[c, k] < cand_min[c]}
    assert want and set(zip(r.tolist(), j.tolist())) == want
    wanting = (Z < cand_min[:, None]).any(axis=1)
    assert np.array_equal(solver.row_hits, hits + wanting)
    assert (allow[wanting] > 1).any() and (np.bincount(r, minlength=R)[wanting] > 1).any()


@pytest.mark.parametrize("erasure", [False, True])
def test_starting_candidates_are_the_cheapest_output_the_best_under_the_duals_guards_and_extras(
        erasure, random_instance, budget):
    """Each active row starts with its cheapest output, its _N_START smallest z under the starting
    duals and the guard rows (brute force), plus the extra pairs given (a warm start's), never a
    forbidden pair; also with row chunks that straddle rows without mass."""
    p_ac, dist = random_instance(9, 20, 2, erasure=erasure)
    p_ac[:, [2, 13]] = 0.0
    p_ac /= p_ac.sum()
    solver = _state.set_up(p_ac, dist, 0.3 if erasure else budget(p_ac, dist, 0.3), 1e-5, 100,
                           settings=_state.Settings(chunk_elements=66, n_start=3))   # 3 rows per chunk at K_out = 20 or 22
    solver.tight, solver.budget = False, True
    solver.jmin = np.argmin(dist[solver.rows], axis=1)
    rng = np.random.default_rng(5)
    G, mu = rng.normal(size=(2, dist.shape[1])), 0.4
    extra_r, extra_c = np.array([0, 5, 5]), np.array([dist.shape[1] - 1, 0, 1])
    extra_c = np.where(np.isfinite(dist[solver.rows[extra_r], extra_c]), extra_c, solver.jmin[extra_r])
    _pricing.start_candidates(solver, G, mu, extra_r, extra_c)
    with np.errstate(invalid="ignore"):
        Z = solver.alpha.T @ G + mu * dist[solver.rows]
    want = {(c, int(solver.jmin[c])) for c in range(solver.rows.size)}
    want |= {(c, int(k)) for c in range(solver.rows.size) for k in np.argsort(Z[c])[:3] if np.isfinite(Z[c, k])}
    want |= set(zip(*(x.tolist() for x in _pricing.guards(solver))))
    want |= set(zip(extra_r.tolist(), extra_c.tolist()))
    got = set(zip(solver.cr.tolist(), solver.cj.tolist()))
    assert got == want
    assert np.all(np.isfinite(dist[solver.rows[solver.cr], solver.cj]))
    assert np.array_equal(solver.c_low, solver.cj == solver.jmin[solver.cr])


def test_most_violated_pairs_break_ties_towards_the_first_output_and_come_rank_by_rank():
    """Each row takes its allow[i] smallest entries below its threshold, equal values going to
    the lower output (as argmin takes them), also where a tie straddles the allowance, and the
    pairs come every row's best first, then every row's second best (the order the cap per
    output reads); a brute-force stable sort is the reference."""
    rng = np.random.default_rng(8)
    Z = rng.integers(0, 6, size=(9, 14)).astype(float)      # many exact ties
    Z[2, :] = np.inf
    Z[3, 5] = np.inf
    rows = np.arange(9) + 3                                 # indices into the active rows
    thr = np.full(12, 3.5)
    cand_min = np.full(12, 4.0)
    allow = rng.integers(1, 6, 9)
    new_r, new_c, new_m = [], [], []
    _pricing.most_violated(Z.copy(), rows, thr, cand_min, allow, new_r, new_c, new_m)
    got = list(zip(np.concatenate(new_r).tolist(), np.concatenate(new_c).tolist()))
    ranked = [[int(k) for k in np.argsort(Z[i], kind="stable")[:allow[i]] if Z[i, k] < 3.5]
              for i in range(9)]
    want = [(int(rows[i]), ranked[i][rank]) for rank in range(int(allow.max()))
            for i in range(9) if rank < len(ranked[i])]
    assert want and got == want
    assert np.allclose(np.concatenate(new_m), 4.0 - Z[np.array(got)[:, 0] - 3, np.array(got)[:, 1]])
