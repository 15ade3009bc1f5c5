"""The logistic-regression attacker: it knows the mechanism but not the prior.

It is trained on sanitized training rows (their released values, labelled with their true private
class) and tested on sanitized held-out rows. It sits below every stage of a build (like
:mod:`._information`) because both the build's cross-fitting (``--target-auc``, in
``mechanisms/quantized/_holdout``) and the measures stage (:mod:`privmap.offline.measures`, which
re-exports these names) score it.

The attacker is a strong one: it chooses its L2 regularisation ``C`` among :data:`C_GRID` by an
inner stratified :data:`INNER_FOLDS`-fold cross-validation on its own training rows (the ROC AUC of
the pooled out-of-fold scores, ties to the smaller ``C``), then refits on all of them. A fixed
``C = 1`` understated what an attacker learns from sparse ratings (raw AUC 0.673 against 0.766 with
the choice on 200 movies of a ratings set): every AUC privmap reports is this attacker's unless a
caller fixes ``C``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._rows import unique_rows

__all__ = ["ERASED_TOKEN", "C_GRID", "INNER_FOLDS", "AttackScores", "encode_features", "choose_regularisation",
           "logistic_attack", "cross_validated_scores", "auc_with_error"]

#: Category written for an erased cell when released tuples are one-hot encoded.
ERASED_TOKEN = "\x00erased"
#: Inverse L2 regularisation strengths the attacker chooses among (features standardised or one-hot).
C_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
#: Folds of the inner cross-validation that chooses ``C`` (fewer when a class has fewer training rows).
INNER_FOLDS = 5
#: ``C`` when the training rows are too few to cross-validate (scikit-learn's default).
DEFAULT_C = 1.0


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
    regularisation : float or None
        The inverse regularisation ``C`` the attacker used (chosen or fixed); None when it fitted
        no model (one class in training) or pooled several (:func:`cross_validated_scores`).
    """

    accuracy: float
    balanced_accuracy: float
    roc_auc: float
    majority: float
    scores: np.ndarray
    y_test: np.ndarray
    regularisation: float | None = None

    def as_dict(self) -> dict:
        return {"accuracy": self.accuracy, "balanced_accuracy": self.balanced_accuracy,
                "roc_auc": self.roc_auc, "majority": self.majority, "regularisation_c": self.regularisation}


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
    """The rows to fit on: (X, y, sample_weight), deduplicated where that pays.

    (X, y, sample_weight=None), or each distinct (row, class) once weighted by its count when that
    at least halves the rows: logistic regression's objective is a sum over rows, so the fit is the
    same (to the solver's tolerance) at a fraction of the cost. Released rows of a quantized table
    take at most K distinct values (``--clusters auto`` scores a candidate's 14,000 released rows
    in 10 folds: 3.5 CPU-s each before). Sparse (one-hot) matrices are passed as they are.
    """
    if not isinstance(X, np.ndarray) or X.shape[0] < 4:
        return X, y, None
    keyed = np.column_stack([X, y])
    distinct, counts = unique_rows(keyed)
    if distinct.shape[0] * 2 > X.shape[0]:
        return X, y, None
    return distinct[:, :-1], distinct[:, -1].astype(np.asarray(y).dtype), counts.astype(float)


def auc_with_error(y, proba, n_classes: int) -> tuple[float, float]:
    """The ROC AUC of :attr:`AttackScores.roc_auc` and its standard error over the scored rows.

    DeLong's variance of an empirical AUC (DeLong, DeLong and Clarke-Pearson 1988): with each
    positive's share of negatives scored below it (ties half) and each negative's share of
    positives scored above it, var = var(positives' shares) / n_pos + var(negatives') / n_neg.
    With more classes the one-vs-rest macro AUC's standard error is bounded by the mean of the
    classes' (the standard deviation of a mean is at most the mean of the standard deviations,
    whatever their correlation).

    Parameters
    ----------
    y : ndarray of int, shape (n,)
        True class codes in ``range(n_classes)``.
    proba : ndarray, shape (n, n_classes)
        The attacker's scores (:attr:`AttackScores.scores`).

    Returns
    -------
    (float, float)
        The error treats the scores as fixed: what the rows scored say about the attacker, not
        the spread of a fresh release or a refitted attacker.
    """
    y = np.asarray(y)
    columns = [1] if n_classes == 2 else range(n_classes)
    pieces = [_delong(np.asarray(proba)[:, k], y == k) for k in columns]
    return float(np.mean([auc for auc, _ in pieces])), float(np.mean([math.sqrt(v) for _, v in pieces]))


