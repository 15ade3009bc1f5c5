"""The offline build: labelled CSV -> prior -> alphabet -> program (19) -> codebook step -> integer table
-> payload, with the cross-fitted (new-user) leakage beside the in-sample one.

Two mechanisms share the pipeline and differ in their alphabet:

- ``"quantized"`` (Algorithm 2): k-means representatives of numeric public data
  are both the input and the output alphabet; the device maps a row to its
  nearest representative. Metrics ``l2`` (default), ``l1``, ``hamming``.
- ``"exact"`` (Algorithm 1): the observed categorical tuples are the inputs and
  every erasure pattern of them the outputs (metric ``erasures``); the device
  requires an exact match.

Missing answers (NaN cells, quantized mechanism only) follow ``BuildOptions.missing``
(see :mod:`privmap.offline.mechanisms._missing`); rows with every public cell
missing are left out of the build (a device refuses them). Feature domains come
from ``BuildOptions.declared`` completed by inference (:mod:`privmap.offline.data._schema`).

The metrics written into the payload are recomputed from the compressed integer
table (DESIGN invariant 1); the solver's own figures are kept beside them so the
change is visible.
"""
from __future__ import annotations

import dataclasses
import math
import resource
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .._errors import BuildError, SolverError
from .._information import max_output_leakage_bits, mutual_information_bits
from .._mismatch import mismatch_bound
from ..data._dataset import Dataset, load_dataset
from ..data._distortion import METRICS, pairwise
from ..data._prior import joint_prior
from ..data._schema import Column, Declared, resolve
from ..solvers._compress import DEFAULT_BITS, CompressedTable, compress
from ..solvers._perfect import perfect_privacy_solution, perfect_privacy_table
from ..solvers._result import SolveResult
from ..solvers._solve import SOLVERS, solve
from ._codebook import Codebook, metric_center, refine
from ._header import (
    HeaderOptions,
    _tool_version,
    check_header,
    payload_header,
)
from ._missing import DEFAULT_MISSING, MISSING_POLICIES, feature_maps, missing_alphabet

MECHANISMS = ("quantized", "exact")

Progress = Callable[[str, float], None]


class StageTimer:
    """Seconds and peak memory of each stage of a build; it is the build's progress callback.

    ``timer(stage, fraction)`` closes the running stage when ``stage`` names another one and
    forwards every call to ``forward`` (a progress bar). :meth:`close` ends the last stage.
    :meth:`records` gives, in order, one dict per stage:

    ``stage``; ``seconds`` (wall clock) and ``cpu_seconds`` (user + system CPU time of this
    process and of its waited-for children, so work on several cores counts in full);
    ``peak_rss_bytes``: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` sampled when the stage
    ended, the largest resident set size the process had reached *since it started* (a
    high-water mark: non-decreasing over the stages, so a stage raised the peak exactly where the
    figure grows); ``children_peak_rss_bytes``: the same for the largest waited-for child
    process (``RUSAGE_CHILDREN``; 0 without children). ru_maxrss is in KiB on Linux and bytes
    on macOS; both are reported in bytes.

    The stages of :func:`build`: load, cluster, prior, perfect-privacy (Delta0), solve, codebook,
    compress, holdout-fold-1 .. holdout-fold-k (each ends when the build is told that fold is
    done), payload; the CLI adds encode-sign.
    """

    def __init__(self, forward: Progress | None = None):
        self._forward = forward
        self._records: list[dict] = []
        self._stage: str | None = None
        self._since = self._cpu_since = 0.0

    def __call__(self, stage: str, fraction: float) -> None:
        if stage != self._stage:
            self.close()
            if stage != "done":                       # "done" ends the build's last stage, opens none
                self._stage, self._since, self._cpu_since = stage, time.perf_counter(), _cpu_seconds()
        if self._forward is not None:
            self._forward(stage, fraction)

    def close(self) -> None:
        """End the running stage (if any) and record it."""
        if self._stage is None:
            return
        self._records.append({"stage": self._stage, "seconds": round(time.perf_counter() - self._since, 3),
                              "cpu_seconds": round(_cpu_seconds() - self._cpu_since, 3),
                              "peak_rss_bytes": _peak_rss_bytes(resource.RUSAGE_SELF),
                              "children_peak_rss_bytes": _peak_rss_bytes(resource.RUSAGE_CHILDREN)})
        self._stage = None

    def records(self) -> list[dict]:
        """The closed stages, in order (see the class docstring)."""
        return [dict(r) for r in self._records]


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _peak_rss_bytes(who: int) -> int:
    peak = resource.getrusage(who).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


