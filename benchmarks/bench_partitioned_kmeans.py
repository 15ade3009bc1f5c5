"""Which out-of-core k-means quantizes better at equal time: mini-batch over partitions or dask-ml's?

Both run on the same local Dask cluster over the same Parquet partitions (the synthetic users
of ``bench_dask_build.py``; generate them first). For each method and budget the script reports
the seconds to fit and the mean squared l2 distance of all rows to their nearest center
(k-means' objective; lower is better), measured by one more pass over the partitions.

- ``minibatch``: the build's own (:meth:`privmap.offline.mechanisms.table.PartitionedRows.kmeans_centers`
  with ``kmeans="minibatch"``: scikit-learn ``MiniBatchKMeans.partial_fit`` on 4096-row batches
  streamed from the workers), one pass.
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

    from dataclasses import replace

    import dask
    import dask.array as da
    from dask_ml.cluster import KMeans
    from distributed import Client, LocalCluster

    from privmap.offline import QuantizedOptions
    from privmap.offline.data import nearest_l2, open_source, read_partition
    from privmap.offline.mechanisms.table import PartitionedRows

    folder = ROOT / "out" / "bench_dask" / f"n{args.n}"
    src = open_source(folder, private="party", parquet_block_rows=1)  # one row group per partition
    options = QuantizedOptions(clusters=args.clusters, delta_fraction=0.5, cross_fitting=None)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        def part_rows(part):
            return read_partition(part, src.features, src.private_name)[0]

        sizes = client.gather(client.map(lambda part: part_rows(part).shape[0], list(src.partitions)))
        keep = int(np.searchsorted(np.cumsum(sizes), args.rows)) + 1
        parts, sizes = list(src.partitions[:keep]), sizes[:keep]
        src = replace(src, partitions=tuple(parts))
        partitioned = PartitionedRows(src, options, client, kmeans="minibatch")
        n, d = partitioned.n, len(src.features)

        def objective(centers) -> float:
            def part_cost(part):
                X = part_rows(part)
                return float(((X - centers[nearest_l2(X, centers)]) ** 2).sum())
            return sum(client.gather(client.map(part_cost, parts))) / n

        rows = []
        started = time.perf_counter()
        centers = partitioned.kmeans_centers(options)
        rows.append(("minibatch", "1 pass", time.perf_counter() - started, objective(centers)))
        X = da.concatenate([da.from_delayed(dask.delayed(lambda p: read_partition(p, src.features, "party")[0])(p),
                                            shape=(m, d), dtype=float) for p, m in zip(parts, sizes)])
        for iters in args.dask_ml_iters:
            started = time.perf_counter()
            model = KMeans(n_clusters=args.clusters, random_state=0, init="k-means||", max_iter=iters)
            model.fit(X)
            rows.append(("dask-ml", f"max_iter {iters}", time.perf_counter() - started,
                         objective(np.asarray(model.cluster_centers_))))
    print(f"n = {n} rows x {d}, K = {args.clusters}, {args.workers} workers, "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'method':>10} {'budget':>12} {'seconds':>8} {'mean sq. dist':>14}")
    for method, budget, seconds, cost in rows:
        print(f"{method:>10} {budget:>12} {seconds:8.1f} {cost:14.4f}")


if __name__ == "__main__":
    main()
