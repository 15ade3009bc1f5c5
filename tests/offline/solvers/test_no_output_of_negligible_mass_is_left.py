"""No output of negligible mass is left in a table the fast solver returns."""
import numpy as np

from privmap.offline.solvers import perfect_privacy_distortion, solve_fast
from privmap.offline.solvers._negligible import MASS_FLOOR, merge_negligible_outputs


def few_users_per_cluster(K=64, users=3, seed=0):
    """K clusters of about ``users`` users each, nearly all of one private class (pure)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(K, 5))
    labels = rng.integers(0, K, users * K)
    lean = rng.beta(0.2, 0.2, K)                                # most clusters near one class
    private = (rng.random(users * K) < lean[labels]).astype(int)
    p_ac = np.zeros((2, K))
    np.add.at(p_ac, (private, labels), 1.0)
    p_ac /= p_ac.sum()
    dist = np.sqrt(((centers[:, None] - centers[None]) ** 2).sum(-1))
    return p_ac, dist


def test_merge_moves_a_rare_output_to_the_rows_cheapest_kept_entry_and_keeps_rows_stochastic():
    p_c = np.array([0.5, 0.5 - 1e-9, 1e-9])
    D = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 2.0], [2.0, 1.0, 0.0]])
    rows = np.array([0, 1, 2, 2])
    cols = np.array([0, 1, 1, 2])
    vals = np.array([1.0, 1.0, 0.5, 0.5])
    r, c, v, merged = merge_negligible_outputs(p_c, D, rows, cols, vals)
    assert merged == 1
    assert list(zip(r, c, v)) == [(0, 0, 1.0), (1, 1, 1.0), (2, 1, 1.0)]


def test_merge_restores_the_budget_without_a_new_output():
    p_c = np.array([0.5, 0.5 - 1e-9, 1e-9])
    D = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 2.0], [2.0, 1.0, 0.0]])
    rows, cols = np.array([0, 0, 1, 2, 2]), np.array([0, 1, 1, 1, 2])
    vals = np.array([0.5, 0.5, 1.0, 0.5, 0.5])
    delta = float((p_c[rows] * D[rows, cols]) @ vals)      # tight: the merge adds distortion
    r, c, v, merged = merge_negligible_outputs(p_c, D, rows, cols, vals, delta)
    assert merged == 1 and 2 not in c
    assert (p_c[r] * D[r, c]) @ v <= delta
    assert np.allclose(np.bincount(r, weights=v), 1.0)


def test_hard_instance_tables_have_no_negligible_output_and_stay_certified():
    p_ac, dist = few_users_per_cluster()
    assert ((p_ac > 0).sum(axis=0) == 1).mean() > 0.5          # mostly pure clusters
    d0 = perfect_privacy_distortion(p_ac, dist)
    merged = 0
    for frac in (0.1, 0.3, 0.6, 0.9):
        res = solve_fast(p_ac, dist, frac * d0, tol_bits=1e-6)
        mass = p_ac.sum(axis=0) @ res.table
        assert not np.any((mass > 0) & (mass < MASS_FLOOR)), frac
        assert res.gap_bits <= 1e-6 and res.distortion <= frac * d0
        merged += res.info["merged_outputs"]
    assert merged > 0                    # the instance does produce negligible outputs to merge
