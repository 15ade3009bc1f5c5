"""Cross-fitted leakage: what a bundle leaks on users who were not in its data.

A bundle's ``leakage_bits`` is I(A; C^) on the prior it was built from; the table
was fitted to that prior, so the figure is optimistic for new users (in-sample).
Cross-fitting measures the leakage on rows the table never saw:

1. split the rows into k stratified folds (seeded with the build's seed);
2. for each fold, run the build's own steps (:func:`solve_dataset`: alphabet,
   prior, program (19), codebook step) on the other k - 1 folds (K capped at the
   number of distinct rows those folds hold);
3. look the held-out rows up exactly as the device does (nearest input, or an
   exact tuple match; rows the device would refuse are counted and left out) and
   compute the plug-in I(A; C^) of the fold's table on the held-out empirical prior;
4. subtract that plug-in estimator's bias, measured as the mean leakage after
   permuting the held-out private column (what the plug-in reports when A and the
   row are independent);
5. pool the folds weighted by their held-out rows.

The interval is the estimate plus the 2.5 % and 97.5 % quantiles of the bootstrap
deviations (rows resampled within each held-out fold, pooled, minus their mean: a
resample's plug-in carries more bias than the sample's, so the bootstrap is centred
rather than read off directly). It reflects the sampling noise of the held-out rows,
not the variation between possible training sets. Estimates and bounds are clipped
at 0 bits (leakage cannot be negative).

The held-out expected distortion, E d(b, released) over held-out rows, is measured
on the way; ``--clusters auto`` ranks its candidates with it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._errors import BuildError
from .._information import leakage_bits
from ..data._dataset import Dataset
from ..data._distortion import nearest, pairwise
from ..data._prior import joint_prior

#: Bootstrap resamples behind the interval.
BOOTSTRAP = 200
#: Permutations behind each fold's bias estimate.
PERMUTATIONS = 20
#: Two-sided confidence of the interval.
CONFIDENCE = 0.95


@dataclass(frozen=True)
class HoldoutLeakage:
    """Cross-fitted leakage and distortion on held-out rows.

    Attributes
    ----------
    leakage_bits : float
        Bias-corrected I(A; C^) on held-out rows, pooled over folds (bits, >= 0).
    low_bits, high_bits : float
        Bootstrap interval at :data:`CONFIDENCE` (bits, >= 0).
    plugin_bits : float
        Pooled plug-in leakage before the bias correction (bits).
    bias_bits : float
        Pooled permutation bias that was subtracted (bits).
    distortion : float
        Mean over held-out rows of E d(b, released) (metric's unit).
    folds : int
    rows : int
        Held-out rows measured (all folds).
    unmatched_rows : int
        Held-out rows the device would refuse (exact mechanism: a tuple not in the alphabet).
    attacker_auc : float or None
        With ``attacker=True``: ROC AUC of a logistic-regression attacker on one simulated
        release of every held-out row (each fold's table), scored by 10-fold cross-validation.
    """

    leakage_bits: float
    low_bits: float
    high_bits: float
    plugin_bits: float
    bias_bits: float
    distortion: float
    folds: int
    rows: int
    unmatched_rows: int
    attacker_auc: float | None = None

    def metrics(self) -> dict:
        """The bundle metrics this estimate adds (finite numbers; docs/bundle-format.md)."""
        return {"holdout_leakage_bits": self.leakage_bits, "holdout_leakage_low_bits": self.low_bits,
                "holdout_leakage_high_bits": self.high_bits, "holdout_plugin_bits": self.plugin_bits,
                "holdout_bias_bits": self.bias_bits, "holdout_distortion": self.distortion,
                "holdout_folds": self.folds, "holdout_confidence": CONFIDENCE,
                "holdout_unmatched_rows": self.unmatched_rows}


def cross_fitted_leakage(dataset: Dataset, options, *, folds: int | None = None, attacker: bool = False,
                         progress: Callable[[float], None] | None = None) -> HoldoutLeakage:
    """Estimate the leakage and distortion a new user faces, by k-fold cross-fitting.

    Parameters
    ----------
    dataset : Dataset
        The build's rows.
    options : BuildOptions
        The build's options; each fold is built with them (``holdout_folds`` gives k
        unless ``folds`` is passed).
    folds : int, optional
        Number of folds k (>= 2).
    attacker : bool
        Also measure the attacker's AUC on released held-out rows (quantized mechanism;
        releases simulated with numpy's generator, seeded: an estimate, not a device).
    progress : callable(float), optional
        Told the fraction of folds done.

    Raises
    ------
    BuildError
        Too few rows of some class for k folds, or a fold that cannot be built (for
        instance fewer distinct training rows than ``clusters``).
    """
    from sklearn.model_selection import StratifiedKFold

    from ._pipeline import solve_dataset
    k = int(folds if folds is not None else options.holdout_folds)
    counts = np.bincount(dataset.private, minlength=len(dataset.classes))
    if k < 2 or counts.min() < k:
        raise BuildError(f"cross-fitting needs every private class in each of {k} folds "
                         f"(smallest class has {int(counts.min())} rows); lower --holdout-folds (0 skips the estimate)")
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=options.seed)
    rng = np.random.default_rng(options.seed)
    release_rng = np.random.default_rng([options.seed, 1])     # its own stream: the leakage figures do not move
    fold_options = dataclasses.replace(options, holdout_folds=0)
    parts = []
    unmatched = 0
    released, released_private = [], []
    for i, (train, test) in enumerate(splitter.split(np.zeros(dataset.n), dataset.private)):
        fit = solve_dataset(_subset(dataset, train), _fold_options(fold_options, dataset, train))
        symbols = _lookup(fit.alphabet, dataset, test, options.mechanism, options.metric)
        matched = symbols >= 0
        unmatched += int((~matched).sum())
        rows, symbols = test[matched], symbols[matched]
        if rows.size == 0:
            raise BuildError(f"fold {i + 1}: no held-out row matches an input of the fold's alphabet")
        parts.append(_fold_estimate(fit, dataset, rows, symbols, options.metric, options.mechanism, rng))
        if attacker and options.mechanism == "quantized":
            released.append(_simulated_release(fit, symbols, release_rng))
            released_private.append(dataset.private[rows])
        if progress:
            progress((i + 1) / k)
    sizes = np.array([p["rows"] for p in parts], dtype=float)
    share = sizes / sizes.sum()
    plugin = float(share @ [p["plugin"] for p in parts])
    bias = float(share @ [p["bias"] for p in parts])
    boot = np.asarray([p["boot"] for p in parts])             # (folds, BOOTSTRAP) plug-in resamples
    spread = share @ boot - np.mean(share @ boot)
    alpha = (1.0 - CONFIDENCE) / 2.0
    low, high = (plugin - bias) + np.quantile(spread, [alpha, 1.0 - alpha])
    return HoldoutLeakage(leakage_bits=max(plugin - bias, 0.0), low_bits=max(float(low), 0.0),
                          high_bits=max(float(high), 0.0), plugin_bits=plugin, bias_bits=bias,
                          distortion=float(share @ [p["distortion"] for p in parts]), folds=k,
                          rows=int(sizes.sum()), unmatched_rows=unmatched,
                          attacker_auc=_attacker_auc(released, released_private, len(dataset.classes), options.seed))


def _simulated_release(fit, symbols: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw of released rows (n, d) for the held-out symbols under the fold's table."""
    cdf = np.cumsum(fit.solved.table, axis=1)
    drawn = np.minimum((cdf[symbols] <= rng.random(symbols.size)[:, None]).sum(axis=1), cdf.shape[1] - 1)
    return np.asarray(fit.alphabet.outputs, dtype=float)[drawn]


def _attacker_auc(released, private, n_classes: int, seed: int) -> float | None:
    if not released:
        return None
    from ..evaluation._attacks import cross_validated_scores
    return cross_validated_scores(np.concatenate(released), np.concatenate(private), n_classes,
                                  seed=seed).roc_auc


def _fold_options(options, dataset: Dataset, rows: np.ndarray):
    """The build's options for a training fold; K is capped at the fold's distinct rows."""
    if options.mechanism != "quantized":
        return options
    distinct = np.unique(dataset.public[rows], axis=0).shape[0]
    return dataclasses.replace(options, clusters=min(options.clusters, distinct))


def _subset(dataset: Dataset, rows: np.ndarray) -> Dataset:
    return dataclasses.replace(dataset, public=dataset.public[rows], private=dataset.private[rows])


def _lookup(alphabet, dataset: Dataset, rows: np.ndarray, mechanism: str, metric: str) -> np.ndarray:
    """Input index of each held-out row by the device's rule; -1 where the device would refuse it."""
    if mechanism == "exact":
        from ._erasure import lookup
        inputs = [tuple(f["values"][v] for v, f in zip(row, alphabet.features)) for row in alphabet.inputs]
        return lookup(inputs, dataset.public[rows])
    X = dataset.public[rows]
    fills = np.array([np.nan if f.get("fill") is None else f["fill"] for f in alphabet.features], dtype=float)
    X = np.where(np.isnan(X), fills, X)  # "impute" columns take the bundle's fill; "mask" stays NaN
    return nearest(X, np.asarray(alphabet.inputs, dtype=float), metric)


def _fold_estimate(fit, dataset: Dataset, rows, symbols, metric, mechanism, rng) -> dict:
    n_classes, k_in = fit.p_ac.shape
    q = fit.solved.table
    private = dataset.private[rows]
    plugin = leakage_bits(joint_prior(private, symbols, n_classes, k_in), q)
    bias = float(np.mean([leakage_bits(joint_prior(rng.permutation(private), symbols, n_classes, k_in), q)
                          for _ in range(PERMUTATIONS)]))
    boot = np.empty(BOOTSTRAP)
    for b in range(BOOTSTRAP):
        pick = rng.integers(0, rows.size, rows.size)
        boot[b] = leakage_bits(joint_prior(private[pick], symbols[pick], n_classes, k_in), q)
    if mechanism == "exact":                     # a matched row equals its input symbol
        costs = fit.alphabet.distortion[symbols]
    else:
        costs = pairwise(dataset.public[rows], np.asarray(fit.alphabet.outputs, dtype=float), metric)
    qs = q[symbols]
    distortion = float(np.mean(np.sum(np.where(qs > 0, qs * np.where(np.isfinite(costs), costs, 0.0), 0.0),
                                      axis=1)))
    return {"rows": rows.size, "plugin": plugin, "bias": bias, "boot": boot, "distortion": distortion}
