"""The strongest attacker of a release: the worst of three who know the mechanism.

Each is trained on training users' released rows labelled with their private class and scored
on other users' released rows by ROC AUC (one-vs-rest macro for more than two classes),
with DeLong's standard error (:func:`._attacker.auc_with_error`):

- ``bayes``: the release read as a symbol (an output of the table, or a released row's exact
  values), p(a | symbol) counted on the training releases with add-one smoothing, an unseen
  symbol given the training prior. For a release drawn from a finite alphabet no attacker of the
  released values beats it, given enough training releases;
- ``boosting``: gradient boosting (scikit-learn's ``HistGradientBoostingClassifier``, defaults)
  on the released values, blanks as missing values;
- ``logistic``: logistic regression on the released values, its regularisation chosen by inner
  cross-validation (:func:`._attacker.logistic_attack`).

A few training users per symbol leave the Bayes attacker's counts thin, where a model of the
values generalises across similar outputs; hence all three, and a target met by the worst.
The build's cross-fitting (``--target-auc``, ``mechanisms/quantized/_holdout``) and ``evaluate``
both score them here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _attacker
from ._rows import unique_rows

__all__ = ["ATTACKERS", "COSTLY", "AttackerFigures", "attacker_aucs", "bayes_scores", "boosting_scores",
           "release_symbols", "strongest_attack", "strongest_name"]

#: The attackers, in the order their figures are reported.
ATTACKERS = ("bayes", "boosting", "logistic")
#: The attackers that cost: the models of the released values. The Bayes attacker counts symbols, next to
#: nothing beside them (benchmarks/README.md, "What the ranking build costs"), so a search may score it
#: first and these only where their figures can still matter (:mod:`privmap.offline.mechanisms.quantized._autotune`).
COSTLY = ("boosting", "logistic")


@dataclass(frozen=True)
class AttackerFigures:
    """Each attacker's ROC AUC and its standard error on the scored rows.

    Attributes
    ----------
    aucs : dict
        Attacker name (:data:`ATTACKERS`) -> ``(auc, standard error)``.
    """

    aucs: dict

    @property
    def strongest(self) -> str:
        """The attacker of the largest AUC (ties: the first in :data:`ATTACKERS`)."""
        return max(ATTACKERS, key=lambda name: (self.aucs[name][0], -ATTACKERS.index(name)))

    @property
    def auc(self) -> float:
        """The strongest attacker's AUC."""
        return self.aucs[self.strongest][0]


