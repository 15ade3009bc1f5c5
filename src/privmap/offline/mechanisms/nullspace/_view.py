"""Attacks on the real-valued kinds, on real held-out rows.

The Gaussian model's I(X_p;Y) is exact only for Gaussian data; null-space cleaning has no formal
guarantee at all. These functions measure what an attacker actually achieves:

- ``attack_scores``: a confidential target predicted from released rows, by an attacker trained on
  released training rows (the retraining attack of seed 001's Fig. 2) and by the predictor fitted
  on raw rows (seed 001's fixed predictor). Binary targets are scored by ROC AUC (logistic
  regression), real ones by R^2 (least squares).
- ``nullspace_experiment``: seed 001's Fig. 1-3 protocol on a matrix of features and labels.
- ``evaluate_payload``: one bundle against a labelled CSV (``privmap evaluate``).

Simulated Gaussian releases here use ``numpy.random`` with a seed: this is evaluation, never a
production release path (the device draws from the OS CSPRNG).
"""
from __future__ import annotations

import numpy as np

from .._errors import BuildError
from ..data._numeric import read_numeric_columns
from ..mechanisms.realvalued._nullspace import clean, fit_linear, nullspace_directions

__all__ = ["attack_scores", "nullspace_experiment", "evaluate_payload"]


def _auc(labels: np.ndarray, scores: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score
    return float(roc_auc_score(labels == labels.max(), scores))


def _binary(y: np.ndarray) -> bool:
    return len(np.unique(y)) == 2


def _score(model_train_x, y_train, test_x, y_test) -> float:
    """AUC (binary y, logistic regression) or R^2 (real y, least squares) of a model trained on
    (model_train_x, y_train) and tested on (test_x, y_test)."""
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.metrics import r2_score, roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    if _binary(y_train):
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
    return {"measure": "auc" if _binary(y_train) else "r2",
            "raw": _score(x_train, y_train, x_test, y_test),
            "fixed": _score(x_train, y_train, released_test, y_test),
            "retrained": _score(released_train, y_train, released_test, y_test)}


def nullspace_experiment(x, y_d, y_c, epsilon: float, *, splits: int = 10, test_fraction: float = 0.1,
                         seed: int = 0) -> dict:
    """Seed 001's protocol: random train/test splits; fit A_d, A_c on the training rows; clean
    the test rows (and, for the retraining attacker, the training rows) with Algorithm 1.

    Parameters
    ----------
    x : (m, n) features (standardised by the training split's mean and sd inside);
    y_d : (m, N_d) desired labels; y_c : (m, N_c) confidential labels; epsilon : budget.

    Returns
    -------
    dict of means over splits: ``e_utility`` (mean ||A_d^T (x - x~)||^2), ``e_privacy_fixed``
    (mean ||A_c^T (x - x~)||^2), ``e_privacy_retrained`` (mean ||f_c'(x~) - f_c(x)||^2 with f_c'
    refitted on cleaned training rows), and ROC AUCs on the test rows (binary labels), averaged
    over labels, of the linear predictors: ``conf_raw`` (f_c on x), ``conf_fixed`` (f_c on x~),
    ``conf_retrained`` (f_c' on x~), ``desired_raw`` / ``desired_cleaned`` (f_d on x / x~), and
    ``conf_logistic_retrained`` (logistic regression trained and tested on cleaned rows).
    """
    from sklearn.model_selection import train_test_split
    x = np.asarray(x, dtype=np.float64)
    y_d, y_c = np.asarray(y_d, dtype=np.float64), np.asarray(y_c, dtype=np.float64)
    rows = []
    for split in range(splits):
        tr, te = train_test_split(np.arange(len(x)), test_size=test_fraction, random_state=seed + split)
        mu, sd = x[tr].mean(axis=0), x[tr].std(axis=0)
        sd[sd == 0] = 1.0
        z = (x - mu) / sd
        a_d, _ = fit_linear(z[tr], y_d[tr])
        a_c, b_c = fit_linear(z[tr], y_c[tr])
        nd = nullspace_directions(a_d, a_c)
        cleaned = clean(z, nd.v, nd.lambda_d, epsilon)
        removed = z[te] - cleaned[te]
        a_c2, b_c2 = fit_linear(cleaned[tr], y_c[tr])
        row = {"e_utility": float(np.mean(np.sum((removed @ a_d) ** 2, axis=1))),
               "e_privacy_fixed": float(np.mean(np.sum((removed @ a_c) ** 2, axis=1))),
               "e_privacy_retrained": float(np.mean(np.sum(
                   (cleaned[te] @ a_c2 + b_c2 - (z[te] @ a_c + b_c)) ** 2, axis=1)))}
        a_d_fit, b_d = fit_linear(z[tr], y_d[tr])
        scores = {"conf_raw": z[te] @ a_c + b_c, "conf_fixed": cleaned[te] @ a_c + b_c,
                  "conf_retrained": cleaned[te] @ a_c2 + b_c2,
                  "desired_raw": z[te] @ a_d_fit + b_d, "desired_cleaned": cleaned[te] @ a_d_fit + b_d}
        for key, predicted in scores.items():
            labels = y_c[te] if key.startswith("conf") else y_d[te]
            row[key] = float(np.mean([_auc(labels[:, j], predicted[:, j]) for j in range(labels.shape[1])]))
        row["conf_logistic_retrained"] = float(np.mean(
            [_score(cleaned[tr], y[tr], cleaned[te], y[te]) for y in y_c.T]))
        rows.append(row)
    return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}


def _released(payload: dict, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    params = payload["parameters"]
    if payload["mechanism"] == "nullspace":
        return clean(x, np.array(params["directions"]), np.array(params["lambda_d"]), params["epsilon"])
    return x + rng.normal(size=x.shape) * np.sqrt(np.array(params["sigma2"]))


def evaluate_payload(payload: dict, data, target: str, *, seed: int = 0, test_fraction: float = 0.3) -> dict:
    """Attack a real-valued bundle's releases on the labelled CSV ``data``.

    ``target`` is a withheld column of the bundle (gaussian: private or utility; nullspace:
    desired or confidential). The rows are split (``seed``); releases are simulated with the
    bundle's parameters (fresh Gaussian noise per row from a seeded numpy generator).

    Returns a dict: the :func:`attack_scores` of ``target``, and for gaussian bundles the
    declared ``leakage_bits`` for comparison. Raises :class:`BuildError` for an unknown target.
    """
    from sklearn.model_selection import train_test_split
    params = payload["parameters"]
    withheld = (params["private"] + params["utility"] if payload["mechanism"] == "gaussian"
                else params["desired"] + params["confidential"])
    if target not in withheld:
        raise BuildError(f"--private {target!r} is not one of the bundle's withheld columns {withheld}")
    values, _, sha = read_numeric_columns(data, list(payload["features"]) + [target])
    x, y = values[:, :-1], values[:, -1]
    tr, te = train_test_split(np.arange(len(x)), test_size=test_fraction, random_state=seed)
    released = _released(payload, x, np.random.default_rng([seed, 0x16]))  # not the split's stream
    out = {"mechanism": payload["mechanism"], "target": target, "rows": len(x), "data_sha256": sha,
           "test_fraction": test_fraction, "seed": seed,
           **attack_scores(x[tr], y[tr], x[te], y[te], released[tr], released[te])}
    if payload["mechanism"] == "gaussian":
        out["declared_leakage_bits"] = payload["metrics"]["leakage_bits"]
        out["declared_leakage_before_bits"] = payload["metrics"]["leakage_before_bits"]
    return out
