"""Greedy Gaussian noise (seed 004): identities (12) and (13), dataset 1's known values, the
delta = 0 and non-positive-definite cases, and the rank-one greedy against naive recomputation."""
import math

import numpy as np
import pytest

from privmap.offline import BuildError
from privmap.offline.mechanisms.gaussian import GaussianModel, greedy_noise
from privmap.offline.mechanisms.gaussian._model import fisher_information

# Seed 004, sample dataset 1 (X = 2 released coordinates, X_p and X_u scalar).
COV_P1 = [[138.27, 165.66, 26.36], [165.66, 240.07, 43.86], [26.36, 43.86, 8.76]]
COV_U1 = [[138.27, 165.66, 11.28], [165.66, 240.07, 6.84], [11.28, 6.84, 2.26]]
# Seed 004, sample dataset 2, Sigma_{X u X_u} as printed: not positive definite (rounding).
COV_U2 = [[66.42, 57.38, 83.90, 80.03, 0.06, 121.43, 11.22], [57.38, 229.20, 146.94, 232.62, 0.04, 69.30, 2.42],
          [83.90, 146.94, 142.89, 169.83, 0.06, 140.22, 11.31], [80.03, 232.62, 169.83, 247.38, 0.06, 114.44, 6.93],
          [0.06, 0.04, 0.06, 0.06, 0.12, 0.10, 0.01], [121.43, 69.30, 140.22, 114.44, 0.10, 233.30, 22.38],
          [11.22, 2.42, 11.31, 6.93, 0.01, 22.38, 2.23]]
COV_P2 = [row[:6] + [p] for row, p in zip(COV_U2[:6], [9.26, 45.07, 27.17, 45.18, 0.01, 9.44])] + \
    [[9.26, 45.07, 27.17, 45.18, 0.01, 9.44, 9.01]]


@pytest.fixture(scope="module")
def dataset1():
    return GaussianModel.from_blocks(COV_P1, COV_U1, 2)


def test_dataset1_mutual_informations_match_the_known_values(dataset1):
    assert dataset1.information("private", [0, 0]) == pytest.approx(2.187746, abs=5e-7)
    assert dataset1.information("utility", [0, 0]) == pytest.approx(1.064651, abs=5e-7)
    assert fisher_information(dataset1, [0, 0]) == pytest.approx(3.278316, abs=5e-7)
    assert dataset1.information("utility", [10, 20]) == pytest.approx(0.428665, abs=5e-7)
    assert fisher_information(dataset1, [10, 20]) == pytest.approx(0.600379, abs=5e-7)


def _random_model(rng, n):
    a = rng.normal(size=(n + 2, n + 2))
    joint = a @ a.T + 0.1 * np.eye(n + 2)
    p, u = list(range(n + 1)), list(range(n)) + [n + 1]
    return GaussianModel.from_blocks(joint[np.ix_(p, p)], joint[np.ix_(u, u)], n)


def test_identities_12_and_13_hold_exactly_for_random_noise():
    rng = np.random.default_rng(12)
    for _ in range(100):
        n = int(rng.integers(1, 7))
        model = _random_model(rng, n)
        sigma2 = rng.exponential(2.0, size=n) * (rng.random(n) < 0.8)
        m = model.cov_utility.copy()
        m[np.arange(n), np.arange(n)] += sigma2
        b = np.linalg.inv(m)[-1, -1]
        s_u = m[-1, -1]
        info = model.information("utility", sigma2)
        # (12): b = |Sigma_Y| / |Sigma_{Y u X_u}| and 1/2 log(b s_u) = I(X_u; Y)
        assert b == pytest.approx(np.linalg.det(m[:n, :n]) / np.linalg.det(m), rel=1e-9)
        assert 0.5 * math.log(b * s_u) == pytest.approx(info, rel=1e-9, abs=1e-12)
        # (13): I(X_u; Y) = 1/2 log(s_u F + 1)
        assert 0.5 * math.log(s_u * fisher_information(model, sigma2) + 1) == pytest.approx(info, rel=1e-9, abs=1e-12)


