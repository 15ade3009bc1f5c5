"""Rows in memory as a seed-000 build reads them.

The :class:`._rows.Rows` backend of a :class:`~privmap.offline.data.Dataset`.

Every row is at hand, so the alphabet is k-means with four restarts (or the exact mechanism's
tuples and erasures), each row keeps its representative (``Alphabet.labels``), the codebook step
alternates its two steps until the distortion stops falling (:func:`._codebook.refine`), and
cross-fitting refits the whole build on each fold's training rows (:mod:`._holdout`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..._errors import BuildError
from ...data import Dataset, pairwise, posterior_prior, resolve
from ...solvers import CompressedTable, SolveResult
from .._seed000 import Seed000Options
from ._class_blind import ClassBlind
from ._codebook import Codebook, metric_center, refine
from ._erasure import categorical_code, erasure_problem
from ._holdout import HoldoutLeakage, PendingFolds, cross_fitted_leakage, start_cross_fitting
from ._missing import bundle_cells, missing_alphabet
from ._program import Solved
from ._reuse import BuildStart, starts_folds
from ._rows import Alphabet, DatasetFacts

__all__ = ["InMemoryRows", "raw_distortion_total"]


@dataclass(frozen=True)
class InMemoryRows(DatasetFacts):
    """The rows of a dataset in memory, a build's rows backend.

    The rows of ``dataset`` (none with every public cell missing:
    :meth:`~privmap.offline.data.Dataset.without_all_missing`), ``dropped_rows`` of them left out
    for that; the :class:`._rows.Rows` backend of a build in memory.
    """

    dataset: Dataset
    dropped_rows: int = 0

    @property
    def missing_cell_fraction(self) -> float:
        return float(self.dataset.missing.mean())

    def subset(self, rows: np.ndarray) -> InMemoryRows:
        """The rows at the indexes ``rows`` (shape (m,)), as a fold trains on them."""
        return InMemoryRows(dataclasses.replace(self.dataset, public=self.dataset.public[rows],
                                                private=self.dataset.private[rows]))

    def alphabet(self, options: Seed000Options, *, quantizer: Callable | None = None) -> Alphabet:
        """The alphabet of the rows in memory.

        :meth:`._rows.Rows.alphabet`: k-means under the missing-answer policy
        (:func:`._missing.missing_alphabet`), or the exact mechanism's tuples and erasures.
        """
        if not options.quantizes:
            return _exact_alphabet(self.dataset)
        return _quantized_alphabet(self.dataset, options, quantizer=quantizer)

    def counts(self, alphabet: Alphabet) -> np.ndarray:
        counts = np.zeros((len(self.dataset.classes), len(alphabet.inputs)))
        np.add.at(counts, (np.asarray(self.dataset.private), np.asarray(alphabet.labels)), 1.0)
        return counts

    def posterior_prior(self, alphabet: Alphabet, *, seed: int) -> np.ndarray:
        if np.isnan(self.dataset.public).any():
            raise BuildError("the posteriors prior needs rows without missing cells")
        return posterior_prior(self.dataset.public, self.dataset.private, _labels(alphabet), len(self.dataset.classes),
                               len(alphabet.inputs), seed=seed)

    def codebook(self, alphabet: Alphabet, p_ac: np.ndarray, solved: SolveResult, options: Seed000Options, *,
                 perfect: bool, progress: Callable[[float], None]) -> tuple[Alphabet, SolveResult, Codebook]:
        """The codebook step on the rows in memory.

        :meth:`._rows.Rows.codebook` by :func:`._codebook.refine` on the rows: outputs moved,
        distortion matrix and table replaced.
        """
        X = self.dataset.public
        integer = np.array([c.integer for c in alphabet.schema])
        distance, centre, project = metric_center(options.metric, integer=integer,
                                                  lo=np.array([c.min for c in alphabet.schema], dtype=float),
                                                  hi=np.array([c.max for c in alphabet.schema], dtype=float))
        step = refine(X, _labels(alphabet), p_ac, solved.table, np.asarray(alphabet.outputs, dtype=float),
                      distance=distance, centre=centre, project=project, perfect=perfect, solver=options.solver,
                      tol_bits=options.tol_bits, progress=progress, warm_start=solved)
        outputs = step.outputs

        def raw_distortion(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
            return distance(X[rows], outputs[columns])

        moved = dataclasses.replace(alphabet, outputs=bundle_cells(outputs, integer), distortion=step.distortion_matrix,
                                    raw_distortion=raw_distortion)
        return moved, step.solve_result(solved), step

    def measured_distortion(self, alphabet: Alphabet, table: CompressedTable) -> float:
        labels = _labels(alphabet)
        assert alphabet.raw_distortion is not None  # set with the labels, as _labels says
        return raw_distortion_total(labels, alphabet.raw_distortion, table) / labels.size

    def start_cross_fitting(self, options: Seed000Options) -> PendingFolds | None:
        """The folds set going in worker processes, or None.

        They are set going before the build's own stages where they do not start from the
        build's answers (:func:`._holdout.start_cross_fitting`); else None.
        """
        return None if starts_folds(options) else start_cross_fitting(self, options)

    def cross_fitted(self, done: Solved, options: Seed000Options, *, progress: Callable[[float], None],
                     pending: PendingFolds | None = None) -> HoldoutLeakage:
        """The cross-fitted leakage of a build on the rows in memory.

        :func:`._holdout.cross_fitted_leakage`, each fold's solvers started from ``done`` where
        that pays (:mod:`._reuse`), or the ``pending`` folds joined.
        """
        if pending is not None:
            return pending.result(progress=progress)
        start = BuildStart.of(done, options.metric) if starts_folds(options) else None
        return cross_fitted_leakage(self, options, progress=progress, build=start)


def _labels(alphabet: Alphabet) -> np.ndarray:
    """The input symbol psi of each row.

    psi of each row: an in-memory alphabet (:func:`_quantized_alphabet`, :func:`_exact_alphabet`,
    the codebook step's) always assigns the rows.
    """
    assert alphabet.labels is not None
    return alphabet.labels


def raw_distortion_total(labels: np.ndarray, raw_distortion: Callable[[np.ndarray, np.ndarray], np.ndarray],
                         table: CompressedTable) -> float:
    """Sum over rows of E d(b, released) under the integer table.

    ``labels`` (n,) is psi of each row; ``raw_distortion(rows, outputs)`` gives d(b, output),
    shape (len(rows), len(outputs)), for row indexes into the same rows.
    """
    q = table.probabilities()
    total = 0.0
    for c in range(q.shape[0]):
        rows = np.nonzero(labels == c)[0]
        if rows.size == 0:
            continue
        lo, hi = q.indptr[c], q.indptr[c + 1]
        outputs, probs = q.indices[lo:hi], q.data[lo:hi]
        total += float(np.sum(raw_distortion(rows, outputs) @ probs))
    return total


def _quantized_alphabet(dataset: Dataset, options: Seed000Options, *,
                        quantizer: Callable | None = None) -> Alphabet:
    schema = resolve(dataset.features, dataset.public, options.declared)
    if options.clusters is None:
        raise BuildError("clusters None is chosen by auto before the build; give K >= 1")
    if options.class_blind:
        quantizer = ClassBlind(np.asarray(dataset.private), len(dataset.classes), quantizer)
    found = missing_alphabet(dataset.public, schema, options.missing, clusters=options.clusters,
                             metric=options.metric, seed=options.seed, quantizer=quantizer)
    X, centers = dataset.public, found.centers

    def raw_distortion(rows: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        return pairwise(X[rows], centers[outputs], options.metric)

    return Alphabet(features=found.features, inputs=found.cells, outputs=[list(row) for row in found.cells],
                    labels=found.labels, distortion=pairwise(centers, centers, options.metric),
                    raw_distortion=raw_distortion, r=found.r, quantization_distortion=found.mean_distortion,
                    schema=schema)


def _exact_alphabet(dataset: Dataset) -> Alphabet:
    problem = erasure_problem(dataset.public, dataset.private, len(dataset.classes), dataset.features)
    features, code = categorical_code(dataset.features, problem.inputs)
    inputs = [[code[i][v] for i, v in enumerate(row)] for row in problem.inputs]
    outputs = [[None if v is None else code[i][v] for i, v in enumerate(row)] for row in problem.outputs]
    D = problem.distortion

    def raw_distortion(rows: np.ndarray, outputs_: np.ndarray) -> np.ndarray:
        return D[problem.labels[rows]][:, outputs_]

    return Alphabet(features=features, inputs=inputs, outputs=outputs, labels=problem.labels, distortion=D,
                    raw_distortion=raw_distortion, r=0.0, quantization_distortion=0.0)