@dataclass(frozen=True, kw_only=True)
class BuildOptions(HeaderOptions):
    """Everything that decides a bundle's bytes (with the data and the key).

    Exactly one of ``delta`` (absolute budget) and ``delta_fraction`` (a fraction
    of the perfect-privacy distortion) is given. ``clusters`` is required for the
    quantized mechanism and ignored by the exact one. ``issued_at`` is unix
    seconds; None takes SOURCE_DATE_EPOCH when set, else the clock. ``codebook`` runs the
    codebook step after solving (quantized mechanism; :mod:`._codebook`). ``holdout_folds``
    is k of the cross-fitted leakage written into the metrics (:mod:`._holdout`); 0 skips it.
    ``max_output_leakage_bits`` (None: no limit) is a per-output limit eps in bits that the shipped
    table meets on the training prior, |log2 p(a | c_hat) - log2 p(a)| <= eps for every output of
    positive mass (:mod:`privmap.offline.solvers._output_limit`; the reference solver, whatever
    ``solver`` says); it needs ``codebook`` off, since the codebook step re-solves without it.

    Raises
    ------
    BuildError
        At construction, for any inconsistent or out-of-range option.
    """

    private: str
    public: tuple[str, ...] | None = None
    mechanism: str = "quantized"
    metric: str = "l2"
    clusters: int | None = None
    delta: float | None = None
    delta_fraction: float | None = None
    seed: int = 0
    missing: str = DEFAULT_MISSING
    declared: Declared | None = None
    solver: str = "fast"
    tol_bits: float = 1e-5
    bits: int = DEFAULT_BITS
    smoothing: float = 0.0
    codebook: bool = True
    holdout_folds: int = 5
    max_output_leakage_bits: float | None = None

    def __post_init__(self):
        if self.mechanism not in MECHANISMS:
            raise BuildError(f"unknown mechanism {self.mechanism!r}; expected one of {', '.join(MECHANISMS)}")
        allowed = METRICS if self.mechanism == "quantized" else ("erasures",)
        if self.metric not in allowed:
            raise BuildError(f"metric {self.metric!r} does not fit the {self.mechanism} mechanism; "
                             f"expected one of {', '.join(allowed)}")
        if (self.delta is None) == (self.delta_fraction is None):
            raise BuildError("give exactly one of delta and delta_fraction")
        if self.delta is not None and not (math.isfinite(self.delta) and self.delta >= 0):
            raise BuildError(f"delta must be a finite number >= 0, got {self.delta}")
        if self.delta_fraction is not None and not (math.isfinite(self.delta_fraction) and self.delta_fraction >= 0):
            raise BuildError(f"delta fraction must be a finite number >= 0, got {self.delta_fraction}")
        if self.mechanism == "quantized" and (self.clusters is None or self.clusters < 1):
            raise BuildError("the quantized mechanism needs clusters >= 1")
        if self.mechanism == "exact" and self.declared is not None and self.declared.columns:
            raise BuildError("declared domains (--domain, --schema) apply to numeric columns of the quantized "
                             "mechanism; the exact mechanism's domain is its categorical tuples")
        if self.missing not in MISSING_POLICIES:
            raise BuildError(f"unknown missing policy {self.missing!r}; expected one of {', '.join(MISSING_POLICIES)}")
        if self.solver not in SOLVERS:
            raise BuildError(f"unknown solver {self.solver!r}; expected one of {', '.join(SOLVERS)}")
        if not 1 <= self.bits <= 32:
            raise BuildError(f"bits must be in 1..32, got {self.bits}")
        if not (math.isfinite(self.smoothing) and self.smoothing >= 0):
            raise BuildError(f"smoothing must be >= 0, got {self.smoothing}")
        check_header(self)
        if self.seed < 0:
            raise BuildError(f"seed must be >= 0, got {self.seed}")
        if self.holdout_folds != 0 and not 2 <= self.holdout_folds <= 20:
            raise BuildError(f"holdout folds must be 0 (off) or in 2..20, got {self.holdout_folds}")
        if self.max_output_leakage_bits is not None:
            # > 0: posteriors of a rounded table equal the prior only up to floating-point error
            if not (math.isfinite(self.max_output_leakage_bits) and self.max_output_leakage_bits > 0):
                raise BuildError(f"max output leakage must be a finite number of bits > 0, "
                                 f"got {self.max_output_leakage_bits}")
            if self.codebook and self.mechanism == "quantized":
                raise BuildError("a per-output leakage limit needs the codebook step off: that step re-solves "
                                 "without the limit")


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
class Build:
    """What :func:`build` computed: the payload to sign and the pieces behind it."""

    payload: dict
    dataset: Dataset
    alphabet: Alphabet
    dropped_rows: int
    p_ac: np.ndarray
    solved: SolveResult
    table: CompressedTable
    stages: StageTimer | None = field(default=None, compare=False)


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


