"""Program (19) on a build's rows.

The alphabet (k-means representatives, or the exact mechanism's tuples and erasures), the prior
p(a, c), the solve with its guarantees (robust search, per-output limit) and the codebook step:
the part of a seed-000 build that cross-fitting repeats on each fold. The options that decide
them are :class:`privmap.offline.mechanisms.quantized.QuantizedOptions` and
:class:`privmap.offline.mechanisms.exact.ExactOptions`; the rows are read through the backend
interface :class:`._rows.Rows`, so rows in memory and partitions on a cluster take these steps alike.

:mod:`._pipeline` runs these steps and then compresses the table, measures the cross-fitted
leakage and writes the payload.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..._errors import BuildError, SolverError
from ..._information import max_output_leakage_bits
from ...data import Quantization, prior_from_counts
from ...solvers import (
    ConfidenceSet,
    SolveResult,
    compress,
    confidence_set,
    perfect_privacy_solution,
    perfect_privacy_table,
    solve,
    solve_for_shipping,
    solve_robust,
)
from .._seed000 import Seed000Options
from ._codebook import Codebook
from ._reuse import BuildStart
from ._rows import Alphabet, Progress, Rows

__all__ = ["Solved", "solve_rows", "solve_prior", "robust_set"]


@dataclass(frozen=True)
class Solved:
    """The rows' alphabet, prior and solved table, before compression.

    The part of a build that cross-fitting repeats on each fold.

    ``delta`` is the budget asked for (``options.delta`` or the fraction of ``d_perfect``);
    ``budget`` the one the table was finally held to (``delta``, or the distortion the
    codebook step reached); ``codebook`` is None when the step did not run.
    """

    alphabet: Alphabet
    p_ac: np.ndarray
    solved: SolveResult
    delta: float
    d_perfect: float
    budget: float
    codebook: Codebook | None = None


def solve_rows(rows: Rows, options: Seed000Options, *, progress: Progress | None = None,
               quantizer: Callable[..., Quantization] | None = None, start: BuildStart | None = None) -> Solved:
    """A build's solve on its rows, before the table is compressed.

    Cluster the rows (or build the erasure alphabet), estimate the prior, solve program (19),
    and run the codebook step; everything :func:`._pipeline.build_rows` does before compressing
    the table.

    Parameters
    ----------
    rows : Rows
        Where the rows are read (:class:`._in_memory.InMemoryRows`, :class:`._partitioned.PartitionedRows`).
    options : QuantizedOptions or ExactOptions
    progress : callable(stage, fraction), optional, keyword-only
        Told "cluster", "prior", then :func:`solve_prior`'s stages.
    quantizer : callable, optional, keyword-only
        Replaces the k-means (:meth:`._rows.Rows.alphabet`; a cross-fitting fold's,
        :class:`._holdout.FoldKMeans`).
    start : BuildStart, optional, keyword-only
        Where a fold's solvers start (:func:`solve_prior`).

    Raises
    ------
    BuildError
        As :func:`._pipeline.build_rows`.
    """
    tell = progress or (lambda stage, fraction: None)
    tell("cluster", 0.05)
    alphabet = rows.alphabet(options, quantizer=quantizer)
    tell("prior", 0.2)
    if options.prior == "posteriors":
        p_ac = rows.posterior_prior(alphabet, seed=options.seed)
    else:
        if options.smoothing is None:
            raise BuildError("smoothing None is chosen by auto before the build; give a number >= 0")
        p_ac = prior_from_counts(rows.counts(alphabet), smoothing=options.smoothing)
    return solve_prior(alphabet, p_ac, options, rows=rows, progress=tell, start=start)


def solve_prior(alphabet: Alphabet, p_ac: np.ndarray, options: Seed000Options, *, rows: Rows | None = None,
                progress: Progress | None = None, start: BuildStart | None = None) -> Solved:
    """Program (19) on an alphabet and prior p(a, c), shape (|A|, K_in).

    The perfect-privacy distortion, the budget, the solve, and, when the ``rows`` are given,
    the codebook step (``options.codebook``; :meth:`._rows.Rows.codebook`) and the robust
    search (``options.robust``; on the rows' counts). Without rows (an out-of-core fold's
    prior) neither runs.

    ``start`` (keyword-only; a cross-fitting fold's, from the build it measures) starts the fast
    solver from the build's answer carried to this alphabet's representatives (:mod:`._reuse`):
    the same certified answer, in fewer steps.

    Raises
    ------
    BuildError
        As :func:`._pipeline.build`.
    """
    tell = progress or (lambda stage, fraction: None)
    tell("perfect-privacy", 0.25)
    centers = None if start is None else np.asarray(alphabet.inputs, dtype=float)
    perfect_table, d_perfect = perfect_privacy_table(p_ac, alphabet.distortion,
                                                     progress=lambda f: tell("perfect-privacy", 0.25 + 0.1 * f))
    if options.delta is not None:
        delta = options.delta
    elif options.delta_fraction is not None:
        delta = options.delta_fraction * d_perfect
    else:
        raise BuildError("give exactly one of --delta and --delta-fraction (auto chooses the fraction before the build)")
    tell("solve", 0.35)
    perfect = delta >= d_perfect
    limit = None if options.output_limit is None else options.output_limit.bits
    if perfect:
        solved = perfect_privacy_solution(p_ac, alphabet.distortion, perfect_table)
    if limit is not None and not (perfect and _ships_within(solved, p_ac, alphabet.distortion, delta, options)):
        solved = solve_for_shipping(p_ac, alphabet.distortion, delta, limit, bits=options.bits)
    elif not perfect:
        solved = _solve_from(start, centers, p_ac, alphabet.distortion, delta, options,
                             progress=lambda f: tell("solve", 0.35 + 0.4 * f),
                             start_outputs=np.flatnonzero(p_ac.sum(axis=0) @ perfect_table > 0))
    if not (options.codebook and rows is not None):
        solved = _robust_search(rows, alphabet, p_ac, solved, float(delta), options, perfect=perfect, tell=tell)
        return Solved(alphabet=alphabet, p_ac=p_ac, solved=solved, delta=float(delta), d_perfect=d_perfect,
                      budget=float(delta))
    tell("codebook", 0.75)
    alphabet, solved, step = rows.codebook(alphabet, p_ac, solved, options, perfect=perfect,
                                           progress=lambda f: tell("codebook", 0.75 + 0.15 * f))
    solved = _robust_search(rows, alphabet, p_ac, solved, step.distortion, options, perfect=perfect, tell=tell)
    return Solved(alphabet=alphabet, p_ac=p_ac, solved=solved, delta=float(delta), d_perfect=d_perfect,
                  budget=step.distortion, codebook=step)


def _solve_from(start: BuildStart | None, centers: np.ndarray | None, p_ac: np.ndarray, D: np.ndarray, delta: float,
                options: Seed000Options, progress: Callable[[float], None], start_outputs: np.ndarray) -> SolveResult:
    """Program (19) by the build's solver, warm-started where that pays.

    Program (19) by ``options.solver``; with a ``start`` and the fast solver, warm-started from
    the build's table carried to ``centers`` (:meth:`._reuse.BuildStart.warm`), and run again cold
    when that start fails (a start decides the path, not whether a certificate exists). A cold
    solve that starts from the interior point does so on ``start_outputs``, the outputs of the
    perfect-privacy table (``solve(start_outputs=)``): on UCI Adult's 15 occupations at K = 1,024
    they are 149 of the 183 the optimum uses, and pricing brings in the rest in one round.
    """
    if start is not None and options.solver == "fast":
        assert centers is not None                  # given with a start (solve_prior)
        try:
            return solve(p_ac, D, delta, solver="fast", tol_bits=options.tol_bits, progress=progress,
                         warm_start=start.warm(centers))
        except SolverError:
            pass
    return solve(p_ac, D, delta, solver=options.solver, tol_bits=options.tol_bits, progress=progress,
                 start_outputs=start_outputs)


def robust_set(rows: Rows, alphabet: Alphabet, p_ac: np.ndarray, confidence: float) -> ConfidenceSet:
    """The confidence set of the training rows' cluster counts.

    The confidence set (:mod:`privmap.offline.solvers.robust`) of the training rows'
    cluster counts (:meth:`._rows.Rows.counts`) at ``confidence``, centred on the prior the build
    solved on.
    """
    return confidence_set(rows.counts(alphabet), confidence, centre_prior=p_ac)


def _robust_search(rows: Rows | None, alphabet: Alphabet, p_ac: np.ndarray, solved: SolveResult, budget: float,
                   options: Seed000Options, *, perfect: bool, tell: Progress) -> SolveResult:
    """The table the robust search keeps.

    With ``options.robust``: the table of least certified worst-case leakage over the
    confidence set among the robust search's candidates (:func:`~privmap.offline.solvers.
    solve_robust`), the average-case ``solved`` among them; otherwise ``solved`` itself.
    """
    if options.robust is None or perfect:
        return solved
    if rows is None:
        raise BuildError("--robust needs the training rows")
    tell("robust", 0.9)
    cs = robust_set(rows, alphabet, p_ac, options.robust.confidence)
    D = alphabet.distortion
    return solve_robust(cs, D, budget, start=solved,
                        solve=lambda prior, b: solve(prior, D, b, solver=options.solver,
                                                     tol_bits=options.tol_bits)).solved


def _ships_within(solved: SolveResult, p_ac: np.ndarray, distortion: np.ndarray, delta: float,
                  options: Seed000Options) -> bool:
    """Whether a table meets the per-output limit once rounded.

    Whether ``solved``'s table, rounded as :func:`._pipeline.assemble` will round it, meets the
    per-output limit.
    """
    assert options.output_limit is not None         # solve_prior asks only under a per-output limit
    table = compress(solved.table, p_ac, distortion, delta, bits=options.bits)
    return max_output_leakage_bits(p_ac, table.probabilities()) <= options.output_limit.bits
