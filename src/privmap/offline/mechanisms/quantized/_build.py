"""The quantized mechanism's builds, of rows in memory or of partitions on a Dask cluster.

Rows in memory (:func:`build`) or partitions on a Dask cluster (:func:`build_partitioned`) and
:class:`._options.QuantizedOptions` in, the shared :class:`~privmap.offline.mechanisms.Result`
out (its ``detail`` a :class:`privmap.offline.mechanisms.table._pipeline.Build`). Both run the one
pipeline (:func:`privmap.offline.mechanisms.table._pipeline.build_rows`) on their rows' backend.
An ``auto`` search
whose target no candidate meets fails closed (:class:`~privmap.offline._errors.TargetNotMetError`
from :func:`build_points`, before any payload) unless ``options.auto.allow_unmet``: the candidate
nearest the target is built then.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..._errors import BuildError, TargetNotMetError
from ...data import Dataset, Source, row_keys
from .._result import Result
from ..table import (
    IN_CORE_BYTES,
    Build,
    InMemoryRows,
    PartitionedRows,
    Progress,
    StageTimer,
    build_rows,
    cross_fitted_leakage,
    in_core,
    start,
)
from ._autotune import choose
from ._enough import check_enough_users
from ._options import QuantizedOptions

__all__ = ["build", "build_points", "build_partitioned", "search_sample", "out_of_core_reason", "check_out_of_core",
           "SEARCH_USERS"]


def build(dataset: Dataset, options: QuantizedOptions, *, progress: Progress | None = None) -> Result:
    """Build a quantized bundle's payload from labelled rows in memory.

    Parameters
    ----------
    dataset : Dataset
        Numeric labelled rows (:meth:`~privmap.offline.data.Dataset.from_csv`, ``from_frame``);
        rows with every public cell missing are left out (``rows_all_missing_dropped``).
    options : QuantizedOptions
    progress : callable(stage: str, fraction: float) or StageTimer, optional
        Told about each stage (:class:`privmap.offline.mechanisms.table._pipeline.StageTimer`); a caller's own StageTimer times
        the build on it (and may have opened its ``load`` stage while it read the rows).

    Returns
    -------
    Result
        ``detail`` is the :class:`privmap.offline.mechanisms.table._pipeline.Build` (with the ``auto`` search's choice).

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


#: Most users the ``auto`` search judges its candidates on. Above it the search runs on a seeded
#: sample of this many, and the chosen candidate is built, cross-fitted and attacked over every
#: user, its target checked again there: the bundle declares what all users' folds measured,
#: never the sample's figure. The search's cost grows faster than its users (its largest K grows
#: with them: 4,096 here with the posteriors prior and 5 folds); 20,000 recommender users of 200
#: columns took 822 CPU-s (K = 2,048 chosen), and give a balanced binary attribute's AUC bound a
#: floor near 0.51 (:mod:`._enough`), well under the targets operators set.
SEARCH_USERS = 20_000


def build_points(rows: Dataset, options: QuantizedOptions, tell: StageTimer, *, dropped_rows: int = 0) -> Build:
    """The quantized pipeline on points in memory, after the ``auto`` search if one is asked for.

    The points are the rows, or a mechanism's own points (the recommender's factors). The search
    is timed as the stage ``auto-search`` with every fold's cost, its progress told as the
    fraction of its tasks done with the tasks and the candidate being judged (``tell``'s
    ``detail``), and the build ships what it measured. Over more than :data:`SEARCH_USERS` users the search judges a seeded
    sample (:func:`search_sample`) and the stage ``holdout-all`` measures the chosen candidate
    over every user.

    Raises as :func:`build`; :class:`TargetNotMetError` when the chosen candidate misses the target
    over every user (unless ``options.auto.allow_unmet``).
    """
    held = InMemoryRows(rows, dropped_rows)
    if options.auto is None:
        return build_rows(held, options, tell)
    sample = search_sample(rows, options.seed)
    tell("auto-search", 0.0)
    choice = choose(sample, options, progress=lambda done, total, current: tell(
        "auto-search", done / max(total, 1), f"{done}/{total} tasks, {current}"))
    tell.close()
    tell.attach_search("auto-search", choice.fold_costs, candidates=list(choice.candidate_costs))
    if not choice.met and not options.auto.allow_unmet:          # fail closed: no bundle for an unmet target
        raise TargetNotMetError(choice.unmet_message())
    if sample is rows:
        built = build_rows(held, choice.chosen(options), tell, **choice.build_kwargs())
        return dataclasses.replace(built, choice=choice)
    choice = dataclasses.replace(choice, searched_users=sample.n)
    chosen = choice.chosen(options)
    tell("holdout-all", 0.0)
    holdout = cross_fitted_leakage(held, chosen, attacker=True, progress=lambda f: tell("holdout-all", f))
    tell.close()
    tell.attach_search("holdout-all", holdout.fold_costs)
    if choice.met and not choice.met_by(holdout) and not options.auto.allow_unmet:
        raise TargetNotMetError(choice.unmet_over_all(holdout, rows.n))
    built = build_rows(held, chosen, tell, holdout=holdout)
    return dataclasses.replace(built, choice=choice)


def search_sample(rows: Dataset, seed: int, size: int | None = None) -> Dataset:
    """The users an ``auto`` search judges: at most ``size``, a sample blind to the private column.

    ``rows`` itself when it holds at most ``size`` users (default :data:`SEARCH_USERS`), else the
    ``size`` of least :func:`~privmap.offline.data.row_keys` key (``seed``), in the rows' order: a
    sample that depends on the seed and the number of rows alone, never on the private column.
    """
    size = SEARCH_USERS if size is None else size
    if rows.n <= size:
        return rows
    keep = np.sort(np.argpartition(row_keys(seed, 0, rows.n), size - 1)[:size])
    return dataclasses.replace(rows, public=rows.public[keep], private=rows.private[keep])


def build_partitioned(src: Source, options: QuantizedOptions, client, *, kmeans: str = "minibatch",
                      progress: Progress | None = None, dask_progress: bool = False,
                      in_core_bytes: int = IN_CORE_BYTES) -> Result:
    """Build a quantized bundle's payload from partitioned rows (CSV or Parquet files) on Dask.

    The rows are validated in a pass over the partitions; then, when they fit in
    ``in_core_bytes`` (:func:`privmap.offline.mechanisms.table._partitioned.in_core`), gathered and
    mapped by :func:`build_points` as in memory (every option); else the pipeline of :func:`build`
    runs on :class:`privmap.offline.mechanisms.table._partitioned.PartitionedRows`' passes.

    Parameters
    ----------
    src : Source
        The partitioned rows (:func:`privmap.offline.data.open_source`).
    options : QuantizedOptions
        l2 metric; out of core also ``--clusters K``, the counts prior, no robust certificate and
        no class-blind codebook (:func:`check_out_of_core`; :mod:`privmap.offline.mechanisms.table._partitioned`
        says what else differs).
    client : distributed.Client
        Where the partitions are processed (:func:`privmap.offline.mechanisms.table._partitioned.dask_client`).
    kmeans : {"minibatch", "dask-ml", "in-memory"}, keyword-only
        The k-means out of core.
    progress : callable(stage, fraction), optional, keyword-only
        Told about each stage and pass (a :class:`privmap.offline.mechanisms.table._pipeline.StageTimer` times them).
    dask_progress : bool, keyword-only
        Show Dask's text progress bar of every pass on stderr.
    in_core_bytes : int, keyword-only
        Largest size of the rows (float64) mapped in memory; 0 maps out of core always.

    Returns
    -------
    Result
        Its ``detail`` a :class:`privmap.offline.mechanisms.table._pipeline.Build`; out of core its ``dataset`` is the source's
        :class:`privmap.offline.mechanisms.table._partitioned.SourceSummary` and ``alphabet.labels`` and
        ``alphabet.raw_distortion`` are None (psi never leaves the workers).

    Raises
    ------
    BuildError
        As :class:`privmap.offline.mechanisms.table._partitioned.PartitionedRows`, :func:`build_points` and the pipeline; too few
        users for the AUC target (after the validating pass); a cross-fitting fold without some
        private class (fewer cross-fitting folds).
    """
    tell = progress if isinstance(progress, StageTimer) else StageTimer(progress)
    rows = PartitionedRows(src, options, client, kmeans=kmeans, progress=tell, dask_progress=dask_progress)
    check_enough_users(rows.dataset, options)
    if in_core(rows.n, len(src.features), in_core_bytes):
        built = build_points(rows.gathered(), options, tell, dropped_rows=rows.dropped_rows)
    else:
        check_out_of_core(options, out_of_core_reason(rows.n, len(src.features), in_core_bytes, "columns"),
                          joint=bool(src.private_columns))
        built = build_rows(rows, options, tell)
    return Result(options.mechanism, built.payload, built)


def out_of_core_reason(n: int, d: int, limit_bytes: int, what: str) -> str:
    """Why a build maps out of core, as :func:`check_out_of_core` appends it.

    The ``n`` users' points of ``d`` ``what`` each, against the limit ``limit_bytes``.
    """
    return (f" (the {n:,} users' points, {d} {what} each, take {n * max(d, 1) * 8 / 2**20:,.0f} MiB; "
            f"the in-core limit is {limit_bytes / 2**20:,.0f} MiB: --in-core-limit)")


def check_out_of_core(options: QuantizedOptions, why: str = "", *, joint: bool = False) -> None:
    """Refuse what only the mapping in memory does, for a build mapped out of core.

    Such a build runs on :class:`PartitionedRows`' passes; ``why`` says why it is out of core
    (prefixed to the advice, e.g. the users' points exceed the in-core limit).

    Raises
    ------
    BuildError
        ``auto`` clusters or smoothing, the posteriors prior, the robust certificate, the
        class-blind codebook or (``joint``) several private columns, one line naming the option.
    """
    wants = ("several private columns" if joint
             else "--clusters auto or --smoothing auto" if options.auto is not None
             else "--prior posteriors" if options.prior != "counts"
             else "--robust" if options.robust is not None
             else "--class-blind clusters" if options.class_blind else None)
    if wants is None:
        return
    raise BuildError(f"{wants} need{'' if joint else 's'} the users' points in memory{why}; out of core a build "
                     "takes one private column, --clusters K, --prior counts, and neither --robust nor --class-blind")
