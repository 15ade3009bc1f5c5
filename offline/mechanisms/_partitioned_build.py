"""The quantized build out of core, on a Dask cluster: partitions in, the same payload out.

Passes over the partitions (:mod:`privmap.offline.data._partitioned`), each a map on the
workers and a small reduce on the client:

1. validate every partition; count rows and private classes; column ranges and whether
   each column holds integers only; SHA-256 of every file (provenance).
2. k-means without all rows at once (``kmeans=``):

   - ``"minibatch"`` (default): scikit-learn's ``MiniBatchKMeans.partial_fit`` on batches of
     each partition, streamed from the workers one partition ahead;
   - ``"dask-ml"``: dask-ml's scalable k-means (k-means|| initialisation, then Lloyd
     iterations as map-reduce);
   - ``"in-memory"``: scikit-learn ``KMeans`` on all rows gathered (small data only: it is
     the in-memory build's own algorithm, for checking that both paths agree).

3. group sums and counts per k-means center (map-reduce) -> representatives (mean per
   group, then ``domain_points``: rounded, clipped, distinct, as in the in-memory build).
4. psi = the device's nearest-representative rule on every row (kept on the workers);
   counts of (private class, representative) -> p(a, c); r and the mean quantization
   distance.
5. after the solve, the measured raw distortion under the integer table (a second pass
   reading the rows again, with psi from pass 4).

Only the l2 metric is built this way (a median or mode per group is not a sum).

Where the algorithms coincide (``kmeans="in-memory"`` on integer data) the payload equals
the in-memory build's byte for byte except two float sums taken in another order
(``quantization_distortion`` and ``measured_distortion``, equal to about 1e-15 relative).
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .._errors import BuildError, DatasetError
from ..data._blas_nearest import assigned_distance_l2, nearest_l2
from ..data._dataset import MIN_ROWS, check_classes
from ..data._distortion import pairwise
from ..data._partitioned import (
    Partition,
    file_sha256,
    open_source,
    read_partition,
    source_sha256,
)
from ..data._prior import prior_from_counts
from ..data._quantize import domain_points
from ._missing import DEFAULT_MISSING
from ._pipeline import (
    Build,
    BuildOptions,
    Progress,
    assemble,
    centers_alphabet,
    raw_distortion_total,
    solve_prior,
)

KMEANS = ("minibatch", "dask-ml", "in-memory")
#: Most rows ``kmeans="in-memory"`` gathers on the client.
IN_MEMORY_MAX_ROWS = 1_000_000
#: Rows per mini-batch step.
MINIBATCH_ROWS = 4096


@dataclass(frozen=True)
class SourceSummary:
    """What pass 1 learned about the data (the partitioned counterpart of ``Dataset``).

    Attributes
    ----------
    n : int
        Rows.
    classes : tuple of str
        Private classes, sorted.
    private_name : str
    sha256 : str
        See :func:`privmap.offline.data._partitioned.source_sha256`.
    features : tuple of str, length d
    integer : ndarray of bool, shape (d,)
        Columns holding integers only.
    lo, hi : ndarray, shape (d,)
        Column ranges.
    """

    n: int
    classes: tuple[str, ...]
    private_name: str
    sha256: str
    features: tuple[str, ...]
    integer: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@contextlib.contextmanager
def dask_client(*, workers: int | None = None, scheduler: str | None = None):
    """A ``distributed.Client``: on ``scheduler`` (an address) if given, else on a new local
    cluster of ``workers`` single-threaded worker processes (default 2), closed on exit."""
    from distributed import Client, LocalCluster
    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    with LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client


def build_partitioned(source, options: BuildOptions, client, *, kmeans: str = "minibatch",
                      progress: Progress | None = None, dask_progress: bool = False) -> Build:
    """Build the payload from a directory, glob or file of CSV or Parquet data on a Dask cluster.

    Parameters
    ----------
    source : str or path-like
        Directory, glob pattern or file (see ``resolve_files``).
    options : BuildOptions
        Quantized mechanism, l2 metric.
    client : distributed.Client
        Where the partitions are processed (see :func:`dask_client`).
    kmeans : {"minibatch", "dask-ml", "in-memory"}, keyword-only
    progress : callable(stage, fraction), optional
        Told about each pass, as :func:`privmap.offline.mechanisms._pipeline.build`.
    dask_progress : bool
        Show Dask's text progress bar of every pass on stderr.

    Returns
    -------
    Build
        ``dataset`` is a :class:`SourceSummary`; ``alphabet.labels`` and
        ``alphabet.raw_distortion`` are None (psi never leaves the workers). The codebook step and
        the cross-fitted leakage need the rows in memory, so a partitioned build skips both (the
        bundle says so: provenance ``codebook`` 0 and no ``holdout_leakage_bits``).

    Raises
    ------
    BuildError
        Another mechanism or metric, an unknown ``kmeans``, too many clusters; DatasetError
        for bad data (the first bad cell, by file, line or row, and column).
    """
    if options.mechanism != "quantized" or options.metric != "l2":
        raise BuildError("a partitioned build makes the quantized mechanism with the l2 metric only "
                         f"(got {options.mechanism}, {options.metric})")
    if options.declared is not None or options.missing != DEFAULT_MISSING:
        raise BuildError("a partitioned build infers each column's domain from the data and refuses missing "
                         "answers: --domain, --schema and --missing are not supported there yet")
    if kmeans not in KMEANS:
        raise BuildError(f"unknown k-means {kmeans!r}; expected one of {', '.join(KMEANS)}")
    tell = progress or (lambda stage, fraction: None)
    run = _Runner(client, dask_progress)

    tell("validate", 0.0)
    src = open_source(source, private=options.private, public=options.public)
    parts = list(src.partitions)
    stats = run.map(_partition_stats, parts, features=src.features, private=src.private_name)
    digests = run.map(file_sha256, list(src.files))
    summary = _summarize(src, stats, digests)
    if not 1 <= options.clusters <= summary.n:
        raise DatasetError(f"--clusters {options.clusters}: must be between 1 and the {summary.n} rows")
    classes = list(summary.classes)

    tell("cluster", 0.05)
    kcenters = _KMEANS[kmeans](run, parts, src, summary, options)

    tell("representatives", 0.15)
    sums = run.map(_group_sums, parts, features=src.features, private=src.private_name, centers=kcenters)
    total = sum(s for s, _ in sums)
    count = sum(c for _, c in sums)
    filled = count > 0
    centers = domain_points(total[filled] / count[filled, None], summary.integer, summary.lo, summary.hi)

    tell("prior", 0.2)
    assigned = run.map_keep(_assign, parts, features=src.features, private=src.private_name, classes=classes,
                            centers=centers)
    results = run.gather([run.client.submit(_first, a, pure=False) for a in assigned])
    counts = sum(c for c, _, _ in results)
    used = np.nonzero(counts.sum(axis=0) > 0)[0]  # a representative nobody is nearest to carries no mass
    centers = centers[used]
    renumber = np.full(counts.shape[1], -1, dtype=np.int64)
    renumber[used] = np.arange(used.size)
    r = max(m for _, m, _ in results)
    mean = sum(t for _, _, t in results) / summary.n
    p_ac = prior_from_counts(counts[:, used], smoothing=options.smoothing)
    alphabet = centers_alphabet(summary.features, summary.integer, summary.lo, summary.hi, centers, "l2",
                                labels=None, raw_distortion=None, r=float(r), quantization_distortion=float(mean))

    def measure(table) -> float:
        tell("measure", 0.92)
        totals = run.gather([
            run.client.submit(_raw_total, part, a, features=src.features, private=src.private_name,
                              renumber=renumber, centers=centers, table=table, pure=False)
            for part, a in zip(parts, assigned)])
        return sum(totals) / summary.n

    done = solve_prior(alphabet, p_ac, options, progress=tell)  # no codebook step: rows are not held
    return assemble(summary, done, options, tell, measure=measure)


class _Runner:
    """Submits one task per partition and gathers the results in partition order."""

    def __init__(self, client, show: bool):
        self.client, self.show = client, show

    def map_keep(self, fn, items, **kwargs) -> list:
        return [self.client.submit(fn, item, pure=False, **kwargs) for item in items]

    def gather(self, futures) -> list:
        if self.show:
            from distributed import progress
            with contextlib.redirect_stdout(sys.stderr):
                progress(futures)
        return self.client.gather(futures)

    def map(self, fn, items, **kwargs) -> list:
        return self.gather(self.map_keep(fn, items, **kwargs))


def _summarize(src, stats, digests) -> SourceSummary:
    n = sum(s["n"] for s in stats)
    where = src.files[0] if len(src.files) == 1 else f"{len(src.files)} files"
    if n < MIN_ROWS:
        raise DatasetError(f"{where}: {n} data rows, need at least {MIN_ROWS}")
    found = sorted(set().union(*(s["labels"] for s in stats)))
    classes = check_classes(found, None, where, src.private_name)
    full = [s for s in stats if s["n"]]
    return SourceSummary(
        n=n, classes=tuple(classes), private_name=src.private_name, sha256=source_sha256(src.files, digests),
        features=src.features, integer=np.logical_and.reduce([s["integer"] for s in full]),
        lo=np.min([s["lo"] for s in full], axis=0), hi=np.max([s["hi"] for s in full], axis=0))


# --- tasks run on the workers ------------------------------------------------------------------------

def _partition_stats(part: Partition, *, features, private) -> dict:
    X, labels = read_partition(part, features, private)
    if X.shape[0] == 0:
        return {"n": 0, "labels": set()}
    return {"n": X.shape[0], "labels": set(np.unique(labels).tolist()), "lo": X.min(axis=0), "hi": X.max(axis=0),
            "integer": np.all(X == np.round(X), axis=0)}


def _rows(part: Partition, *, features, private) -> np.ndarray:
    return read_partition(part, features, private)[0]


def _group_sums(part: Partition, *, features, private, centers) -> tuple[np.ndarray, np.ndarray]:
    X = _rows(part, features=features, private=private)
    k = centers.shape[0]
    groups = nearest_l2(X, centers) if X.shape[0] else np.zeros(0, dtype=np.int64)
    sums = np.stack([np.bincount(groups, weights=column, minlength=k) for column in X.T], axis=1) \
        if X.shape[1] else np.zeros((k, 0))
    return sums, np.bincount(groups, minlength=k)


def _assign(part: Partition, *, features, private, classes, centers):
    X, labels = read_partition(part, features, private)
    k = centers.shape[0]
    psi = nearest_l2(X, centers) if X.shape[0] else np.zeros(0, dtype=np.int64)
    code = {c: i for i, c in enumerate(classes)}
    a = np.fromiter((code[v] for v in labels), dtype=np.int64, count=labels.size)
    counts = np.bincount(a * k + psi, minlength=len(classes) * k).reshape(len(classes), k).astype(float)
    dist = assigned_distance_l2(X, centers, psi)
    return (counts, float(dist.max()) if dist.size else 0.0, float(dist.sum())), psi


def _first(pair):
    return pair[0]


def _raw_total(part: Partition, assigned, *, features, private, renumber, centers, table) -> float:
    X = _rows(part, features=features, private=private)
    psi = renumber[assigned[1]]
    return raw_distortion_total(psi, lambda rows, outputs: pairwise(X[rows], centers[outputs], "l2"), table)


# --- k-means variants ----------------------------------------------------------------------------------

def _minibatch(run: _Runner, parts: Sequence[Partition], src, summary: SourceSummary, options: BuildOptions):
    from sklearn.cluster import MiniBatchKMeans
    k = options.clusters
    model = MiniBatchKMeans(n_clusters=k, random_state=options.seed, batch_size=MINIBATCH_ROWS, n_init=3)
    rng = np.random.default_rng(options.seed)  # order of rows within a partition; not a release path
    pending = run.client.submit(_rows, parts[0], features=src.features, private=src.private_name, pure=False)
    later = iter(parts[1:])
    carry = np.empty((0, summary.lo.size))
    while pending is not None:
        X = pending.result()
        part = next(later, None)  # read the next partition while this one is fitted
        pending = None if part is None else run.client.submit(_rows, part, features=src.features,
                                                              private=src.private_name, pure=False)
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


def _dask_ml(run: _Runner, parts, src, summary: SourceSummary, options: BuildOptions):
    import dask
    import dask.array as da
    from dask_ml.cluster import KMeans
    sizes = [s for s in run.map(_partition_rows, parts, features=src.features, private=src.private_name)]
    d = summary.lo.size
    blocks = [da.from_delayed(dask.delayed(_rows)(part, features=src.features, private=src.private_name),
                              shape=(m, d), dtype=np.float64) for part, m in zip(parts, sizes) if m]
    X = da.concatenate(blocks, axis=0)
    model = KMeans(n_clusters=options.clusters, random_state=options.seed, init="k-means||")
    with dask.config.set(scheduler=run.client):
        model.fit(X)
    return np.asarray(model.cluster_centers_)


def _partition_rows(part: Partition, *, features, private) -> int:
    return int(_rows(part, features=features, private=private).shape[0])


def _in_memory(run: _Runner, parts, src, summary: SourceSummary, options: BuildOptions):
    from sklearn.cluster import KMeans
    if summary.n > IN_MEMORY_MAX_ROWS:
        raise BuildError(f"k-means in memory gathers all {summary.n} rows; at most {IN_MEMORY_MAX_ROWS} "
                         f"(use minibatch or dask-ml)")
    X = np.concatenate(run.map(_rows, parts, features=src.features, private=src.private_name))
    distinct = np.unique(X, axis=0).shape[0]
    if options.clusters > distinct:
        raise DatasetError(f"--clusters {options.clusters}: must be between 1 and the {distinct} distinct public rows")
    return KMeans(n_clusters=options.clusters, n_init=4, random_state=options.seed, algorithm="elkan").fit(X).cluster_centers_


_KMEANS = {"minibatch": _minibatch, "dask-ml": _dask_ml, "in-memory": _in_memory}
