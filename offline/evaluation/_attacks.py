"""Adversaries against released data, and the plug-in bias of leakage estimates.

- The MAP (Bayes-optimal) adversary knows the prior and the mapping: it guesses
  argmax_a p(a | c_hat). Its accuracy on a prior is sum_{c_hat} max_a p(a, c_hat).
- The logistic-regression adversary knows the mechanism but not the prior: it is
  trained on sanitized training rows (their released values, labelled with their
  true private class) and tested on sanitized held-out rows.
- Plug-in mutual information on n rows is biased upward; permuting the private
  column destroys the dependence and keeps the marginals, so the mean leakage
  over permutations estimates that bias.
- Theorem 1 / Proposition 1 of seed 000 bound how far leakage and distortion
  move when the prior is estimated from n samples.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._information import joint_output, mutual_information_bits
from ..data._prior import joint_prior

#: Category written for an erased cell when released tuples are one-hot encoded.
ERASED_TOKEN = "\x00erased"


# --------------------------------------------------------------------------- MAP attacker

def map_accuracy(p_ax: np.ndarray) -> float:
    """Accuracy of the MAP guess argmax_a p(a | x) on the joint p(a, x): sum_x max_a p(a, x)."""
    p = np.asarray(p_ax, dtype=float)
    return float(p.max(axis=0).sum() / p.sum())


def map_accuracy_after(p_ac: np.ndarray, q) -> float:
    """MAP accuracy on the released symbol for prior ``p_ac`` and mapping ``q`` (exact, no sampling)."""
    return map_accuracy(joint_output(p_ac, q))


def map_guess(p_ac_model: np.ndarray, q) -> np.ndarray:
    """The MAP adversary's guess for each output symbol, shape (K_out,), from a model prior and mapping."""
    return np.argmax(joint_output(p_ac_model, q), axis=0)


# --------------------------------------------------------------------------- plug-in bias

def permutation_bias(private: np.ndarray, symbols: np.ndarray, n_classes: int, n_symbols: int, q=None,
                     *, permutations: int = 20, seed: int = 0) -> tuple[float, float]:
    """Mean and standard deviation of the plug-in leakage after permuting the private column.

    With ``q`` the leakage is I(A; C_hat) of ``q`` applied to the permuted prior;
    without it, I(A; C) of the symbols themselves.
    """
    rng = np.random.default_rng(seed)
    private = np.asarray(private)
    values = []
    for _ in range(max(int(permutations), 1)):
        p = joint_prior(rng.permutation(private), symbols, n_classes, n_symbols)
        values.append(mutual_information_bits(p if q is None else joint_output(p, q)))
    return float(np.mean(values)), float(np.std(values))


# --------------------------------------------------------------------------- Theorem 1 / Proposition 1

def prior_mismatch_bounds(n: int, n_classes: int, n_symbols: int, *, d_max: float = math.nan,
                          confidence: float = 0.95) -> dict:
    """Seed 000, Proposition 1 and Theorem 1 for an empirical prior from ``n`` rows.

    With probability >= ``confidence``, ||p - p_hat||_1 <= eps where
    (n+1)^{|A||B|} 2^{-2 n eps^2} = 1 - confidence; then the leakage moves by at most
    3 eps log2(|A||B| / eps) bits and the distortion by at most d_max * eps.
    The bound is ``vacuous`` when eps > 1/2 (Lemma 1 no longer applies) or the
    leakage bound exceeds log2 |A| (leakage can never exceed it).
    """
    cells = n_classes * n_symbols
    fail = 1.0 - confidence
    eps = math.sqrt((cells * math.log2(n + 1) + math.log2(1.0 / fail)) / (2.0 * n))
    leak = 3.0 * eps * math.log2(cells / eps) if eps > 0 else 0.0
    vacuous = eps > 0.5 or leak >= math.log2(n_classes)
    return {"confidence": confidence, "l1_radius": eps, "leakage_bound_bits": leak,
            "distortion_bound": d_max * eps if math.isfinite(d_max) else None, "vacuous": bool(vacuous)}


# --------------------------------------------------------------------------- logistic regression

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
    distinct, counts = np.unique(keyed, axis=0, return_counts=True)
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


def roc_curve_points(attack: AttackScores, positive: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """False- and true-positive rates of ``attack``'s scores for class ``positive``."""
    from sklearn.metrics import roc_curve
    fpr, tpr, _ = roc_curve(attack.y_test == positive, attack.scores[:, positive])
    return fpr, tpr


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
