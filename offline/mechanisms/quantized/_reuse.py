"""Where a cross-fitting fold's solvers start: the build's own answers, carried to the fold's clusters.

Each fold solves the build's two programs again on its own clusters: Delta0's zero-leakage
program and program (19). Their answers are functions of the fold's training prior, but what
they cost depends on where the solvers start, and the build has just solved the same programs
on nearby clusters. :class:`BuildStart` holds what the build found and carries it over by
nearest representatives:

- **Delta0.** Pairs of the build's rows that share an output of its zero-leakage table, one on
  each side of the binary transport (:func:`sharing_pairs`), become pairs of the fold's rows:
  each end's ``NEIGHBOURS`` nearest fold representatives on the same side. They join the
  transport's first master (:func:`privmap.offline.solvers._transport.solve_binary`). Delta0 is
  the optimum of a linear program, certified to the same 1e-9 as before: the start changes the
  rounds, not the value.
- **Program (19).** The build's table, each fold row taking the row of its nearest build
  representative and each build output becoming its nearest fold representative, with the
  build's multiplier, is the fast solver's warm start (``solve_fast(warm_start=)``: the starting
  posteriors, multiplier and candidate pairs). The answer is certified on the fold's own prior to
  the build's tolerance; a warm solve that fails is run again cold.

**When.** Only builds of at least :data:`START_CLUSTERS` clusters start their folds: there
the folds' solves dominate the build and the start saves much (UCI Adult, K = 4096: the five
folds 388 CPU-s against 630 cold); at K = 256 to 1024 a fold's solve takes seconds, and the start
changed the folds' cost by -15 % to +9 % (Adult and the survey of benchmarks/README.md), while
``--clusters auto`` would pay a whole build of every candidate to give its folds that start.

**Why the estimate stays sound.** The build's answers saw every row, the fold's held-out rows
among them; the fold's answers do not depend on them beyond the solvers' tolerance. Delta0 is a
value, the same from any start. The fold's table is certified within ``tol_bits`` of the
optimum of the fold's *training* prior from any start; what the start can choose is which of
the tables within that tolerance the path ends on (how soft it is, which near-ties it splits),
and so can a change of the budget in its ninth digit. Paired on the same folds
(``benchmarks/bench_fold_start.py``; benchmarks/README.md, "Folds started from the build"), the
started estimates differ from the cold ones by no more than the cold ones differ from
themselves under such a nudge, in leakage and in held-out distortion.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.spatial import cKDTree

from ...data._distortion import nearest
from ...solvers._perfect import _coefficients
from ...solvers._result import SolveResult

#: Builds of at least this many clusters start their folds' solvers from their answers (module docstring).
START_CLUSTERS = 2048
#: Nearest fold representatives on the same side that each end of a build pair becomes.
NEIGHBOURS = 2
#: Outputs of the zero-leakage table shared by more pairs than this give none (the constant
#: output: every pairing through it costs the same, so none is worth carrying).
PAIRS_PER_OUTPUT = 64
#: Minkowski p of the k-d tree that finds the fold's neighbours (a hint: l1 for l1 and hamming).
_MINKOWSKI = {"l2": 2, "l1": 1, "hamming": 1}


def sides(p_ac: np.ndarray) -> np.ndarray:
    """Side of each row in the binary transport, shape (K,) int8: +1 where p(c | a_1) > p(c | a_0),
    -1 where it is smaller, 0 elsewhere or unless exactly two classes are present (``p_ac`` (|A|, K));
    the transport's own coefficients (:func:`privmap.offline.solvers._perfect._coefficients`)."""
    _, delta_a = _coefficients(np.asarray(p_ac, dtype=float))
    if delta_a.shape[1] != 1:
        return np.zeros(delta_a.shape[0], np.int8)
    return np.sign(delta_a[:, 0]).astype(np.int8)


