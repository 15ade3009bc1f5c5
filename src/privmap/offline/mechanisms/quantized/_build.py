"""The quantized mechanism's builds: rows in memory (:func:`build`) or partitions on a Dask
cluster (:func:`build_partitioned`) and :class:`._options.QuantizedOptions` in, the shared
:class:`~privmap.offline.mechanisms.Result` out (its ``detail`` a :class:`._pipeline.Build`). Both
run the one pipeline (:func:`._pipeline.build_rows`) on their rows' backend. An ``auto`` search
whose target no candidate meets fails closed (:class:`~privmap.offline._errors.TargetNotMetError`
from :func:`build_points`, before any payload) unless ``options.auto.allow_unmet``: the candidate
nearest the target is built then."""
from __future__ import annotations

import dataclasses

from ..._errors import BuildError, TargetNotMetError
from ...data import Dataset, Source
from .._result import Result
from ._autotune import choose
from ._enough import check_enough_users
from ._in_memory import InMemoryRows
from ._options import QuantizedOptions
from ._partitioned import PartitionedRows
from ._pipeline import Build, StageTimer, build_rows, start
from ._rows import Progress

__all__ = ["build", "build_points", "build_partitioned"]


def build(dataset: Dataset, options: QuantizedOptions, *, progress: Progress | None = None) -> Result:
    """Build a quantized bundle's payload from labelled rows in memory.

    Parameters
    ----------
    dataset : Dataset
        Numeric labelled rows (:meth:`~privmap.offline.data.Dataset.from_csv`, ``from_frame``);
        rows with every public cell missing are left out (``rows_all_missing_dropped``).
    options : QuantizedOptions
    progress : callable(stage: str, fraction: float) or StageTimer, optional
        Told about each stage (:class:`._pipeline.StageTimer`); a caller's own StageTimer times
        the build on it (and may have opened its ``load`` stage while it read the rows).

    Returns
    -------
    Result
        ``detail`` is the :class:`._pipeline.Build` (with the ``auto`` search's choice).

    Raises
    ------
    BuildError
        Categorical rows (the exact mechanism's), other options than :class:`QuantizedOptions`,
        bad data, too few users for the ``auto`` search's AUC target (:mod:`._enough`, before
        any work), an infeasible budget, a failing solver, or a payload the device would refuse.
    """
    if not isinstance(options, QuantizedOptions):
        raise BuildError(f"the quantized build takes QuantizedOptions, got {type(options).__name__}")
    if dataset.categorical:
        raise BuildError("the quantized mechanism reads numeric rows; categorical rows are the exact mechanism's")
    tell, rows, dropped = start(dataset, progress)
    check_enough_users(rows, options)
    built = build_points(rows, options, tell, dropped_rows=dropped)
    return Result(options.mechanism, built.payload, built)


def build_points(rows: Dataset, options: QuantizedOptions, tell: StageTimer, *, dropped_rows: int = 0) -> Build:
    """The quantized pipeline on points in memory (the rows, or a mechanism's own points: the
    recommender's factors), after the ``auto`` search when the options ask for one: it is timed
    as the stage ``auto-search`` with every fold's cost, its progress told as the fraction of its
    tasks done with the tasks and the candidate being judged (``tell``'s ``detail``), and the build
    ships what it measured.
    Raises as :func:`build`."""
    held = InMemoryRows(rows, dropped_rows)
    if options.auto is None:
        return build_rows(held, options, tell)
    tell("auto-search", 0.0)
    choice = choose(rows, options, progress=lambda done, total, current: tell(
        "auto-search", done / max(total, 1), f"{done}/{total} tasks, {current}"))
    tell.close()
    tell.attach_search("auto-search", choice.fold_costs, candidates=list(choice.candidate_costs))
    if not choice.met and not options.auto.allow_unmet:          # fail closed: no bundle for an unmet target
        raise TargetNotMetError(choice.unmet_message())
    built = build_rows(held, choice.chosen(options), tell, **choice.build_kwargs())
    return dataclasses.replace(built, choice=choice)


def build_partitioned(src: Source, options: QuantizedOptions, client, *, kmeans: str = "minibatch",
                      progress: Progress | None = None, dask_progress: bool = False) -> Result:
    """Build a quantized bundle's payload from partitioned rows (CSV or Parquet files) on a Dask
    cluster: the pipeline of :func:`build` on :class:`._partitioned.PartitionedRows`.

    Parameters
    ----------
    src : Source
        The partitioned rows (:func:`privmap.offline.data.open_source`).
    options : QuantizedOptions
        l2 metric; ``declared``, ``missing``, ``codebook`` and ``cross_fitting`` as in memory
        (:mod:`._partitioned` says what differs); no ``auto``, posteriors prior or robust certificate.
    client : distributed.Client
        Where the partitions are processed (:func:`._partitioned.dask_client`).
    kmeans : {"minibatch", "dask-ml", "in-memory"}, keyword-only
    progress : callable(stage, fraction), optional, keyword-only
        Told about each stage and pass (a :class:`._pipeline.StageTimer` times them).
    dask_progress : bool, keyword-only
        Show Dask's text progress bar of every pass on stderr.

    Returns
    -------
    Result
        Its ``detail`` a :class:`._pipeline.Build` whose ``dataset`` is the source's
        :class:`._partitioned.SourceSummary`; ``alphabet.labels`` and ``alphabet.raw_distortion``
        are None (psi never leaves the workers).

    Raises
    ------
    BuildError
        As :class:`._partitioned.PartitionedRows` and the pipeline; a cross-fitting fold without
        some private class (fewer cross-fitting folds).
    """
    tell = progress if isinstance(progress, StageTimer) else StageTimer(progress)
    rows = PartitionedRows(src, options, client, kmeans=kmeans, progress=tell, dask_progress=dask_progress)
    built = build_rows(rows, options, tell)
    return Result(options.mechanism, built.payload, built)
