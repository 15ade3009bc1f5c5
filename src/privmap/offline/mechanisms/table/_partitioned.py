"""Partitioned rows on a Dask cluster as a seed-000 build reads them.

The :class:`._rows.Rows` backend of CSV or Parquet files too large for memory (quantized
mechanism, l2 metric).

Opening the rows validates them in one pass (1. below). Rows that fit in the in-core limit
(:func:`in_core`) are then gathered (:meth:`PartitionedRows.gathered`) and mapped as in memory,
with every option; beyond it, the build's stages are the in-memory build's
(:func:`._pipeline.build_rows`) and this backend does what they ask of the rows in passes over
the partitions (:mod:`privmap.offline.data` reads them), each a map on the workers and a small
reduce on the client, with a number of clusters, the counts prior and one private column
(the mechanism's out-of-core check). Everything that can be refused without reading rows (mechanism,
metric, k-means variant, the declarations of ``--domain`` and ``--schema``) is checked by
:func:`check_partitioned` before any cluster starts.

1. on opening (:class:`PartitionedRows`): validate every partition (blank cells and declared
   missing tokens are missing answers; rows with every public cell missing are left out, as in
   memory); the declared domains checked on each partition by the in-memory
   :func:`~privmap.offline.data.resolve`; per column the observed range, whether it holds integers
   only, whether a cell is missing, its observed sum and count (and, under ``--missing impute``,
   its value counts for the exact median); SHA-256 of every file. The schema is then ``resolve``
   on a four-row summary of the data that gives the same answer as on all rows (range, a
   non-integer value, a missing cell).
2. the alphabet (:meth:`PartitionedRows.alphabet`): k-means without all rows at once
   (``kmeans=``), on rows whose missing cells are filled as the in-memory
   :func:`~privmap.offline.data.quantize` fills them (column mean under "mask", the recorded
   median under "impute"):

   - ``"minibatch"`` (default): scikit-learn's ``MiniBatchKMeans.partial_fit`` on batches of
     each partition, streamed from the workers one partition ahead;
   - ``"dask-ml"``: dask-ml's scalable k-means (k-means|| initialisation, then Lloyd
     iterations as map-reduce);
   - ``"in-memory"``: scikit-learn ``KMeans`` on all rows gathered (small data only: it is
     the in-memory build's own algorithm, for checking that both paths agree);

   then group sums over observed cells and counts per k-means center -> representatives (mean
   per group and column, then ``domain_points`` in the declared or inferred domain); then psi =
   the device's nearest-representative rule (masked over missing cells) on every row, kept on
   the workers with each row's cross-fitting fold; counts of (fold, private class,
   representative) give the prior's counts (:meth:`PartitionedRows.counts`); r and the mean
   quantization distance over observed cells.
3. the codebook step out of core (:meth:`PartitionedRows.codebook`), one round: a pass for the
   weighted mean of the rows each output receives, :data:`._codebook.WEISZFELD_PASSES` passes of
   Weiszfeld's iteration towards the geometric median, each output moved to the best
   domain-valid iterate where that lowers its cost; then one pass of D'(c, j) (sums of
   distances by fold and input) and one re-solve, kept only if it leaks and distorts no more.
4. after compression, the measured raw distortion under the integer table (a pass reading the
   rows again, with psi from pass 2).
5. cross-fitted leakage (:meth:`PartitionedRows.cross_fitted`, :func:`._holdout.cross_fitted_from_counts`) from
   the fold-wise counts and distance sums of passes 2 and 3: no extra pass over the rows when the
   codebook step ran, one pass of distance sums otherwise.

Only the l2 metric is built this way (a median or mode per group is not a sum).

Where the algorithms coincide (``kmeans="in-memory"`` on complete integer data, no codebook
step, no cross-fitting) the payload equals the in-memory build's byte for byte except two
float sums taken in another order (``quantization_distortion`` and ``measured_distortion``,
equal to about 1e-15 relative).
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import sparse

from ..._errors import BuildError, DatasetError
from ..._joint import PrivateColumns
from ...data import (
    MIN_ROWS,
    Column,
    Dataset,
    Declaration,
    Declared,
    Partition,
    Source,
    check_classes,
    describe_partition,
    domain_points,
    file_sha256,
    joint_classes,
    kmeans,
    nearest,
    nearest_l2,
    pairwise,
    read_partition,
    resolve,
    row_keys,
    source_sha256,
)
from ...solvers import CompressedTable, SolveResult
from .._seed000 import Seed000Options
from ._codebook import Codebook, metric_center, refine_in_passes
from ._holdout import HoldoutLeakage, cross_fitted_from_counts
from ._in_memory import raw_distortion_total
from ._missing import bundle_cells, column_fills, feature_maps
from ._program import Solved
from ._rows import Alphabet, DatasetFacts, Progress

if TYPE_CHECKING:                                   # the scale extra's cluster, imported where it is used
    from distributed import Client, Future

__all__ = ["KMEANS", "IN_CORE_BYTES", "PartitionedRows", "SourceSummary", "check_partitioned", "in_core",
           "dask_client"]

KMEANS = ("minibatch", "dask-ml", "in-memory")
#: Default size (bytes) of the users' points (rows, or a model mode's points, float64) a partitioned
#: build maps in memory with every option of the in-memory build; beyond it the mapping is made
#: out of core (the mechanism's out-of-core check). 1 GiB: 10^6 users of 134 columns, or 12 million
#: users of a recommender's 11 factor coordinates.
IN_CORE_BYTES = 1 << 30
#: Most rows ``kmeans="in-memory"`` gathers on the client.
IN_MEMORY_MAX_ROWS = 1_000_000
#: Rows per mini-batch step.
MINIBATCH_ROWS = 4096
#: Most distinct observed values of a column in one partition under ``--missing impute`` (the exact
#: median is taken from value counts).
MEDIAN_MAX_DISTINCT = 100_000
#: Rows per block of distance computations (bounds scratch memory to about ``_ROWS * K_out * 16`` bytes).
_ROWS = 4096
#: What :func:`_assign` leaves on a worker for one partition: its counts (folds, |A|, K), the largest
#: and the summed distance of its rows to their representatives, and its rows' (psi, fold).
_Assignment = tuple[tuple[np.ndarray, float, float], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class SourceSummary:
    """What pass 1 learned about the data (the partitioned counterpart of ``Dataset``).

    Attributes
    ----------
    n : int
        Rows kept (rows with every public cell missing are left out).
    classes : tuple of str
        Private classes, sorted.
    private_name : str
    sha256 : str
        See :func:`privmap.offline.data.source_sha256`.
    features : tuple of str, length d
    schema : tuple of Column, length d
        Declared domains completed by inference, as :func:`~privmap.offline.data.resolve`
        gives them on all rows.
    dropped : int
        Rows left out for having every public cell missing.
    missing_fraction : float
        Share of missing cells among the kept rows' public cells.
    means : ndarray, shape (d,)
        Mean of each column's observed cells (k-means' fill under "mask").
    fills : ndarray or None, shape (d,)
        Under "impute", the recorded fill of each column (:func:`column_fills` of all rows).
    class_counts : ndarray of int64, shape (|A|,)
        Kept rows of each class, in the order of ``classes``.
    columns : PrivateColumns or None
        With several private columns, how each joint class decomposes (as a
        :class:`~privmap.offline.data.Dataset`'s ``columns``).
    """

    n: int
    classes: tuple[str, ...]
    private_name: str
    sha256: str
    features: tuple[str, ...]
    schema: tuple[Column, ...]
    dropped: int = 0
    missing_fraction: float = 0.0
    means: np.ndarray | None = None
    fills: np.ndarray | None = None
    class_counts: np.ndarray | None = None
    columns: PrivateColumns | None = None

    @property
    def integer(self) -> np.ndarray:
        """Columns whose values are integers, shape (d,) bool."""
        return np.array([c.integer for c in self.schema], dtype=bool)

    @property
    def lo(self) -> np.ndarray:
        return np.array([c.min for c in self.schema], dtype=float)

    @property
    def hi(self) -> np.ndarray:
        return np.array([c.max for c in self.schema], dtype=float)


@dataclass(frozen=True)
class _Reading:
    """How a worker reads a partition.

    Its columns, missing tokens, and (under "impute") the fills that turn a row into what the
    device looks up.
    """

    features: tuple[str, ...]
    private: str | tuple[str, ...]
    tokens: tuple[tuple[str, str], ...] = ()
    fills: np.ndarray | None = None


@contextlib.contextmanager
def dask_client(*, workers: int | None = None, scheduler: str | None = None) -> Iterator[Client]:
    """A ``distributed.Client`` for a ``with`` block.

    A ``distributed.Client``: on ``scheduler`` (an address) if given, else on a new local
    cluster of ``workers`` single-threaded worker processes (default 2), closed on exit.
    """
    from distributed import Client, LocalCluster
    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    with LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client


def check_partitioned(src: Source, options: Seed000Options, *, kmeans: str = "minibatch") -> None:
    """The checks of a partitioned build that need no row.

    Everything about a partitioned build's rows and options that can be refused without
    reading rows (what the out-of-core mapping alone refuses: the mechanism's out-of-core check).

    ``src`` is the partitioned rows (:func:`privmap.offline.data.open_source`: their
    headers only were read); no cluster is needed.

    Raises
    ------
    BuildError
        Another mechanism or metric than quantized/l2, an unknown ``kmeans``.
    DatasetError
        A declaration (``--domain``, ``--schema``) naming a column that is not public or giving
        an integer column fractional bounds.
    """
    if not options.quantizes or options.metric != "l2":
        raise BuildError("a partitioned build makes the quantized mechanism with the l2 metric only "
                         f"(got {options.mechanism}, {options.metric})")
    if kmeans not in KMEANS:
        raise BuildError(f"unknown k-means {kmeans!r}; expected one of {', '.join(KMEANS)}")
    if options.declared is not None:
        # resolve() on one row lying inside every declared domain checks the declarations themselves
        declared = options.declared
        probe = [(declared.get(name).min if declared.get(name).min is not None else declared.get("*").min) or 0.0
                 for name in src.features]
        resolve(src.features, np.array([probe], dtype=float), declared)


def in_core(n: int, d: int, limit_bytes: int) -> bool:
    """Whether points fit in memory.

    Whether ``n`` points of ``d`` float64 coordinates fit in ``limit_bytes``: then a
    partitioned build maps them in memory, with every option of the in-memory build.
    """
    return n * max(d, 1) * 8 <= limit_bytes


class PartitionedRows(DatasetFacts):
    """Partitioned rows on a Dask cluster, the rows backend of an out-of-core build.

    Partitioned rows (CSV or Parquet files) on a Dask cluster: the :class:`._rows.Rows`
    backend of an out-of-core build (module docstring). Opening them validates every partition
    (pass 1); the other passes run when the build's stages ask for them.

    Parameters
    ----------
    src : Source
        The partitioned rows (:func:`privmap.offline.data.open_source`: their headers only read).
    options : Seed000Options
        l2 metric; ``declared`` and ``missing`` decide how the partitions are read.
    client : distributed.Client
        Where the partitions are processed (see :func:`dask_client`).
    kmeans : {"minibatch", "dask-ml", "in-memory"}, keyword-only
    progress : callable(stage, fraction), optional, keyword-only
        Told about the passes the build's stages do not name ("validate", "representatives",
        "measure").
    dask_progress : bool, keyword-only
        Show Dask's text progress bar of every pass on stderr.

    Attributes
    ----------
    dataset : SourceSummary
        What pass 1 learned of the rows (the :class:`._pipeline.Build` records it).

    Raises
    ------
    BuildError
        As :func:`check_partitioned`; too many clusters; DatasetError for bad data (the first bad
        cell, by file, line or row, and column; a value outside its declared domain, by partition).
    """

    def __init__(self, src: Source, options: Seed000Options, client: Client, *, kmeans: str = "minibatch",
                 progress: Progress | None = None, dask_progress: bool = False) -> None:
        check_partitioned(src, options, kmeans=kmeans)
        self._tell = progress or (lambda stage, fraction: None)
        self._run = _Runner(client, dask_progress)
        reading = _Reading(src.features, src.private,
                           tuple(sorted(options.declared.missing_tokens().items())) if options.declared else ())
        self._tell("validate", 0.0)
        self._parts = list(src.partitions)
        stats = self._run.map(_partition_stats, self._parts, reading=reading, declared=options.declared,
                              values=options.missing == "impute")
        digests = self._run.map(file_sha256, list(src.files))
        self.dataset = summary = _summarize(src, stats, digests, options)
        if options.clusters is not None and not 1 <= options.clusters <= summary.n:
            raise DatasetError(f"--clusters {options.clusters}: must be between 1 and the {summary.n} rows")
        self._reading = dataclasses.replace(reading, fills=summary.fills)
        self._kmeans = kmeans
        self._assigned: _Assigned | None = None

    @property
    def dropped_rows(self) -> int:
        return self.dataset.dropped

    @property
    def missing_cell_fraction(self) -> float:
        return self.dataset.missing_fraction

    def alphabet(self, options: Seed000Options, *, quantizer: Callable | None = None) -> Alphabet:
        """The alphabet of the partitioned rows, in three passes.

        :meth:`._rows.Rows.alphabet` in three passes: k-means, the representatives (group
        means made domain-valid), and psi with each row's cross-fitting fold, kept on the workers
        (``labels`` and ``raw_distortion`` are None). A representative nobody is nearest to is
        dropped, as in memory.

        Raises
        ------
        BuildError
            A ``quantizer`` (the folds out of core share the build's representatives).
        """
        if quantizer is not None:
            raise BuildError("a partitioned build's cross-fitting folds share its representatives")
        run, parts, reading, summary = self._run, self._parts, self._reading, self.dataset
        kcenters = self.kmeans_centers(options)

        self._tell("representatives", 0.12)
        sums = run.map(_group_sums, parts, reading=reading, means=summary.means, centers=kcenters)
        total, observed, count = (sum(s[i] for s in sums) for i in range(3))
        filled = count > 0
        means = np.where(observed > 0, total / np.where(observed > 0, observed, 1.0), summary.means)
        centers = domain_points(means[filled], summary.integer, summary.lo, summary.hi)

        self._tell("prior", 0.16)
        folds = options.folds
        classes = list(summary.classes)
        assigned = [run.client.submit(_assign, part, pure=False, reading=reading, classes=classes, centers=centers,
                                      folds=folds, seed=options.seed, ordinal=i) for i, part in enumerate(parts)]
        results = run.gather([run.client.submit(_first, a, pure=False) for a in assigned])
        fold_counts = sum(c for c, _, _ in results)            # (max(folds, 1), |A|, K)
        used = np.nonzero(fold_counts.sum(axis=0).sum(axis=0) > 0)[0]  # a representative nobody is nearest to
        renumber = np.full(centers.shape[0], -1, dtype=np.int64)
        renumber[used] = np.arange(used.size)
        centers, fold_counts = centers[used], fold_counts[:, :, used]
        r = max(m for _, m, _ in results)
        mean = sum(t for _, _, t in results) / summary.n
        cells = bundle_cells(centers, summary.integer)
        alphabet = Alphabet(features=feature_maps(summary.schema, options.missing, summary.fills), inputs=cells,
                            outputs=[list(row) for row in cells], labels=None,
                            distortion=pairwise(centers, centers, "l2"), raw_distortion=None, r=float(r),
                            quantization_distortion=float(mean), schema=summary.schema)
        self._assigned = _Assigned(_Rows(run, parts, assigned, reading, renumber), fold_counts, alphabet)
        return alphabet

    def kmeans_centers(self, options: Seed000Options) -> np.ndarray:
        """The k-means centres of the rows.

        The k-means centres (``options.clusters``, d) of the rows by this backend's k-means
        (``kmeans=``), before they are made representatives (:meth:`alphabet`).
        """
        return _KMEANS[self._kmeans](self._run, self._parts, self._reading, self.dataset, options)

    def gathered(self) -> Dataset:
        """Every kept row in memory, as a dataset.

        Read in one pass, in the order of the partitions: the
        :class:`~privmap.offline.data.Dataset` an in-memory build maps (NaN = a missing answer, as
        the in-memory reader gives it), its SHA-256 the source's. Only for rows that fit
        (:func:`in_core`).
        """
        self._tell("gather", 0.05)
        got = self._run.map(_kept_rows, self._parts, reading=self._reading)
        summary = self.dataset
        code = {c: i for i, c in enumerate(summary.classes)}
        labels = np.concatenate([labels for _, labels in got]) if got else np.zeros(0, dtype=object)
        return Dataset(features=summary.features, public=np.concatenate([X for X, _ in got]),
                       private=np.fromiter((code[v] for v in labels), dtype=np.int64, count=labels.size),
                       classes=summary.classes, private_name=summary.private_name, categorical=False,
                       sha256=summary.sha256, columns=summary.columns)

    def counts(self, alphabet: Alphabet) -> np.ndarray:
        """Rows by private class and representative, summed over the folds of pass 2."""
        return self._assignment().fold_counts.sum(axis=0)

    def posterior_prior(self, alphabet: Alphabet, *, seed: int) -> np.ndarray:
        raise BuildError("--prior posteriors fits a classifier to the rows in memory; a partitioned build counts")

    def codebook(self, alphabet: Alphabet, p_ac: np.ndarray, solved: SolveResult, options: Seed000Options, *,
                 perfect: bool, progress: Callable[[float], None]) -> tuple[Alphabet, SolveResult, Codebook]:
        """The codebook step in passes over the partitions.

        :meth:`._rows.Rows.codebook` in passes over the partitions
        (:func:`._codebook.refine_in_passes`, one round); the distance sums by fold on the moved
        outputs are kept for :meth:`cross_fitted`.
        """
        held = self._assignment()
        integer = np.array([c.integer for c in alphabet.schema])
        _, _, project = metric_center("l2", integer=integer, lo=np.array([c.min for c in alphabet.schema], float),
                                      hi=np.array([c.max for c in alphabet.schema], float))
        step, held.fold_sums = refine_in_passes(
            held.rows.codebook_sums, held.rows.distance_sums, p_ac, solved, np.asarray(alphabet.outputs, dtype=float),
            self.counts(alphabet).sum(axis=0), project=project, perfect=perfect, solver=options.solver,
            tol_bits=options.tol_bits, folds=max(options.folds, 1))
        moved = dataclasses.replace(alphabet, outputs=bundle_cells(step.outputs, integer), distortion=step.distortion_matrix)
        return moved, step.solve_result(solved), step

    def measured_distortion(self, alphabet: Alphabet, table: CompressedTable) -> float:
        """A pass over the rows with psi from the alphabet's pass."""
        self._tell("measure", 0.92)
        outputs = np.asarray(alphabet.outputs, dtype=float)
        return sum(self._assignment().rows.gather(_raw_total, outputs=outputs, table=table)) / self.n

    def _assignment(self) -> _Assigned:
        """What :meth:`alphabet`'s passes left on the workers. Raises BuildError before them."""
        if self._assigned is None:
            raise BuildError("the partitioned rows are counted after their alphabet is made (alphabet())")
        return self._assigned

    def start_cross_fitting(self, options: Seed000Options) -> None:
        """None: the folds out of core need the build's own passes (:meth:`cross_fitted`)."""
        return None

    def cross_fitted(self, done: Solved, options: Seed000Options, *, progress: Callable[[float], None],
                     pending: None = None) -> HoldoutLeakage:
        """The cross-fitted leakage from the passes' counts and sums.

        :func:`._holdout.cross_fitted_from_counts` on the fold-wise counts of the alphabet's pass and the
        distance sums of the codebook step's last pass (one more pass of them without that step).
        """
        held = self._assignment()
        if held.fold_sums is None:
            held.fold_sums = held.rows.distance_sums(np.asarray(done.alphabet.outputs, dtype=float), options.folds)
        return cross_fitted_from_counts(held.fold_counts, held.fold_sums, held.alphabet, options, progress=progress)


@dataclass
class _Assigned:
    """What the alphabet's pass left on the workers.

    The rows with their psi and fold (on the workers), the counts (folds, |A|, K_in) by fold,
    private class and representative, the k-means alphabet, and the distance sums
    (folds, K_in, K_out) on the final outputs once a pass took them.
    """

    rows: _Rows
    fold_counts: np.ndarray
    alphabet: Alphabet
    fold_sums: np.ndarray | None = None


# --- the codebook step and cross-fitting out of core --------------------------------------------------

class _Rows:
    """The assigned rows on the workers: one task per partition, each given its psi and fold."""

    def __init__(self, run: _Runner, parts: Sequence[Partition], assigned: Sequence[Future], reading: _Reading,
                 renumber: np.ndarray) -> None:
        self.run, self.parts, self.assigned, self.reading, self.renumber = run, parts, assigned, reading, renumber

    def gather(self, fn: Callable[..., Any], **kwargs: object) -> list:
        return self.run.gather([self.run.client.submit(fn, part, a, pure=False, reading=self.reading,
                                                       renumber=self.renumber, **kwargs)
                                for part, a in zip(self.parts, self.assigned)])

    def distance_sums(self, outputs: np.ndarray, folds: int) -> np.ndarray:
        """S[f, c, j]: sum over rows of fold f with psi = c of d(b, y_j); shape (folds, K_in, K_out)."""
        return sum(self.gather(_distance_sums, outputs=outputs, folds=max(folds, 1),
                               n_inputs=int(self.renumber.max()) + 1))

    def codebook_sums(self, table: sparse.csr_matrix, per_row: np.ndarray, Z: np.ndarray | None, P: np.ndarray) -> list:
        """One pass of the codebook step over the partitions.

        The ``sweep`` of :func:`._codebook.refine_in_passes`: the partitions'
        :func:`_codebook_sums` added up.
        """
        got = self.gather(_codebook_sums, table=table, per_row=per_row, Z=Z, P=P)
        return [sum(g[i] for g in got) for i in range(4)]


class _Runner:
    """Submits one task per partition and gathers the results in partition order."""

    def __init__(self, client: Client, show: bool) -> None:
        self.client, self.show = client, show

    def map_keep(self, fn: Callable[..., Any], items: Iterable[object], **kwargs: object) -> list[Future]:
        return [self.client.submit(fn, item, pure=False, **kwargs) for item in items]

    def gather(self, futures: list[Future]) -> list:
        if self.show:
            from distributed import progress
            with contextlib.redirect_stdout(sys.stderr):
                progress(futures)
        return self.client.gather(futures)

    def map(self, fn: Callable[..., Any], items: Iterable[object], **kwargs: object) -> list:
        return self.gather(self.map_keep(fn, items, **kwargs))



def _summarize(src: Source, stats: Sequence[dict], digests: Sequence[str], options: Seed000Options) -> SourceSummary:
    """The source's summary and schema.

    The schema is ``resolve`` on four rows that hold, per column, the observed minimum and
    maximum, a non-integer value if any, and a missing cell if any (what ``resolve`` reads of
    all rows).
    """
    n = sum(s["n"] for s in stats)
    where = src.files[0] if len(src.files) == 1 else f"{len(src.files)} files"
    if n < MIN_ROWS:
        raise DatasetError(f"{where}: {n} data rows, need at least {MIN_ROWS}")
    found = sorted(set().union(*(s["labels"] for s in stats)))
    columns = None
    if src.private_columns:
        classes, columns = joint_classes(src.private_columns, found, where)
    else:
        classes = check_classes(found, None, where, src.private_name)
    class_counts = np.array([sum(s["labels"].get(c, 0) for s in stats) for c in classes], dtype=np.int64)
    full = [s for s in stats if s["n"]]
    lo = np.fmin.reduce([s["lo"] for s in full])
    hi = np.fmax.reduce([s["hi"] for s in full])
    fraction = np.fmax.reduce([s["fraction"] for s in full])
    missing = np.logical_or.reduce([s["missing"] for s in full])
    summary = np.vstack([lo, hi, np.where(np.isnan(fraction), lo, fraction), np.where(missing, np.nan, lo)])
    schema = resolve(src.features, summary, options.declared)
    observed = sum(s["observed"] for s in full)
    middle = np.array([(c.min + c.max) / 2 for c in schema])   # a column with no observed cell
    means = np.where(observed > 0, sum(s["sums"] for s in full) / np.maximum(observed, 1), middle)
    fills = None
    if options.missing == "impute":
        middle = np.array([_middle_values([s["values"][k] for s in full]) for k in range(len(src.features))]).T
        fills = column_fills(middle, schema)
    d = len(src.features)
    return SourceSummary(
        n=n, classes=tuple(classes), class_counts=class_counts, private_name=src.private_name,
        sha256=source_sha256(src.files, digests), columns=columns,
        features=src.features, schema=schema, dropped=sum(s["dropped"] for s in stats),
        missing_fraction=float((n * d - observed.sum()) / (n * d)) if d else 0.0, means=means, fills=fills)


def _middle_values(counted: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The two middle observed values of a column, shape (2,).

    Found from per-partition value counts; ``np.median`` of them is the median of all
    (NaN, NaN when nothing is observed).
    """
    values = np.concatenate([v for v, _ in counted])
    counts = np.concatenate([c for _, c in counted])
    if counts.sum() == 0:
        return np.array([np.nan, np.nan])
    order = np.argsort(values, kind="stable")
    values, cum = values[order], np.cumsum(counts[order])
    m = int(cum[-1])
    return values[np.searchsorted(cum, [(m - 1) // 2 + 1, m // 2 + 1])]


# --- tasks run on the workers ------------------------------------------------------------------------

def _read(part: Partition, reading: _Reading) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """A partition's rows, as read and as the device looks them up.

    ``(X, lookup, labels, dropped)``: the partition's rows with a public cell (NaN = missing),
    those rows as the device looks them up (fills in under "impute"), private labels, and the
    number of rows left out for having every public cell missing.
    """
    X, labels = read_partition(part, reading.features, reading.private, dict(reading.tokens))
    keep = ~np.all(np.isnan(X), axis=1) if X.shape[1] else np.ones(X.shape[0], dtype=bool)
    dropped = int(X.shape[0] - keep.sum())
    if dropped:
        X, labels = X[keep], labels[keep]
    lookup = X if reading.fills is None else np.where(np.isnan(X), reading.fills, X)
    return X, lookup, labels, dropped


def _kept_rows(part: Partition, *, reading: _Reading) -> tuple[np.ndarray, np.ndarray]:
    """A partition's rows with a public cell (NaN = missing) and their private labels."""
    X, _, labels, _ = _read(part, reading)
    return X, labels


def _partition_stats(part: Partition, *, reading: _Reading, declared: Declared | None, values: bool) -> dict:
    X, _, labels, dropped = _read(part, reading)
    if X.shape[0] == 0:
        return {"n": 0, "labels": {}, "dropped": dropped}
    _check_declared(X, reading.features, declared, part)
    observed = ~np.isnan(X)
    seen = observed.any(axis=0)
    lo = np.where(seen, np.where(observed, X, np.inf).min(axis=0), np.nan)
    hi = np.where(seen, np.where(observed, X, -np.inf).max(axis=0), np.nan)
    fractional = observed & (X != np.round(np.where(observed, X, 0.0)))
    first = np.argmax(fractional, axis=0)
    fraction = np.where(fractional.any(axis=0), X[first, np.arange(X.shape[1])], np.nan)
    found, counts = np.unique(labels, return_counts=True)
    out = {"n": X.shape[0], "labels": dict(zip(found.tolist(), counts.tolist())), "dropped": dropped, "lo": lo, "hi": hi,
           "fraction": fraction, "missing": ~observed.all(axis=0), "observed": observed.sum(axis=0),
           "sums": np.where(observed, X, 0.0).sum(axis=0)}
    if values:
        out["values"] = []
        for k, name in enumerate(reading.features):
            v, c = np.unique(X[observed[:, k], k], return_counts=True)
            if v.size > MEDIAN_MAX_DISTINCT:
                raise BuildError(f"{describe_partition(part)}, column {name!r}: more than {MEDIAN_MAX_DISTINCT} "
                                 "distinct values; --missing impute takes the exact median out of core from "
                                 "value counts (use --missing mask)")
            out["values"].append((v, c))
    return out


def _check_declared(X: np.ndarray, features: Sequence[str], declared: Declared | None, part: Partition) -> None:
    """The declarations checked on one partition by ``resolve`` itself.

    A column without a declared domain is given the partition's own whole-number range, so
    only the declarations can fail.
    """
    if declared is None:
        return
    default = declared.get("*")
    columns = []
    for k, name in enumerate(features):
        d = declared.get(name)
        if d.min is None and default.min is None:
            observed = X[:, k][~np.isnan(X[:, k])]
            lo, hi = (math.floor(observed.min()), math.ceil(observed.max())) if observed.size else (0.0, 0.0)
            d = Declaration(d.type, float(lo), float(hi), d.missing, d.missing_token)
        columns.append((name, d))
    columns += [(n, d) for n, d in declared.columns if n == "*"]
    try:
        resolve(features, X, Declared(tuple(columns)))
    except DatasetError as exc:
        raise DatasetError(f"{describe_partition(part)}: {exc} (data rows counted from there)") from None


def _fill(X: np.ndarray, means: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(X), means, X) if np.isnan(X).any() else X


def _kmeans_rows(part: Partition, *, reading: _Reading, means: np.ndarray) -> np.ndarray:
    """Rows as k-means groups them: the lookup rows with a missing cell filled by its column's mean."""
    return _fill(_read(part, reading)[1], means)


def _group_sums(part: Partition, *, reading: _Reading, means: np.ndarray, centers: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per k-means centre: sums and counts of observed lookup cells (K, d) and rows (K,)."""
    _, L, _, _ = _read(part, reading)
    k, d = centers.shape
    if L.shape[0] == 0:
        return np.zeros((k, d)), np.zeros((k, d)), np.zeros(k, dtype=np.int64)
    groups = nearest_l2(_fill(L, means), centers)
    observed = ~np.isnan(L)
    values = np.where(observed, L, 0.0)
    sums = np.stack([np.bincount(groups, weights=values[:, i], minlength=k) for i in range(d)], axis=1) \
        if d else np.zeros((k, 0))
    seen = np.stack([np.bincount(groups, weights=observed[:, i], minlength=k) for i in range(d)], axis=1) \
        if d else np.zeros((k, 0))
    return sums, seen, np.bincount(groups, minlength=k)


def _nearest(L: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """The device's rule: BLAS form on complete rows, the masked rule on rows with a missing cell."""
    if L.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    gaps = np.isnan(L).any(axis=1)
    if not gaps.any():
        return nearest_l2(L, centers)
    out = np.empty(L.shape[0], dtype=np.int64)
    out[~gaps] = nearest_l2(L[~gaps], centers)
    out[gaps] = nearest(L[gaps], centers, "l2")
    return out


def _paired(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Row-wise l2 distances over observed cells.

    l2 distance of each row of X to the same row of Y over X's observed cells, shape (n,); summed
    from the first feature to the last, bitwise as ``pairwise``.
    """
    acc = np.zeros(X.shape[0])
    for i in range(X.shape[1]):
        diff = X[:, i] - Y[:, i]
        acc += np.where(np.isnan(diff), 0.0, diff * diff)
    return np.sqrt(acc)


def _fold_of(ordinal: int, m: int, folds: int, seed: int) -> np.ndarray:
    """Cross-fitting fold of each of a partition's m rows, shape (m,).

    A row's fold is the remainder of its :func:`~privmap.offline.data.row_keys` key.
    """
    if folds <= 1:
        return np.zeros(m, dtype=np.int64)
    return (row_keys(seed, ordinal, m) % np.uint64(folds)).astype(np.int64)


def _assign(part: Partition, *, reading: _Reading, classes: Sequence[str], centers: np.ndarray, folds: int, seed: int,
            ordinal: int) -> _Assignment:
    X, L, labels, _ = _read(part, reading)
    k = centers.shape[0]
    psi = _nearest(L, centers)
    fold = _fold_of(ordinal, X.shape[0], folds, seed)
    code = {c: i for i, c in enumerate(classes)}
    a = np.fromiter((code[v] for v in labels), dtype=np.int64, count=labels.size)
    n_folds, n_classes = max(folds, 1), len(classes)
    counts = np.bincount((fold * n_classes + a) * k + psi, minlength=n_folds * n_classes * k)
    dist = _paired(X, centers[psi]) if X.shape[0] else np.zeros(0)
    return ((counts.reshape(n_folds, n_classes, k).astype(float), float(dist.max()) if dist.size else 0.0,
             float(dist.sum())), (psi, fold))


def _first(pair: _Assignment) -> tuple[np.ndarray, float, float]:
    return pair[0]


def _rows_of(part: Partition, assigned: _Assignment, reading: _Reading, renumber: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = _read(part, reading)[0]
    return X, renumber[assigned[1][0]], assigned[1][1]


def _raw_total(part: Partition, assigned: _Assignment, *, reading: _Reading, renumber: np.ndarray, outputs: np.ndarray,
               table: CompressedTable) -> float:
    X, psi, _ = _rows_of(part, assigned, reading, renumber)
    return raw_distortion_total(psi, lambda rows, cols: pairwise(X[rows], outputs[cols], "l2"), table)


def _distance_sums(part: Partition, assigned: _Assignment, *, reading: _Reading, renumber: np.ndarray, outputs: np.ndarray,
                   folds: int, n_inputs: int) -> np.ndarray:
    from scipy import sparse
    X, psi, fold = _rows_of(part, assigned, reading, renumber)
    total = np.zeros((folds * n_inputs, outputs.shape[0]))
    key = fold * n_inputs + psi
    for start in range(0, X.shape[0], _ROWS):
        block = X[start:start + _ROWS]
        m = block.shape[0]
        group = sparse.csr_matrix((np.ones(m), (key[start:start + m], np.arange(m))), shape=(total.shape[0], m))
        total += group @ _distances(block, outputs)
    return total.reshape(folds, n_inputs, outputs.shape[0])


def _codebook_sums(part: Partition, assigned: _Assignment, *, reading: _Reading, renumber: np.ndarray,
                   table: sparse.csr_matrix, per_row: np.ndarray, Z: np.ndarray | None, P: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One pass of the codebook step over the (row, output) pairs where the table is non-zero.

    Rows are taken input by input: the rows with psi = c share the table row's support J_c, so
    their distances to the points of J_c are one block (BLAS on complete rows).

    Returns ``(numer, denom, z_cost, p_cost)``: Weiszfeld's weighted sums of observed cells
    (K_out, d) and their weights (K_out, d) (weights w = p(c)/n_c q(j|c), divided by d(b, Z_j)
    when ``Z`` is given), and the costs sum w d(b, .) of Z and of P per output (K_out,).
    """
    X, psi, _ = _rows_of(part, assigned, reading, renumber)
    k_out, d = P.shape
    numer, denom = np.zeros((k_out, d)), np.zeros((k_out, d))
    z_cost, p_cost = np.zeros(k_out), np.zeros(k_out)
    order = np.argsort(psi, kind="stable")
    bounds = np.searchsorted(psi[order], np.arange(table.shape[0] + 1))
    for c in np.nonzero(np.diff(bounds))[0]:
        support = table.indices[table.indptr[c]:table.indptr[c + 1]]
        w = table.data[table.indptr[c]:table.indptr[c + 1]] * per_row[c]
        for start in range(bounds[c], bounds[c + 1], _ROWS):
            rows = X[order[start:min(start + _ROWS, bounds[c + 1])]]
            p_cost[support] += w * _distances(rows, P[support]).sum(axis=0)
            weights = np.broadcast_to(w, (rows.shape[0], support.size))
            if Z is not None:
                dz = _distances(rows, Z[support])
                z_cost[support] += w * dz.sum(axis=0)
                weights = w / np.maximum(dz, 1e-9)
            observed = ~np.isnan(rows)
            numer[support] += weights.T @ np.where(observed, rows, 0.0)
            denom[support] += weights.T @ observed
    return numer, denom, z_cost, p_cost


def _distances(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """l2 distances over each row's observed cells.

    l2 distances (n, m) over each row's observed cells: scipy's ``cdist`` on complete rows,
    the masked ``pairwise`` on rows with a missing cell.
    """
    from scipy.spatial.distance import cdist
    gaps = np.isnan(X).any(axis=1)
    if not gaps.any():
        return cdist(X, Y)
    out = np.empty((X.shape[0], Y.shape[0]))
    if not gaps.all():
        out[~gaps] = cdist(X[~gaps], Y)
    out[gaps] = pairwise(X[gaps], Y, "l2")
    return out


# --- k-means variants ----------------------------------------------------------------------------------

def _clusters(options: Seed000Options) -> int:
    """K of a build mapped out of core.

    The out-of-core check refuses ``auto``, without which the options hold a number.
    """
    if options.clusters is None:
        raise BuildError("a partitioned build needs --clusters K")
    return options.clusters


def _minibatch(run: _Runner, parts: Sequence[Partition], reading: _Reading, summary: SourceSummary,
               options: Seed000Options) -> np.ndarray:
    from sklearn.cluster import MiniBatchKMeans
    k = _clusters(options)
    model = MiniBatchKMeans(n_clusters=k, random_state=options.seed, batch_size=MINIBATCH_ROWS, n_init=3)
    rng = np.random.default_rng(options.seed)  # order of rows within a partition; not a release path

    def fetch(part: Partition) -> Future:
        return run.client.submit(_kmeans_rows, part, reading=reading, means=summary.means, pure=False)

    pending: Future | None = fetch(parts[0])
    later = iter(parts[1:])
    carry = np.empty((0, len(summary.features)))
    while pending is not None:
        X = pending.result()
        part = next(later, None)  # read the next partition while this one is fitted
        pending = None if part is None else fetch(part)
        X = np.concatenate([carry, X[rng.permutation(X.shape[0])]])
        start = 0
        if not hasattr(model, "cluster_centers_"):
            start = max(3 * k, MINIBATCH_ROWS)  # k-means++ initialisation sample
            if X.shape[0] < start and pending is not None:
                carry = X
                continue
            model.partial_fit(X[:start])
        while X.shape[0] - start >= MINIBATCH_ROWS:
            model.partial_fit(X[start:start + MINIBATCH_ROWS])
            start += MINIBATCH_ROWS
        carry = X[start:]
    if carry.shape[0]:
        model.partial_fit(carry)
    return model.cluster_centers_


def _dask_ml(run: _Runner, parts: Sequence[Partition], reading: _Reading, summary: SourceSummary,
             options: Seed000Options) -> np.ndarray:
    import dask
    import dask.array as da
    from dask_ml.cluster import KMeans
    sizes = run.map(_partition_rows, parts, reading=reading)
    d = len(summary.features)
    blocks = [da.from_delayed(dask.delayed(_kmeans_rows)(part, reading=reading, means=summary.means),
                              shape=(m, d), dtype=np.float64) for part, m in zip(parts, sizes) if m]
    X = da.concatenate(blocks, axis=0)
    model = KMeans(n_clusters=options.clusters, random_state=options.seed, init="k-means||")
    with dask.config.set(scheduler=run.client):
        model.fit(X)
    return np.asarray(model.cluster_centers_)


def _partition_rows(part: Partition, *, reading: _Reading) -> int:
    return int(_read(part, reading)[0].shape[0])


def _in_memory(run: _Runner, parts: Sequence[Partition], reading: _Reading, summary: SourceSummary,
               options: Seed000Options) -> np.ndarray:
    if summary.n > IN_MEMORY_MAX_ROWS:
        raise BuildError(f"k-means in memory gathers all {summary.n} rows; at most {IN_MEMORY_MAX_ROWS} "
                         f"(use minibatch or dask-ml)")
    X = np.concatenate(run.map(_kmeans_rows, parts, reading=reading, means=summary.means))
    return kmeans(X, _clusters(options), seed=options.seed)[1]       # checks K (DatasetError)


_KMEANS = {"minibatch": _minibatch, "dask-ml": _dask_ml, "in-memory": _in_memory}
