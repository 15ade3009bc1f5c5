"""The nullspace evaluation view: seed 001's experiment, and a built bundle attacked on labelled rows.

Seed 001's experiment on a matrix of features and labels (:func:`nullspace_experiment`,
Fig. 1-3), and a built bundle attacked on labelled rows (:func:`evaluate_release`,
``privmap evaluate``).
"""
from __future__ import annotations

import numpy as np

from .._real_attacks import attack_withheld, auc, score
from ._model import clean, fit_linear, nullspace_directions

__all__ = ["nullspace_experiment", "evaluate_release"]


def nullspace_experiment(x, y_d, y_c, epsilon: float, *, splits: int = 10, test_fraction: float = 0.1,
                         seed: int = 0) -> dict:
    """Seed 001's protocol on random train/test splits.

    On each: fit A_d, A_c on the training rows; clean the test rows (and, for the retraining attacker,
    the training rows) with Algorithm 1.

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
            row[key] = float(np.mean([auc(labels[:, j], predicted[:, j]) for j in range(labels.shape[1])]))
        row["conf_logistic_retrained"] = float(np.mean(
            [score(cleaned[tr], y[tr], cleaned[te], y[te]) for y in y_c.T]))
        rows.append(row)
    return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}


def evaluate_release(payload: dict, data, target: str, *, seed: int = 0, test_fraction: float = 0.3) -> dict:
    """Attack a nullspace bundle's releases on the labelled CSV ``data``.

    The releases are the rows cleaned with its directions: :func:`attack_withheld` of ``target``,
    a desired or confidential column.
    """
    params = payload["parameters"]
    directions, lambda_d = np.array(params["directions"]), np.array(params["lambda_d"])
    return attack_withheld(payload, data, target, params["desired"] + params["confidential"],
                           lambda x, rng: clean(x, directions, lambda_d, params["epsilon"]),
                           seed=seed, test_fraction=test_fraction)
