"""The perfect-privacy distortion is the least distortion with zero leakage."""
import numpy as np
import pytest
from privmap.offline.solvers import _cvxpy_solver
from privmap.offline.solvers._perfect import perfect_privacy_distortion


@pytest.fixture
def instance():
    rng = np.random.default_rng(11)
    points = rng.integers(0, 4, size=(12, 3)).astype(float)
    dist = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    p_ac = rng.random((3, 12)) ** 2
    return p_ac / p_ac.sum(), dist


def test_leakage_is_zero_just_above_the_perfect_privacy_distortion(instance):
    # Clarabel reports 'optimal_inaccurate' at exactly d0 (the optimum sits on the
    # cone's boundary), so the reference is asked 0.1% above it.
    p_ac, dist = instance
    d0 = perfect_privacy_distortion(p_ac, dist)
    assert _cvxpy_solver.solve_cvxpy(p_ac, dist, d0 * 1.001).leakage_bits < 1e-8


def test_leakage_is_positive_just_below_it(instance):
    p_ac, dist = instance
    d0 = perfect_privacy_distortion(p_ac, dist)
    assert _cvxpy_solver.solve_cvxpy(p_ac, dist, 0.99 * d0).leakage_bits > 1e-7


def test_never_above_mapping_everyone_to_one_output(instance):
    p_ac, dist = instance
    one_output = min(p_ac.sum(axis=0) @ dist[:, j] for j in range(dist.shape[1]))
    assert perfect_privacy_distortion(p_ac, dist) <= one_output + 1e-9
