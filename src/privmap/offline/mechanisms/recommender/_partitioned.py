"""The model modes' builds on partitioned ratings.

``privmap build DIR --utility recommender`` or ``ranking``: CSV or Parquet files too large for
memory, on a Dask cluster. No process holds more than one partition's ratings, the sample of
pass 2 and the users' points.

1. validate (:class:`~privmap.offline.mechanisms.table.PartitionedRows` on the ratings): every
   partition read and checked as the partitioned quantized build checks its rows (bad cells, a
   rating outside the declared domain, files whose columns differ, too few rated rows, one
   private class), and the ratings' schema, class counts, rows left out, blank share and SHA-256
   summed up; then too few users for an AUC target refused (the in-memory build's check).
2. sample: at most :func:`sample_size` rated rows, those of least
   :func:`~privmap.offline.data.row_keys` key (seeded by ``--seed``, independent of the ratings
   and of the private column), streamed partition by partition to the client and kept in the
   order of the files.
3. the mode's model is fitted on the sample exactly as in memory (:class:`PartitionedMode`: the
   recommender's factor model, :func:`._build.fit_model`; the ranking mode's score space).
4. fold-in: every partition's rated rows made the model's points on the workers (the device's own
   computation) and written with the private column as Parquet parts to a temporary directory,
   removed when the build ends, failed or not.
5. the mapping: when the points fit in the in-core limit
   (:func:`~privmap.offline.mechanisms.table.in_core`: 10^6 users' 11 factor coordinates take
   88 MB), gathered in file order and mapped by
   :func:`~privmap.offline.mechanisms.quantized.build_points` exactly as in memory, with every
   option (``--clusters auto`` and its targets, class-blind clusters, the posteriors prior,
   ``--robust``, the per-output limit, the cross-fitted figures over every user); beyond it, by the
   partitioned quantized pipeline's passes over the point parts (``--clusters K`` and the counts
   prior only: :func:`~privmap.offline.mechanisms.quantized.check_out_of_core`, refused before
   the sample).
6. the mode finishes the payload: the recommender calibrates its outputs out of core
   (:mod:`._calibrate`: a pass over the ratings adds up each output's pool, one over the points
   the released distortion) and makes it a recommender bundle's (:func:`._build.recommender_result`,
   as in memory); the ranking mode makes it a ranking bundle's.

When every rated row is in the sample (at most :data:`SAMPLE_USERS` users and
:data:`SAMPLE_CELLS` cells) the model, the points in their order and so the mapping are the
in-memory build's of the same rows in one file.

Why a sample is enough for the model: the model never sees the private attribute, so fitting it
on a sample leaks nothing a full fit would not, and every user, sampled or not, is folded in and
mapped. What the sample sets is the item side (a bias and ``rank`` factors per column, fitted
from that column's ratings): 10^5 users rating 5 % of the columns give each column thousands of
ratings for its ``rank + 1`` numbers, and more users shrink its error no further than the model's
own misfit. The sample is bounded in cells as well (:data:`SAMPLE_CELLS`), because the fit holds
several dense copies of it.
"""
from __future__ import annotations

import collections
import dataclasses
import glob
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

import numpy as np

from ..._errors import BuildError
from ..._joint import joint_name
from ...data import Dataset, Partition, Source, nearest, open_source, read_partition, row_keys
from .._result import Result
from ..quantized import build_points, check_enough_users, check_out_of_core, out_of_core_reason
from ..table import IN_CORE_BYTES, PartitionedRows, StageTimer, build_rows, in_core
from ._build import factor_names, factor_options, fit_model, missing_token, rating_model, recommender_result
from ._calibrate import calibrated_outputs, payload_domain, payload_table, pooled_sums, released_distance, with_outputs
from ._factors import FactorModel
from ._options import RecommenderOptions

__all__ = ["build_partitioned", "build_model_partitioned", "PartitionedMode", "Folded", "gather_points", "fold_in",
           "sample_ratings", "sample_size", "SAMPLE_USERS", "SAMPLE_CELLS"]

#: Most users the factor model of a partitioned build is fitted on.
SAMPLE_USERS = 100_000
#: Most rating cells in that sample (8 bytes each, blank ones included): the fit holds about five
#: dense copies of the sample, so 25 million cells keep it near 1 GB (25,000 users at 1,000 columns).
SAMPLE_CELLS = 25_000_000
#: Rows folded in at a time (bounds the fold-in's scratch memory to a few such blocks of ratings).
FOLD_ROWS = 8192


