"""Which out-of-core k-means quantizes better at equal time: mini-batch over partitions or dask-ml's?

Both run on the same local Dask cluster over the same Parquet partitions (the synthetic users
of ``bench_dask_build.py``; generate them first). For each method and budget the script reports
the seconds to fit and the mean squared l2 distance of all rows to their nearest center
(k-means' objective; lower is better), measured by one more pass over the partitions.

- ``minibatch``: the build's own ``_minibatch`` (scikit-learn ``MiniBatchKMeans.partial_fit`` on
  4096-row batches streamed from the workers), ``--epochs`` passes.
- ``dask-ml``: ``dask_ml.cluster.KMeans`` (k-means|| initialisation, Lloyd iterations as
  map-reduce) with ``max_iter`` from ``--dask-ml-iters``.

Usage (from the repository root)::

    nice python benchmarks/bench_partitioned_kmeans.py --n 1000000 --rows 200000 --clusters 256
"""
from __future__ import annotations

import argparse
import os
import pathlib
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="which generated data set (out/bench_dask/n<N>)")
    parser.add_argument("--rows", type=int, default=200_000, help="use the first ROWS rows")
    parser.add_argument("--clusters", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dask-ml-iters", type=int, nargs="+", default=[1, 3, 10])
    args = parser.parse_args()

    import dask
    import dask.array as da
    from dask_ml.cluster import KMeans
    from privmap.offline.data._blas_nearest import nearest_l2
    from privmap.offline.data._partitioned import open_source, read_partition
    from privmap.offline.mechanisms.quantized._partitioned_build import _minibatch, _Runner, _summarize, _partition_stats
    from privmap.offline.mechanisms.quantized._pipeline import BuildOptions
    from dataclasses import replace
    from distributed import Client, LocalCluster

    folder = ROOT / "out" / "bench_dask" / f"n{args.n}"
    src = open_source(folder, private="party", parquet_block_rows=1)  # one row group per partition
    options = BuildOptions(private="party", clusters=args.clusters, delta_fraction=0.5)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        run = _Runner(client, False)
        stats = run.map(_partition_stats, list(src.partitions), features=src.features, private=src.private_name)
        counts = np.cumsum([s["n"] for s in stats])
        keep = int(np.searchsorted(counts, args.rows)) + 1
        parts, stats = list(src.partitions[:keep]), stats[:keep]
        src = replace(src, partitions=tuple(parts))
        summary = _summarize(src, stats, ["-"] * len(src.files))

        def objective(centers) -> float:
            def part_cost(part):
                X = read_partition(part, src.features, src.private_name)[0]
                nearest = nearest_l2(X, centers)
                return float(((X - centers[nearest]) ** 2).sum())
            return sum(run.map(part_cost, parts)) / summary.n

        rows = []
        started = time.perf_counter()
        centers = _minibatch(run, parts, src, summary, options)
        rows.append(("minibatch", "1 pass", time.perf_counter() - started, objective(centers)))
        sizes = [s["n"] for s in stats]
        X = da.concatenate([da.from_delayed(dask.delayed(lambda p: read_partition(p, src.features, "party")[0])(p),
                                            shape=(m, summary.lo.size), dtype=float) for p, m in zip(parts, sizes)])
        for iters in args.dask_ml_iters:
            started = time.perf_counter()
            model = KMeans(n_clusters=args.clusters, random_state=0, init="k-means||", max_iter=iters)
            model.fit(X)
            rows.append(("dask-ml", f"max_iter {iters}", time.perf_counter() - started,
                         objective(np.asarray(model.cluster_centers_))))
    print(f"n = {summary.n} rows x {summary.lo.size}, K = {args.clusters}, {args.workers} workers, "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'method':>10} {'budget':>12} {'seconds':>8} {'mean sq. dist':>14}")
    for method, budget, seconds, cost in rows:
        print(f"{method:>10} {budget:>12} {seconds:8.1f} {cost:14.4f}")


if __name__ == "__main__":
    main()
