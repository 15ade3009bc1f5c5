"""Cross-fitted leakage: what a bundle leaks on users who were not in its data.

A bundle's ``leakage_bits`` is I(A; C^) on the prior it was built from; the table
was fitted to that prior, so the figure is optimistic for new users (in-sample).
Cross-fitting measures the leakage on rows the table never saw:

1. split the rows into k stratified folds (seeded with the build's seed);
2. for each fold, run the build's own steps (:func:`._program.solve_rows`: alphabet,
   prior, perfect-privacy distortion Delta0, program (19), codebook step) on the
   other k - 1 folds (K capped at the number of distinct rows those folds hold);
3. look the held-out rows up exactly as the device does (nearest input, or an
   exact tuple match; rows the device would refuse are counted and left out) and
   bracket the population's I(A; C^) of the fold's table from them
   (:mod:`privmap.offline._heldout_leakage`): below by the held-out cross-entropy of a posterior
   each row does not feed, above by the plug-in, both unbiased bounds whatever the number of
   outputs and of rows per output;
4. pool the folds weighted by their held-out rows: the interval runs from the lower side minus
   its noise to the upper side plus its, never narrower than the estimate (the bracket's
   midpoint) plus or minus its standard error (:func:`privmap.offline._heldout_leakage.pooled_bracket`).

It covers the mean over the folds of their tables' population leakages; the folds' tables are
fitted on a fraction (k - 1)/k of the rows, so they tend to leak to new users at least what the
bundle's does (benchmarks/README.md, "Coverage of the declared new-user leakage", measures the
interval against the bundle's own table on a population of known joint distribution). Where
outputs have few held-out rows each the two sides lie far apart, and the interval says so.

**Exposure per user.** Each fold also measures, on its held-out rows, the share whose release
raises the posterior odds of their own class more than 2x and 4x, under the posterior an attacker
computes from the fold's table and training prior (:func:`privmap.offline.measures.exposed_shares`,
pooled weighted by rows): what a new user risks, beside the in-sample per-output figure.

The held-out expected distortion, E d(b, released) over held-out rows, is measured
on the way; ``--clusters auto`` ranks its candidates with it.

**Several private columns** (``--private COL1,COL2``, :mod:`privmap.offline._joint`): the table
protects the joint attribute A, and steps 3 and 4 are run again for each column A_i alone on the
same folds and tables, with the held-out rows' values of that column (:attr:`HoldoutLeakage.by_column`).

**Out of core** (:func:`cross_fitted_from_counts`) the rows are never held at once, so the folds
do not refit k-means: each fold's prior and distances come from the counts and distance sums the
partitioned backend takes by fold in its passes, the representatives are shared by the folds, and
the held-out (class, input) pairs are scored by the same estimator (steps 3 and 4).

**Cost.** The folds are independent, so they run in parallel processes, this one and
workers (:func:`fold_jobs`: ``PRIVMAP_JOBS`` or the machine's cores, BLAS and OpenMP threads
split between them; the workers forked from this process where each gets one thread,
:mod:`._tasks`); each fold draws its simulated release (``attacker``) from its own stream
seeded by (seed, fold), and its bracket draws nothing, so the result is the same whatever
the number of workers or the order in which folds finish. A build whose folds do not start from
its answers (below ``_reuse.START_CLUSTERS``) sets its workers folding before its own stages
(:func:`start_cross_fitting`) and joins them after, its own stages held to the cores the workers
leave: the folds' cost is the same, the build's wall time shorter (benchmarks/README.md). A fold's
k-means makes one k-means++ start on its training rows (``start="single"``, :class:`FoldKMeans`)
where the build makes four (``"restarts"``); the k-means++ seeding is most of k-means' cost at large
K (UCI Adult, K = 1024: 8.7 CPU-s a start, then 2 Lloyd iterations). Delta0 and the solve are redone
on every fold: both are functions of the fold's prior, which must not see the held-out private
column. Given the build's answers (``build``, a
:class:`._reuse.BuildStart`), the fold's solvers start from them, carried to the fold's
clusters: the same certified answers in fewer rounds and Newton steps (:mod:`._reuse` says
why the estimate stays sound). The solve keeps the build's tolerance: solved to ten times it,
the folds' tables moved the estimate by an eighth to a third of its interval on UCI Adult,
in no one direction across K (benchmarks/README.md), so the solve's precision is part of the
procedure the estimate is of.

**Why not start each fold from the full-data centres.** That start (``"warm"``, one
Lloyd run from the build's representatives) costs a fold's k-means almost nothing, and
never sees a private label; but the held-out rows pulled the full-data centres toward
themselves, and the fold's Lloyd run stays in that basin. Measured on data/ssi2012
(K = 64, three seeds, one fold) it lowered the held-out quantization distortion by
0.045 to 0.070 against 0.014 to 0.031 on the training rows, so the held-out distortion
came out optimistic, increasingly with K, which would bias ``--clusters auto`` toward
large K. One k-means++ start sees nothing of the held-out rows, so nothing of them can
make the estimate optimistic; it differs from the build only in the k-means' restarts,
and its figures lay within the restarts' interval on SSI (benchmarks/README.md,
"Cross-fitting at scale").
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import resource
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Literal, Protocol, cast

import numpy as np
from scipy import sparse

from ..._errors import BuildError
from ..._heldout_leakage import bracket_terms, pooled_bracket
from ..._joint import column_key
from ..._rows import unique_rows
from ...data import Dataset, Quantization, assigned_distance, joint_prior, nearest, prior_from_counts, quantize
from ...measures import exposed_shares
from .._seed000 import Seed000Options
from ._codebook import resolve_kept
from ._program import Solved, solve_prior, solve_rows
from ._reuse import BuildStart
from ._rows import Alphabet, Rows
from ._tasks import Tasks, run_tasks

#: Two-sided confidence of the interval.
CONFIDENCE = 0.95
#: Environment variable giving the number of processes that run the folds, this one included
#: (default: the machine's cores).
JOBS_ENV = "PRIVMAP_JOBS"


class _FoldRows(Rows, Protocol):
    """The rows the folds are drawn from: a :class:`Dataset`, and the rows a fold trains on.

    A :class:`._in_memory.InMemoryRows`, whose module imports this one (hence a protocol here).
    """

    @property
    def dataset(self) -> Dataset: ...

    def subset(self, rows: np.ndarray) -> Rows:
        """The rows at the indexes ``rows`` (shape (m,))."""


@dataclass(frozen=True)
class HoldoutLeakage:
    """Cross-fitted leakage and distortion on held-out rows.

    Attributes
    ----------
    leakage_bits : float
        The population's I(A; C^) of the folds' tables, the midpoint of its bracket on held-out
        rows, pooled over folds (bits, >= 0; :mod:`privmap.offline._heldout_leakage`).
    low_bits, high_bits : float
        Its interval at :data:`CONFIDENCE` (bits, >= 0), never narrower than
        ``leakage_bits +- z standard_error_bits``.
    plugin_bits : float
        The bracket's upper side: the pooled held-out plug-in (bits).
    bias_bits : float
        ``plugin_bits - leakage_bits`` before clipping: the plug-in's bias as the bracket bounds
        it, half the gap between its sides (bits).
    cross_entropy_bits : float
        The bracket's lower side: the pooled held-out cross-entropy estimate (bits, may be < 0).
    standard_error_bits : float
        Standard error of ``leakage_bits`` (bits).
    exposed_2x, exposed_4x : float
        Share of held-out rows whose release raises the odds of their own class more than 2x
        and 4x under the posterior of the fold's table and training prior
        (:func:`privmap.offline.measures.exposed_shares`), pooled over folds.
    distortion : float
        Mean over held-out rows of E d(b, released) (metric's unit).
    folds : int
    rows : int
        Held-out rows measured (all folds).
    unmatched_rows : int
        Held-out rows the device would refuse (exact mechanism: a tuple not in the alphabet).
    attacker_auc : float or None
        With ``attacker=True``: ROC AUC of the strongest attacker on one simulated release of every
        held-out row, each fold's attackers trained on that fold's training rows as its table
        releases them (:class:`FoldRelease`; the Bayes attacker over the release alphabet, gradient
        boosting and logistic regression, :mod:`privmap.offline._strongest`), each attacker's folds'
        AUCs weighted by their rows, the largest of the three.
    attacker_auc_high : float or None
        The largest of the three attackers' one-sided upper bounds at :data:`CONFIDENCE` over the
        held-out rows (DeLong's standard errors, :func:`privmap.offline._attacker.auc_with_error`);
        ``--target-auc`` is met by it, so by every attacker.
    attacker : str or None
        The strongest attacker's name (:data:`privmap.offline._strongest.ATTACKERS`).
    attackers : tuple of tuple
        One ``(name, auc, auc_high)`` per attacker, in :data:`~privmap.offline._strongest.ATTACKERS`
        order; empty without simulated releases.
    by_column : tuple of tuple
        With several private columns, one ``(name, leakage_bits, low_bits, high_bits, plugin_bits,
        bias_bits)`` per column, in column order: the same bracket of I(A_i; C^) (module
        docstring); empty otherwise.
    fold_costs : tuple of dict
        What each fold cost, in fold order, measured by the process that ran it (:func:`_fold`):
        ``fold`` (1-based), ``started`` (that process's ``time.perf_counter()`` when the fold
        began), ``seconds`` (wall), ``cpu_seconds`` (``time.process_time`` of that process over the
        fold: all its threads, user + system), ``peak_rss_bytes`` (that process's ``ru_maxrss``
        after the fold, a high-water mark since it started), ``pid`` and ``pooled`` (True in a
        worker process). Not part of the estimate: equality ignores it. Empty for the
        out-of-core build's folds.
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
    attacker_auc_high: float | None = None
    attacker: str | None = None
    attackers: tuple = ()
    by_column: tuple = ()
    cross_entropy_bits: float = 0.0
    standard_error_bits: float = 0.0
    exposed_2x: float = 0.0
    exposed_4x: float = 0.0
    fold_costs: tuple = field(default=(), compare=False)

    def metrics(self) -> dict:
        """The bundle metrics this estimate adds, finite numbers (docs/bundle-format.md).

        With each private column's ``holdout_leakage_bits[COL]`` and its interval when there are several, and
        the strongest attacker's AUC and its upper bound when the folds simulated releases (``--clusters auto``),
        and each attacker's as ``holdout_attacker_auc_NAME`` and ``holdout_attacker_auc_high_NAME``.
        """
        out = {"holdout_leakage_bits": self.leakage_bits, "holdout_leakage_low_bits": self.low_bits,
               "holdout_leakage_high_bits": self.high_bits, "holdout_plugin_bits": self.plugin_bits,
               "holdout_bias_bits": self.bias_bits, "holdout_distortion": self.distortion,
               "holdout_cross_entropy_bits": self.cross_entropy_bits,
               "holdout_standard_error_bits": self.standard_error_bits,
               "holdout_exposed_2x": self.exposed_2x, "holdout_exposed_4x": self.exposed_4x,
               "holdout_folds": self.folds, "holdout_confidence": CONFIDENCE,
               "holdout_unmatched_rows": self.unmatched_rows}
        for name, leakage, low, high, _, _ in self.by_column:
            out[column_key("holdout_leakage_bits", name)] = leakage
            out[column_key("holdout_leakage_low_bits", name)] = low
            out[column_key("holdout_leakage_high_bits", name)] = high
        auc = {"holdout_attacker_auc": self.attacker_auc, "holdout_attacker_auc_high": self.attacker_auc_high}
        for name, value, high in self.attackers:
            auc.update({f"holdout_attacker_auc_{name}": value, f"holdout_attacker_auc_high_{name}": high})
        if all(v is not None and math.isfinite(v) for v in auc.values()):
            out.update({key: float(v) for key, v in auc.items() if v is not None})
        return out

    def column_bits(self) -> dict:
        """``{column: cross-fitted leakage in bits}`` with several private columns, else empty."""
        return {name: leakage for name, leakage, *_ in self.by_column}


#: How a fold's k-means starts (module docstring): one k-means++ start (default), the build's four
#: restarts, or the full-data representatives (measured to bias the held-out distortion; benchmarks only).
STARTS = ("single", "restarts", "warm")


@dataclass(frozen=True)
class FoldKMeans:
    """A fold's quantizer: k-means from one start, then the build's own representatives.

    Called as :func:`privmap.offline.data.quantize` is (``X`` (n, d) with NaN = missing, ``k``,
    ``metric``, ``seed``, ``integer``, ``bounds``) and returns the same :class:`Quantization`; only the
    k-means start differs: one k-means++ start seeded with ``seed`` (``init`` None) instead of four,
    or one Lloyd run from ``init`` (shape (k, d)).

    The k-means++ start is a function of the call's arguments alone (:func:`kmeans_key`), and the
    ``auto`` search quantizes each fold's training rows at one K once per budget fraction tried:
    ``known`` maps the key of a call already made to its Quantization, returned as it is instead
    of clustering the rows again (the same centres and labels, at no cost), and every Quantization
    this quantizer computes is added to ``learned`` under its key (a forked worker's fold hands it
    back to the search that way, :func:`_fold`).
    """

    init: np.ndarray | None = None
    known: Mapping[str, Quantization] = field(default_factory=dict, compare=False)
    learned: dict[str, Quantization] = field(default_factory=dict, compare=False)

    def __call__(self, X: np.ndarray, k: int, *, metric: str = "l2", seed: int = 0, integer: np.ndarray | None = None,
                 bounds: tuple[np.ndarray, np.ndarray] | None = None) -> Quantization:
        if self.init is not None:
            return quantize(X, k, metric=metric, seed=seed, integer=integer, bounds=bounds, init=self.init, n_init=1)
        key = kmeans_key(X, k, metric, seed, integer, bounds)
        found = self.known.get(key)
        if found is None:
            found = quantize(X, k, metric=metric, seed=seed, integer=integer, bounds=bounds, init="k-means++",
                             n_init=1)
            for array in (found.centers, found.labels):
                array.setflags(write=False)          # shared by every fold that finds it: never changed in place
            self.learned[key] = found
        return found


def kmeans_key(X: np.ndarray, k: int, metric: str, seed: int, integer: np.ndarray | None,
               bounds: tuple[np.ndarray, np.ndarray] | None) -> str:
    """A digest of a one-start k-means' arguments (:class:`FoldKMeans`); equal arguments, equal key.

    The rows ``X`` (n, d) with their shape, ``k``, ``metric``, ``seed``, ``integer`` (d,) and
    ``bounds`` (two (d,) arrays), each None or given.
    """
    digest = hashlib.blake2b(digest_size=16)
    X = np.ascontiguousarray(X, dtype=float)
    digest.update(repr((X.shape, int(k), str(metric), int(seed), integer is None, bounds is None)).encode())
    digest.update(X.tobytes())
    if integer is not None:
        digest.update(np.ascontiguousarray(integer, dtype=bool).tobytes())
    if bounds is not None:
        for bound in bounds:
            digest.update(np.ascontiguousarray(bound, dtype=float).tobytes())
    return digest.hexdigest()


def fold_jobs(tasks: int, jobs: int | None = None) -> int:
    """Processes for independent folds, this one included.

    Processes for ``tasks`` independent folds, this one included (:class:`._tasks.Tasks`):
    ``jobs``, else ``$PRIVMAP_JOBS``, else the machine's cores; never more than ``tasks``. Raises
    :class:`BuildError` for a value below 1.
    """
    if jobs is None:
        raw = os.environ.get(JOBS_ENV, "").strip()
        try:
            jobs = int(raw) if raw else (os.cpu_count() or 1)
        except ValueError:
            raise BuildError(f"{JOBS_ENV}={raw!r} is not a whole number of processes") from None
    if jobs < 1:
        raise BuildError(f"the number of processes for the folds must be >= 1, got {jobs}")
    return max(1, min(int(jobs), tasks))


def cross_fitted_leakage(rows: _FoldRows, options: Seed000Options, *, folds: int | None = None, attacker: bool = False,
                         progress: Callable[[float], None] | None = None, start: str = "single",
                         centers: np.ndarray | None = None, jobs: int | None = None,
                         build: BuildStart | None = None) -> HoldoutLeakage:
    """Estimate the leakage and distortion a new user faces, by k-fold cross-fitting.

    Parameters
    ----------
    rows : InMemoryRows
        The build's rows (:class:`._in_memory.InMemoryRows`; each fold is built on its
        :meth:`~._in_memory.InMemoryRows.subset`).
    options : QuantizedOptions or ExactOptions
        The build's options; each fold is built with them (``cross_fitting.folds`` gives k
        unless ``folds`` is passed).
    folds : int, optional
        Number of folds k (>= 2).
    attacker : bool
        Also measure the attacker's AUC on released held-out rows (quantized mechanism;
        releases simulated with numpy's generator, seeded: an estimate, not a device).
    progress : callable(float), optional
        Told the fraction of folds done.
    start : {"single", "restarts", "warm"}
        How each fold's k-means starts (:data:`STARTS`, module docstring; quantized mechanism).
    centers : ndarray, shape (K, d), optional
        The full-data representatives, the start of ``"warm"`` folds.
    jobs : int, optional
        Processes, this one included (:func:`fold_jobs`); 1 runs the folds in this process alone.
    build : BuildStart, optional
        The build's answers, where each fold's solvers start (:mod:`._reuse`).

    Raises
    ------
    BuildError
        Too few rows of some class for k folds, or a fold that cannot be built (for
        instance fewer distinct training rows than ``clusters``).
    """
    result = cross_fitted_many(rows, [options], folds=folds, attacker=attacker,
                               start=start, centers=[centers], jobs=jobs, builds=[build],
                               progress=None if progress is None else (lambda done, total: progress(done / total)))[0]
    if isinstance(result, BuildError):
        raise result
    return result


def cross_fitted_many(rows: _FoldRows, candidates: Sequence, *, folds: int | None = None,
                      attacker: bool | Literal["bayes"] = False,
                      start: str = "single", centers: Sequence[np.ndarray | None] | None = None,
                      jobs: int | None = None, builds: Sequence[BuildStart | None] | None = None,
                      progress: Callable[[int, int], None] | None = None,
                      quantizations: dict[int, dict[str, Quantization]] | None = None) -> list:
    """The cross-fitted leakage of several candidates on one set of folds.

    :func:`cross_fitted_leakage` of several candidate options on one set of folds, every
    (candidate, fold) pair a task shared by this process and its workers (:class:`._tasks.Tasks`).

    Parameters
    ----------
    rows : InMemoryRows
    candidates : sequence of QuantizedOptions or ExactOptions
        Options of each candidate; they must share the seed (the folds are drawn from it).
        k is ``folds``, else the first candidate's cross-fitting folds.
    attacker : bool or "bayes"
        As :func:`cross_fitted_leakage`'s; ``"bayes"``: each fold draws its releases and scores the
        Bayes attacker alone, and the candidate's outcome is a :class:`PendingAttackers` that
        :func:`attack_pending` completes with the costly attackers (:data:`~privmap.offline._strongest.COSTLY`)
        to the estimate ``attacker=True`` gives.
    start : {"single", "restarts", "warm"}
        How each fold's k-means starts (:data:`STARTS`).
    centers : sequence of ndarray (K, d), optional
        Each candidate's full-data representatives (``start="warm"`` only).
    jobs : int, optional
        Processes, this one included (:func:`fold_jobs`).
    builds : sequence of BuildStart or None, optional
        Each candidate's build answers, where its folds' solvers start (:mod:`._reuse`).
    progress : callable(done: int, total: int), optional
        Told the number of (candidate, fold) tasks finished.
    quantizations : dict, optional
        Fold index -> the one-start k-means of that fold's training rows already made
        (:attr:`FoldKMeans.known`, keyed by :func:`kmeans_key`), shared by every candidate of
        these calls and updated with those this call makes: the ``auto`` search passes one such
        map to every batch of candidates, so that a K judged at several budgets clusters each
        fold once (``start="single"`` only).

    Returns
    -------
    list of HoldoutLeakage, PendingAttackers or BuildError
        One per candidate, in order (a PendingAttackers with ``attacker="bayes"``); a candidate whose
        fold could not be built gets that fold's error.

    Raises
    ------
    BuildError
        Too few rows of some class for k folds (shared by every candidate); an unknown ``start``,
        or ``"warm"`` without ``centers``.
    """
    if not candidates:
        return []
    plan = _Folds(rows, candidates, folds=folds, attacker=attacker, start=start, centers=centers, builds=builds,
                  quantizations=quantizations)
    return plan.results(run_tasks(_fold, plan.work, fold_jobs(len(plan.work), jobs), progress))


class PendingFolds:
    """Cross-fitting set going before the build's own stages (:func:`start_cross_fitting`).

    :meth:`result` waits for the estimate, this process taking folds too; leaving a ``with``
    block without it (the build failed or was interrupted) stops the workers.
    """

    def __init__(self, folds: _Folds, tasks: Tasks):
        self._folds, self._tasks, self._done = folds, tasks, False

    @property
    def threads_left(self) -> int:
        """BLAS and OpenMP threads this process may use while the workers run (at least 1)."""
        return max(1, (os.cpu_count() or 1) - (self._tasks.jobs - 1) * self._tasks.threads)

    def result(self, progress: Callable[[float], None] | None = None) -> HoldoutLeakage:
        """The estimate, as :func:`cross_fitted_leakage` gives it. Raises BuildError as it does."""
        self._done = True
        outcome = self._folds.results(self._tasks.finish(
            None if progress is None else (lambda done, total: progress(done / total))))[0]
        if isinstance(outcome, BuildError):
            raise outcome
        return outcome

    def __enter__(self) -> PendingFolds:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._done:
            self._tasks.cancel()


def start_cross_fitting(rows: _FoldRows, options: Seed000Options, *, jobs: int | None = None) -> PendingFolds | None:
    """The cross-fitting folds set going before the build's own stages, or None.

    Set :func:`cross_fitted_leakage`'s folds going in worker processes before the build's own
    stages, which they do not depend on (a build below ``_reuse.START_CLUSTERS``): the workers fold
    while this process builds, and this process joins them when it reaches the estimate
    (:meth:`PendingFolds.result`; the same estimate, fold for fold). None where there would be no
    worker (one process) or no folds (``options.cross_fitting`` None).

    Raises
    ------
    BuildError
        As :func:`cross_fitted_leakage`, before any worker starts.
    """
    if not options.folds:
        return None
    folds = _Folds(rows, [options], folds=None, attacker=False, start="single", centers=None, builds=None)
    processes = fold_jobs(len(folds.work), jobs)
    if processes < 2:
        return None
    return PendingFolds(folds, Tasks(_fold, folds.work, processes).start())


class _Folds:
    """The (candidate, fold) tasks of a cross-fitting and the pooling of their outcomes.

    The tasks of :func:`cross_fitted_many` (``work``: the arguments of each :func:`_fold`,
    candidate by candidate) and the pooling of their outcomes (:meth:`results`), which adds the
    folds' new k-means to ``quantizations`` (:func:`cross_fitted_many`). Raises BuildError as
    :func:`cross_fitted_many` does.
    """

    def __init__(self, rows: _FoldRows, candidates: Sequence[Seed000Options], *, folds: int | None,
                 attacker: bool | Literal["bayes"], start: str,
                 centers: Sequence[np.ndarray | None] | None, builds: Sequence[BuildStart | None] | None,
                 quantizations: dict[int, dict[str, Quantization]] | None = None) -> None:
        from sklearn.model_selection import StratifiedKFold
        dataset = rows.dataset
        seed = candidates[0].seed
        if any(o.seed != seed for o in candidates):
            raise BuildError("cross-fitted candidates must share the seed their folds are drawn from")
        k = int(folds if folds is not None else candidates[0].folds)
        counts = np.bincount(dataset.private, minlength=len(dataset.classes))
        if k < 2 or counts.min() < k:
            raise BuildError(f"cross-fitting needs every private class in each of {k} folds (smallest class has "
                             f"{int(counts.min())} rows); lower --holdout-folds (0 skips the estimate)")
        splits = list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
                      .split(np.zeros(dataset.n), dataset.private))
        if start not in STARTS:
            raise BuildError(f"unknown k-means start {start!r}; expected one of {', '.join(STARTS)}")
        if start == "warm" and (centers is None or len(centers) != len(candidates)):
            raise BuildError("warm-started folds need each candidate's full-data centers")
        centers = list(centers) if start == "warm" and centers is not None else [None] * len(candidates)
        builds = list(builds) if builds is not None else [None] * len(candidates)
        self.tasks = [(c, i) for c in range(len(candidates)) for i in range(k)]
        single = [dataclasses.replace(o, cross_fitting=None) for o in candidates]
        self.quantizations = quantizations
        known = {} if quantizations is None else quantizations
        self.work = [(rows, single[c], i, splits[i][0], splits[i][1], start, centers[c], attacker,
                      builds[c], known.get(i, {})) for c, i in self.tasks]
        self.k, self.candidates, self.pending = k, len(candidates), attacker == "bayes"
        _import_fold_libraries(candidates, len(dataset.classes))

    def results(self, outcomes: list) -> list:
        """One outcome per candidate from the tasks' ``outcomes``, in order.

        A HoldoutLeakage, a :class:`PendingAttackers` (``attacker="bayes"``) or the first BuildError
        of its folds.
        """
        if self.quantizations is not None:
            for (_, i), outcome in zip(self.tasks, outcomes):
                if isinstance(outcome, dict):
                    self.quantizations.setdefault(i, {}).update(outcome.pop("kmeans", {}))
        results: list[HoldoutLeakage | PendingAttackers | BuildError] = []
        for c in range(self.candidates):
            parts = [outcomes[t] for t, (cc, _) in enumerate(self.tasks) if cc == c]
            error = next((p for p in parts if isinstance(p, BuildError)), None)
            if error is not None:
                results.append(error)
            elif self.pending:
                results.append(PendingAttackers(pool_folds(parts, self.k), tuple(parts), self.k))
            else:
                results.append(pool_folds(parts, self.k))
        return results


def _import_fold_libraries(candidates: Sequence, n_classes: int) -> None:
    """The libraries every fold imports on first use, imported here.

    Import here the libraries every fold imports on first use: scikit-learn's k-means (quantized
    mechanism) and POT's network simplex (Delta0 of a binary attribute). They are imported lazily so
    that commands which never cluster start fast; a build needs them anyway, and importing them
    before the workers are forked (:mod:`._tasks`) spares each forked worker importing them again
    (0.12 CPU-s a worker on the survey of benchmarks/README.md).
    """
    if any(o.quantizes for o in candidates):
        import sklearn.cluster  # noqa: F401
    if n_classes == 2:
        import ot  # noqa: F401


def _fold(rows: _FoldRows, options: Seed000Options, i: int, train: np.ndarray, test: np.ndarray, start: str,
          centers: np.ndarray | None, attacker: bool | Literal["bayes"], build: BuildStart | None = None,
          known: Mapping[str, Quantization] | None = None) -> dict | BuildError:
    """One fold's figures, or its BuildError.

    One fold: build on ``train``, measure on ``test``; a dict of the fold's figures (with its ``cost``,
    measured here because a pooled worker's CPU time is invisible to the parent until the pool is
    reaped, and under ``kmeans`` the k-means it made that ``known`` did not hold, :class:`FoldKMeans`;
    with ``attacker="bayes"`` the Bayes attacker's figure alone under ``attack`` and the releases the
    others need under ``release``, :class:`FoldRelease`), or the BuildError, of its own type, its
    message prefixed with "cross-fitting fold i: " (an operator whose build fails after the folds
    learns which stage and which fold).
    """
    dataset = rows.dataset
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        fitted = fold_options(options, dataset, train)
        quantizer = None
        if options.quantizes and start == "single":
            quantizer = FoldKMeans(known={} if known is None else known)
        elif options.quantizes and start == "warm" and centers is not None and cast(int, fitted.clusters) >= len(centers):
            # clusters: a field of a quantizing mechanism's options, which the engine does not import
            fitted = dataclasses.replace(fitted, clusters=len(centers))  # type: ignore[call-arg]
            quantizer = FoldKMeans(np.asarray(centers, dtype=float))
        fit = solve_rows(rows.subset(train), fitted, quantizer=quantizer, start=build)
        symbols = _lookup(fit.alphabet, dataset, test, options)
        matched = symbols >= 0
        held, symbols = test[matched], symbols[matched]
        if held.size == 0:
            raise BuildError("no held-out row matches an input of the fold's alphabet")
        part = fold_estimate(fit, dataset, held, symbols, options.metric, equal_inputs=not options.quantizes)
        part["unmatched"] = int((~matched).sum())
        if attacker and options.quantizes:
            from ..._strongest import ATTACKERS
            release = _fold_release(fit, dataset, train, held, symbols, options,
                                    np.random.default_rng([options.seed, 1, i]))
            part["attack"] = release.aucs(("bayes",) if attacker == "bayes" else ATTACKERS)
            if attacker == "bayes":
                part["release"] = release
        if isinstance(quantizer, FoldKMeans) and quantizer.learned:
            part["kmeans"] = quantizer.learned
        part["cost"] = _cost(i, wall, cpu)
        return part
    except BuildError as exc:
        # returned, not raised: the other folds finish and the caller raises the first failure
        return type(exc)(f"cross-fitting fold {i + 1}: {exc}")


def _cost(i: int, wall: float, cpu: float) -> dict:
    """A fold's cost as its process measured it.

    Fold ``i``'s entry of :attr:`HoldoutLeakage.fold_costs`, from its start's ``perf_counter`` and
    ``process_time``, measured in the process that ran it.
    """
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"fold": i + 1, "started": wall, "seconds": round(time.perf_counter() - wall, 3),
            "cpu_seconds": round(time.process_time() - cpu, 3),
            "peak_rss_bytes": int(peak if sys.platform == "darwin" else peak * 1024), "pid": os.getpid()}


