"""Null-space cleaning (seed 001): the seed's toy table, the brief's Algorithm 1 values,
Theorem 1 on random instances, and the device's pure-Python path against numpy."""
import numpy as np
import pytest

from privmap.device import Limits
from privmap.device.kinds.nullspace import clean_row, parse_nullspace
from privmap.offline import BuildError
from privmap.offline.mechanisms.nullspace import clean
from privmap.offline.mechanisms.nullspace._model import clean_simplest, fit_linear, nullspace_directions

TOY_X = np.array([[3.0, 1.0], [4.0, 2.0], [5.0, 1.0]])
A_D = np.array([[1.0], [-1.0]])
A_C = np.array([[1.0], [2.0]])


def _e(a, x, x_clean):
    r = (np.atleast_2d(x) - np.atleast_2d(x_clean)) @ a
    return np.sum(r * r, axis=1)


def test_simplest_variant_reproduces_the_seed_toy_table():
    assert np.allclose(clean_simplest(TOY_X, A_D), [[1, -1], [1, -1], [2, -2]], atol=1e-14)
    assert np.allclose(clean_simplest(TOY_X, A_D) @ A_D, TOY_X @ A_D)  # y_d stays 2, 2, 4


def test_algorithm1_on_the_toy_gives_the_briefs_exact_values():
    nd = nullspace_directions(A_D, A_C)
    assert np.allclose(nd.v, [np.array([1, 1]) / np.sqrt(2), np.array([2, -1]) / np.sqrt(5)], atol=1e-14)
    assert np.allclose(nd.mu, [0.0, 1.0])  # gamma in {0, inf}
    a = TOY_X @ nd.v.T
    assert np.allclose(nd.lambda_d * a * a, [[0, 9], [0, 12.96], [0, 29.16]], atol=1e-12)
    cleaned = clean(TOY_X, nd.v, nd.lambda_d, 0.01)
    assert np.allclose(cleaned, [[14 / 15, -29 / 30], [14 / 15, -29 / 30], [29 / 15, -59 / 30]], atol=1e-14)
    assert np.allclose(_e(A_D, TOY_X, cleaned), 0.01, atol=1e-15)
    assert np.allclose(_e(A_C, TOY_X, cleaned), [36, 81, 81], atol=1e-12)


def _random_instance(rng):
    n = int(rng.integers(3, 9))
    n_d, n_c = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    return rng.normal(size=(n, n_d)), rng.normal(size=(n, n_c)), rng.normal(size=(20, n)) * 3


def test_theorem1_utility_error_equals_epsilon_to_1e12_on_random_instances():
    rng = np.random.default_rng(16)
    checked = 0
    for _ in range(200):
        a_d, a_c, x = _random_instance(rng)
        nd = nullspace_directions(a_d, a_c)
        budget = (nd.lambda_d * (x @ nd.v.T) ** 2).sum(axis=1)
        eps = float(rng.uniform(0.01, 1.0)) * budget.min()
        e = _e(a_d, x, clean(x, nd.v, nd.lambda_d, eps))
        assert np.all(np.abs(e - eps) <= 1e-12 * max(1.0, eps))
        checked += len(x)
    assert checked == 4000


def test_directions_are_unit_and_both_bd_and_bc_orthogonal_even_in_degenerate_eigenspaces():
    rng = np.random.default_rng(3)
    for _ in range(50):
        a_d, a_c, _ = _random_instance(rng)
        nd = nullspace_directions(a_d, a_c)
        assert np.allclose(np.linalg.norm(nd.v, axis=1), 1.0)
        for b in (a_d @ a_d.T, a_c @ a_c.T):
            g = nd.v @ b @ nd.v.T
            assert np.allclose(g - np.diag(np.diag(g)), 0.0, atol=1e-10 * np.abs(b).max())
        assert np.all(np.diff(nd.mu) >= -1e-12)


def test_everything_is_removed_when_the_budget_exceeds_the_sum_of_deltas():
    nd = nullspace_directions(A_D, A_C)
    cleaned = clean(TOY_X, nd.v, nd.lambda_d, 100.0)
    a = TOY_X @ nd.v.T
    assert np.allclose(cleaned, TOY_X - a @ nd.v, atol=1e-14)  # alpha = 1 for every direction
    assert np.allclose(_e(A_D, TOY_X, cleaned), [9.0, 12.96, 29.16], atol=1e-12)  # sum of deltas < epsilon


def test_device_pure_python_clean_matches_numpy_and_passes_its_theorem_check():
    rng = np.random.default_rng(7)
    for _ in range(40):
        a_d, a_c, x = _random_instance(rng)
        nd = nullspace_directions(a_d, a_c)
        params = parse_nullspace({"epsilon": 0.05, "desired": [f"d{i}" for i in range(a_d.shape[1])],
                                  "confidential": ["c"], "directions": nd.v.tolist(),
                                  "lambda_d": nd.lambda_d.tolist(), "a_d": a_d.tolist()},
                                 a_d.shape[0], Limits())
        expected = clean(x, nd.v, nd.lambda_d, 0.05)
        got = np.array([clean_row(tuple(row), params) for row in x.tolist()])
        assert np.allclose(got, expected, rtol=0, atol=1e-12 * np.abs(x).max())


def test_fit_linear_keeps_intercepts_out_and_refuses_non_finite_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(100, 3))
    a, b = fit_linear(x, x @ [1.0, -2.0, 0.5] + 7.0)
    assert np.allclose(a.ravel(), [1.0, -2.0, 0.5]) and np.allclose(b, 7.0)
    with pytest.raises(BuildError):
        fit_linear(np.full((5, 2), np.nan), np.zeros(5))
    with pytest.raises(BuildError):
        nullspace_directions(np.zeros((3, 1)), np.zeros((3, 1)))
