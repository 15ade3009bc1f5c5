"""Program (19) on a dataset: the alphabet (k-means representatives, or the exact mechanism's
tuples and erasures), the prior p(a, c), the solve with its guarantees (robust search, per-output
limit) and the codebook step: the part of a seed-000 build that cross-fitting repeats on each
fold. The options that decide them are :class:`._options.QuantizedOptions` and
:class:`privmap.offline.mechanisms.exact.ExactOptions`.

:mod:`._pipeline` runs these steps and then compresses the table, measures the cross-fitted
leakage (:mod:`._holdout`, which runs them again on each fold) and writes the payload.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..._errors import BuildError, SolverError
from ..._information import max_output_leakage_bits
from ...data import Column, Dataset, joint_prior, pairwise, posterior_prior, resolve
from ...solvers import (
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
from ._codebook import Codebook, metric_center, refine
from ._missing import missing_alphabet
from ._options import QuantizedOptions
from ._reuse import BuildStart

__all__ = ["Progress", "Alphabet", "Solved", "solve_dataset", "solve_prior", "robust_set"]

Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class Alphabet:
    """Input and output symbols of program (19) with the feature schema.

    ``inputs`` (K_in, d) and ``outputs`` (K_out, d) hold bundle cells: numbers, or
    category indexes (None = erased). ``labels`` (n,) is psi of each data row,
    ``distortion`` (K_in, K_out) the metric between symbols (inf = forbidden),
    ``raw_distortion`` a function of (row indexes, output indexes) giving
    d(b, output) on raw rows, ``r`` and ``quantization_distortion`` the radius and
    mean distance of rows to their input symbol.
    """

    features: list[dict]
    inputs: list[list]
    outputs: list[list]
    labels: np.ndarray
    distortion: np.ndarray
    raw_distortion: Callable[[np.ndarray, np.ndarray], np.ndarray]
    r: float
    quantization_distortion: float
    schema: tuple[Column, ...] = ()


@dataclass(frozen=True)
class Solved:
    """A dataset's alphabet, prior and solved table (before compression): the part of a build
    that cross-fitting repeats on each fold.

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
    codebook: "Codebook | None" = None


def solve_dataset(dataset: Dataset, options: Seed000Options, *, progress: Progress | None = None,
                  quantizer: Callable | None = None, start: BuildStart | None = None) -> Solved:
    """Quantize (or build the erasure alphabet), estimate the prior, solve program (19), and run
    the codebook step; everything :func:`._pipeline.build` does before compressing the table.

    ``quantizer`` (keyword-only) replaces :func:`~privmap.offline.data._quantize.quantize` with a
    callable of its signature (a cross-fitting fold's k-means, :class:`._holdout.FoldKMeans`);
    ``start`` (keyword-only) is where a fold's solvers start (:func:`solve_prior`).

    Raises
    ------
    BuildError
        As :func:`._pipeline.build`.
    """
    tell = progress or (lambda stage, fraction: None)
    tell("cluster", 0.05)
    alphabet = (_exact_alphabet(dataset) if options.mechanism == "exact"
                else _quantized_alphabet(dataset, options, quantizer=quantizer))
    k_in = len(alphabet.inputs)
    tell("prior", 0.2)
    if options.prior == "posteriors":
        if np.isnan(dataset.public).any():
            raise BuildError("the posteriors prior needs rows without missing cells")
        p_ac = posterior_prior(dataset.public, dataset.private, alphabet.labels, len(dataset.classes), k_in,
                               seed=options.seed)
    else:
        p_ac = joint_prior(dataset.private, alphabet.labels, len(dataset.classes), k_in,
                           smoothing=options.smoothing)
    return solve_prior(alphabet, p_ac, options, dataset=dataset, progress=tell, start=start)


