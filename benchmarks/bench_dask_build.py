"""Out-of-core build on Dask (issue 17): time and peak memory against the number of users.

Synthetic operator data: n users x 50 integer ratings in 1..5 and a binary private attribute
("party") that shifts each user's ratings (feature j moves by +-s_j, s_j in [0, 0.6]) under
Gaussian noise of standard deviation 1, rounded and clipped. Written once as Parquet under
out/bench_dask/n<N>/ (10^6 rows per file, row groups of 250,000 rows; out/ is not in git).

For each n the script runs the pinned command in a subprocess,

    privmap build out/bench_dask/n<N> --private party --clusters K --delta-fraction F \\
        --key KEY --out BUNDLE --workers W --json

and samples the resident memory of that process and all its children (the Dask scheduler
and workers) every 0.2 s; "peak RSS" is the largest sum seen. With --reference-clusters it
first runs, at the smallest n and that K, the in-memory build (the same data as one CSV) and
the partitioned build in the same way, as the reference ratio.
The per-stage seconds come from the build's --json summary.

Usage (from the repository root)::

    nice python benchmarks/bench_dask_build.py --ns 100000 1000000 10000000 --clusters 1024 \
        --reference-clusters 256
    python benchmarks/bench_dask_build.py --generate-only --ns 10000000
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "out" / "bench_dask"
D = 50
ROWS_PER_FILE = 1_000_000


def generate(n: int, seed: int = 17) -> pathlib.Path:
    """Write n synthetic users as Parquet (skipped when already there); return the folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    folder = OUT / f"n{n}"
    done = folder / "DONE"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    base = rng.uniform(2.0, 4.0, D)
    shift = rng.uniform(0.0, 0.6, D)
    for index, start in enumerate(range(0, n, ROWS_PER_FILE)):
        m = min(ROWS_PER_FILE, n - start)
        party = rng.integers(0, 2, m)
        ratings = base + np.outer(2 * party - 1, shift) + rng.normal(0.0, 1.0, (m, D))
        ratings = np.clip(np.rint(ratings), 1, 5).astype(np.int8)
        columns = {f"r{j:02d}": ratings[:, j] for j in range(D)}
        columns["party"] = np.where(party == 1, "left", "right")
        pq.write_table(pa.table(columns), folder / f"part-{index:04d}.parquet", row_group_size=250_000)
    done.touch()
    return folder


def as_csv(folder: pathlib.Path) -> pathlib.Path:
    """The same rows as one CSV (for the in-memory reference build)."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    target = folder.with_suffix(".csv")
    if not target.exists():
        tables = [pq.read_table(p) for p in sorted(folder.glob("*.parquet"))]
        import pyarrow as pa
        pcsv.write_csv(pa.concat_tables(tables), target,
                       write_options=pcsv.WriteOptions(quoting_style="none"))
    return target


def run_measured(args: list[str]) -> tuple[dict, float, float]:
    """Run a command; return its JSON output, wall seconds and peak RSS of its process tree (bytes)."""
    import psutil
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    root = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            total = root.memory_info().rss + sum(c.memory_info().rss for c in root.children(recursive=True))
            peak = max(peak, total)
        except psutil.Error:
            pass
        time.sleep(0.2)
    out = proc.stdout.read()
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(args)}\n{out}")
    return json.loads(out), seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ns", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--clusters", type=int, default=1024)
    parser.add_argument("--delta-fraction", type=float, default=0.5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--generate-only", action="store_true")
    parser.add_argument("--reference-clusters", type=int, default=None,
                        help="also build the smallest n in memory (one CSV) and partitioned at this K, "
                             "side by side, as the reference ratio [default: no reference run]")
    args = parser.parse_args()
    for n in args.ns:
        generate(n)
    if args.generate_only:
        return
    keydir = OUT / "keys"
    privmap = [str(pathlib.Path(sys.executable).parent / "privmap")]
    if not (keydir / "private.pem").exists():
        subprocess.run([*privmap, "keygen", str(keydir)], check=True, stdout=subprocess.DEVNULL)
    common = ["--private", "party", "--clusters", str(args.clusters), "--delta-fraction", str(args.delta_fraction),
              "--key", str(keydir / "private.pem"), "--json"]
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    rows = []
    for i, n in enumerate(sorted(args.ns)):
        folder = OUT / f"n{n}"
        if i == 0 and args.reference_clusters:
            ref = [*common[:2], "--clusters", str(args.reference_clusters), *common[4:]]
            summary, seconds, peak = run_measured(
                [*privmap, "build", str(as_csv(folder)), *ref, "--out", str(OUT / f"n{n}-memory.bundle")])
            rows.append(("in-memory", n, seconds, peak, summary))
            summary, seconds, peak = run_measured(
                [*privmap, "build", str(folder), *ref, "--out", str(OUT / f"n{n}-ref.bundle"),
                 "--workers", str(args.workers)])
            rows.append(("dask", n, seconds, peak, summary))
        summary, seconds, peak = run_measured(
            [*privmap, "build", str(folder), *common, "--out", str(OUT / f"n{n}.bundle"),
             "--workers", str(args.workers)])
        rows.append(("dask", n, seconds, peak, summary))
        print(f"  done n={n}: {seconds:.1f} s, peak RSS {peak / 2**30:.2f} GiB, load {os.getloadavg()[0]:.2f}",
              flush=True)
    print(f"\nK = {args.clusters}, delta fraction {args.delta_fraction}, {args.workers} workers")
    print(f"{'path':>10} {'K':>5} {'n':>10} {'seconds':>9} {'us/row':>8} {'peak GiB':>9} {'leak bits':>10} "
          f"{'q-dist':>7}  stage seconds")
    for path, n, seconds, peak, s in rows:
        stages = " ".join(f"{k}={v:.1f}" for k, v in s.get("stage_seconds", {}).items())
        print(f"{path:>10} {s['clusters']:>5} {n:>10} {seconds:9.1f} {1e6 * seconds / n:8.1f} {peak / 2**30:9.2f} "
              f"{s['leakage_bits']:10.5f} {s.get('quantization_distortion', float('nan')):7.4f}  {stages}")
    if args.reference_clusters:
        memory, first = rows[0], rows[1]
        print(f"\nratio dask / in-memory at n = {memory[1]}, K = {args.reference_clusters}: "
              f"{first[2] / memory[2]:.2f} (time), {first[3] / memory[3]:.2f} (peak RSS)")
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