def _delong(score: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    """(AUC, DeLong's variance) of ``score`` for the rows where ``positive``.

    (0.5, 0) without both kinds of row.
    """
    from scipy.stats import rankdata
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return 0.5, 0.0
    overall = rankdata(score)
    # a positive's rank among all rows less its rank among positives = negatives below it (ties half)
    below = (overall[positive] - rankdata(score[positive])) / n_neg
    above = 1.0 - (overall[~positive] - rankdata(score[~positive])) / n_pos
    variance = float(np.var(below, ddof=1) / n_pos if n_pos > 1 else 0.0) + \
        float(np.var(above, ddof=1) / n_neg if n_neg > 1 else 0.0)
    return float(below.mean()), variance


def _auc(y, proba, labels) -> float:
    """ROC AUC of ``proba`` (columns = ``labels``) for ``y``.

    Of the second label's column when there are two, one-vs-rest macro otherwise.
    """
    from sklearn.metrics import roc_auc_score
    if len(labels) == 2:
        return float(roc_auc_score(y == labels[1], proba[:, 1]))
    return float(roc_auc_score(y, proba, multi_class="ovr", average="macro", labels=list(labels)))


def choose_regularisation(X, y, *, grid=C_GRID, folds: int = INNER_FOLDS, seed: int = 0) -> float:
    """The attacker's ``C``: the grid value whose pooled out-of-fold ROC AUC on (X, y) is highest.

    Parameters
    ----------
    X : ndarray or sparse matrix, shape (n, p)
        Encoded training features (:func:`encode_features`).
    y : ndarray of int, shape (n,)
        Private class codes; at least two classes.
    grid : sequence of float
        Candidate inverse regularisation strengths, fitted from the smallest up, each fold's
        model warm-started from the previous value's.
    folds : int
        Inner stratified folds (shuffled with ``seed``); fewer when the rarest class has fewer
        rows, and :data:`DEFAULT_C` when it has fewer than two.

    Returns
    -------
    float
        The chosen ``C``; ties (within 1e-12) go to the smaller, the more regularised model.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    y = np.asarray(y)
    labels, counts = np.unique(y, return_counts=True)
    k = min(int(folds), int(counts.min()))
    grid = sorted(float(c) for c in grid)
    if k < 2 or len(grid) == 1:
        return grid[0] if len(grid) == 1 else DEFAULT_C
    oof = np.zeros((len(grid), len(y), len(labels)))
    for train, test in StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y):
        if np.unique(y[train]).size < len(labels):
            continue
        Xfit, yfit, weight = _distinct_weighted(X[train], y[train])
        model = LogisticRegression(max_iter=2000, random_state=seed, warm_start=True)
        for g, c in enumerate(grid):
            model.set_params(C=c)
            model.fit(Xfit, yfit, sample_weight=weight)
            oof[g, test] = model.predict_proba(X[test])
    aucs = [_auc(y, oof[g], labels) for g in range(len(grid))]
    best = max(aucs)
    return next(c for c, a in zip(grid, aucs) if a >= best - 1e-12)


def logistic_attack(train_X, y_train, test_X, y_test, n_classes: int, *, categorical: bool = False,
                    seed: int = 0, C: float | None = None) -> AttackScores:
    """Fit logistic regression on (train_X, y_train) and score it on (test_X, y_test).

    Parameters
    ----------
    train_X, test_X : array-like, shape (n_train, d) and (n_test, d)
        Rows as released: floats with NaN for a blank cell (imputed, with a "was blank"
        indicator per column that has blanks), or categories (``categorical``).
    y_train, y_test : array-like of int
        Private class codes in ``range(n_classes)``.
    seed : int
        Seeds the solver and the inner folds.
    C : float, optional
        Fixed inverse regularisation; by default the attacker chooses it by inner
        cross-validation on its training rows (:func:`choose_regularisation`).

    A training set whose rows all look alike (perfect privacy by a constant
    release) still gives a valid attacker: it predicts the training prior.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, balanced_accuracy_score
    from threadpoolctl import threadpool_limits
    y_train = np.asarray(y_train)
    y_test = np.asarray(y_test)
    Xtr, Xte = encode_features(train_X, test_X, categorical)
    present = np.unique(y_train)
    chosen = None
    if present.size < 2:
        proba = np.zeros((len(y_test), n_classes))
        proba[:, present[0]] = 1.0
    else:
        # one BLAS thread: these small products ran 9 times slower with a thread per core on a busy machine
        with threadpool_limits(limits=1, user_api="blas"):
            chosen = float(C) if C is not None else choose_regularisation(Xtr, y_train, seed=seed)
            model = LogisticRegression(C=chosen, max_iter=2000, random_state=seed)
            Xfit, yfit, weight = _distinct_weighted(Xtr, y_train)
            model.fit(Xfit, yfit, sample_weight=weight)
        proba = np.zeros((len(y_test), n_classes))
        proba[:, model.classes_] = model.predict_proba(Xte)
    guess = np.argmax(proba, axis=1)
    majority_class = np.bincount(y_train, minlength=n_classes).argmax()
    auc = math.nan
    if np.unique(y_test).size == n_classes:
        auc = _auc(y_test, proba, list(range(n_classes)))
    return AttackScores(
        accuracy=float(accuracy_score(y_test, guess)),
        balanced_accuracy=float(balanced_accuracy_score(y_test, guess)),
        roc_auc=auc,
        majority=float(np.mean(y_test == majority_class)),
        scores=proba,
        y_test=y_test,
        regularisation=chosen,
    )


def cross_validated_scores(X, y, n_classes: int, *, folds: int = 10, categorical: bool = False,
                           seed: int = 0, C: float | None = None) -> AttackScores:
    """Logistic regression scored by stratified k-fold cross-validation, scores pooled over folds.

    Each row is scored by a model that never saw it (seed 000, Fig. 12 used 10 folds); each
    fold's attacker chooses its own ``C`` on its training rows (nested cross-validation) unless
    ``C`` fixes it (:func:`logistic_attack`).
    """
    from sklearn.metrics import accuracy_score, balanced_accuracy_score
    from sklearn.model_selection import StratifiedKFold
    y = np.asarray(y)
    X = np.asarray(X, dtype=object if categorical else float)
    proba = np.zeros((len(y), n_classes))
    for train, test in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(X, y):
        proba[test] = logistic_attack(X[train], y[train], X[test], y[test], n_classes, categorical=categorical,
                                      seed=seed, C=C).scores
    guess = np.argmax(proba, axis=1)
    return AttackScores(accuracy=float(accuracy_score(y, guess)),
                        balanced_accuracy=float(balanced_accuracy_score(y, guess)),
                        roc_auc=_auc(y, proba, list(range(n_classes))),
                        majority=float(np.bincount(y, minlength=n_classes).max() / len(y)), scores=proba, y_test=y,
                        regularisation=C)