def solve_prior(alphabet: Alphabet, p_ac: np.ndarray, options: Seed000Options, *, dataset: Dataset | None = None,
                progress: Progress | None = None, start: BuildStart | None = None) -> Solved:
    """Program (19) on an alphabet and prior p(a, c) (shape (|A|, K_in)): the perfect-privacy
    distortion, the budget, the solve, and the codebook step when ``options.codebook`` is set and
    the raw rows ``dataset`` are at hand (a partitioned build passes none and skips it).

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
    perfect_table, d_perfect = perfect_privacy_table(p_ac, alphabet.distortion)
    delta = options.delta if options.delta is not None else options.delta_fraction * d_perfect
    tell("solve", 0.35)
    perfect = delta >= d_perfect
    limit = None if options.output_limit is None else options.output_limit.bits
    if perfect:
        solved = perfect_privacy_solution(p_ac, alphabet.distortion, perfect_table)
    if limit is not None and not (perfect and _ships_within(solved, p_ac, alphabet.distortion, delta, options)):
        solved = solve_for_shipping(p_ac, alphabet.distortion, delta, limit, bits=options.bits)
    elif not perfect:
        solved = _solve_from(start, centers, p_ac, alphabet.distortion, delta, options,
                             progress=lambda f: tell("solve", 0.35 + 0.4 * f))
    if not (options.codebook and dataset is not None):
        solved = _robust_search(dataset, alphabet, p_ac, solved, float(delta), options, perfect=perfect, tell=tell)
        return Solved(alphabet=alphabet, p_ac=p_ac, solved=solved, delta=float(delta), d_perfect=d_perfect,
                      budget=float(delta))
    tell("codebook", 0.75)
    alphabet, solved, step = _with_codebook(dataset, alphabet, p_ac, solved, options, perfect=perfect,
                                            progress=lambda f: tell("codebook", 0.75 + 0.15 * f))
    solved = _robust_search(dataset, alphabet, p_ac, solved, step.distortion, options, perfect=perfect, tell=tell)
    return Solved(alphabet=alphabet, p_ac=p_ac, solved=solved, delta=float(delta), d_perfect=d_perfect,
                  budget=step.distortion, codebook=step)


def _solve_from(start: BuildStart | None, centers, p_ac, D, delta: float, options: Seed000Options,
                progress) -> SolveResult:
    """Program (19) by ``options.solver``; with a ``start`` and the fast solver, warm-started from
    the build's table carried to ``centers`` (:meth:`._reuse.BuildStart.warm`), and run again cold
    when that start fails (a start decides the path, not whether a certificate exists)."""
    if start is not None and options.solver == "fast":
        try:
            return solve(p_ac, D, delta, solver="fast", tol_bits=options.tol_bits, progress=progress,
                         warm_start=start.warm(centers))
        except SolverError:
            pass
    return solve(p_ac, D, delta, solver=options.solver, tol_bits=options.tol_bits, progress=progress)


def robust_set(dataset, alphabet: Alphabet, p_ac: np.ndarray, confidence: float):
    """The confidence set (:mod:`privmap.offline.solvers.robust`) of the training rows'
    cluster counts at ``confidence``, centred on the prior the build solved on."""
    counts = np.zeros(p_ac.shape)
    np.add.at(counts, (np.asarray(dataset.private), np.asarray(alphabet.labels)), 1.0)
    return confidence_set(counts, confidence, centre_prior=p_ac)


def _robust_search(dataset, alphabet: Alphabet, p_ac: np.ndarray, solved: SolveResult, budget: float,
                   options: Seed000Options, *, perfect: bool, tell: Progress) -> SolveResult:
    """With ``options.robust``: the table of least certified worst-case leakage over the
    confidence set among the robust search's candidates (:func:`~privmap.offline.solvers.
    solve_robust`), the average-case ``solved`` among them; otherwise ``solved`` itself."""
    if options.robust is None or perfect:
        return solved
    if dataset is None:
        raise BuildError("--robust needs the training rows (not available to a partitioned build)")
    tell("robust", 0.9)
    cs = robust_set(dataset, alphabet, p_ac, options.robust.confidence)
    D = alphabet.distortion
    return solve_robust(cs, D, budget, start=solved,
                        solve=lambda prior, b: solve(prior, D, b, solver=options.solver,
                                                     tol_bits=options.tol_bits)).solved


def _ships_within(solved: SolveResult, p_ac: np.ndarray, distortion: np.ndarray, delta: float,
                  options: Seed000Options) -> bool:
    """Whether ``solved``'s table, rounded as :func:`._pipeline.assemble` will round it, meets the
    per-output limit."""
    table = compress(solved.table, p_ac, distortion, delta, bits=options.bits)
    return max_output_leakage_bits(p_ac, table.probabilities()) <= options.output_limit.bits


def _with_codebook(dataset: Dataset, alphabet: Alphabet, p_ac: np.ndarray, solved: SolveResult,
                   options: Seed000Options, *, perfect: bool, progress) -> tuple[Alphabet, SolveResult, Codebook]:
    """The codebook step on a quantized alphabet: outputs moved, distortion matrix and table replaced."""
    X = dataset.public
    integer = np.array([c.integer for c in alphabet.schema])
    distance, centre, project = metric_center(options.metric, integer=integer,
                                              lo=np.array([c.min for c in alphabet.schema], dtype=float),
                                              hi=np.array([c.max for c in alphabet.schema], dtype=float))
    step = refine(X, alphabet.labels, p_ac, solved.table, np.asarray(alphabet.outputs, dtype=float),
                  distance=distance, centre=centre, project=project, perfect=perfect, solver=options.solver,
                  tol_bits=options.tol_bits, progress=progress, warm_start=solved)
    outputs = step.outputs

    def raw_distortion(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        return distance(X[rows], outputs[columns])

    cells = [[int(v) if is_int else float(v) for v, is_int in zip(row, integer)] for row in outputs]
    moved = dataclasses.replace(alphabet, outputs=cells, distortion=step.distortion_matrix,
                                raw_distortion=raw_distortion)
    last = step.solved or solved
    result = SolveResult(table=step.table, leakage_bits=step.leakage_bits, distortion=step.distortion,
                         multiplier=last.multiplier, gap_bits=last.gap_bits, status="optimal", solver=last.solver,
                         message=last.message)
    return moved, result, step


def _quantized_alphabet(dataset: Dataset, options: QuantizedOptions, *, quantizer: Callable | None = None) -> Alphabet:
    schema = resolve(dataset.features, dataset.public, options.declared)
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
    from ._erasure import categorical_code, erasure_problem
    problem = erasure_problem(dataset.public, dataset.private, len(dataset.classes), dataset.features)
    features, code = categorical_code(dataset.features, problem.inputs)
    inputs = [[code[i][v] for i, v in enumerate(row)] for row in problem.inputs]
    outputs = [[None if v is None else code[i][v] for i, v in enumerate(row)] for row in problem.outputs]
    D = problem.distortion

    def raw_distortion(rows: np.ndarray, outputs_: np.ndarray) -> np.ndarray:
        return D[problem.labels[rows]][:, outputs_]

    return Alphabet(features=features, inputs=inputs, outputs=outputs, labels=problem.labels, distortion=D,
                    raw_distortion=raw_distortion, r=0.0, quantization_distortion=0.0)
