"""Where a seed-000 build reads its rows: the interface its stages are written against.

The stages (alphabet, prior, program (19), codebook step, compression, cross-fitting, payload:
:mod:`._program` and :mod:`._pipeline`) never touch a row themselves. They ask a :class:`Rows`
backend to cluster the rows and assign each to a representative, to count rows by private class
and representative, to move the released rows by the codebook step and measure the distance from
the rows to them, and to cross-fit; so the same stages build from rows in memory
(:class:`._in_memory.InMemoryRows`) and from partitions on a Dask cluster
(:class:`._partitioned.PartitionedRows`), and their payloads agree wherever their algorithms do.

:class:`Alphabet` is what the clustering gives the stages: program (19)'s input and output
symbols with the distances between them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ...data import Column
from ...solvers import CompressedTable, SolveResult
from .._seed000 import Seed000Options
from ._codebook import Codebook

__all__ = ["Progress", "Alphabet", "Rows", "DatasetFacts"]

#: progress(stage, fraction): told the stage a build is in and the fraction of the build done.
Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class Alphabet:
    """Input and output symbols of program (19) with the feature schema.

    ``inputs`` (K_in, d) and ``outputs`` (K_out, d) hold bundle cells: numbers, or
    category indexes (None = erased). ``labels`` (n,) is psi of each data row (None where the
    rows are never held at once: :class:`._partitioned.PartitionedRows`),
    ``distortion`` (K_in, K_out) the metric between symbols (inf = forbidden),
    ``raw_distortion`` a function of (row indexes, output indexes) giving
    d(b, output) on raw rows (None with ``labels``), ``r`` and ``quantization_distortion`` the
    radius and mean distance of rows to their input symbol.
    """

    features: list[dict]
    inputs: list[list]
    outputs: list[list]
    labels: np.ndarray | None
    distortion: np.ndarray
    raw_distortion: Callable[[np.ndarray, np.ndarray], np.ndarray] | None
    r: float
    quantization_distortion: float
    schema: tuple[Column, ...] = ()


class DatasetFacts:
    """The facts of a :class:`Rows` backend that its ``dataset`` already holds, read off it.

    ``n``, ``classes``, ``private_name`` and ``sha256`` of a :class:`~privmap.offline.data.Dataset`
    in memory or of a partitioned source's summary alike, so that each backend states only what
    differs (its dropped rows and missing cells, which the two keep differently).
    """

    dataset: Any

    @property
    def n(self) -> int:
        return self.dataset.n

    @property
    def classes(self) -> tuple[str, ...]:
        return self.dataset.classes

    @property
    def private_name(self) -> str:
        return self.dataset.private_name

    @property
    def sha256(self) -> str:
        return self.dataset.sha256


class Rows(Protocol):
    """Labelled rows as a seed-000 build's stages read them (module docstring).

    Attributes
    ----------
    dataset : Dataset or SourceSummary
        What the build records as the rows its prior was estimated from
        (:attr:`._pipeline.Build.dataset`).
    n : int
        Rows kept (those with every public cell missing are left out).
    classes : tuple of str
        The private classes, in code order.
    private_name, sha256 : str
        The private column and the data's SHA-256 (provenance).
    dropped_rows : int
        Rows left out for having every public cell missing.
    missing_cell_fraction : float
        Share of missing cells among the kept rows' public cells.
    """

    # read-only: a backend holds them as frozen fields or computes them
    @property
    def dataset(self) -> object: ...
    @property
    def n(self) -> int: ...
    @property
    def classes(self) -> tuple[str, ...]: ...
    @property
    def private_name(self) -> str: ...
    @property
    def sha256(self) -> str: ...
    @property
    def dropped_rows(self) -> int: ...
    @property
    def missing_cell_fraction(self) -> float: ...

    def alphabet(self, options: Seed000Options, *, quantizer: Callable | None = None) -> Alphabet:
        """The rows clustered and each assigned to its representative.

        Cluster the rows (k-means, or the exact mechanism's tuples and erasures) and assign
        every row to its representative by the device's rule. ``quantizer`` replaces the k-means
        (a cross-fitting fold's, :class:`._holdout.FoldKMeans`).

        Raises
        ------
        BuildError
            Too many clusters for the rows (DatasetError), or an alphabet this backend cannot make.
        """

    def counts(self, alphabet: Alphabet) -> np.ndarray:
        """Rows by private class and input symbol, shape (|A|, K_in), float."""

    def posterior_prior(self, alphabet: Alphabet, *, seed: int) -> np.ndarray:
        """The posteriors prior p(a, c).

        p(a, c) from a classifier's cross-fitted posteriors summed per input symbol, shape
        (|A|, K_in) (:func:`privmap.offline.data.posterior_prior`).

        Raises
        ------
        BuildError
            Rows with a missing cell, or a backend that fits no classifier.
        """

    def codebook(self, alphabet: Alphabet, p_ac: np.ndarray, solved: SolveResult, options: Seed000Options, *,
                 perfect: bool, progress: Callable[[float], None]) -> tuple[Alphabet, SolveResult, Codebook]:
        """The codebook step.

        The codebook step (:mod:`._codebook`): the released rows moved towards the rows sent to
        them, then program (19) re-solved on the new distances.

        Returns
        -------
        (Alphabet, SolveResult, Codebook)
            The alphabet with the moved outputs and the distances D'(c, j) from the rows of each
            input to them, the kept table, and the step's record.
        """

    def measured_distortion(self, alphabet: Alphabet, table: CompressedTable) -> float:
        """Mean over the rows of E d(b, released) under the integer ``table``.

        ``table`` is a :class:`~privmap.offline.solvers.CompressedTable`; the figure is
        Theorem 2's left side.
        """

    # Solved, PendingFolds and HoldoutLeakage are typed Any below: their modules import this one.
    def start_cross_fitting(self, options: Seed000Options) -> Any:
        """The cross-fitting folds set going before the build's own stages, or None.

        As :func:`._holdout.start_cross_fitting`.
        """

    def cross_fitted(self, done: Any, options: Seed000Options, *, progress: Callable[[float], None],
                     pending: Any = None) -> Any:
        """The cross-fitted (new-user) leakage of a build.

        ``done`` is the build (:class:`._program.Solved`); the folds ``pending`` are joined when
        they were started; ``progress`` is told the fraction of folds done.

        Returns
        -------
        HoldoutLeakage

        Raises
        ------
        BuildError
            A fold without some private class, or one that cannot be built.
        """
