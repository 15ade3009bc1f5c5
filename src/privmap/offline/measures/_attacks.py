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

import numpy as np

from .._attacker import AttackScores
from .._information import joint_output, mutual_information_bits
from ..data import joint_prior

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
# The attacker itself (AttackScores, logistic_attack, cross_validated_scores) is privmap.offline._attacker,
# below every stage: a build's cross-fitting scores it too (--target-auc).


def roc_curve_points(attack: AttackScores, positive: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """False- and true-positive rates of ``attack``'s scores for class ``positive``."""
    from sklearn.metrics import roc_curve
    fpr, tpr, _ = roc_curve(attack.y_test == positive, attack.scores[:, positive])
    return fpr, tpr


def split_rows(n: int, y: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and test row indexes of ``n`` rows for an attacker, seeded.

    ``test_fraction`` of them held out, stratified by the private codes ``y`` (n,) when every
    class present has two rows.
    """
    from sklearn.model_selection import train_test_split
    idx = np.arange(n)
    counts = np.bincount(y)
    stratify = y if counts[counts > 0].min() >= 2 else None
    return train_test_split(idx, test_size=test_fraction, random_state=seed, stratify=stratify)