def solve_dataset(dataset: Dataset, options: BuildOptions, *, progress: Progress | None = None,
                  quantizer: Callable | None = None) -> Solved:
    """Quantize (or build the erasure alphabet), estimate the prior, solve program (19), and run
    the codebook step; everything :func:`build` does before compressing the table.

    ``quantizer`` (keyword-only) replaces :func:`~privmap.offline.data._quantize.quantize` with a
    callable of its signature (a cross-fitting fold's k-means, :class:`._holdout.FoldKMeans`).

    Raises
    ------
    BuildError
        As :func:`build`.
    """
    tell = progress or (lambda stage, fraction: None)
    tell("cluster", 0.05)
    alphabet = (_exact_alphabet(dataset) if options.mechanism == "exact"
                else _quantized_alphabet(dataset, options, quantizer=quantizer))
    k_in = len(alphabet.inputs)
    tell("prior", 0.2)
    p_ac = joint_prior(dataset.private, alphabet.labels, len(dataset.classes), k_in, smoothing=options.smoothing)
    return solve_prior(alphabet, p_ac, options, dataset=dataset, progress=tell)


def solve_prior(alphabet: Alphabet, p_ac: np.ndarray, options: BuildOptions, *, dataset: Dataset | None = None,
                progress: Progress | None = None) -> Solved:
    """Program (19) on an alphabet and prior p(a, c) (shape (|A|, K_in)): the perfect-privacy
    distortion, the budget, the solve, and the codebook step when ``options.codebook`` is set and
    the raw rows ``dataset`` are at hand (a partitioned build passes none and skips it).

    Raises
    ------
    BuildError
        As :func:`build`.
    """
    tell = progress or (lambda stage, fraction: None)
    tell("perfect-privacy", 0.25)
    perfect_table, d_perfect = perfect_privacy_table(p_ac, alphabet.distortion)
    delta = options.delta if options.delta is not None else options.delta_fraction * d_perfect
    tell("solve", 0.35)
    perfect = delta >= d_perfect
    limit = options.max_output_leakage_bits
    if perfect:
        solved = perfect_privacy_solution(p_ac, alphabet.distortion, perfect_table)
    if limit is not None and not (perfect and _ships_within(solved, p_ac, alphabet.distortion, delta, options)):
        from ..solvers._output_limit import solve_for_shipping
        solved = solve_for_shipping(p_ac, alphabet.distortion, delta, limit, bits=options.bits)
    elif not perfect:
        solved = solve(p_ac, alphabet.distortion, delta, solver=options.solver, tol_bits=options.tol_bits,
                       progress=lambda f: tell("solve", 0.35 + 0.4 * f))
    if not (options.codebook and options.mechanism == "quantized" and dataset is not None):
        return Solved(alphabet=alphabet, p_ac=p_ac, solved=solved, delta=float(delta), d_perfect=d_perfect,
                      budget=float(delta))
    tell("codebook", 0.75)
    alphabet, solved, step = _with_codebook(dataset, alphabet, p_ac, solved, options, perfect=perfect,
                                            progress=lambda f: tell("codebook", 0.75 + 0.15 * f))
    return Solved(alphabet=alphabet, p_ac=p_ac, solved=solved, delta=float(delta), d_perfect=d_perfect,
                  budget=step.distortion, codebook=step)


