"""The seed-000 pipeline.

The seed-000 pipeline: alphabet, prior, program (19), codebook step (these in
:mod:`._program`), then the integer table, the declared metrics, the cross-fitted (new-user)
leakage beside the in-sample one, and the payload; and :class:`StageTimer`, which times it.

The pipeline reads its rows through the backend interface :class:`._rows.Rows`: rows in memory
(:class:`._in_memory.InMemoryRows`) or partitions on a Dask cluster
(:class:`._partitioned.PartitionedRows`) go through the same stages.

Two mechanisms share the pipeline and differ in their alphabet and options:

- ``"quantized"`` (Algorithm 2, :class:`privmap.offline.mechanisms.quantized.QuantizedOptions`): k-means representatives
  of numeric public data are both the input and the output alphabet; the device maps a row to
  its nearest representative. Metrics ``l2`` (default), ``l1``, ``hamming``.
- ``"exact"`` (Algorithm 1, :class:`privmap.offline.mechanisms.exact.ExactOptions`): the
  observed categorical tuples are the inputs and every erasure pattern of them the outputs
  (metric ``erasures``); the device requires an exact match.

Missing answers (NaN cells, quantized mechanism only) follow ``QuantizedOptions.missing``
(see :mod:`._missing`); rows with every public cell missing are left out of the build (a device
refuses them). Feature domains come from ``QuantizedOptions.declared`` completed by inference
(:func:`privmap.offline.data.resolve`).

The metrics written into the payload are recomputed from the compressed integer
table (DESIGN invariant 1); the solver's own figures are kept beside them so the
change is visible. With several private columns (the rows' ``dataset.columns``) the table
protects their joint attribute, and each column's in-sample ``leakage_bits[COL]`` and
``leakage_before_bits[COL]`` are computed from its marginal prior p(a_i, c) and the same integer
table (:func:`privmap.offline._joint.column_figures`); the cross-fitted ones come with the
estimate (:mod:`._holdout`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import resource
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from ..._errors import SolverError
from ..._information import max_output_leakage_bits, mutual_information_bits
from ..._joint import column_figures
from ..._mismatch import mismatch_bound
from ...data import Dataset
from ...solvers import (
    CompressedTable,
    ConfidenceSet,
    SolveResult,
    certified_leakage_bits,
    certified_max_output_leakage_bits,
    compress,
)
from .._header import _tool_version, payload_header
from .._seed000 import Seed000Options
from ._codebook import Codebook
from ._holdout import HoldoutLeakage, PendingFolds
from ._program import Solved, robust_set, solve_rows
from ._rows import Alphabet, Progress, Rows

__all__ = ["Build", "StageTimer", "start", "build_rows", "assemble", "robust_metrics"]


class StageTimer:
    """Seconds and peak memory of each stage of a build; it is the build's progress callback.

    ``timer(stage, fraction)`` closes the running stage when ``stage`` names another one and
    forwards every call to ``forward`` (a progress bar); ``timer(stage, fraction, detail)`` (a
    stage's own fraction done, and a line saying where it is: the ``auto`` search's tasks and
    candidate) forwards ``detail`` as a third argument. :meth:`close` ends the last stage.
    :meth:`records` gives, in order, one dict per stage:

    ``stage``; ``seconds`` (wall clock) and ``cpu_seconds`` (user + system CPU time of this
    process, its threads on several cores counted in full; the folds' worker processes add their
    folds' own figures, below);
    ``peak_rss_bytes``: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` sampled when the stage
    ended, the largest resident set size the process had reached *since it started* (a
    high-water mark: non-decreasing over the stages, so a stage raised the peak exactly where the
    figure grows); ``children_peak_rss_bytes``: the same for the largest waited-for child
    process (``RUSAGE_CHILDREN``; 0 without children). ru_maxrss is in KiB on Linux and bytes
    on macOS; both are reported in bytes.

    The stages of a build: load (a caller may open it while it reads the rows), the ``auto``
    search as one stage, auto-search (:meth:`attach_search`), when the options ask for one,
    cluster, prior, perfect-privacy (Delta0), solve, codebook, compress, holdout-fold-1 ..
    holdout-fold-k (each ends when the build is told that fold is done), payload; the CLI adds
    encode-sign.

    Folds run in this process and in pooled worker processes, which the parent's
    ``RUSAGE_CHILDREN`` does not see until they are reaped: forked workers when the folds end,
    loky's at exit or in whatever stage loky reaps idle ones; either would then count a worker's
    whole life in that stage, folds already attributed included. Children are therefore left out
    of ``cpu_seconds``, and a worker's start-up and idle time are in no record;
    :meth:`attach_folds` adds each fold's own figures, measured by the process that ran it, to its
    ``holdout-fold-i`` record: ``fold_seconds``, ``fold_cpu_seconds``, ``fold_peak_rss_bytes``
    (that process's high-water mark), ``fold_pid``, ``fold_pooled``; and a pooled fold's CPU
    seconds are added to the record's ``cpu_seconds``. Folds run side by side, so an in-process
    fold may run while a neighbour's record is open; its CPU seconds are moved from that record
    to its own (stages change only between this process's folds, so each ran within one
    record). A fold record's ``cpu_seconds`` is then its fold's own plus this process's other
    work in that stage, and the records' sum is unchanged. The whole process tree's figure is
    what the operating system reports for the build's process and its children
    (``benchmarks/bench_build.py``), not the records' sum.
    """

    def __init__(self, forward: Progress | None = None):
        self._forward = forward
        self._records: list[dict] = []
        self._spans: list[tuple[float, float]] = []             # each record's perf_counter start, end
        self._stage: str | None = None
        self._since = self._cpu_since = 0.0

    def __call__(self, stage: str, fraction: float, detail: str | None = None) -> None:
        if stage != self._stage:
            self.close()
            if stage != "done":                       # "done" ends the build's last stage, opens none
                self._stage, self._since, self._cpu_since = stage, time.perf_counter(), _cpu_seconds()
        if self._forward is not None:
            self._forward(stage, fraction, *(() if detail is None else (detail,)))

    def close(self) -> None:
        """End the running stage (if any) and record it."""
        if self._stage is None:
            return
        now = time.perf_counter()
        self._spans.append((self._since, now))
        self._records.append({"stage": self._stage, "seconds": round(now - self._since, 3),
                              "cpu_seconds": round(_cpu_seconds() - self._cpu_since, 3),
                              "peak_rss_bytes": _peak_rss_bytes(resource.RUSAGE_SELF),
                              "children_peak_rss_bytes": _peak_rss_bytes(resource.RUSAGE_CHILDREN)})
        self._stage = None

    def attach_folds(self, costs: Iterable[dict]) -> None:
        """Each fold's own cost, added to its stage's record.

        Add each fold's own cost (:attr:`._holdout.HoldoutLeakage.fold_costs`) to its closed
        ``holdout-fold-i`` record (class docstring); a fold without a record is skipped.
        """
        by_stage = {r["stage"]: r for r in self._records}
        for cost in costs:
            record = by_stage.get(f"holdout-fold-{cost['fold']}")
            if record is None:
                continue
            record.update(fold_seconds=cost["seconds"], fold_cpu_seconds=cost["cpu_seconds"],
                          fold_peak_rss_bytes=cost["peak_rss_bytes"], fold_pid=cost["pid"],
                          fold_pooled=cost["pooled"])
            if not cost["pooled"]:                # take it from the record open while it ran
                ran = next((r for r, (start, end) in zip(self._records, self._spans)
                            if start <= cost["started"] < end), record)
                ran["cpu_seconds"] = round(max(ran["cpu_seconds"] - cost["cpu_seconds"], 0.0), 3)
            record["cpu_seconds"] = round(record["cpu_seconds"] + cost["cpu_seconds"], 3)

    def attach_search(self, stage: str, costs: Sequence[dict], **more: object) -> None:
        """The folds' cost, added to the record of the stage they ran in.

        Add to the closed record ``stage`` the cost of the folds run during it (``costs`` as
        :attr:`privmap.offline.mechanisms.quantized.Choice.fold_costs`): ``folds`` (how many), ``fold_cpu_seconds`` (their
        CPU seconds together), the pooled folds' CPU seconds to its ``cpu_seconds`` (those of
        this process's folds are in it already), and the keys of ``more`` as they are.
        """
        record = next(r for r in self._records if r["stage"] == stage)
        record.update(folds=len(costs), fold_cpu_seconds=round(sum(c["cpu_seconds"] for c in costs), 3), **more)
        record["cpu_seconds"] = round(record["cpu_seconds"] + sum(c["cpu_seconds"] for c in costs if c["pooled"]), 3)

    def records(self) -> list[dict]:
        """The closed stages, in order (see the class docstring)."""
        return [dict(r) for r in self._records]


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process (not of its children: :class:`StageTimer`)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def _peak_rss_bytes(who: int) -> int:
    peak = resource.getrusage(who).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


@dataclass(frozen=True)
class Build:
    """What a seed-000 build computed (:attr:`privmap.offline.mechanisms.Result.detail`).

    The payload to sign and the pieces behind it.

    ``dataset`` is the rows the prior was estimated from (:attr:`._rows.Rows.dataset`: a
    :class:`~privmap.offline.data.Dataset`, or a partitioned source's summary), ``dropped_rows`` how many rows were
    left out for having every public cell missing, ``p_ac`` the prior (|A|, K_in), ``solved``
    program (19)'s table before compression and ``table`` the shipped integer table; ``stages``
    the :class:`StageTimer` that timed the build, and ``choice`` the ``auto`` search's
    (:class:`privmap.offline.mechanisms.quantized.Choice`) when the options asked for one.
    """

    payload: dict
    dataset: object
    alphabet: Alphabet
    dropped_rows: int
    p_ac: np.ndarray
    solved: SolveResult
    table: CompressedTable
    stages: StageTimer | None = field(default=None, compare=False)
    choice: object = field(default=None, compare=False)


def start(dataset: Dataset, progress: Progress | None = None) -> tuple[StageTimer, Dataset, int]:
    """A build's first stage, ``load``: the timer and the rows.

    The timer is ``progress`` itself when it is a :class:`StageTimer` a caller started (its
    ``load`` stage perhaps already open while it read the rows), else one forwarding to
    ``progress``. The rows are returned without those whose every public cell is missing, with
    how many those were.
    """
    tell = progress if isinstance(progress, StageTimer) else StageTimer(progress)
    tell("load", 0.0)
    rows, dropped = dataset.without_all_missing()
    return tell, rows, dropped


def build_rows(rows: Rows, options: Seed000Options, tell: StageTimer, *, holdout: HoldoutLeakage | None = None,
               solved: Solved | None = None) -> Build:
    """The pipeline on a build's rows (module docstring).

    Parameters
    ----------
    rows : Rows
        The training rows (none with every public cell missing: :func:`start`), in memory
        (:class:`._in_memory.InMemoryRows`) or partitioned (:class:`._partitioned.PartitionedRows`).
    options : QuantizedOptions or ExactOptions
    tell : StageTimer
        The build's timer (from :func:`start`; its ``load`` stage open). It is told about each
        stage ("cluster", "prior", "perfect-privacy", "solve", "codebook", "compress",
        "holdout-fold-1" .. "holdout-fold-k", "payload") and the fraction of the build done.
    holdout : HoldoutLeakage, optional, keyword-only
        The cross-fitted estimate of these rows and options, already measured (``auto`` measured
        it to choose K): written into the bundle as it is, not re-estimated.
    solved : Solved, optional, keyword-only
        These rows and options already solved (``auto`` built each candidate): the bundle ships
        it instead of solving again.

    Folds that the rows can set going before the build's own stages
    (:meth:`._rows.Rows.start_cross_fitting`: worker processes, in memory) are started first and
    joined at "holdout-fold-1". A mechanism that derives its own rows (the recommender's factor
    points) enters here.

    Raises
    ------
    BuildError
        Bad data (DatasetError), infeasible budget (InfeasibleError), a solver that fails
        (SolverError), or a payload the device would refuse.
    """
    with contextlib.ExitStack() as folding:
        pending = None
        if holdout is None and solved is None and options.folds:
            pending = rows.start_cross_fitting(options)
        if pending is not None:                      # the workers fold while this process builds
            folding.enter_context(pending)
            folding.enter_context(threadpool_limits(limits=pending.threads_left))
        done = solved if solved is not None else solve_rows(rows, options,
                                                            progress=lambda stage, f: tell(stage, 0.8 * f))
        built = assemble(rows, done, options, tell, holdout=holdout, pending=pending)
    return dataclasses.replace(built, stages=tell)


def assemble(rows: Rows, done: Solved, options: Seed000Options, tell: Progress, *,
             holdout: HoldoutLeakage | None = None, pending: PendingFolds | None = None) -> Build:
    """The build from the solved table on: compression, metrics, cross-fitting, payload.

    Parameters
    ----------
    rows : Rows
        The rows the prior was estimated from.
    done : Solved
        From :func:`._program.solve_rows` or :func:`._program.solve_prior`.
    options : QuantizedOptions or ExactOptions
    tell : callable(stage, fraction)
    holdout : HoldoutLeakage, optional, keyword-only
        A cross-fitted estimate already measured for these rows and options (written as it is);
        otherwise one is measured when ``options.cross_fitting`` is set
        (:meth:`._rows.Rows.cross_fitted`).
    pending : PendingFolds, optional, keyword-only
        That estimate's folds, set going before the build's own stages
        (:meth:`._rows.Rows.start_cross_fitting`): this process joins them here.

    Raises
    ------
    BuildError
        As :func:`build_rows`.
    """
    tell("compress", 0.72)
    table = compress(done.solved.table, done.p_ac, done.alphabet.distortion, done.budget, bits=options.bits)
    shipped = _Shipped(rows=rows, done=done, options=options, table=table)
    metrics = _table_metrics(shipped)
    index, weight = table.rows()
    metrics.update(_mismatch_metrics(shipped))
    if done.codebook is not None:
        metrics.update(_codebook_metrics(done.codebook))
    if options.robust is not None:
        metrics.update(robust_metrics(robust_set(rows, done.alphabet, done.p_ac, options.robust.confidence), table))
    if holdout is not None:
        metrics.update(holdout.metrics())
    elif options.folds:
        metrics.update(_cross_fitted_metrics(shipped, tell, pending))
    tell("payload", 0.99)
    payload = _payload(shipped, metrics, index, weight)
    tell("done", 1.0)
    return Build(payload=payload, dataset=rows.dataset, alphabet=done.alphabet, dropped_rows=rows.dropped_rows,
                 p_ac=done.p_ac, solved=done.solved, table=table)


@dataclass(frozen=True)
class _Shipped:
    """What the build's metrics and payload are computed from.

    What :func:`assemble`'s metrics and payload are each computed from: the rows, the solved
    program, the options and the integer table the bundle ships (its figures, not the solver's,
    are the declared ones: DESIGN invariant 1).
    """

    rows: Rows
    done: Solved
    options: Seed000Options
    table: CompressedTable


def _table_metrics(shipped: _Shipped) -> dict:
    """The payload's first metrics.

    The payload's first metrics, in their order: the shipped table's leakage and distortion
    beside the solver's, the alphabet's, the rows', the solver's gap where finite, each private
    column's own figures (several columns) and the output-leakage figures.
    """
    rows, done, table = shipped.rows, shipped.done, shipped.table
    alphabet, p_ac, solved, delta = done.alphabet, done.p_ac, done.solved, done.delta
    measured = rows.measured_distortion(alphabet, table)
    metrics = {
        "leakage_bits": table.leakage_bits,
        "distortion": table.distortion,
        "delta": float(delta),
        "r": alphabet.r,
        "delta_plus_r": float(delta) + alphabet.r,
        "clusters": len(alphabet.inputs),
        "outputs": len(alphabet.outputs),
        "n": rows.n,
        "perfect_privacy_distortion": done.d_perfect,
        "leakage_before_bits": mutual_information_bits(p_ac),
        "quantization_distortion": alphabet.quantization_distortion,
        "measured_distortion": measured,
        "solved_leakage_bits": solved.leakage_bits,
        "solved_distortion": solved.distortion,
        "leakage_change_bits": table.leakage_bits - solved.leakage_bits,
        "multiplier": solved.multiplier,
        "repaired_units": table.repaired_units,
        "rows_all_missing_dropped": rows.dropped_rows,
        "missing_cell_fraction": rows.missing_cell_fraction,
    }
    if math.isfinite(solved.gap_bits):
        metrics["solver_gap_bits"] = solved.gap_bits
    columns = getattr(rows.dataset, "columns", None)
    if columns is not None:              # several private columns: what each leaks alone (_joint)
        metrics.update(column_figures(p_ac, table.probabilities(), columns))
    limit = None if shipped.options.output_limit is None else shipped.options.output_limit.bits
    metrics.update(_output_leakage_metrics(p_ac, table, limit))
    return metrics


def _mismatch_metrics(shipped: _Shipped) -> dict:
    """The prior-mismatch bound's metrics for a prior estimated from these rows.

    At confidence 0.95; the leakage bound only where finite.
    """
    rows, alphabet, p_ac = shipped.rows, shipped.done.alphabet, shipped.done.p_ac
    finite = alphabet.distortion[np.isfinite(alphabet.distortion)]
    bound = mismatch_bound(rows.n, len(rows.classes), len(alphabet.inputs), float(finite.max()),
                           mutual_information_bits(np.diag(p_ac.sum(axis=1))))
    metrics = {"mismatch_confidence": 0.95, "mismatch_eps": bound.eps, "mismatch_distortion_bound": bound.distortion}
    if math.isfinite(bound.leakage_bits):
        metrics["mismatch_leakage_bound_bits"] = bound.leakage_bits
    metrics["mismatch_bound_vacuous"] = int(bound.vacuous)
    return metrics


def _cross_fitted_metrics(shipped: _Shipped, tell: Progress, pending: PendingFolds | None) -> dict:
    """The cross-fitted leakage's metrics.

    The cross-fitted (new-user) leakage's metrics, measured here over ``options.folds`` folds (joining
    the ``pending`` ones), each fold its own stage; the timer is given the folds' costs.
    """
    folds = shipped.options.folds

    def fold_done(f: float) -> None:        # fold i of k reported done: the next one's stage starts
        done_folds = min(folds, int(round(f * folds)))
        tell(f"holdout-fold-{done_folds + 1}" if done_folds < folds else "payload", 0.75 + 0.25 * f)

    tell("holdout-fold-1", 0.75)
    estimate = shipped.rows.cross_fitted(shipped.done, shipped.options, progress=fold_done, pending=pending)
    if isinstance(tell, StageTimer):
        tell.attach_folds(estimate.fold_costs)
    return estimate.metrics()


def _payload(shipped: _Shipped, metrics: dict, index: list[list[int]], weight: list[list[int]]) -> dict:
    """The bundle's payload.

    The bundle's payload (docs/bundle-format.md): header, alphabet, the integer table (its rows'
    output ``index`` and ``weight``), the prior, ``metrics`` and the build's provenance.
    """
    rows, done, options, table = shipped.rows, shipped.done, shipped.options, shipped.table
    alphabet = done.alphabet
    return {
        **payload_header(options, options.mechanism),
        "metric": options.metric,
        "features": alphabet.features,
        "private": {"name": rows.private_name, "classes": list(rows.classes)},
        "inputs": alphabet.inputs,
        "outputs": alphabet.outputs,
        "table": {"bits": table.bits, "index": index, "weight": weight},
        "prior": done.p_ac.tolist(),
        "metrics": metrics,
        "provenance": {
            "tool_version": _tool_version(),
            "seed": options.seed,
            "data_sha256": rows.sha256,
            "solver": done.solved.solver,
            "clusters_requested": options.clusters if options.clusters is not None else len(alphabet.inputs),
            "smoothing": repr(options.smoothing),
            "delta_fraction": repr(options.delta_fraction) if options.delta_fraction is not None else "",
            "missing_policy": options.missing,
            "codebook": int(done.codebook is not None),
            **({"class_blind": 1} if options.class_blind else {}),
        },
    }


def robust_metrics(cs: ConfidenceSet, table: CompressedTable) -> dict:
    """The robust figures of the shipped integer table over the confidence set ``cs``.

    ``robust_leakage_bits``, ``robust_confidence`` and, when finite,
    ``robust_max_output_leakage_bits`` (docs/guarantees.md).
    """
    q = table.probabilities().toarray()
    metrics = {"robust_leakage_bits": certified_leakage_bits(cs, q), "robust_confidence": cs.confidence}
    epsilon = certified_max_output_leakage_bits(cs, q)
    if math.isfinite(epsilon):
        metrics["robust_max_output_leakage_bits"] = epsilon
    return metrics


def _output_leakage_metrics(p_ac: np.ndarray, table: CompressedTable, limit: float | None) -> dict:
    """The per-output leakage metrics.

    With a per-output ``limit``: ``max_output_leakage_bits`` of the integer table on the training prior
    (left out when infinite: an output rules a class out, and metrics hold finite numbers only) and
    the limit. Without one, nothing: the figure follows exactly from the signed table and prior, which
    ``privmap inspect`` and ``build --json`` compute it from, and a default build's payload keeps the
    keys it had before the option existed.

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