def release_symbols(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Each released row read as a symbol: ``(train symbols, test symbols, number of symbols)``.

    A row's symbol is the index of its exact values (NaN equal to NaN) among the distinct rows of
    ``train`` and ``test`` together (shapes (n_train, d), (n_test, d)).
    """
    rows = np.vstack([np.asarray(train, dtype=float), np.asarray(test, dtype=float)])
    keyed = np.where(np.isnan(rows), np.inf, rows)       # one token for blank, distinct from every value
    distinct, inverse, _ = unique_rows(keyed, return_inverse=True)
    return inverse[:len(train)], inverse[len(train):], distinct.shape[0]


def bayes_scores(train_symbols: np.ndarray, y_train: np.ndarray, test_symbols: np.ndarray, n_classes: int,
                 n_symbols: int) -> np.ndarray:
    """p(a | symbol) for each test symbol, counted on the training (symbol, class) pairs.

    One pseudo-count per cell; a symbol absent from training gets the training prior.

    Parameters
    ----------
    train_symbols, test_symbols : ndarray of int, shapes (n_train,), (n_test,)
        Symbols in ``range(n_symbols)``.
    y_train : ndarray of int, shape (n_train,)
        Class codes in ``range(n_classes)``.

    Returns
    -------
    ndarray, shape (n_test, n_classes)
    """
    counts = np.zeros((n_symbols, n_classes))
    np.add.at(counts, (np.asarray(train_symbols), np.asarray(y_train)), 1.0)
    seen = counts.sum(axis=1) > 0
    prior = np.bincount(y_train, minlength=n_classes) / max(len(y_train), 1)
    posterior = np.where(seen[:, None], (counts + 1.0) / (counts.sum(axis=1, keepdims=True) + n_classes), prior)
    return posterior[np.asarray(test_symbols)]


def boosting_scores(train_X: np.ndarray, y_train: np.ndarray, test_X: np.ndarray, n_classes: int, *,
                    seed: int = 0) -> np.ndarray:
    """Class probabilities of gradient boosting on the released values, shape (n_test, n_classes).

    ``HistGradientBoostingClassifier`` (defaults, ``random_state=seed``) fitted on the released
    values ``train_X`` (n_train, d; NaN = blank) and applied to ``test_X`` (n_test, d). One OpenMP
    thread: on a fold's few thousand rows more threads cost more than they save, and the fold
    workers have one each.
    Fitted on every row, not on the distinct rows weighted: its leaves count rows (at least 20),
    so on a small alphabet's distinct rows it could hardly split. One class in training: its
    probability 1. Columns blank in every training row are left out: they cannot split a leaf, and
    scikit-learn's binning fails on them.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits
    y_train = np.asarray(y_train)
    train_X, test_X = np.asarray(train_X, dtype=float), np.asarray(test_X, dtype=float)
    seen = ~np.isnan(train_X).all(axis=0)
    train_X, test_X = train_X[:, seen], test_X[:, seen]
    proba = np.zeros((len(test_X), n_classes))
    present = np.unique(y_train)
    if present.size < 2:
        proba[:, present[0]] = 1.0
        return proba
    with threadpool_limits(limits=1, user_api="openmp"):
        model = HistGradientBoostingClassifier(random_state=seed).fit(train_X, y_train)
        proba[:, model.classes_] = model.predict_proba(test_X)
    return proba


def strongest_attack(train_X, y_train, test_X, y_test, n_classes: int, *, seed: int = 0,
                     symbols: tuple | None = None) -> AttackerFigures:
    """The three attackers trained on (``train_X``, ``y_train``) and scored on (``test_X``, ``y_test``).

    See the module docstring.

    Parameters
    ----------
    train_X, test_X : ndarray, shapes (n_train, d), (n_test, d)
        Released values, NaN = blank.
    y_train, y_test : ndarray of int
        Class codes in ``range(n_classes)``.
    symbols : (train symbols, test symbols, number of symbols), optional
        The releases as symbols of their alphabet (a table's output indexes); by default each
        released row's exact values (:func:`release_symbols`).

    Returns
    -------
    AttackerFigures
        A class absent from the test rows counts as chance (:func:`._attacker.auc_with_error`).
    """
    return AttackerFigures(attacker_aucs(ATTACKERS, train_X, y_train, test_X, y_test, n_classes, seed=seed,
                                         symbols=symbols))


def attacker_aucs(names, train_X, y_train, test_X, y_test, n_classes: int, *, seed: int = 0,
                  symbols: tuple | None = None) -> dict:
    """The named attackers' ``(AUC, standard error)``, as :func:`strongest_attack` scores them.

    ``names`` is some of :data:`ATTACKERS`; the other arguments are :func:`strongest_attack`'s.
    Each attacker is a function of its arguments alone, so the figures of some attackers now and
    of the others later are those of all three at once.

    Returns
    -------
    dict
        Attacker name -> ``(auc, standard error)``, in the order of ``names``.

    Raises
    ------
    ValueError
        A name not in :data:`ATTACKERS`.
    """
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    scores = {}
    for name in names:
        if name == "bayes":
            train_symbols, test_symbols, n_symbols = release_symbols(train_X, test_X) if symbols is None else symbols
            scores[name] = bayes_scores(train_symbols, y_train, test_symbols, n_classes, n_symbols)
        elif name == "boosting":
            scores[name] = boosting_scores(train_X, y_train, test_X, n_classes, seed=seed)
        elif name == "logistic":
            scores[name] = _attacker.logistic_attack(train_X, y_train, test_X, y_test, n_classes, seed=seed).scores
        else:
            raise ValueError(f"unknown attacker {name!r}; expected some of {', '.join(ATTACKERS)}")
    return {name: _attacker.auc_with_error(y_test, scores[name], n_classes) for name in names}


def strongest_name(figures: dict, key: str = "holdout_attacker_auc") -> str | None:
    """The attacker whose ``KEY_NAME`` figure in ``figures`` (a bundle's metrics) is largest.

    Ties go to the first in :data:`ATTACKERS`; None when ``figures`` has none of them.
    """
    found = [(figures[f"{key}_{name}"], -i, name) for i, name in enumerate(ATTACKERS) if f"{key}_{name}" in figures]
    return max(found)[2] if found else None
