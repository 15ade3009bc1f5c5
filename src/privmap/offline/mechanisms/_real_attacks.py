"""Attacks on the releases of the real-valued kinds (gaussian, nullspace), on real held-out rows.

The Gaussian model's I(X_p;Y) is exact only for Gaussian data; null-space cleaning has no formal
guarantee at all. What an attacker actually achieves is measured here: a withheld target predicted
from released rows, by an attacker trained on released training rows (the retraining attack of
seed 001's Fig. 2) and by the predictor fitted on raw rows (seed 001's fixed predictor). Binary
targets are scored by ROC AUC (logistic regression), real ones by R^2 (least squares).

Simulated releases use ``numpy.random`` with a seed: this is evaluation, never a production
release path (the device draws from the OS CSPRNG).
"""
from __future__ import annotations

import numpy as np

from .._errors import BuildError
from ..data import read_numeric_columns

__all__ = ["auc", "binary", "score", "attack_scores", "attack_withheld"]


def auc(labels: np.ndarray, scores: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score
    return float(roc_auc_score(labels == labels.max(), scores))


def binary(y: np.ndarray) -> bool:
    return len(np.unique(y)) == 2


def score(model_train_x, y_train, test_x, y_test) -> float:
    """AUC or R^2 of a model trained on (model_train_x, y_train) and tested on (test_x, y_test).

    AUC for a binary y (logistic regression), R^2 for a real y (least squares).
    """
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.metrics import r2_score, roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    if binary(y_train):
        labels = y_train == y_train.max()
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(model_train_x, labels)
        return float(roc_auc_score(y_test == y_train.max(), model.predict_proba(test_x)[:, 1]))
    model = LinearRegression().fit(model_train_x, y_train)
    return float(r2_score(y_test, model.predict(test_x)))


def attack_scores(x_train, y_train, x_test, y_test, released_train, released_test) -> dict:
    """Scores of an attacker predicting ``y`` (shape (m,)).

    Returns
    -------
    dict with ``raw`` (trained and tested on raw rows), ``fixed`` (trained on raw rows, tested on
    released rows) and ``retrained`` (trained and tested on released rows); AUC for a binary
    ``y``, R^2 otherwise, and ``measure`` naming which.
    """
    return {"measure": "auc" if binary(y_train) else "r2",
            "raw": score(x_train, y_train, x_test, y_test),
            "fixed": score(x_train, y_train, released_test, y_test),
            "retrained": score(released_train, y_train, released_test, y_test)}


def attack_withheld(payload: dict, data, target: str, withheld, release, *, seed: int = 0,
                    test_fraction: float = 0.3) -> dict:
    """Attack a real-valued bundle's releases on the labelled CSV ``data``.

    Parameters
    ----------
    payload : dict
        A decoded gaussian or nullspace payload.
    data : path
        A CSV with the bundle's released columns and ``target``.
    target : str
        One of the bundle's ``withheld`` columns.
    release : callable(x, rng) -> array
        The mechanism's release of the rows ``x`` (fresh noise from ``rng``, a seeded numpy generator).

    Returns
    -------
    dict
        The mechanism, target, rows, the data's sha256, the split, and the :func:`attack_scores` of
        ``target``. Raises :class:`BuildError` for a target that is not withheld.
    """
    from sklearn.model_selection import train_test_split
    if target not in withheld:
        raise BuildError(f"--private {target!r} is not one of the bundle's withheld columns {withheld}")
    values, _, sha = read_numeric_columns(data, list(payload["features"]) + [target])
    x, y = values[:, :-1], values[:, -1]
    tr, te = train_test_split(np.arange(len(x)), test_size=test_fraction, random_state=seed)
    released = release(x, np.random.default_rng([seed, 0x16]))  # not the split's stream
    return {"mechanism": payload["mechanism"], "target": target, "rows": len(x), "data_sha256": sha,
            "test_fraction": test_fraction, "seed": seed,
            **attack_scores(x[tr], y[tr], x[te], y[te], released[tr], released[te])}
