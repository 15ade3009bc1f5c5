"""Out-of-core build on Dask: time and peak memory against the number of users.

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

With ``--compare-holdout`` it measures instead whether the partitioned build's cross-fitted
(new-user) leakage is honest: a survey-like synthetic population (50 answers
in 1..5 driven by 5 latent traits, a binary "gender" shifting some traits, 2 % blank cells;
``survey``) gives a training part, written as one CSV and as 4 CSV parts, and 200,000 fresh
users from the same population. The in-memory build (one CSV) and the partitioned build (the
parts, mini-batch k-means, and k-means in memory to separate the two effects) run with the same
options; each bundle's table is then applied to the fresh users as a device would (nearest input,
missing cells masked) and their leakage measured (plug-in I(A; C^) minus its permutation bias:
the truth the estimates aim at). With ``--ssi`` the bundled SSI-2012 ratings (no fresh users:
both estimates side by side) are compared the same way.

Usage (from the repository root)::

    nice python benchmarks/bench_dask_build.py --ns 100000 1000000 10000000 --clusters 1024 \
        --reference-clusters 256
    python benchmarks/bench_dask_build.py --generate-only --ns 10000000
    nice python benchmarks/bench_dask_build.py --compare-holdout [--survey-n 14000] [--clusters 64] \
        [--delta-fraction 0.6] [--ssi]
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


#: CPU seconds of the process tree of the last :func:`run_measured` (last sample of each process).
CPU_SECONDS: dict[int, float] = {}


def run_measured(args: list[str]) -> tuple[dict, float, float]:
    """Run a command; return its JSON output, wall seconds and peak RSS of its process tree (bytes).

    The CPU seconds (user + system) of the tree, summed over the last sample of each process, are
    left in :data:`CPU_SECONDS` (on a shared machine they, not wall seconds, measure the work).
    """
    import psutil
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    root = psutil.Process(proc.pid)
    peak = 0
    CPU_SECONDS.clear()
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree))
            for p in tree:
                times = p.cpu_times()
                CPU_SECONDS[p.pid] = times.user + times.system
        except psutil.Error:
            pass
        time.sleep(0.2)
    out = proc.stdout.read()
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(args)}\n{out}")
    # the JSON object is the last thing on stdout (a solver library may print a banner before it)
    return json.loads(out[out.index("{"):]), seconds, peak


def survey(n: int, seed: int, blank: float = 0.02):
    """n synthetic survey answers: (X (n, 50) float with NaN blanks, gender (n,) of "f"/"m").

    Five latent traits ~ N(0, 1), each driving 10 items (half reverse-keyed) with loading 0.9 and
    noise 0.8, rounded and clipped to 1..5; gender shifts the traits by (0.35, 0.25, 0.15, 0.4, 0).
    """
    rng = np.random.default_rng(seed)
    gender = rng.integers(0, 2, n)
    traits = rng.normal(size=(n, 5)) + np.outer(2 * gender - 1, [0.35, 0.25, 0.15, 0.4, 0.0]) / 2
    sign = np.tile([1, -1], 25)
    answers = 3 + 0.9 * sign * np.repeat(traits, 10, axis=1) + rng.normal(0, 0.8, (n, D))
    X = np.clip(np.rint(answers), 1, 5)
    X[rng.random((n, D)) < blank] = np.nan
    return X, np.where(gender == 1, "m", "f")


def _write_csv(path: pathlib.Path, X, labels, private: str) -> None:
    import pandas as pd
    frame = pd.DataFrame(X, columns=[f"q{j:02d}" for j in range(X.shape[1])]).astype("Int64")
    frame[private] = labels
    frame.to_csv(path, index=False)


def fresh_leakage(payload: dict, X, labels) -> float:
    """Leakage of a bundle's integer table on users it never saw: the device's lookup of each row
    (nearest input, missing cells masked), plug-in I(A; C^) minus its permutation bias (bits)."""
    from privmap.offline import leakage_bits
    from privmap.offline.data import joint_prior, nearest
    from privmap.offline.measures import permutation_bias
    inputs = np.asarray(payload["inputs"], float)
    q = np.zeros((len(payload["inputs"]), len(payload["outputs"])))
    for c, (index, weight) in enumerate(zip(payload["table"]["index"], payload["table"]["weight"])):
        q[c, index] = np.asarray(weight, float) / 2.0 ** payload["table"]["bits"]
    classes = payload["private"]["classes"]
    a = np.searchsorted(classes, labels)
    symbols = nearest(X, inputs, "l2")
    plugin = leakage_bits(joint_prior(a, symbols, len(classes), len(inputs)), q)
    bias, _ = permutation_bias(a, symbols, len(classes), len(inputs), q, permutations=20, seed=0)
    return plugin - bias


def compare_holdout(args) -> None:
    """The partitioned and in-memory cross-fitted estimates side by side, against fresh users."""
    import tempfile

    from distributed import Client, LocalCluster

    from privmap.offline import Dataset, QuantizedOptions, declare
    from privmap.offline.data import open_source
    from privmap.offline.mechanisms.quantized import build, build_partitioned
    root = pathlib.Path(tempfile.mkdtemp(prefix="bench_holdout_"))
    cases = []
    X, g = survey(args.survey_n, seed=1)
    fresh = survey(200_000, seed=2)
    _write_csv(root / "survey.csv", X, g, "gender")
    (root / "survey").mkdir()
    for i, rows in enumerate(np.array_split(np.arange(X.shape[0]), 4)):
        _write_csv(root / "survey" / f"part{i}.csv", X[rows], g[rows], "gender")
    cases.append(("survey", root / "survey.csv", root / "survey", "gender", fresh))
    if args.ssi:
        import pandas as pd
        ssi = ROOT / "data" / "ssi2012" / "tastes_gender.csv"
        (root / "ssi").mkdir()
        frame = pd.read_csv(ssi)
        for i, rows in enumerate(np.array_split(np.arange(len(frame)), 4)):
            frame.iloc[rows].to_csv(root / "ssi" / f"part{i}.csv", index=False)
        cases.append(("ssi", ssi, root / "ssi", "gender", None))
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} cores")
    rows = []
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cl, \
            Client(cl) as client:
        for name, csv, folder, private, fresh_users in cases:
            options = QuantizedOptions(clusters=args.clusters, delta_fraction=args.delta_fraction, seed=0, issued_at=0,
                                       declared=declare(None, ["1:5"]))
            src = open_source(folder, private=private)
            # each run is called in this iteration; binding the case's values keeps that explicit
            runs = [("in-memory",
                     lambda csv=csv, private=private, options=options:
                         build(Dataset.from_csv(csv, private=private), options)),
                    ("dask, k-means in memory",
                     lambda src=src, options=options: build_partitioned(src, options, client, kmeans="in-memory",
                                                                           in_core_bytes=0)),
                    ("dask, mini-batch", lambda src=src, options=options: build_partitioned(src, options, client,
                                                                                               in_core_bytes=0))]
            for label, fn in runs:
                started = time.perf_counter()
                m = fn().payload
                seconds = time.perf_counter() - started
                truth = fresh_leakage(m, *fresh_users) if fresh_users is not None else float("nan")
                rows.append((name, label, seconds, m["metrics"], truth))
                print(f"  done {name} {label}: {seconds:.1f} s, holdout {m['metrics']['holdout_leakage_bits']:.5f}, "
                      f"fresh {truth:.5f}", flush=True)
    print(f"\nK = {args.clusters}, delta fraction {args.delta_fraction}, 5 folds, codebook step on, "
          f"{args.survey_n} survey users (fresh: 200000)")
    print(f"{'data':>6} {'build':>24} {'seconds':>8} {'in-sample':>10} {'holdout [95% interval]':>30} "
          f"{'fresh':>8} {'holdout/fresh':>13} {'ho-dist':>8}")
    for name, label, seconds, m, truth in rows:
        interval = f"{m['holdout_leakage_bits']:.4f} [{m['holdout_leakage_low_bits']:.4f}, " \
                   f"{m['holdout_leakage_high_bits']:.4f}]"
        print(f"{name:>6} {label:>24} {seconds:8.1f} {m['leakage_bits']:10.4f} {interval:>30} {truth:8.4f} "
              f"{m['holdout_leakage_bits'] / truth if truth == truth else float('nan'):13.2f} "
              f"{m['holdout_distortion']:8.4f}")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


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
    parser.add_argument("--compare-holdout", action="store_true",
                        help="compare the partitioned and in-memory cross-fitted leakage with fresh users' instead")
    parser.add_argument("--survey-n", type=int, default=14_000)
    parser.add_argument("--ssi", action="store_true", help="with --compare-holdout: also the SSI-2012 ratings")
    args = parser.parse_args()
    if args.compare_holdout:
        compare_holdout(args)
        return
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
            summary["cpu_seconds"] = sum(CPU_SECONDS.values())
            rows.append(("in-memory", n, seconds, peak, summary))
            summary, seconds, peak = run_measured(
                [*privmap, "build", str(folder), *ref, "--out", str(OUT / f"n{n}-ref.bundle"),
                 "--workers", str(args.workers)])
            summary["cpu_seconds"] = sum(CPU_SECONDS.values())
            rows.append(("dask", n, seconds, peak, summary))
        summary, seconds, peak = run_measured(
            [*privmap, "build", str(folder), *common, "--out", str(OUT / f"n{n}.bundle"),
             "--workers", str(args.workers)])
        summary["cpu_seconds"] = sum(CPU_SECONDS.values())
        rows.append(("dask", n, seconds, peak, summary))
        print(f"  done n={n}: {seconds:.1f} s, peak RSS {peak / 2**30:.2f} GiB, load {os.getloadavg()[0]:.2f}",
              flush=True)
    print(f"\nK = {args.clusters}, delta fraction {args.delta_fraction}, {args.workers} workers")
    print(f"{'path':>10} {'K':>5} {'n':>10} {'seconds':>9} {'CPU s':>8} {'us/row':>8} {'peak GiB':>9} "
          f"{'leak bits':>10} {'holdout':>8} {'q-dist':>7}  stage seconds")
    for path, n, seconds, peak, s in rows:
        stages = " ".join(f"{k}={v:.1f}" for k, v in s.get("stage_seconds", {}).items())
        print(f"{path:>10} {s['clusters']:>5} {n:>10} {seconds:9.1f} {s.get('cpu_seconds', float('nan')):8.1f} "
              f"{1e6 * seconds / n:8.1f} {peak / 2**30:9.2f} {s['leakage_bits']:10.5f} "
              f"{s.get('holdout_leakage_bits', float('nan')):8.5f} "
              f"{s.get('quantization_distortion', float('nan')):7.4f}  {stages}")
    if args.reference_clusters:
        memory, first = rows[0], rows[1]
        print(f"\nratio dask / in-memory at n = {memory[1]}, K = {args.reference_clusters}: "
              f"{first[2] / memory[2]:.2f} (time), {first[3] / memory[3]:.2f} (peak RSS)")
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
