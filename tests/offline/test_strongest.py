"""The strongest of three attackers: the Bayes attacker over the release alphabet, gradient boosting
and logistic regression."""
import numpy as np
import pytest

from privmap.offline._strongest import (
    ATTACKERS,
    bayes_scores,
    boosting_scores,
    release_symbols,
    strongest_attack,
    strongest_name,
)


def test_the_bayes_attacker_counts_with_one_pseudo_count_and_gives_an_unseen_symbol_the_prior():
    symbols, y = np.array([0, 0, 0, 1]), np.array([1, 1, 0, 0])
    scores = bayes_scores(symbols, y, np.array([0, 1, 2]), 2, 3)
    np.testing.assert_allclose(scores, [[2 / 5, 3 / 5], [2 / 3, 1 / 3], [1 / 2, 1 / 2]])


def test_released_rows_read_as_symbols_are_their_exact_values_blank_included():
    train = np.array([[1.0, np.nan], [1.0, 2.0], [1.0, np.nan]])
    test = np.array([[1.0, np.nan], [3.0, 3.0]])
    train_s, test_s, n = release_symbols(train, test)
    assert n == 3 and train_s[0] == train_s[2] == test_s[0] != train_s[1] and test_s[1] not in train_s


def _alternating(n, seed):
    """One released value per user from 8 outputs; the class sets the output's parity, which no
    monotone function of the value reads."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    level = 2 * rng.integers(0, 4, n) + np.where(rng.random(n) < 0.8, y, 1 - y)
    return level[:, None].astype(float), y


def test_a_leak_a_linear_attacker_cannot_see_is_caught_and_the_strongest_reported():
    X, y = _alternating(1200, 0)
    figures = strongest_attack(X[:800], y[:800], X[800:], y[800:], 2, seed=0)
    assert set(figures.aucs) == set(ATTACKERS)
    assert figures.aucs["logistic"][0] < 0.6 and figures.aucs["bayes"][0] > 0.75
    assert figures.strongest in ("bayes", "boosting") and figures.auc == max(a for a, _ in figures.aucs.values())


def test_boosting_trained_on_one_class_predicts_it():
    X, _ = _alternating(20, 1)
    assert boosting_scores(X[:10], np.zeros(10, dtype=int), X[:3], 2).tolist() == [[1.0, 0.0]] * 3


def test_boosting_reads_released_rows_with_a_column_no_training_row_filled():
    rng = np.random.default_rng(0)
    y = rng.integers(2, size=200)
    X = np.column_stack([y + rng.normal(0, 0.3, 200), np.full(200, np.nan)])     # an item nobody rated
    test = X.copy()
    test[:5, 1] = 3.0                                                          # rated among the new users
    proba = boosting_scores(X, y, test, 2)
    assert proba.shape == (200, 2) and np.mean(proba.argmax(axis=1) == y) > 0.9


def test_the_strongest_is_named_from_a_bundles_per_attacker_figures():
    metrics = {"holdout_attacker_auc_bayes": 0.55, "holdout_attacker_auc_boosting": 0.58,
               "holdout_attacker_auc_logistic": 0.52}
    assert strongest_name(metrics) == "boosting"
    assert strongest_name({"holdout_attacker_auc": 0.5}) is None


@pytest.mark.parametrize("classes", [3])
def test_many_classes_are_scored_one_versus_rest(classes):
    rng = np.random.default_rng(2)
    y = rng.integers(0, classes, 900)
    X = (y + (rng.random(900) < 0.3))[:, None].astype(float)
    figures = strongest_attack(X[:600], y[:600], X[600:], y[600:], classes)
    assert all(0.5 < auc <= 1.0 and error > 0 for auc, error in figures.aucs.values())
