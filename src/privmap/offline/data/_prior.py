"""The joint prior p(a, c) of private class and quantized symbol.

Empirical counts, or the cross-fitted posteriors of a classifier summed per symbol
(:func:`posterior_prior`).
"""
from __future__ import annotations

import numpy as np


def joint_prior(private: np.ndarray, symbols: np.ndarray, n_classes: int, n_symbols: int,
                *, smoothing: float = 0.0) -> np.ndarray:
    """Empirical p(a, c) with optional additive (Laplace) smoothing.

    Parameters
    ----------
    private : ndarray of int, shape (n,)
        Private class codes in [0, n_classes).
    symbols : ndarray of int, shape (n,)
        Quantized symbol (cluster) of each row in [0, n_symbols).
    smoothing : float, keyword-only
        Pseudo-count added to every cell (>= 0).

    Returns
    -------
    ndarray, shape (n_classes, n_symbols)
        Non-negative, sums to 1.
    """
    counts = np.zeros((n_classes, n_symbols))
    np.add.at(counts, (np.asarray(private), np.asarray(symbols)), 1.0)
    return prior_from_counts(counts, smoothing=smoothing)


def prior_from_counts(counts: np.ndarray, *, smoothing: float = 0.0) -> np.ndarray:
    """p(a, c) from a table of counts, shape (n_classes, n_symbols), with additive smoothing.

    Counts from several partitions can be added first: the result is the same as
    :func:`joint_prior` on all their rows at once.

    Raises
    ------
    ValueError
        Negative smoothing.
    """
    if smoothing < 0:
        raise ValueError(f"smoothing must be >= 0, got {smoothing}")
    counts = np.ascontiguousarray(counts, dtype=float) + smoothing  # layout decides float sums downstream
    return counts / counts.sum()


#: Inverse regularisation strengths tried by :func:`posterior_prior`.
CALIBRATION_C_GRID = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)


def posterior_prior(public: np.ndarray, private: np.ndarray, symbols: np.ndarray, n_classes: int,
                    n_symbols: int, *, folds: int = 5, seed: int = 0) -> np.ndarray:
    """p(a, c) = (1/n) sum over rows u in symbol c of p_hat(a | b_u).

    p_hat is a logistic regression on the public rows, each row's posterior from a model fitted
    on the other folds.

    Why: the empirical prior estimates p(a | c) from the rows of cluster c alone, so with few rows
    per cluster it is mostly noise, and a table fitted to that noise leaks on new users. A
    classifier pools every row, and at many clusters its posteriors are far closer to what new
    users' classes will be. Cross-fitting keeps a row's own class out of its own posterior; the
    regularisation is chosen by inner cross-validation of the log-loss, which rewards calibrated
    posteriors (a ranking score such as the ROC AUC is blind to how far they are shrunk towards
    the prior, and would let the prior understate the leakage), once on all the rows: the folds
    then refit at that C. The posteriors depend on the rows alone, not on the clusters, so the
    last few row sets' are kept (``--clusters auto`` asks again for every candidate).

    Parameters
    ----------
    public : ndarray, shape (n, d)
        Numeric public rows without missing cells.
    private, symbols : ndarray of int, shape (n,)
        Class codes in [0, n_classes) and symbols in [0, n_symbols).
    folds : int
        Cross-fitting folds (fewer when the rarest class has fewer rows).
    seed : int
        Seeds the folds.

    Returns
    -------
    ndarray, shape (n_classes, n_symbols)
        Non-negative, sums to 1; a symbol's column sums to its share of the rows.
    """
    posterior = _cross_fitted_posteriors(np.asarray(public, dtype=float), np.asarray(private), n_classes,
                                         folds=folds, seed=seed)
    joint = np.zeros((n_classes, n_symbols))
    np.add.at(joint.T, np.asarray(symbols), posterior)
    return np.ascontiguousarray(joint / joint.sum())


#: Posteriors of the last few row sets (key: a digest of the rows, the classes and the folds).
_POSTERIORS: dict = {}
_POSTERIORS_KEPT = 8


def _cross_fitted_posteriors(X: np.ndarray, y: np.ndarray, n_classes: int, *, folds: int, seed: int) -> np.ndarray:
    """Each row's p_hat(a | b), shape (n, n_classes), from a model fitted on the other folds."""
    import hashlib

    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from threadpoolctl import threadpool_limits
    key = hashlib.sha256(np.ascontiguousarray(X).tobytes() + np.ascontiguousarray(y).tobytes()
                         + repr((X.shape, n_classes, folds, seed)).encode()).hexdigest()
    if key in _POSTERIORS:
        return _POSTERIORS[key]
    present, counts = np.unique(y, return_counts=True)
    posterior = np.zeros((len(y), n_classes))
    k = min(int(folds), int(counts.min()))
    if present.size < 2 or k < 2:
        posterior[np.arange(len(y)), y] = 1.0
    else:
        Z = (X - X.mean(axis=0)) / (X.std(axis=0) + 1e-12)
        with threadpool_limits(limits=1, user_api="blas"):
            c = _calibrated_c(Z, y, seed=seed)
            for train, test in StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(Z, y):
                model = LogisticRegression(C=c, max_iter=2000).fit(Z[train], y[train])
                posterior[np.ix_(test, model.classes_)] = model.predict_proba(Z[test])
    while len(_POSTERIORS) >= _POSTERIORS_KEPT:
        _POSTERIORS.pop(next(iter(_POSTERIORS)))
    _POSTERIORS[key] = posterior
    return posterior


def _calibrated_c(X: np.ndarray, y: np.ndarray, *, seed: int) -> float:
    """The ``C`` of :data:`CALIBRATION_C_GRID` whose logistic regression has the least out-of-fold log-loss.

    Pooled out-of-fold log-loss on a 3-fold split of (X, y); the smallest C on a tie.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    labels, counts = np.unique(y, return_counts=True)
    k = min(3, int(counts.min()))
    best = CALIBRATION_C_GRID[0]
    if labels.size >= 2 and k >= 2:
        losses = np.zeros(len(CALIBRATION_C_GRID))
        for train, test in StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(X, y):
            if np.unique(y[train]).size < labels.size:
                continue
            codes = np.searchsorted(labels, y[test])
            for g, c in enumerate(CALIBRATION_C_GRID):
                proba = LogisticRegression(C=c, max_iter=2000).fit(X[train], y[train]).predict_proba(X[test])
                losses[g] -= np.sum(np.log(np.clip(proba[np.arange(len(test)), codes], 1e-15, 1.0)))
        best = CALIBRATION_C_GRID[int(np.argmin(losses))]
    return best