def _ships_within(solved: SolveResult, p_ac: np.ndarray, distortion: np.ndarray, delta: float,
                  options: BuildOptions) -> bool:
    """Whether ``solved``'s table, rounded as :func:`assemble` will round it, meets the per-output limit."""
    table = compress(solved.table, p_ac, distortion, delta, bits=options.bits)
    return max_output_leakage_bits(p_ac, table.probabilities()) <= options.max_output_leakage_bits


def load_training(csv_path, options: BuildOptions) -> tuple[Dataset, int]:
    """The training rows of ``csv_path`` as a build reads them: blank cells (and declared missing
    tokens) are missing answers, rows with every public cell missing are left out.

    Returns the dataset and the number of rows left out. Raises :class:`DatasetError`.
    """
    tokens = options.declared.missing_tokens() if options.declared else None
    dataset = load_dataset(csv_path, private=options.private, public=options.public,
                           categorical=options.mechanism == "exact", missing_tokens=tokens)
    return dataset.without_all_missing()


def build(csv_path, options: BuildOptions, *, progress: Progress | None = None, holdout=None) -> Build:
    """Run the offline pipeline on a CSV and return the unsigned payload.

    Parameters
    ----------
    csv_path : path-like
        Labelled CSV (header row; ``options.private`` names the private column).
    options : BuildOptions
    progress : callable(stage: str, fraction: float), optional
        Told about each stage ("load", "cluster", "prior", "perfect-privacy", "solve",
        "codebook", "compress", "holdout-fold-1" .. "holdout-fold-k", "payload") and the
        fraction of the build done.
    holdout : HoldoutLeakage, optional, keyword-only
        The cross-fitted estimate of these rows and options, already measured (``--clusters auto``
        measured it to choose K): written into the bundle as it is, not re-estimated.

    The returned build's ``stages`` is the :class:`StageTimer` that timed it (a caller may time
    more stages on it: the CLI adds "encode-sign").

    Raises
    ------
    BuildError
        Bad data (DatasetError), infeasible budget (InfeasibleError), a solver
        that fails (SolverError), or a payload the device would refuse.
    """
    tell = StageTimer(progress)
    tell("load", 0.0)
    dataset, dropped = load_training(csv_path, options)
    done = solve_dataset(dataset, options, progress=lambda stage, f: tell(stage, 0.8 * f))
    built = assemble(dataset, done, options, tell,
                     measure=lambda table: _measured_raw_distortion(done.alphabet, table),
                     dropped_rows=dropped, missing_cell_fraction=float(dataset.missing.mean()), holdout=holdout)
    return dataclasses.replace(built, stages=tell)


