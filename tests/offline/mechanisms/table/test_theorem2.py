"""Theorem 2: the cluster mapping applied through psi to raw data leaks exactly J,
and distorts raw data by at most Delta + r."""
import numpy as np
import pytest

from privmap.offline._information import leakage_bits
from privmap.offline.data._distortion import pairwise
from privmap.offline.data._prior import joint_prior
from privmap.offline.data._quantize import quantize
from privmap.offline.solvers import solve_cvxpy


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
def test_raw_leakage_equals_cluster_leakage_and_distortion_within_delta_plus_r(metric):
    rng = np.random.default_rng(5)
    private = rng.integers(0, 3, size=600)
    raw = np.clip(rng.integers(0, 4, size=(600, 4)) + private[:, None] * (rng.random((600, 4)) < 0.5), 0, 5).astype(float)
    # The raw alphabet: distinct rows; p(a, b) empirical.
    alphabet, b_index = np.unique(raw, axis=0, return_inverse=True)
    p_ab = joint_prior(private, b_index.ravel(), 3, len(alphabet))

    qz = quantize(raw, 12, metric=metric, seed=0)
    p_ac = joint_prior(private, qz.labels, 3, qz.k)
    dist = pairwise(qz.centers, qz.centers, metric)
    delta = 0.5 * dist[dist > 0].min() + 0.2
    res = solve_cvxpy(p_ac, dist, delta)

    psi = qz.labels[np.unique(b_index.ravel(), return_index=True)[1]]   # psi of each alphabet symbol
    q_raw = res.table[psi]                                                 # p(c_hat | b) = q(c_hat | psi(b))
    assert leakage_bits(p_ab, q_raw) == pytest.approx(res.leakage_bits, abs=1e-12)

    raw_distortion = float(np.sum(p_ab.sum(axis=0)[:, None] * q_raw * pairwise(alphabet, qz.centers, metric)))
    assert raw_distortion <= delta + qz.r + 1e-9