def _pooled(share: np.ndarray, parts: list) -> tuple[float, float, float, float, float, float, float]:
    """The folds' brackets pooled.

    ``(estimate, low, high, plugin, bias, cross_entropy, standard_error)`` of the folds' brackets
    ``parts`` (dicts of :func:`privmap.offline._heldout_leakage.bracket_terms`) pooled with the
    weights ``share``.
    """
    b = pooled_bracket(parts, share, CONFIDENCE)
    return (b.estimate, b.low, b.high, b.upper, b.upper - (b.lower + b.upper) / 2.0, b.lower, b.standard_error)


def pool_folds(parts: list, k: int) -> HoldoutLeakage:
    """The folds' figures pooled into one estimate.

    The folds' figures pooled, weighted by held-out rows, with the bracket's interval (also the
    out-of-core build's, whose folds carry no ``unmatched`` count nor simulated releases), and each
    private column's the same way when the folds measured them (``columns``).
    """
    sizes = np.array([p["rows"] for p in parts], dtype=float)
    share = sizes / sizes.sum()
    estimate, low, high, plugin, bias, cross_entropy, error = _pooled(share, parts)
    by_column = []
    for c, column in enumerate(parts[0].get("columns", ())):
        c_estimate, c_low, c_high, c_plugin, c_bias, *_ = _pooled(share, [p["columns"][c] for p in parts])
        by_column.append((column["name"], c_estimate, c_low, c_high, c_plugin, c_bias))
    exposed = share @ np.array([p["exposed"] for p in parts], dtype=float)
    return HoldoutLeakage(leakage_bits=estimate, low_bits=low, high_bits=high, plugin_bits=plugin, bias_bits=bias,
                          cross_entropy_bits=cross_entropy, standard_error_bits=error,
                          exposed_2x=float(exposed[0]), exposed_4x=float(exposed[1]),
                          distortion=float(share @ [p["distortion"] for p in parts]), folds=k,
                          rows=int(sizes.sum()), unmatched_rows=sum(p.get("unmatched", 0) for p in parts),
                          **_pooled_attack(share, [p["attack"] for p in parts if "attack" in p]),
                          by_column=tuple(by_column),
                          fold_costs=tuple({**p["cost"], "pooled": p["cost"]["pid"] != os.getpid()}
                                           for p in parts if "cost" in p))


