"""Matrix-factorization RMSE on true vs released ratings (seed 000, Table I)."""
import numpy as np
import pytest

from privmap.offline.measures import rmse_true_vs_released
from privmap.offline.measures._recommender import factorize


def _low_rank(n=300, m=25, rank=2, seed=0, density=0.7):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, m))
    R = np.clip(np.round(3 + scores), 1, 5)
    R[rng.random((n, m)) > density] = 0          # 0 = not rated
    return R


def test_factorization_predicts_held_out_ratings_better_than_the_global_mean():
    R = _low_rank()
    rated = R != 0
    rng = np.random.default_rng(1)
    hidden = rated & (rng.random(R.shape) < 0.1)
    model = factorize(R, rated & ~hidden, rank=2, reg=1.0)
    u, i = np.nonzero(hidden)
    rmse = np.sqrt(np.mean((model.predict(u, i, lo=1, hi=5) - R[u, i]) ** 2))
    baseline = np.sqrt(np.mean((R[rated & ~hidden].mean() - R[u, i]) ** 2))
    assert rmse < 0.6 * baseline


def test_releasing_the_true_ratings_costs_nothing():
    R = _low_rank()
    rows = rmse_true_vs_released(R, R, folds=5, holdout=0.1)
    assert len(rows) == 5 and all(r["held_out"] > 0 for r in rows)
    assert all(r["rmse_true"] == pytest.approx(r["rmse_released"]) for r in rows)


def test_noisier_releases_predict_worse():
    R = _low_rank()
    rng = np.random.default_rng(2)
    noisy = np.where(R > 0, np.clip(R + rng.integers(-2, 3, R.shape), 1, 5), 0)
    rows = rmse_true_vs_released(R, noisy, folds=3)
    assert all(r["rmse_released"] > r["rmse_true"] for r in rows)


def test_shapes_must_agree():
    with pytest.raises(ValueError):
        rmse_true_vs_released(np.ones((4, 3)), np.ones((4, 2)))
