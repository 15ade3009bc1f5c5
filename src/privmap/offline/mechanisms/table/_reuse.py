"""Where a cross-fitting fold's solver starts: the build's own answer, carried to the fold's clusters.

Each fold solves program (19) again on its own clusters. Its answer is a function of the fold's
training prior, but what it costs depends on where the solver starts, and the build has just
solved the same program on nearby clusters. :class:`BuildStart` holds what the build found and
carries it over by nearest representatives: the build's table, each fold row taking the row of
its nearest build representative and each build output becoming its nearest fold
representative, with the build's multiplier, is the fast solver's warm start
(``solve_fast(warm_start=)``: the starting posteriors, multiplier and candidate pairs). The
answer is certified on the fold's own prior to the build's tolerance; a warm solve that fails is
run again cold. Delta0 needs no start: its binary transport's network simplex finds its vertex in
seconds from nothing (:mod:`privmap.offline.solvers.perfect`); the build's pairs once started
it when column generation alone took 161 rounds at K = 4096.

**When.** Only builds of at least :data:`START_CLUSTERS` clusters start their folds: there the
folds' solves dominate the build and the start saves much (UCI Adult, K = 4096: the five folds
388 CPU-s against 630 cold, Delta0's start then included); at K = 256 to 1024 a fold's solve
takes seconds, and the start changed the folds' cost by -15 % to +9 % (Adult and the survey of
benchmarks/README.md), while ``--clusters auto`` would pay a whole build of every candidate to
give its folds that start.

**Why the estimate stays sound.** The build's answers saw every row, the fold's held-out rows
among them; the fold's answer does not depend on them beyond the solver's tolerance. The fold's
table is certified within ``tol_bits`` of the optimum of the fold's *training* prior from any
start; what the start can choose is which of the tables within that tolerance the path ends on
(how soft it is, which near-ties it splits), and so can a change of the budget in its ninth
digit. Paired on the same folds (``benchmarks/bench_fold_start.py``; benchmarks/README.md,
"Folds started from the build"), the started estimates differ from the cold ones by no more
than the cold ones differ from themselves under such a nudge, in leakage and in held-out
distortion.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import sparse

from ...data import METRICS, nearest
from ...solvers import SolveResult
from .._seed000 import Seed000Options
from ._rows import Alphabet

#: Builds of at least this many clusters start their folds' solvers from their answers (module docstring).
START_CLUSTERS = 2048


def starts_folds(options: Seed000Options) -> bool:
    """Whether a build starts its folds' solvers from its answers.

    Whether a build with these options starts its folds' solvers from its answers: cross-fitting
    on, the quantized mechanism with at least :data:`START_CLUSTERS` clusters.
    """
    return (options.folds > 0 and options.quantizes
            and (options.clusters or 0) >= START_CLUSTERS)


class _Built(Protocol):
    """What a start reads of a build (a :class:`._program.Solved`, whose module imports this one)."""

    @property
    def alphabet(self) -> Alphabet: ...
    @property
    def solved(self) -> SolveResult: ...


@dataclass(frozen=True)
class BuildStart:
    """A build's answers, ready to start the solvers of its cross-fitting folds (module docstring).

    Attributes
    ----------
    centers : ndarray, shape (K, d)
        The build's input representatives.
    outputs : ndarray, shape (K_out, d)
        The build's output representatives (after its codebook step).
    table : scipy.sparse.csr_matrix, shape (K, K_out)
        The build's solved table q(c_hat | c).
    multiplier : float
        Its distortion multiplier (bits per unit distortion).
    metric : str
        The build's metric (``"l2"``, ``"l1"`` or ``"hamming"``).
    """

    centers: np.ndarray
    outputs: np.ndarray
    table: sparse.csr_matrix
    multiplier: float
    metric: str

    @classmethod
    def of(cls, solved: _Built, metric: str) -> BuildStart | None:
        """The start a build gives its folds, or None.

        The start a build's :class:`._program.Solved` gives its folds; None when its symbols are not
        finite points (the exact mechanism, or a representative with a missing cell).
        """
        if metric not in METRICS:
            return None
        centers = np.asarray(solved.alphabet.inputs, dtype=float)      # a missing cell (None) is NaN
        outputs = np.asarray(solved.alphabet.outputs, dtype=float)
        if not (np.isfinite(centers).all() and np.isfinite(outputs).all()):
            return None
        return cls(centers=centers, outputs=outputs,
                   table=sparse.csr_matrix(solved.solved.table), multiplier=float(solved.solved.multiplier),
                   metric=metric)

    def warm(self, centers: np.ndarray) -> SolveResult:
        """The build's table carried to a fold's representatives.

        The fold's inputs and outputs are both ``centers`` (K_f, d). A :class:`SolveResult` for
        ``solve_fast(warm_start=)`` whose ``table`` is sparse (K_f, K_f) and ``multiplier`` the
        build's (its figures are not the fold's: NaN).
        """
        centers = np.asarray(centers, dtype=float)
        rows = nearest(centers, self.centers, self.metric)
        out = nearest(self.outputs, centers, self.metric)
        t = self.table.tocoo()
        carried = sparse.csr_matrix((t.data, (t.row, out[t.col])), shape=(self.centers.shape[0], centers.shape[0]))
        return SolveResult(table=carried[rows], leakage_bits=math.nan, distortion=math.nan,
                           multiplier=self.multiplier, gap_bits=math.inf, status="optimal", solver="build",
                           message="the build's table carried to a fold's clusters")
