"""What the recommender mode costs at scale: the build (CPU seconds and peak memory of the whole
process tree), the bundle's size, and the device's time per row in pure Python.

    python benchmarks/bench_recommender_scale.py                       # 4,200 x 1,000, then 3,000 columns
    python benchmarks/bench_recommender_scale.py --users 4200 --columns 1000 --density 0.05
    python benchmarks/bench_recommender_scale.py --users 4200 --columns 1000 --utility ranking
    python benchmarks/bench_recommender_scale.py --partitioned --users 1000000 --columns 1000 --parts 20 \
        --data /tmp/rec_parts                                           # out of core, on Dask

Each build runs ``privmap build --utility recommender --clusters auto --target-auc 0.55`` (default
folds; ``--utility ranking`` builds the ranking mode's bundle instead, docs/ranking.md) in a child
process on a seeded synthetic rating set (privmap.offline.data.synthetic_ratings), so that its CPU
seconds and peak RSS are the operating system's figures for that process tree.
The device figure is the median over 200 users of ``Bundle.sanitize`` (fold-in, nearest centre,
sample, decode every column), printed beside the same users' rows parsed alone
(``parse_row``, the floor any device pays to read a row) as a ratio, both in this process.

``--partitioned`` writes the users as ``--parts`` CSV files under ``--data`` (kept for the next
run; delete them afterwards), drawn ``CHUNK_USERS`` at a time by
``privmap.offline.data.synthetic_rating_chunks`` (one population of items; never the whole
users x columns array), then runs the out-of-core build ``privmap build DIR --utility recommender
--clusters K --delta-fraction 0.5 --workers N --in-core-limit 0 --prior counts`` (the factor points
mapped in passes too; benchmarks/bench_partitioned_parity.py measures them mapped in core) in a
child process and reports the CPU seconds
of its whole process tree (the build, the Dask scheduler and workers), its wall seconds, and the
peak resident memory of its largest single process and of the tree (sampled every 0.2 s, as
bench_survey_scale.py does).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

#: The CLI, run in a child process with this interpreter.
PRIVMAP = (sys.executable, "-c", "from privmap.offline.cli import main; main()")


def build(csv_path: pathlib.Path, out: pathlib.Path, key: pathlib.Path, extra: list[str],
          utility: str = "recommender") -> dict:
    """Run one build of ``utility``'s mode in a child process; its summary plus CPU seconds and peak RSS of the tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([*PRIVMAP, "build", str(csv_path),
                           "--private", "private", "--domain", "1:5", "--utility", utility,
                           "--clusters", "auto", "--target-auc", "0.55", "--seed", "1", "--key", str(key),
                           "--out", str(out), "--json", *extra], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = json.loads(done.stdout)
    summary["cpu_seconds"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary["wall_seconds"] = wall
    summary["peak_rss_mib"] = after.ru_maxrss / 1024       # largest child so far (KiB on Linux)
    return summary


def device_ms(bundle_path: pathlib.Path, public_pem: pathlib.Path, rows: list[list[str]]) -> tuple[float, float]:
    """Median milliseconds per row of ``sanitize`` and of ``parse_row`` alone, in this process."""
    from privmap.device import Keyring, read_bundle_file
    from privmap.device.kinds import parse_row
    bundle = read_bundle_file(bundle_path, Keyring.from_pem_files(public_pem))
    full, parse = [], []
    for row in rows:
        t0 = time.perf_counter()
        bundle.sanitize(row)
        t1 = time.perf_counter()
        parse_row(row, bundle.features)
        t2 = time.perf_counter()
        full.append(t1 - t0)
        parse.append(t2 - t1)
    return 1000 * statistics.median(full), 1000 * statistics.median(parse)


#: Users drawn and written at a time by ``--partitioned`` (10,000 x 1,000 cells: 80 MB an array).
CHUNK_USERS = 10_000


def csv_lines(ratings, private, classes) -> bytes:
    """The CSV data lines of ``ratings`` (n, m; whole numbers 1..9, NaN = blank) and their class
    codes ``private`` (n,), formatted without a Python loop over cells: each cell one digit or
    nothing, then a comma; the class name last."""
    import numpy as np
    n, m = ratings.shape
    blank = np.isnan(ratings)
    names = np.array([list(c.encode() + b"\n") for c in classes], dtype=np.uint8)   # equal widths: c0, c1
    line = np.empty((n, 2 * m + names.shape[1]), dtype=np.uint8)
    line[:, 0:2 * m:2] = np.where(blank, 0, ratings).astype(np.uint8) + ord("0")
    line[:, 1:2 * m:2] = ord(",")
    line[:, 2 * m:] = names[private]
    keep = np.ones(line.shape, dtype=bool)
    keep[:, 0:2 * m:2] = ~blank
    return line[keep].tobytes()


def write_parts(folder: pathlib.Path, users: int, columns: int, parts: int, density: float, rank: int):
    """``users`` synthetic users as ``parts`` CSV files in ``folder`` (skipped when it is there),
    drawn at most :data:`CHUNK_USERS` at a time; returns the first chunk's ratings (for the
    device timing)."""
    from privmap.offline.data import synthetic_rating_chunks
    per_part = -(-users // parts)
    size = min(CHUNK_USERS, per_part)
    drawn = synthetic_rating_chunks(users, columns, chunk_users=size, rank=rank, density=density, rng=columns)
    first = next(drawn)
    if folder.exists():
        return first.ratings
    tmp = folder.with_name(folder.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    header = (",".join(first.items) + ",private\n").encode()
    chunk = first
    for part in range(parts):
        with open(tmp / f"part{part:04d}.csv", "wb") as f:
            f.write(header)
            for _ in range(-(-per_part // size)):
                f.write(csv_lines(chunk.ratings, chunk.private, chunk.classes))
                chunk = next(drawn, None)
                if chunk is None:
                    break
        if chunk is None:
            break
    tmp.rename(folder)
    return first.ratings


def partitioned(args) -> None:
    """The ``--partitioned`` mode (module docstring): one table row."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from bench_survey_scale import run
    (m,) = args.columns
    folder = pathlib.Path(args.data) / f"u{args.users}_c{m}_p{args.parts}"
    started = time.perf_counter()
    first = write_parts(folder, args.users, m, args.parts, args.density, args.rank)
    written = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        subprocess.run([*PRIVMAP, "keygen", str(tmp / "k")], check=True, capture_output=True)
        out = tmp / "p.bundle"
        summary, wall, cpu, tree, largest = run([
            *PRIVMAP, "build", str(folder), "--private", "private", "--domain", "1:5", "--utility", "recommender",
            "--clusters", str(args.clusters), "--delta-fraction", "0.5", "--workers", str(args.workers),
            "--in-core-limit", "0", "--prior", "counts",
            "--seed", "1", "--key", str(tmp / "k" / "private.pem"), "--out", str(out), "--json"])
        rows = [["" if v != v else str(int(v)) for v in row] for row in first[:200]]
        ms, parse_ms = device_ms(out, tmp / "k" / "public.pem", rows)
        print(f"data written in {written:.0f} s ({sum(f.stat().st_size for f in folder.iterdir()) / 2**20:.0f} MiB)")
        print(f"{'users':>8} {'columns':>7} {'parts':>5} {'blank %':>7} {'K':>5} {'CPU s':>7} {'wall s':>7} "
              f"{'largest MiB':>11} {'tree MiB':>8} {'bundle bytes':>12} {'device ms/row':>13}")
        print(f"{summary['n']:>8} {m:>7} {args.parts:>5} {100 * (first != first).mean():>7.1f} "
              f"{summary['clusters']:>5} {cpu:>7.1f} {wall:>7.1f} {largest / 2**20:>11.0f} {tree / 2**20:>8.0f} "
              f"{os.path.getsize(out):>12} {ms:>13.2f}")
        print("stages (wall s):", json.dumps(summary["stage_seconds"]))
        print(f"new-user leakage {summary.get('holdout_leakage_bits', float('nan')):.5f} bits, "
              f"distortion {summary['distortion']:.4f} stars, factor penalty {summary['factor_reg']:g}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=4200)
    parser.add_argument("--columns", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--density", type=float, default=0.05)
    parser.add_argument("--rank", type=int, default=10, help="rank of the generator's taste")
    parser.add_argument("--utility", choices=("recommender", "ranking"), default="recommender",
                        help="the mode built (in memory only)")
    parser.add_argument("--partitioned", action="store_true", help="out of core: CSV parts, Dask workers")
    parser.add_argument("--parts", type=int, default=20, help="--partitioned: CSV files written")
    parser.add_argument("--workers", type=int, default=2, help="--partitioned: Dask worker processes")
    parser.add_argument("--clusters", type=int, default=256, help="--partitioned: K")
    parser.add_argument("--data", default=tempfile.gettempdir(), help="--partitioned: where the parts are written")
    args = parser.parse_args()
    if args.partitioned:
        partitioned(args)
        return
    from privmap.offline.data import synthetic_ratings
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        subprocess.run([*PRIVMAP, "keygen", str(tmp / "k")], check=True,
                       capture_output=True)
        print(f"{'users':>6} {'columns':>7} {'blank %':>7} {'K':>4} {'build CPU-s':>11} {'wall s':>7} "
              f"{'peak MiB':>8} {'bundle bytes':>12} {'device ms/row':>13} {'x parse alone':>13}")
        for m in args.columns:
            drawn = synthetic_ratings(args.users, m, rank=args.rank, density=args.density, rng=m)
            path = drawn.write_csv(tmp / f"r{m}.csv")
            out = tmp / f"r{m}.bundle"
            s = build(path, out, tmp / "k" / "private.pem", [], args.utility)
            rows = [["" if v != v else str(int(v)) for v in row] for row in drawn.ratings[:200]]
            ms, parse_ms = device_ms(out, tmp / "k" / "public.pem", rows)
            blank = 100 * (drawn.ratings != drawn.ratings).mean()
            print(f"{args.users:>6} {m:>7} {blank:>7.1f} {s['clusters']:>4} {s['cpu_seconds']:>11.1f} "
                  f"{s['wall_seconds']:>7.1f} {s['peak_rss_mib']:>8.0f} {os.path.getsize(out):>12} {ms:>13.2f} "
                  f"{ms / parse_ms:>13.1f}", flush=True)


if __name__ == "__main__":
    main()
