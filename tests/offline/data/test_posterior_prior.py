"""The posteriors prior: each cluster keeps its share of the rows, and with few rows per cluster it
is far closer to the truth than the counts are."""
from __future__ import annotations

import numpy as np

from privmap.offline._information import mutual_information_bits
from privmap.offline.data._prior import joint_prior, posterior_prior


def test_each_cluster_keeps_its_share_of_the_rows():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    y = (X[:, 0] + 0.5 * rng.standard_normal(300) > 0).astype(int)
    symbols = rng.integers(0, 20, 300)
    p = posterior_prior(X, y, symbols, 2, 20)
    assert np.all(p >= 0) and abs(p.sum() - 1) < 1e-12
    assert np.allclose(p.sum(axis=0), np.bincount(symbols, minlength=20) / 300)


def test_rows_that_say_nothing_of_the_class_give_clusters_that_say_nothing():
    """Noise rows in 100 clusters of 4: the counts prior reads about 0.2 bits of pure noise into
    p(a | c); the posteriors prior stays near 0, the truth."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((400, 4))
    y = rng.integers(0, 2, 400)
    symbols = np.repeat(np.arange(100), 4)
    counts = mutual_information_bits(joint_prior(y, symbols, 2, 100))
    posteriors = mutual_information_bits(posterior_prior(X, y, symbols, 2, 100))
    assert counts > 0.15
    assert posteriors < 0.02


def test_a_class_the_rows_predict_is_recovered_cluster_by_cluster():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((2000, 2))
    truth = 1 / (1 + np.exp(-2 * X[:, 0]))
    y = (rng.random(2000) < truth).astype(int)
    symbols = np.digitize(X[:, 0], np.linspace(-2, 2, 9))
    p = posterior_prior(X, y, symbols, 2, 10)
    expected = np.array([truth[symbols == c].mean() for c in range(10)])
    assert np.allclose(p[1] / p.sum(axis=0), expected, atol=0.05)
