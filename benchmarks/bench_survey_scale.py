"""The whole-build scale target on survey data: n users x 50 answers, partitioned, cross-fitted.

Run from the repository root:

    nice python benchmarks/bench_survey_scale.py --ns 30000 100000 --clusters 1024

For each n, writes (once, under out/bench_survey/n<N>/, seeded) a survey-like population as CSV
parts of at most ``--rows-per-part`` rows: 50 answers in 1..5 driven by 5 latent traits, a binary
private "gender" shifting four of them, ``--blank`` of the cells left blank (the generator
``survey`` of bench_dask_build.py). Then it runs the pinned form of that target,

    privmap build DIR --private gender --domain 1:5 --clusters K --delta-fraction F \\
        --workers N --key KEY --out B --json

(codebook step and 5 cross-fitted folds on, the defaults) in a subprocess and prints the CPU
seconds of the whole process tree (user + system, the build and its Dask scheduler and workers),
its wall seconds, the peak of the summed resident memory of the tree and of its largest single
process (the target is per process), the declared new-user leakage and the stage seconds of
``--json``, with the growth exponent of CPU seconds in n between consecutive sizes and the
load average before and after each run (the machine may be shared: CPU seconds, not wall
seconds, measure the work there).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import time

import bench_dask_build as dask_bench

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "out" / "bench_survey"


def write_parts(n: int, rows_per_part: int, blank: float, seed: int = 24) -> pathlib.Path:
    """n survey users as CSV parts (skipped when the folder is there); returns the folder."""
    folder = OUT / f"n{n}"
    if folder.exists():
        return folder
    tmp = folder.with_name(folder.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    for i, lo in enumerate(range(0, n, rows_per_part)):
        hi = min(n, lo + rows_per_part)
        X, gender = dask_bench.survey(hi - lo, seed + i, blank=blank)
        dask_bench._write_csv(tmp / f"part{i:03d}.csv", X, gender, "gender")
    tmp.rename(folder)
    return folder


def run(args: list[str]) -> tuple[dict, float, float, float, float]:
    """Run a command; return its JSON, wall seconds, CPU seconds of its tree, and the peaks of
    the tree's summed RSS and of its largest process (bytes), sampled every 0.2 s."""
    import psutil
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    root = psutil.Process(proc.pid)
    peak_tree = peak_one = 0
    cpu: dict[int, float] = {}
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            rss = [p.memory_info().rss for p in tree]
            peak_tree, peak_one = max(peak_tree, sum(rss)), max(peak_one, max(rss))
            for p in tree:
                t = p.cpu_times()
                cpu[p.pid] = t.user + t.system
        except psutil.Error:
            pass
        time.sleep(0.2)
    out = proc.stdout.read()
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(args)}\n{out}")
    return (json.loads(out[out.index("{"):]), time.perf_counter() - started, sum(cpu.values()),
            peak_tree, peak_one)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[30_000, 100_000])
    ap.add_argument("--clusters", type=int, default=1024)
    ap.add_argument("--delta-fraction", type=float, default=0.5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows-per-part", type=int, default=100_000)
    ap.add_argument("--blank", type=float, default=0.02)
    args = ap.parse_args(argv)
    privmap = str(pathlib.Path(sys.executable).parent / "privmap")
    keydir = OUT / "keys"
    if not (keydir / "private.pem").exists():
        subprocess.run([privmap, "keygen", str(keydir)], check=True, stdout=subprocess.DEVNULL)
    print(f"K = {args.clusters}, {args.delta_fraction} x Delta0, {args.workers} workers, "
          f"{args.blank:.0%} blank cells, codebook step and cross-fitting on (defaults)")
    print(f"{'n':>9} {'cpu_s':>8} {'wall_s':>8} {'tree_GiB':>8} {'proc_GiB':>8} {'clusters':>8} "
          f"{'holdout':>8} {'exp_n':>6}  load before -> after; stages (wall s)", flush=True)
    last = None
    for n in sorted(args.ns):
        folder = write_parts(n, args.rows_per_part, args.blank)
        before = os.getloadavg()[0]
        summary, wall, cpu, tree, one = run(
            [privmap, "build", str(folder), "--private", "gender", "--domain", "1:5",
             "--clusters", str(args.clusters), "--delta-fraction", str(args.delta_fraction),
             "--workers", str(args.workers), "--in-core-limit", "0", "--key", str(keydir / "private.pem"),
             "--out", str(OUT / f"n{n}.bundle"), "--json"])
        growth = math.log(cpu / last[1]) / math.log(n / last[0]) if last else math.nan
        last = (n, cpu)
        stages = " ".join(f"{k}={v:.0f}" for k, v in summary.get("stage_seconds", {}).items())
        holdout = summary.get("holdout_leakage_bits")
        print(f"{n:>9} {cpu:>8.1f} {wall:>8.1f} {tree / 2**30:>8.2f} {one / 2**30:>8.2f} "
              f"{summary.get('clusters', 0):>8} {holdout if holdout is not None else math.nan:>8.5f} "
              f"{growth:>6.2f}  {before:.2f} -> {os.getloadavg()[0]:.2f}; {stages}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
