"""What the recommender mode costs at scale: the build (CPU seconds and peak memory of the whole
process tree), the bundle's size, and the device's time per row in pure Python.

    python benchmarks/bench_recommender_scale.py                       # 4,200 x 1,000, then 3,000 columns
    python benchmarks/bench_recommender_scale.py --users 4200 --columns 1000 --density 0.05

Each build runs ``privmap build --utility recommender --clusters auto --target-auc 0.55`` (default
folds) in a child process on a seeded synthetic rating set (privmap.offline.data.synthetic_ratings),
so that its CPU seconds and peak RSS are the operating system's figures for that process tree.
The device figure is the median over 200 users of ``Bundle.sanitize`` (fold-in, nearest centre,
sample, decode every column), printed beside the same users' rows parsed alone
(``parse_row``, the floor any device pays to read a row) as a ratio, both in this process.
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


def build(csv_path: pathlib.Path, out: pathlib.Path, key: pathlib.Path, extra: list[str]) -> dict:
    """Run one build in a child process; its summary plus CPU seconds and peak RSS of the tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([*PRIVMAP, "build", str(csv_path),
                           "--private", "private", "--domain", "1:5", "--utility", "recommender",
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=4200)
    parser.add_argument("--columns", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--density", type=float, default=0.05)
    parser.add_argument("--rank", type=int, default=10, help="rank of the generator's taste")
    args = parser.parse_args()
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
            s = build(path, out, tmp / "k" / "private.pem", [])
            rows = [["" if v != v else str(int(v)) for v in row] for row in drawn.ratings[:200]]
            ms, parse_ms = device_ms(out, tmp / "k" / "public.pem", rows)
            blank = 100 * (drawn.ratings != drawn.ratings).mean()
            print(f"{args.users:>6} {m:>7} {blank:>7.1f} {s['clusters']:>4} {s['cpu_seconds']:>11.1f} "
                  f"{s['wall_seconds']:>7.1f} {s['peak_rss_mib']:>8.0f} {os.path.getsize(out):>12} {ms:>13.2f} "
                  f"{ms / parse_ms:>13.1f}", flush=True)


if __name__ == "__main__":
    main()
