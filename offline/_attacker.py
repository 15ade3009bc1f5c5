"""The logistic-regression attacker: it knows the mechanism but not the prior.

It is trained on sanitized training rows (their released values, labelled with their true private
class) and tested on sanitized held-out rows. It sits below every stage of a build (like
:mod:`._information`) because both the build's cross-fitting (``--target-auc``, in
``mechanisms/quantized/_holdout``) and the evaluation stage (:mod:`.evaluation._attacks`, which
re-exports these names) score it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._rows import unique_rows

__all__ = ["ERASED_TOKEN", "AttackScores", "encode_features", "logistic_attack", "cross_validated_scores"]

#: Category written for an erased cell when released tuples are one-hot encoded.
ERASED_TOKEN = "\x00erased"


@dataclass(frozen=True)
class AttackScores:
    """Test-set performance of a classifier guessing the private class.

    Attributes
    ----------
    accuracy, balanced_accuracy : float
    roc_auc : float
        Binary: AUC of the score for class 1. More classes: one-vs-rest macro AUC.
        NaN when the test set lacks a class.
    majority : float
        Accuracy of always guessing the training set's most frequent class.
    scores : ndarray
        Predicted probabilities on the test rows, shape (n_test, n_classes).
    y_test : ndarray
    """

    accuracy: float
    balanced_accuracy: float
    roc_auc: float
    majority: float
    scores: np.ndarray
    y_test: np.ndarray

    def as_dict(self) -> dict:
        return {"accuracy": self.accuracy, "balanced_accuracy": self.balanced_accuracy,
                "roc_auc": self.roc_auc, "majority": self.majority}


def encode_features(train, test, categorical: bool):
    """Feature matrices for the attacker: one-hot cells (erasure = its own category) or standardized numbers.

    Numeric rows with missing answers (NaN) get the training column mean plus one indicator per
    column with blanks: the attacker sees which questions a user skipped.
    """
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    if categorical:
        def tokens(rows):
            rows = np.asarray(rows, dtype=object)
            return np.where(rows == None, ERASED_TOKEN, rows).astype(str)  # noqa: E711 (elementwise)
        enc = OneHotEncoder(handle_unknown="ignore")
        return enc.fit_transform(tokens(train)), enc.transform(tokens(test))
    train, test = np.asarray(train, float), np.asarray(test, float)
    if np.isnan(train).any() or np.isnan(test).any():
        imputer = SimpleImputer(strategy="mean", add_indicator=True, keep_empty_features=True)
        train, test = imputer.fit_transform(train), imputer.transform(test)
    scaler = StandardScaler()
    return scaler.fit_transform(train), scaler.transform(test)


def _distinct_weighted(X, y) -> tuple:
    """(X, y, sample_weight=None), or each distinct (row, class) once weighted by its count when that
    at least halves the rows: logistic regression's objective is a sum over rows, so the fit is the
    same (to the solver's tolerance) at a fraction of the cost. Released rows of a quantized table
    take at most K distinct values (``--clusters auto`` scores a candidate's 14,000 released rows
    in 10 folds: 3.5 CPU-s each before). Sparse (one-hot) matrices are passed as they are."""
    if not isinstance(X, np.ndarray) or X.shape[0] < 4:
        return X, y, None
    keyed = np.column_stack([X, y])
    distinct, counts = unique_rows(keyed)
    if distinct.shape[0] * 2 > X.shape[0]:
        return X, y, None
    return distinct[:, :-1], distinct[:, -1].astype(np.asarray(y).dtype), counts.astype(float)


def logistic_attack(train_X, y_train, test_X, y_test, n_classes: int, *, categorical: bool = False,
                    seed: int = 0) -> AttackScores:
    """Fit logistic regression on (train_X, y_train) and score it on (test_X, y_test).

    A training set whose rows all look alike (perfect privacy by a constant
    release) still gives a valid attacker: it predicts the training prior.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, roc_auc_score
    y_train = np.asarray(y_train)
    y_test = np.asarray(y_test)
    Xtr, Xte = encode_features(train_X, test_X, categorical)
    present = np.unique(y_train)
    if present.size < 2:
        proba = np.zeros((len(y_test), n_classes))
        proba[:, present[0]] = 1.0
    else:
        model = LogisticRegression(max_iter=2000, random_state=seed)
        Xfit, yfit, weight = _distinct_weighted(Xtr, y_train)
        model.fit(Xfit, yfit, sample_weight=weight)
        proba = np.zeros((len(y_test), n_classes))
        proba[:, model.classes_] = model.predict_proba(Xte)
    guess = np.argmax(proba, axis=1)
    majority_class = np.bincount(y_train, minlength=n_classes).argmax()
    auc = math.nan
    if np.unique(y_test).size == n_classes:
        if n_classes == 2:
            auc = float(roc_auc_score(y_test, proba[:, 1]))
        else:
            auc = float(roc_auc_score(y_test, proba, multi_class="ovr", average="macro", labels=list(range(n_classes))))
    return AttackScores(
        accuracy=float(accuracy_score(y_test, guess)),
        balanced_accuracy=float(balanced_accuracy_score(y_test, guess)),
        roc_auc=auc,
        majority=float(np.mean(y_test == majority_class)),
        scores=proba,
        y_test=y_test,
    )


def cross_validated_scores(X, y, n_classes: int, *, folds: int = 10, categorical: bool = False,
                           seed: int = 0) -> AttackScores:
    """Logistic regression scored by stratified k-fold cross-validation, scores pooled over folds.

    Each row is scored by a model that never saw it (seed 000, Fig. 12 used 10 folds).
    """
    from sklearn.model_selection import StratifiedKFold
    y = np.asarray(y)
    X = np.asarray(X, dtype=object if categorical else float)
    proba = np.zeros((len(y), n_classes))
    for train, test in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(X, y):
        proba[test] = logistic_attack(X[train], y[train], X[test], y[test], n_classes, categorical=categorical,
                                      seed=seed).scores
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, roc_auc_score
    guess = np.argmax(proba, axis=1)
    auc = float(roc_auc_score(y, proba[:, 1])) if n_classes == 2 else float(
        roc_auc_score(y, proba, multi_class="ovr", average="macro", labels=list(range(n_classes))))
    return AttackScores(accuracy=float(accuracy_score(y, guess)),
                        balanced_accuracy=float(balanced_accuracy_score(y, guess)), roc_auc=auc,
                        majority=float(np.bincount(y, minlength=n_classes).max() / len(y)), scores=proba, y_test=y)