@dataclass(frozen=True)
class _Reading:
    """How a worker reads a partition of ratings.

    The rating columns, the private column (or the several,
    :attr:`~privmap.offline.data.Source.private`) and the declared missing tokens (column, token).
    """

    features: tuple[str, ...]
    private: str | tuple[str, ...]
    tokens: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """The name of the private labels' column in the points :func:`fold_in` writes."""
        return self.private if isinstance(self.private, str) else joint_name(self.private)

    def read(self, part: Partition) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(R, labels, rated)``: the partition's ratings, private labels and which rows rate something.

        Ratings (m, d; NaN = blank), private labels (m,), which rows rate something (m,) bool.
        """
        R, labels = read_partition(part, self.features, self.private, dict(self.tokens))
        return R, labels, ~np.all(np.isnan(R), axis=1)


def sample_size(columns: int) -> int:
    """Rows in the sample of a source of ``columns`` rating columns.

    :data:`SAMPLE_USERS`, fewer when that many rows would exceed :data:`SAMPLE_CELLS` cells (at
    least one row).
    """
    return max(1, min(SAMPLE_USERS, SAMPLE_CELLS // max(columns, 1)))


@dataclass(frozen=True)
class PartitionedMode:
    """What a model mode brings to the partitioned build (module docstring).

    ``stage``, the progress stage of its model's fit; ``fit(R, options, progress)`` ->
    ``(model, scores)`` on the sample ``R`` (n, m; NaN = not rated) as its in-memory build fits it
    (``scores``: each penalty tried -> validation RMSE, or empty); ``width(options)``, the
    coordinates of a user's point; ``names(model)``, their feature names; and
    ``finish(built, fitted, options, folded)`` -> :class:`Result`, the mapping's
    :class:`~privmap.offline.mechanisms.table.Build` made the mode's bundle (``folded``: the
    :class:`Folded` points and ratings). The model's ``points(R)`` gives the points of ratings
    (rows, width).
    """

    stage: str
    fit: Callable
    width: Callable
    names: Callable
    finish: Callable


@dataclass(frozen=True)
class Folded:
    """The folded-in users a mode's ``finish`` may read again.

    The ``client``, the ratings' ``parts`` and how to read them (``reading``), the ``model`` and the
    ``folder`` of points (:func:`fold_in`), and ``tell``, the build's timer, for the stages it adds.
    """

    client: object
    parts: tuple
    reading: _Reading
    model: object
    folder: str
    tell: StageTimer


def build_partitioned(src: Source, options: RecommenderOptions, client, *, kmeans: str = "minibatch",
                      progress=None, dask_progress: bool = False, scratch: str | os.PathLike | None = None,
                      in_core_bytes: int = IN_CORE_BYTES) -> Result:
    """Build a recommender bundle's payload from partitioned ratings (module docstring).

    Parameters
    ----------
    src : Source
        The partitioned ratings (:func:`privmap.offline.data.open_source`): one column per item
        (blank = not rated) and the private column.
    options : RecommenderOptions
        As the in-memory build takes them; ``mapping.seed`` seeds the sample and the fit.
    client : distributed.Client
        Where the partitions are processed.
    kmeans : {"minibatch", "dask-ml", "in-memory"}, keyword-only
        The k-means of the factor points out of core.
    progress : callable(stage, fraction) or StageTimer, optional, keyword-only
        Told about each pass ("validate", "sample", "factor-model", "fold-in", "gather") and then
        the mapping's stages.
    dask_progress : bool, keyword-only
        Show Dask's text progress bar of the passes on stderr.
    scratch : path, optional, keyword-only
        Where the temporary directory of factor points is made (the workers must see it);
        default the system's temporary directory.
    in_core_bytes : int, keyword-only
        Largest size of the users' points (float64) mapped in memory; 0 maps out of core always.

    Returns
    -------
    Result
        Its ``detail`` a :class:`._build.RecommenderBuild`.

    Raises
    ------
    BuildError
        Other options than :class:`RecommenderOptions`; bad ratings
        (:class:`~privmap.offline.DatasetError`, naming the partition); too few users for the AUC
        target; options that only the mapping in memory takes on points beyond ``in_core_bytes``;
        missing-answer tokens that differ by column; too few ratings to choose the penalty; what
        the mapping refuses (:class:`~privmap.offline.TargetNotMetError` included).
    """
    if not isinstance(options, RecommenderOptions):
        raise BuildError(f"the recommender build takes RecommenderOptions, got {type(options).__name__}")
    return build_model_partitioned(src, options, client, RECOMMENDER, kmeans=kmeans, progress=progress,
                                   dask_progress=dask_progress, scratch=scratch, in_core_bytes=in_core_bytes)


def build_model_partitioned(src: Source, options, client, mode: PartitionedMode, *, kmeans: str = "minibatch",
                            progress=None, dask_progress: bool = False, scratch: str | os.PathLike | None = None,
                            in_core_bytes: int = IN_CORE_BYTES) -> Result:
    """A model mode's build on partitioned ratings (module docstring).

    Arguments and errors as :func:`build_partitioned`, ``options`` the mode's, ``mode`` what it
    brings.
    """
    tell = progress if isinstance(progress, StageTimer) else StageTimer(progress)
    token = missing_token(options, src.features)
    declared = options.mapping.declared
    reading = _Reading(src.features, src.private,
                       tuple(sorted(declared.missing_tokens().items())) if declared else ())
    summary = PartitionedRows(src, options.mapping, client, kmeans=kmeans, progress=tell,
                              dask_progress=dask_progress).dataset
    check_enough_users(summary, options.mapping)
    width = mode.width(options)
    inside = in_core(summary.n, width, in_core_bytes)
    mapping = factor_options(options.mapping)
    if not inside:
        check_out_of_core(mapping, out_of_core_reason(summary.n, width, in_core_bytes, "coordinates"),
                          joint=bool(src.private_columns))
    tell("sample", 0.0)
    R = _sample(client, src.partitions, reading, seed=options.mapping.seed, size=sample_size(len(src.features)))
    tell(mode.stage, 0.0)
    model, scores = mode.fit(R, options, None)
    del R
    fitted = rating_model(summary.schema, token, model, scores, dropped_rows=summary.dropped,
                          missing_cell_fraction=summary.missing_fraction, sha256=summary.sha256)
    names = mode.names(model)
    with tempfile.TemporaryDirectory(prefix="privmap-points-", dir=scratch) as folder:
        tell("fold-in", 0.0)
        fold_in(client, src.partitions, reading, model, folder, names=names)
        if inside:
            tell("gather", 0.0)
            built = build_points(gather_points(folder, names, summary), mapping, tell, dropped_rows=summary.dropped)
        else:
            points = PartitionedRows(open_source(folder, private=src.private_name), mapping, client, kmeans=kmeans,
                                     progress=tell, dask_progress=dask_progress)
            built = build_rows(points, mapping, tell)
        return mode.finish(built, fitted, options, Folded(client, tuple(src.partitions), reading, model, folder, tell))


def gather_points(folder, names, summary) -> Dataset:
    """The points :func:`fold_in` wrote to ``folder``, in partition order, as a Dataset.

    The :class:`~privmap.offline.data.Dataset` an in-memory build maps: features ``names``, the
    private classes and SHA-256 of ``summary`` (the ratings' :class:`SourceSummary`).
    """
    import pyarrow.parquet as pq
    paths = sorted(glob.glob(os.path.join(folder, "part-*.parquet")))
    code = {c: i for i, c in enumerate(summary.classes)}
    blocks, labels = [], []
    for path in paths:
        blocks.append(_read_points(path, names))
        labels += [code[v] for v in pq.read_table(path, columns=[summary.private_name]).column(0).to_pylist()]
    return Dataset(features=tuple(names), public=np.concatenate(blocks) if blocks else np.zeros((0, len(names))),
                   private=np.array(labels, dtype=np.int64), classes=summary.classes,
                   private_name=summary.private_name, categorical=False, sha256=summary.sha256,
                   columns=summary.columns)


def _finish_recommender(built, fitted, options: RecommenderOptions, folded: Folded) -> Result:
    """The recommender's finish: outputs calibrated out of core, then the recommender's result.

    The outputs are calibrated by :func:`calibrate` (stage ``calibrate``), then
    :func:`._build.recommender_result`.
    """
    folded.tell("calibrate", 0.99)
    payload = calibrate(folded.client, folded.parts, folded.reading, cast(FactorModel, folded.model), built.payload,
                        folded.folder)
    return recommender_result(dataclasses.replace(built, payload=payload), fitted, options)


#: The recommender mode on partitioned ratings.
RECOMMENDER = PartitionedMode(stage="factor-model", fit=lambda R, options, progress: fit_model(R, options, progress=progress),
                              width=lambda options: options.rank + 1, names=lambda model: factor_names(model.rank),
                              finish=_finish_recommender)


def sample_ratings(client, src: Source, *, seed: int, size: int, tokens: Mapping[str, str] | None = None) -> np.ndarray:
    """The rated rows of least :func:`~privmap.offline.data.row_keys` key, at most ``size`` of them, in file order.

    Keyed by (``seed``, partition ordinal, row); shape (min(size, rated rows), d), the columns
    ``src.features`` (NaN = blank; ``tokens`` as :func:`~privmap.offline.data.read_partition`
    takes them).

    Partitions are read on the workers, as many at a time as they have threads; each returns
    only its rows whose key is below the ``size``-th least key seen so far, so the client holds
    at most the sample and a partition's share of it.

    Raises
    ------
    DatasetError
        A bad cell, named by file, line or row, and column.
    """
    return _sample(client, src.partitions, _Reading(src.features, src.private, tuple(sorted((tokens or {}).items()))),
                   seed=seed, size=size)


def _sample(client, parts, reading: _Reading, *, seed: int, size: int) -> np.ndarray:
    window = max(1, sum(client.nthreads().values()))
    held = _Sample(np.zeros(0, np.uint64), np.zeros(0, np.int64), np.empty((0, len(reading.features))))
    pending: collections.deque = collections.deque()
    for ordinal, part in enumerate(parts):
        pending.append(client.submit(_candidates, part, pure=False, reading=reading, ordinal=ordinal, seed=seed,
                                     size=size, below=held.ceiling(size)))
        if len(pending) >= window:
            held = held.merged(*pending.popleft().result(), size=size)
    while pending:
        held = held.merged(*pending.popleft().result(), size=size)
    return held.rows[np.argsort(held.order, kind="stable")]


@dataclass(frozen=True)
class _Sample:
    """Rows kept so far: their keys (k,), places (k,; partition ordinal << 32 | row) and ratings (k, d)."""

    keys: np.ndarray
    order: np.ndarray
    rows: np.ndarray

    def ceiling(self, size: int) -> np.uint64:
        """The largest key a row may have to enter the sample (every key until it is full)."""
        return self.keys.max() if self.keys.size >= size else np.uint64(np.iinfo(np.uint64).max)

    def merged(self, keys: np.ndarray, order: np.ndarray, rows: np.ndarray, *, size: int) -> _Sample:
        """The sample and a partition's candidates, cut to the ``size`` of least key."""
        every = np.concatenate([self.keys, keys])
        pick = np.arange(every.size) if every.size <= size else np.argpartition(every, size - 1)[:size]
        mine, theirs = pick[pick < self.keys.size], pick[pick >= self.keys.size] - self.keys.size
        return _Sample(every[pick], np.concatenate([self.order[mine], order[theirs]]),
                       np.concatenate([self.rows[mine], rows[theirs]]))


def _candidates(part: Partition, *, reading: _Reading, ordinal: int, seed: int, size: int, below: np.uint64):
    """A partition's rated rows that may enter the sample: ``(keys, places, ratings)``.

    Key at most ``below``, the ``size`` of least key at most; as :class:`_Sample` holds them.
    """
    R, _, rated = reading.read(part)
    keys = row_keys(seed, ordinal, R.shape[0])
    chosen = np.nonzero(rated & (keys <= below))[0]
    if chosen.size > size:
        chosen = np.sort(chosen[np.argpartition(keys[chosen], size - 1)[:size]])
    return keys[chosen], (np.int64(ordinal) << np.int64(32)) + chosen, R[chosen]


def fold_in(client, parts, reading: _Reading, model, folder, *, names=None) -> int:
    """Every partition's rated rows as the model's points, written with the private column to ``folder``.

    The points are ``model.points``, written to ``folder``/part-NNNNNN.parquet (one file per
    partition that rates something, in partition order; columns ``names``, default the factor
    model's factor_0 .. factor_rank, then the private column as text). Returns the rows written.
    """
    names = factor_names(model.rank) if names is None else tuple(names)
    return sum(client.gather([client.submit(_fold_partition, part, pure=False, reading=reading, model=model,
                                            path=_points_path(folder, ordinal), names=names)
                              for ordinal, part in enumerate(parts)]))


def _fold_partition(part: Partition, *, reading: _Reading, model, path: str, names) -> int:
    """:func:`fold_in` of one partition, :data:`FOLD_ROWS` rows at a time; the rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    R, labels, rated = reading.read(part)
    if not rated.any():
        return 0
    points = np.concatenate([model.points(R[i:i + FOLD_ROWS][rated[i:i + FOLD_ROWS]])
                             for i in range(0, R.shape[0], FOLD_ROWS)])
    columns = {name: points[:, k] for k, name in enumerate(names)}
    columns[reading.label] = pa.array(labels[rated].tolist(), type=pa.string())
    pq.write_table(pa.table(columns), path)
    return int(points.shape[0])


def calibrate(client, parts, reading: _Reading, model: FactorModel, payload: dict, folder) -> dict:
    """The mapping's ``payload`` with its outputs calibrated to the ratings of the users who release them.

    :func:`._calibrate.calibrate_payload`, out of core: one pass over the ratings beside the factor
    points :func:`fold_in` wrote to ``folder`` for the pools, summed as the partitions finish, and
    one over the points for the released distortion.
    """
    from distributed import as_completed
    q, inputs = payload_table(payload), np.asarray(payload["inputs"], dtype=float)
    names = factor_names(model.rank)
    shape = (q.shape[1], len(reading.features))
    sums, counts = np.zeros(shape), np.zeros(shape)
    for future in as_completed([client.submit(_pool_partition, part, pure=False, reading=reading, model=model, q=q,
                                              inputs=inputs, path=_points_path(folder, ordinal), names=names)
                                for ordinal, part in enumerate(parts)]):
        pool_sums, pool_counts = future.result()
        sums += pool_sums
        counts += pool_counts
    moved = calibrated_outputs(model, sums, counts, payload["outputs"], *payload_domain(payload))
    measured = client.gather([client.submit(_distance_partition, path, pure=False, names=names, q=q, inputs=inputs,
                                            outputs=moved)
                              for path in sorted(glob.glob(os.path.join(folder, "part-*.parquet")))])
    return with_outputs(payload, moved, sum(d for d, _ in measured) / max(sum(n for _, n in measured), 1))


def _points_path(folder, ordinal: int) -> str:
    """Where :func:`fold_in` writes partition ``ordinal``'s factor points."""
    return os.path.join(folder, f"part-{ordinal:06d}.parquet")


def _read_points(path: str, names) -> np.ndarray:
    """The factor points (rows, rank + 1) of one file :func:`fold_in` wrote."""
    import pyarrow.parquet as pq
    table = pq.read_table(path, columns=list(names))
    return np.column_stack([table.column(name).to_numpy() for name in names])


def _pool_partition(part: Partition, *, reading: _Reading, model: FactorModel, q, inputs: np.ndarray, path: str,
                    names):
    """:func:`._calibrate.pooled_sums` of one partition's rated rows, each released as the device would.

    Each is released as its nearest input's row of ``q``; their points are read from ``path`` (in
    the order of the rated rows) rather than folded in again; :data:`FOLD_ROWS` rows at a time.
    """
    R, _, rated = reading.read(part)
    R = R[rated]
    shape = (q.shape[1], R.shape[1])
    sums, counts = np.zeros(shape), np.zeros(shape)
    if R.shape[0] == 0:
        return sums, counts
    labels = nearest(_read_points(path, names), inputs, "l2")
    for i in range(0, R.shape[0], FOLD_ROWS):
        s, c = pooled_sums(model, R[i:i + FOLD_ROWS], q[labels[i:i + FOLD_ROWS]])
        sums += s
        counts += c
    return sums, counts


def _distance_partition(path: str, *, names, q, inputs: np.ndarray, outputs: np.ndarray) -> tuple[float, int]:
    """:func:`._calibrate.released_distance` of one file of factor points, and its rows."""
    points = _read_points(path, names)
    return released_distance(points, q[nearest(points, inputs, "l2")], outputs), int(points.shape[0])