def test_delta_zero_adds_no_noise_on_dataset1(dataset1):
    result = greedy_noise(dataset1, 0.0)
    assert np.all(result.sigma2 == 0.0)
    assert result.private_after == pytest.approx(2.187746, abs=5e-7)


def test_dataset1_at_delta_one_takes_the_briefs_9283_iterations_and_respects_delta(dataset1):
    result = greedy_noise(dataset1, 1.0)
    assert result.iterations == 9283
    assert result.utility_loss <= 1.0 + 1e-9
    assert result.private_after < 0.2 * result.private_before


def test_min_leakage_does_not_increase_with_delta_and_gamma_constraint_holds(dataset1):
    for gamma in (0.0, 1.0, 2.0):
        previous = math.inf
        for delta in (0.05, 0.2, 0.5, 1.0):
            r = greedy_noise(dataset1, delta, gamma)
            assert r.utility_loss <= delta + 1e-9
            if r.utility_loss > 0:
                assert r.private_before - r.private_after >= gamma * r.utility_loss - 1e-9
            assert r.private_after <= previous + 1e-12
            previous = r.private_after


def test_fisher_variant_gives_the_same_noise_as_mutual_information_at_gamma_zero(dataset1):
    for delta in (0.1, 0.5, 1.0):
        mi, fi = greedy_noise(dataset1, delta), greedy_noise(dataset1, delta, fisher=True)
        assert np.allclose(mi.sigma2, fi.sigma2) and fi.utility_loss <= delta + 1e-9


def _naive_greedy(model, delta, gamma, dtheta=1.0, stop=1e-3, saturation=1e-6):
    """O(n^4)-per-iteration reference: every candidate recomputed from scratch."""
    n = model.n
    sigma2 = np.zeros(n)
    p0, u0 = model.information("private", sigma2), model.information("utility", sigma2)
    while dtheta >= stop:
        p, u = model.information("private", sigma2), model.information("utility", sigma2)
        factor = np.empty(n)
        for i in range(n):
            trial = sigma2.copy()
            trial[i] += dtheta
            g = p - model.information("private", trial)
            loss = u - model.information("utility", trial)
            factor[i] = -1 if g < saturation else (g / loss if loss > 0 else np.inf)
        j = int(np.argmax(factor))
        if factor[j] <= 0:
            break
        trial = sigma2.copy()
        trial[j] += dtheta
        gain, loss = p0 - model.information("private", trial), u0 - model.information("utility", trial)
        if loss <= delta and (loss <= 0 or gain >= gamma * loss):
            sigma2 = trial
        else:
            dtheta /= 2
    return sigma2


def test_rank_one_greedy_matches_the_naive_recomputation():
    rng = np.random.default_rng(4)
    for _ in range(3):
        model = _random_model(rng, 3)
        delta = 0.3 * model.information("utility", np.zeros(3))
        fast = greedy_noise(model, delta, 0.5, dtheta=20.0, stop=0.5)
        naive = _naive_greedy(model, delta, 0.5, dtheta=20.0, stop=0.5)
        assert fast.iterations >= 5 and np.any(fast.sigma2 > 0)
        assert np.allclose(fast.sigma2, naive, atol=1e-9)


def test_non_positive_definite_covariance_is_a_clear_build_error_never_nan():
    with pytest.raises(BuildError, match="not positive definite"):
        GaussianModel.from_blocks(COV_P2, COV_U2, 6)
    with pytest.raises(BuildError, match="symmetric"):
        GaussianModel.from_blocks([[1, 0.5], [0.4, 1]], [[1, 0.5], [0.5, 1]], 1)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 2))
    with pytest.raises(BuildError, match="not positive definite"):
        GaussianModel.estimate(np.hstack([x, x[:, :1]]), x[:, 1:] + 1, rng.normal(size=(50, 1)))
