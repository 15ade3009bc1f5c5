"""The logistic-regression attacker chooses its regularisation by inner cross-validation."""
import numpy as np
import pytest

from privmap.offline._attacker import (
    C_GRID,
    choose_regularisation,
    cross_validated_scores,
    encode_features,
    logistic_attack,
)


def _many_weak_features(seed=0, n=1000, p=400, strength=0.05):
    """Rows like sparse ratings: each of p features carries a little of the class, none much."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    w = strength * rng.standard_normal(p)
    return rng.standard_normal((n, p)) + np.outer(2 * y - 1, w), y


def test_with_many_weak_features_the_chosen_regularisation_beats_the_fixed_one_on_held_out_rows():
    X, y = _many_weak_features()
    fixed = logistic_attack(X[:200], y[:200], X[200:], y[200:], 2, C=1.0)
    strong = logistic_attack(X[:200], y[:200], X[200:], y[200:], 2)
    assert strong.regularisation in C_GRID and strong.regularisation <= 0.01
    assert strong.roc_auc > fixed.roc_auc + 0.02


def test_a_fixed_c_is_used_as_given_and_reported():
    X, y = _many_weak_features(n=300, p=5, strength=0.5)
    attack = logistic_attack(X[:200], y[:200], X[200:], y[200:], 2, C=0.37)
    assert attack.regularisation == 0.37 and attack.as_dict()["regularisation_c"] == 0.37


def test_rows_that_all_look_alike_leave_every_c_tied_and_the_most_regularised_chosen():
    X = np.ones((60, 3))
    y = np.arange(60) % 2
    Xtr, _ = encode_features(X, X, False)
    assert choose_regularisation(Xtr, y) == min(C_GRID)
    attack = logistic_attack(X, y, X, y, 2)
    assert attack.roc_auc == pytest.approx(0.5)


def test_too_few_rows_of_a_class_to_cross_validate_fall_back_to_the_default_c():
    X = np.arange(20, dtype=float).reshape(10, 2)
    y = np.array([0] * 9 + [1])
    assert choose_regularisation(X, y) == 1.0


def test_the_attacker_scores_released_rows_with_blanks_through_their_blank_indicators():
    """Which cells are blank can carry the class (people rate what they like): the attacker sees it."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 600)
    X = np.where(rng.random((600, 6)) < np.where(y[:, None] == 1, 0.8, 0.2), 3.0, np.nan)
    attack = logistic_attack(X[:400], y[:400], X[400:], y[400:], 2)
    assert attack.roc_auc > 0.9


def test_nested_cross_validated_scores_cover_every_row_and_choose_c_in_each_fold():
    X, y = _many_weak_features(n=300, p=30, strength=0.3)
    scores = cross_validated_scores(X, y, 2, folds=3)
    assert scores.scores.shape == (300, 2) and np.allclose(scores.scores.sum(axis=1), 1.0)
    assert scores.roc_auc > 0.8 and scores.regularisation is None
