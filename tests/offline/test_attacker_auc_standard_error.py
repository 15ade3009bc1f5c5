"""The attacker AUC's standard error: DeLong's variance, a known answer against its definition,
and the coverage of the normal bound it gives on draws whose true AUC is known."""
import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

from privmap.offline._attacker import auc_with_error


def delong_by_definition(score, positive):
    """AUC and DeLong's variance from the n_pos x n_neg comparison matrix (ties count one half)."""
    pos, neg = score[positive], score[~positive]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    return psi.mean(), v10.var(ddof=1) / pos.size + v01.var(ddof=1) / neg.size


def test_the_error_is_delongs_ties_included():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    score = np.round(rng.standard_normal(300) + 0.4 * y, 1)         # many ties
    auc, variance = delong_by_definition(score, y == 1)
    assert auc == pytest.approx(roc_auc_score(y, score), abs=1e-12)
    got = auc_with_error(y, np.column_stack([1 - score, score]), 2)
    assert got == pytest.approx((auc, np.sqrt(variance)), abs=1e-12)


def test_the_one_sided_bound_holds_as_often_as_it_claims():
    rng = np.random.default_rng(4)
    true_auc = norm.cdf(0.5 / np.sqrt(2))                           # N(0.5, 1) against N(0, 1)
    held = 0
    for _ in range(400):
        y = rng.integers(0, 2, 200)
        score = rng.standard_normal(200) + 0.5 * y
        auc, error = auc_with_error(y, np.column_stack([-score, score]), 2)
        held += true_auc <= auc + norm.ppf(0.9) * error
    assert 0.86 <= held / 400 <= 0.94


def test_with_more_classes_the_error_is_the_mean_of_the_one_vs_rest_errors():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 240)
    proba = rng.dirichlet(np.ones(3), 240) + 0.3 * np.eye(3)[y]
    proba /= proba.sum(axis=1, keepdims=True)
    pieces = [delong_by_definition(proba[:, k], y == k) for k in range(3)]
    centre = np.mean([a for a, _ in pieces])
    assert centre == pytest.approx(roc_auc_score(y, proba, multi_class="ovr", average="macro"), abs=1e-12)
    assert auc_with_error(y, proba, 3) == pytest.approx((centre, np.mean([np.sqrt(v) for _, v in pieces])), abs=1e-12)