def assemble(dataset, done: Solved, options: BuildOptions, tell: Progress, *,
             measure: Callable[[CompressedTable], float], dropped_rows: int = 0,
             missing_cell_fraction: float = 0.0, holdout=None) -> Build:
    """The build from the solved table on: compression, metrics, cross-fitting, payload.

    Parameters
    ----------
    dataset : Dataset or an object with ``n``, ``classes``, ``private_name`` and ``sha256``
        The data the prior was estimated from (a partitioned build passes its summary, and
        cross-fitting, which needs the rows, runs only on a :class:`Dataset`).
    done : Solved
        From :func:`solve_dataset` or :func:`solve_prior`.
    options : BuildOptions
    tell : callable(stage, fraction)
    measure : callable(CompressedTable) -> float, keyword-only
        Mean over the data rows of E d(b, released) under the integer table (Theorem 2's left side).
    dropped_rows, missing_cell_fraction : keyword-only
        Rows left out for having every public cell missing, and the share of missing cells.
    holdout : HoldoutLeakage, optional, keyword-only
        A cross-fitted estimate already measured for these rows and options (written as it is);
        otherwise one is measured when ``options.holdout_folds`` is set (:mod:`._holdout`).

    Raises
    ------
    BuildError
        As :func:`build`.
    """
    alphabet, p_ac, solved, delta, d_perfect = done.alphabet, done.p_ac, done.solved, done.delta, done.d_perfect
    k_in = len(alphabet.inputs)
    tell("compress", 0.72)
    table = compress(solved.table, p_ac, alphabet.distortion, done.budget, bits=options.bits)
    measured = measure(table)
    index, weight = table.rows()
    metrics = {
        "leakage_bits": table.leakage_bits,
        "distortion": table.distortion,
        "delta": float(delta),
        "r": alphabet.r,
        "delta_plus_r": float(delta) + alphabet.r,
        "clusters": k_in,
        "outputs": len(alphabet.outputs),
        "n": dataset.n,
        "perfect_privacy_distortion": d_perfect,
        "leakage_before_bits": mutual_information_bits(p_ac),
        "quantization_distortion": alphabet.quantization_distortion,
        "measured_distortion": measured,
        "solved_leakage_bits": solved.leakage_bits,
        "solved_distortion": solved.distortion,
        "leakage_change_bits": table.leakage_bits - solved.leakage_bits,
        "multiplier": solved.multiplier,
        "repaired_units": table.repaired_units,
        "rows_all_missing_dropped": dropped_rows,
        "missing_cell_fraction": missing_cell_fraction,
    }
    if math.isfinite(solved.gap_bits):
        metrics["solver_gap_bits"] = solved.gap_bits
    metrics.update(_output_leakage_metrics(p_ac, table, options.max_output_leakage_bits))
    finite = alphabet.distortion[np.isfinite(alphabet.distortion)]
    bound = mismatch_bound(dataset.n, len(dataset.classes), k_in, float(finite.max()),
                           mutual_information_bits(np.diag(p_ac.sum(axis=1))))
    metrics["mismatch_confidence"] = 0.95
    metrics["mismatch_eps"] = bound.eps
    metrics["mismatch_distortion_bound"] = bound.distortion
    if math.isfinite(bound.leakage_bits):
        metrics["mismatch_leakage_bound_bits"] = bound.leakage_bits
    metrics["mismatch_bound_vacuous"] = int(bound.vacuous)
    if done.codebook is not None:
        metrics.update(_codebook_metrics(done.codebook))
    if holdout is not None:
        metrics.update(holdout.metrics())
    elif options.holdout_folds and isinstance(dataset, Dataset):
        from ._holdout import cross_fitted_leakage
        folds = options.holdout_folds

        def fold_done(f):        # fold i of k reported done: the next one's stage starts
            done_folds = min(folds, int(round(f * folds)))
            tell(f"holdout-fold-{done_folds + 1}" if done_folds < folds else "payload", 0.75 + 0.25 * f)

        tell("holdout-fold-1", 0.75)
        metrics.update(cross_fitted_leakage(dataset, options, progress=fold_done).metrics())
    tell("payload", 0.99)
    payload = {
        **payload_header(options, options.mechanism),
        "metric": options.metric,
        "features": alphabet.features,
        "private": {"name": dataset.private_name, "classes": list(dataset.classes)},
        "inputs": alphabet.inputs,
        "outputs": alphabet.outputs,
        "table": {"bits": table.bits, "index": index, "weight": weight},
        "prior": p_ac.tolist(),
        "metrics": metrics,
        "provenance": {
            "tool_version": _tool_version(),
            "seed": options.seed,
            "data_sha256": dataset.sha256,
            "solver": solved.solver,
            "clusters_requested": options.clusters if options.clusters is not None else k_in,
            "smoothing": repr(options.smoothing),
            "delta_fraction": repr(options.delta_fraction) if options.delta_fraction is not None else "",
            "missing_policy": options.missing,
            "codebook": int(done.codebook is not None),
        },
    }
    tell("done", 1.0)
    return Build(payload=payload, dataset=dataset, alphabet=alphabet, dropped_rows=dropped_rows, p_ac=p_ac,
                 solved=solved, table=table)