def _drawn_outputs(fit: Solved, symbols: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One drawn output index for each symbol under the fold's table.

    One draw of the output index (n,) for each of ``symbols`` (n,) under the fold's table: each
    row takes the first output whose cumulative probability in its table row exceeds a uniform
    draw (searched over the row's non-zeros only).
    """
    drawn_from = sparse.csr_matrix(fit.solved.table)[symbols]
    cumulative = np.cumsum(drawn_from.data)
    start, end = drawn_from.indptr[:-1], drawn_from.indptr[1:]
    base = np.where(start > 0, cumulative[np.maximum(start - 1, 0)], 0.0)
    at = np.minimum(np.searchsorted(cumulative, base + rng.random(symbols.size), side="right"), end - 1)
    return drawn_from.indices[at]


@dataclass(frozen=True)
class FoldRelease:
    """One fold's simulated releases: what its attackers are trained and scored on (:func:`_fold_release`).

    Attributes
    ----------
    outputs : ndarray, shape (K_out, d)
        The released row of each output of the fold's table.
    train_out, held_out : ndarray of int, shapes (n_train,), (n_held,)
        The output drawn for each training row the device matches and for each held-out row.
    train_classes, held_classes : ndarray of int, shapes (n_train,), (n_held,)
        Their private classes.
    n_classes : int
    seed : int
        The build's seed, which seeds the attackers' models.
    """

    outputs: np.ndarray
    train_out: np.ndarray
    held_out: np.ndarray
    train_classes: np.ndarray
    held_classes: np.ndarray
    n_classes: int
    seed: int

    def aucs(self, names: Sequence[str]) -> dict:
        """The named attackers' ``{attacker: (AUC, its standard error)}`` over the held-out rows.

        Each as :func:`privmap.offline._strongest.strongest_attack` scores it: trained on the
        training rows' releases, scored on the held-out rows'; the release is a function of the
        table's output, so the Bayes attacker counts the outputs drawn (and logistic regression is
        fitted on the distinct released rows, weighted).
        """
        from ..._strongest import attacker_aucs
        return attacker_aucs(names, self.outputs[self.train_out], self.train_classes, self.outputs[self.held_out],
                             self.held_classes, self.n_classes, seed=self.seed,
                             symbols=(self.train_out, self.held_out, self.outputs.shape[0]))


def _fold_release(fit: Solved, dataset: Dataset, train: np.ndarray, held: np.ndarray, held_symbols: np.ndarray,
                  options: Seed000Options, rng: np.random.Generator) -> FoldRelease:
    """The fold's simulated releases, which its attackers meet as outside ones meet the mechanism.

    One draw of each training row's release under the fold's table (the rows the device matches),
    then one of each held-out row's (``held``, looked up as ``held_symbols``), from ``rng``. One
    table trains and is attacked, as a deployed bundle is: an attacker pooled over the folds'
    releases would face five different tables at once and understate what one table tells.
    """
    trained = _lookup(fit.alphabet, dataset, train, options)
    seen = trained >= 0
    train_out, held_out = _drawn_outputs(fit, trained[seen], rng), _drawn_outputs(fit, held_symbols, rng)
    return FoldRelease(outputs=np.asarray(fit.alphabet.outputs, dtype=float), train_out=train_out, held_out=held_out,
                       train_classes=dataset.private[train[seen]], held_classes=dataset.private[held],
                       n_classes=len(dataset.classes), seed=options.seed)


@dataclass(frozen=True)
class PendingAttackers:
    """A candidate's cross-fitted estimate before its costly attackers, and what they need.

    What :func:`cross_fitted_many` gives with ``attacker="bayes"``; :func:`attack_pending` completes it.

    Attributes
    ----------
    estimate : HoldoutLeakage
        Every figure of the full estimate but the costly attackers': its attacker fields are the
        Bayes attacker's alone (``attackers`` has its one entry), so ``attacker_auc_high`` is at most
        the full estimate's (the largest of three bounds).
    parts : tuple of dict
        The folds' figures, in fold order, each with its :class:`FoldRelease` under ``release``.
    folds : int
    """

    estimate: HoldoutLeakage
    parts: tuple
    folds: int


def attack_pending(pending: Sequence[PendingAttackers], *, jobs: int | None = None,
                   progress: Callable[[int, int], None] | None = None) -> list[HoldoutLeakage]:
    """The full estimates of candidates whose costly attackers are still to run.

    Each (candidate, fold)'s costly attackers (:data:`privmap.offline._strongest.COSTLY`) on the
    fold's releases, a task of this process and its workers (:func:`fold_jobs`), pooled with the
    fold's other figures: one HoldoutLeakage per candidate, in order, equal to the one
    ``attacker=True`` gives (the releases are the same draws, and the attackers are functions of
    them and the seed). A fold's ``cost`` adds what its attackers cost. ``progress`` is told the
    number of (candidate, fold) tasks finished.
    """
    work = [(part["release"],) for p in pending for part in p.parts]
    outcomes = iter(run_tasks(_costly_attacks, work, fold_jobs(len(work), jobs), progress) if work else [])
    results = []
    for p in pending:
        parts = []
        for part in p.parts:
            aucs, wall, cpu = next(outcomes)
            cost = {**part["cost"], "seconds": round(part["cost"]["seconds"] + wall, 3),
                    "cpu_seconds": round(part["cost"]["cpu_seconds"] + cpu, 3)}
            parts.append({**{key: v for key, v in part.items() if key != "release"},
                          "attack": {**part["attack"], **aucs}, "cost": cost})
        results.append(pool_folds(parts, p.folds))
    return results


def _costly_attacks(release: FoldRelease) -> tuple[dict, float, float]:
    """The costly attackers' figures on one fold's releases, with their wall and CPU seconds.

    Measured here, as :func:`_fold`'s cost is: a pooled worker's CPU time is invisible to the parent.
    """
    from ..._strongest import COSTLY
    wall, cpu = time.perf_counter(), time.process_time()
    aucs = release.aucs(COSTLY)
    return aucs, time.perf_counter() - wall, time.process_time() - cpu


def _pooled_attack(share: np.ndarray, attacks: list) -> dict:
    """The attacker's fields of :class:`HoldoutLeakage`, pooled over the folds' ``attacks``.

    Each of ``attacks`` is ``{attacker: (AUC, standard error)}``. Each attacker's AUCs weighted by the folds' held-out
    rows ``share`` and its one-sided upper bound at :data:`CONFIDENCE` from their standard errors
    (the folds' held-out rows are disjoint); the strongest attacker's AUC, the largest bound; none
    without simulated releases. Only the attackers every fold scored are pooled (the Bayes attacker
    alone before the costly ones, :class:`PendingAttackers`), in
    :data:`~privmap.offline._strongest.ATTACKERS` order.
    """
    if not attacks:
        return {}
    from scipy.stats import norm

    from ..._strongest import ATTACKERS
    rows = []
    for name in (n for n in ATTACKERS if all(n in attack for attack in attacks)):
        aucs, errors = np.array([attack[name] for attack in attacks], dtype=float).T
        auc = float(share @ aucs)
        error = float(np.sqrt(np.sum((share * errors) ** 2)))
        rows.append((name, auc, min(1.0, auc + float(norm.ppf(CONFIDENCE)) * error)))
    strongest = max(rows, key=lambda row: row[1])
    return {"attacker_auc": strongest[1], "attacker_auc_high": max(row[2] for row in rows),
            "attacker": strongest[0], "attackers": tuple(rows)}


def fold_options(options: Seed000Options, dataset: Dataset, rows: np.ndarray) -> Seed000Options:
    """The build's options for the training fold of ``dataset`` at the indexes ``rows``, shape (m,).

    K is capped at the fold's distinct rows.
    """
    if not options.quantizes:
        return options
    distinct = unique_rows(dataset.public[rows])[0].shape[0]
    # clusters: a field of a quantizing mechanism's options (chosen by now), which the engine does not import
    return dataclasses.replace(options, clusters=min(cast(int, options.clusters), distinct))  # type: ignore[call-arg]


def _lookup(alphabet: Alphabet, dataset: Dataset, rows: np.ndarray, options: Seed000Options) -> np.ndarray:
    """Input index of each held-out row by the device's rule; -1 where the device would refuse it.

    The rule: the equal tuple of the exact mechanism's alphabet, else the nearest representative in
    ``options.metric``.
    """
    if not options.quantizes:
        from ._erasure import lookup
        inputs = [tuple(f["values"][v] for v, f in zip(row, alphabet.features)) for row in alphabet.inputs]
        return lookup(inputs, dataset.public[rows])
    X = dataset.public[rows]
    fills = np.array([np.nan if f.get("fill") is None else f["fill"] for f in alphabet.features], dtype=float)
    X = np.where(np.isnan(X), fills, X)  # "impute" columns take the bundle's fill; "mask" stays NaN
    return nearest(X, np.asarray(alphabet.inputs, dtype=float), options.metric)


def fold_estimate(fit: Solved | SimpleNamespace, dataset: Dataset | SimpleNamespace, rows: np.ndarray,
                  symbols: np.ndarray, metric: str, *, equal_inputs: bool) -> dict:
    """A fold's bracket terms, exposed shares and distortion.

    A fold's bracket terms (:func:`privmap.offline._heldout_leakage.bracket_terms`), exposed
    shares at :data:`privmap.offline.measures.EXPOSURE_FACTORS` (``exposed``, under the fold's
    training prior ``fit.p_ac``) and mean distortion on its held-out ``rows`` (looked up as
    ``symbols``); work in the table's non-zeros, not rows x K_out. With several private columns
    (``dataset.columns``), ``columns`` holds each one's bracket terms. ``equal_inputs``: each
    row equals its input symbol (the exact mechanism's lookup, or a partitioned estimate's
    per-symbol distortions), so its distortion is the alphabet's; else it is measured in
    ``metric`` from the row to the outputs.
    """
    n_classes = fit.p_ac.shape[0]
    q = sparse.csr_matrix(fit.solved.table)
    private = dataset.private[rows]
    joint = bracket_terms(private, symbols, n_classes, q)
    exposed = exposed_shares(fit.p_ac, q, joint_prior(private, symbols, n_classes, q.shape[0]))
    columns = getattr(dataset, "columns", None)
    by_column = [] if columns is None else [
        {"name": name, **bracket_terms(columns.column_codes(private, i), symbols, len(columns.values[i]), q)}
        for i, name in enumerate(columns.names)]
    reached = q[symbols].tocoo()                 # (held-out row, output) pairs the table can draw
    if equal_inputs:                             # a matched row equals its input symbol
        costs = fit.alphabet.distortion[symbols[reached.row], reached.col]
    else:
        costs = assigned_distance(dataset.public[rows], np.asarray(fit.alphabet.outputs, dtype=float),
                                  reached.col, metric, rows=reached.row)
    distortion = float(np.sum(reached.data * np.where(np.isfinite(costs), costs, 0.0))) / rows.size
    part = {"rows": rows.size, **joint, "exposed": list(exposed), "distortion": distortion}
    if by_column:
        part["columns"] = by_column
    return part


def cross_fitted_from_counts(fold_counts: np.ndarray, fold_sums: np.ndarray, alphabet: Alphabet,
                             options: Seed000Options, *, progress: Callable[[float], None] | None = None) -> HoldoutLeakage:
    """Cross-fitted leakage from fold-wise counts and distance sums, without reading rows again.

    An out-of-core build's estimate (rows in :class:`._partitioned.PartitionedRows`; the quantized mechanism, l2).

    The rows' backend put each row into a fold (out of core: a hash of (seed, partition, position
    in the partition)). For each
    fold f the prior p(a, c) and the conditional distortion D'(c, j) are taken from the other
    folds' rows only, program (19) is solved on them as the build solves (budget from that
    prior's perfect-privacy distortion when ``delta_fraction`` is given; with the codebook step,
    the same one re-solve on D'), and the held-out rows' (private class, input) pairs are scored
    by the in-memory estimator (the bracket and the exposed shares; it depends on the rows only
    through these pairs). What is shared, not refitted, per fold: the k-means centres
    (the inputs, so the device's lookup is the same) and the codebook's released rows, both
    fitted on all rows, held-out rows included. The held-out distortion is therefore optimistic:
    about the in-sample figure (5 % below the in-memory estimate, which refits k-means per fold,
    in tests/offline/scale/test_partitioned_parity.py); the leakage estimate was not (it came out
    above the in-memory one there, and benchmarks/README.md compares both with fresh users).

    Parameters
    ----------
    fold_counts : ndarray, shape (k, |A|, K_in)
        Rows per fold, private class and input.
    fold_sums : ndarray, shape (k, K_in, K_out)
        Sum of d(b, y_j) over the rows of each fold and input.
    alphabet : Alphabet
        The k-means alphabet (before the codebook step): its inputs and centre distances.
    options : QuantizedOptions
    progress : callable(float), optional, keyword-only
        Told the fraction of folds done.

    Raises
    ------
    BuildError
        A fold without held-out rows, or whose training rows lack a private class.
    """
    k = fold_counts.shape[0]
    total, total_sums = fold_counts.sum(axis=0), fold_sums.sum(axis=0)
    fold_options = dataclasses.replace(options, cross_fitting=None)
    parts = []
    for f in range(k):
        held, train = fold_counts[f], total - fold_counts[f]
        if held.sum() == 0 or train.sum(axis=1).min() == 0:
            raise BuildError(f"cross-fitting needs every private class in each of {k} folds' training rows "
                             "and held-out rows in each; lower --holdout-folds (0 skips the estimate)")
        assert options.smoothing is not None        # the build's own prior was estimated with it
        p_train = prior_from_counts(train, smoothing=options.smoothing)
        fit = solve_prior(alphabet, p_train, fold_options)
        q = fit.solved.table
        if options.codebook:
            D_train = (total_sums - fold_sums[f]) / np.maximum(train.sum(axis=0), 1)[:, None]
            q = resolve_kept(p_train, q, D_train, perfect=fit.delta >= fit.d_perfect, solver=options.solver,
                             tol_bits=options.tol_bits, warm=fit.solved)[0]
        D_held = fold_sums[f] / np.maximum(held.sum(axis=0), 1)[:, None]
        cls, sym = np.nonzero(held)
        times = held[cls, sym].astype(np.int64)
        private, symbols = np.repeat(cls, times), np.repeat(sym, times)
        # The in-memory estimator on the held-out (class, input) pairs; its equal-inputs branch reads the
        # held-out distortion as D_held[symbol] @ q[symbol], the mean over the fold's rows of E d(b, released).
        fit_like = SimpleNamespace(p_ac=p_train, solved=SimpleNamespace(table=q),
                                   alphabet=SimpleNamespace(distortion=D_held))
        parts.append(fold_estimate(fit_like, SimpleNamespace(private=private), np.arange(private.size), symbols,
                                   "l2", equal_inputs=True))
        if progress is not None:
            progress((f + 1) / k)
    return pool_folds(parts, k)                                     # no simulated releases: no attacker