def sharing_pairs(table: np.ndarray, side: np.ndarray) -> np.ndarray:
    """Pairs (supplier row, demander row) of ``table`` (K, K_out) that share an output, shape (m, 2)
    int64; outputs shared by more than :data:`PAIRS_PER_OUTPUT` pairs are left out."""
    r, j = np.nonzero(table)
    s_at, t_at = side[r] > 0, side[r] < 0
    sj, sr, tj, tr = j[s_at], r[s_at], j[t_at], r[t_at]
    k_out = table.shape[1]
    ns, nt = np.bincount(sj, minlength=k_out), np.bincount(tj, minlength=k_out)
    order = np.argsort(tj, kind="stable")
    tj, tr = tj[order], tr[order]
    first = np.searchsorted(tj, np.arange(k_out))
    keep = ns[sj] * nt[sj] <= PAIRS_PER_OUTPUT
    sj, sr = sj[keep], sr[keep]
    reps = nt[sj]
    offsets = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    return np.stack([np.repeat(sr, reps), tr[np.repeat(first[sj], reps) + offsets]], axis=1).astype(np.int64)


def starts_folds(options) -> bool:
    """Whether a build with these options starts its folds' solvers from its answers: cross-fitting
    on, the quantized mechanism with at least :data:`START_CLUSTERS` clusters."""
    return (options.holdout_folds > 0 and options.mechanism == "quantized"
            and (options.clusters or 0) >= START_CLUSTERS)


@dataclass(frozen=True)
class BuildStart:
    """A build's answers, ready to start the solvers of its cross-fitting folds (module docstring).

    Attributes
    ----------
    centers : ndarray, shape (K, d)
        The build's input representatives.
    pairs : ndarray, shape (m, 2) int64
        Rows of ``centers`` sharing an output of the build's zero-leakage table (:func:`sharing_pairs`).
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
    pairs: np.ndarray
    outputs: np.ndarray
    table: sparse.csr_matrix
    multiplier: float
    metric: str

    @classmethod
    def of(cls, solved, metric: str) -> "BuildStart | None":
        """The start a build's :class:`._steps.Solved` gives its folds; None when its symbols are not
        finite points (the exact mechanism, or a representative with a missing cell)."""
        if metric not in _MINKOWSKI:
            return None
        centers = np.asarray(solved.alphabet.inputs, dtype=float)      # a missing cell (None) is NaN
        outputs = np.asarray(solved.alphabet.outputs, dtype=float)
        if not (np.isfinite(centers).all() and np.isfinite(outputs).all()):
            return None
        pairs = solved.perfect_pairs if solved.perfect_pairs is not None else np.zeros((0, 2), np.int64)
        return cls(centers=centers, pairs=pairs, outputs=outputs,
                   table=sparse.csr_matrix(solved.solved.table), multiplier=float(solved.solved.multiplier),
                   metric=metric)

    def transport_pairs(self, centers: np.ndarray, p_ac: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The build's sharing pairs as pairs of rows of a fold's ``centers`` (K_f, d) with prior
        ``p_ac`` (2, K_f): each end's :data:`NEIGHBOURS` nearest fold rows on its side, every
        combination. None when there are none to give (|A| != 2, or a side empty)."""
        side = sides(p_ac)
        sup, dem = np.flatnonzero(side > 0), np.flatnonzero(side < 0)
        if self.pairs.size == 0 or sup.size == 0 or dem.size == 0:
            return None
        ends = []
        for rows, end in ((sup, self.pairs[:, 0]), (dem, self.pairs[:, 1])):
            k = min(NEIGHBOURS, rows.size)
            _, idx = cKDTree(np.asarray(centers, dtype=float)[rows]).query(
                self.centers[end], k=k, p=_MINKOWSKI[self.metric])
            ends.append(rows[np.asarray(idx).reshape(end.size, k)])
        a, b = ends
        return (np.repeat(a, b.shape[1], axis=1).ravel(), np.tile(b, (1, a.shape[1])).ravel())

    def warm(self, centers: np.ndarray) -> SolveResult:
        """The build's table carried to a fold whose inputs and outputs are both ``centers``
        (K_f, d): a :class:`SolveResult` for ``solve_fast(warm_start=)`` whose ``table`` is sparse
        (K_f, K_f) and ``multiplier`` the build's (its figures are not the fold's: NaN)."""
        centers = np.asarray(centers, dtype=float)
        rows = nearest(centers, self.centers, self.metric)
        out = nearest(self.outputs, centers, self.metric)
        t = self.table.tocoo()
        carried = sparse.csr_matrix((t.data, (t.row, out[t.col])), shape=(self.centers.shape[0], centers.shape[0]))
        return SolveResult(table=carried[rows], leakage_bits=math.nan, distortion=math.nan,
                           multiplier=self.multiplier, gap_bits=math.inf, status="optimal", solver="build",
                           message="the build's table carried to a fold's clusters")