def _with_codebook(dataset: Dataset, alphabet: Alphabet, p_ac: np.ndarray, solved: SolveResult,
                   options: BuildOptions, *, perfect: bool, progress) -> tuple[Alphabet, SolveResult, Codebook]:
    """The codebook step on a quantized alphabet: outputs moved, distortion matrix and table replaced."""
    X = dataset.public
    integer = np.array([c.integer for c in alphabet.schema])
    distance, centre, project = metric_center(options.metric, integer=integer,
                                              lo=np.array([c.min for c in alphabet.schema], dtype=float),
                                              hi=np.array([c.max for c in alphabet.schema], dtype=float))
    step = refine(X, alphabet.labels, p_ac, solved.table, np.asarray(alphabet.outputs, dtype=float),
                  distance=distance, centre=centre, project=project, perfect=perfect, solver=options.solver,
                  tol_bits=options.tol_bits, progress=progress)
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


def _output_leakage_metrics(p_ac: np.ndarray, table: CompressedTable, limit: float | None) -> dict:
    """With a per-output ``limit``: ``max_output_leakage_bits`` of the integer table on the training prior
    (left out when infinite: an output rules a class out, and metrics hold finite numbers only) and
    the limit. Without one, nothing: a default build's payload stays as before the key, so the signed
    example bundles in tables/ still rebuild field by field (their key is not in the repository);
    ``privmap inspect`` computes the figure from the table and prior.

    Raises
    ------
    SolverError
        The integer table breaks ``limit`` (the solve is meant to prevent that; checked again here).
    """
    if limit is None:
        return {}
    eps = max_output_leakage_bits(p_ac, table.probabilities())
    if not eps <= limit:
        raise SolverError(f"the integer table's per-output leakage {eps:.6g} bits exceeds the limit {limit:g}")
    return {"max_output_leakage_bits": eps, "max_output_leakage_limit_bits": float(limit)}


def _codebook_metrics(step: Codebook) -> dict:
    return {"codebook_iterations": step.iterations,
            "codebook_start_distortion": step.start_distortion,
            "codebook_start_leakage_bits": step.start_leakage_bits,
            "codebook_rounding_cost": step.rounding_cost}


def _quantized_alphabet(dataset: Dataset, options: BuildOptions, *, quantizer: Callable | None = None) -> Alphabet:
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


def _measured_raw_distortion(alphabet: Alphabet, table: CompressedTable) -> float:
    """Mean over data rows of E d(b, released), exact under the integer table (Theorem 2's left side)."""
    return raw_distortion_total(alphabet.labels, alphabet.raw_distortion, table) / alphabet.labels.size


def raw_distortion_total(labels: np.ndarray, raw_distortion, table: CompressedTable) -> float:
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


def centers_alphabet(names, integer: np.ndarray, lo: np.ndarray, hi: np.ndarray, centers: np.ndarray, metric: str,
                     *, labels, raw_distortion, r: float, quantization_distortion: float) -> Alphabet:
    """The quantized alphabet of a partitioned build: numeric features (d,) whose domains are the
    observed ranges ``lo``..``hi``, with the default missing-answer rule on the device (as an
    in-memory build of the same complete rows writes), and representatives ``centers`` (K, d);
    the other fields are as in :class:`Alphabet` (``labels`` is None when the rows were never held
    at once).
    """
    schema = tuple(Column(name, bool(is_int), int(a) if is_int else float(a), int(b) if is_int else float(b),
                          True, "", ("type", "domain"))
                   for name, is_int, a, b in zip(names, integer, lo, hi))
    features = feature_maps(schema, DEFAULT_MISSING)
    cells = [[int(v) if is_int else float(v) for v, is_int in zip(row, integer)] for row in centers]
    return Alphabet(features=features, inputs=cells, outputs=[list(row) for row in cells], labels=labels,
                    distortion=pairwise(centers, centers, metric), raw_distortion=raw_distortion,
                    r=r, quantization_distortion=quantization_distortion, schema=schema)

