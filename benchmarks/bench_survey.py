"""Benchmark: whole `privmap build` runs on survey-shaped data (14,000 users x 50 answers), against the whole-build targets.

Run from the repository root:

    python benchmarks/bench_survey.py [--n 14000] [--k 256] [--delta-fraction 0.5] [--no-auto] [--repeat R]
                                      [--reference-rev REV]

draws the seeded survey of :mod:`survey_data` (n users x 50 Likert answers 1..5, about 2 %
blank cells, gender private) and runs, one fresh child process each (:func:`bench_build.run_cli`),

1. ``privmap build S.csv --private gender --domain 1:5 --clusters K --delta-fraction F --seed 0
   --holdout-folds 0 --key KEY --out B --json``: the build without cross-fitting;
2. the same with the default cross-fitting (5 folds, in parallel workers);
3. the same with ``--clusters auto`` (unless ``--no-auto``).

For each: CPU seconds of the whole process tree (user + system of the child and every worker
it reaped, ``os.wait4``), peak RSS (the largest of them), wall seconds, and the build's figures.
Then the ratios the whole-build targets bound: the folds' cost against the build without them
((2 - 1) / 1, target <= 1), and auto against the default build (3 / 2, target <= 3), with the
targets themselves (<= 60 CPU-s and <= 2 GB for 2; checked against this machine's figures only:
a loaded machine inflates CPU seconds too). ``--repeat R`` runs builds 1 and 2 R times, one pair
after the other, and prints the median of the folds' cost as well: one pair's figure varies by
about 0.1 between runs of one tree. The load average is printed before and after.
``--reference-rev REV`` runs builds 1, 2 and 3 again with the package as of git revision REV
(:func:`bench_build.package_at`), each right after this tree's, and prints reference / this tree.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_build import package_at, run_cli  # noqa: E402
from survey_data import survey, write_csv  # noqa: E402

TARGET_CPU_S = 60.0
TARGET_PEAK_MIB = 2048.0
TARGET_AUTO_RATIO = 3.0


def _line(name: str, r: dict) -> str:
    s = r["summary"]
    extra = ""
    if "holdout_leakage_bits" in s:
        extra = (f" holdout leak {s['holdout_leakage_bits']:.5f} [{s['holdout_leakage_low_bits']:.5f}, "
                 f"{s['holdout_leakage_high_bits']:.5f}] holdout dist {s['holdout_distortion']:.4f}")
    return (f"{name:<22} K={r['clusters']:>5} cpu {r['cpu']:7.1f} s  wall {r['wall']:7.1f} s  "
            f"peak {r['peak_mib']:6.0f} MiB  leak {r['leakage']:.5f} dist {r['distortion']:.4f}{extra}")


def _stages(r: dict) -> str:
    return "    stages (cpu s): " + ", ".join(
        f"{x['stage']} {x['cpu_seconds']:.1f}" + (f" (pid {x['fold_pid']})" if "fold_pid" in x else "")
        for x in r["stages"] or [])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=14000)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--delta-fraction", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0, help="seed of the drawn survey (the builds use --seed 0)")
    ap.add_argument("--no-auto", action="store_true")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run the builds without and with folds this many times, one pair after the other, "
                         "and print the median of the folds' cost (a shared machine's noise is about 0.1)")
    ap.add_argument("--reference-rev", default=None,
                    help="also run the no-fold, default and auto builds with the package at this git revision, "
                         "each right after this tree's, and print the CPU ratios")
    args = ap.parse_args(argv)
    print(f"load average before: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        csv = write_csv(tmp / "survey.csv", *survey(args.n, seed=args.seed))
        subprocess.run([sys.executable, "-c", "from privmap.offline.cli import main; main()", "keygen",
                        str(tmp / "keys")], check=True, capture_output=True)
        base = ["build", str(csv), "--private", "gender", "--domain", "1:5", "--delta-fraction",
                str(args.delta_fraction), "--seed", "0", "--key", str(tmp / "keys" / "private.pem"),
                "--out", str(tmp / "b.bundle"), "--json"]
        print(f"survey: {args.n} users x 50 answers (seed {args.seed}), gender private, "
              f"{args.delta_fraction} x Delta0; one child process per build", flush=True)
        reference = package_at(args.reference_rev, tmp) if args.reference_rev else None
        ratios, old_ratios = [], []
        for _ in range(args.repeat):
            plain = run_cli(base + ["--clusters", str(args.k), "--holdout-folds", "0"])
            print(_line("no cross-fitting", plain) + "\n" + _stages(plain), flush=True)
            if reference:
                old_plain = run_cli(base + ["--clusters", str(args.k), "--holdout-folds", "0"], reference)
                print(_line(f"  at {args.reference_rev}", old_plain) + f"\n    reference / this tree: "
                      f"{old_plain['cpu'] / plain['cpu']:.2f}", flush=True)
            folds = run_cli(base + ["--clusters", str(args.k)])
            print(_line("default (5 folds)", folds) + "\n" + _stages(folds), flush=True)
            ratios.append((folds["cpu"] - plain["cpu"]) / plain["cpu"])
            if reference:
                old = run_cli(base + ["--clusters", str(args.k)], reference)
                print(_line(f"  at {args.reference_rev}", old) + f"\n    reference / this tree: "
                      f"{old['cpu'] / folds['cpu']:.2f}", flush=True)
                old_ratios.append((old["cpu"] - old_plain["cpu"]) / old_plain["cpu"])
            print(f"folds' cost / build without them: {ratios[-1]:.2f} (target <= 1"
                  + (f"; {old_ratios[-1]:.2f} at {args.reference_rev}" if reference else "")
                  + f"); default build {folds['cpu']:.1f} CPU-s (target <= {TARGET_CPU_S:g}), "
                  f"peak {folds['peak_mib']:.0f} MiB (target <= {TARGET_PEAK_MIB:g})", flush=True)
        if args.repeat > 1:
            for name, values in [("this tree", ratios), (f"at {args.reference_rev}", old_ratios)]:
                if values:
                    print(f"folds' cost / build without them, {name}, {args.repeat} runs: median "
                          f"{statistics.median(values):.2f}, from {min(values):.2f} to {max(values):.2f}", flush=True)
        if not args.no_auto:
            auto = run_cli(base + ["--clusters", "auto"])
            print(_line("--clusters auto", auto), flush=True)
            for c in auto["summary"]["auto"]["candidates"]:
                print("    " + ("*" if c["chosen"] else " ") + " ".join(
                    f"{k}={v:.5g}" if isinstance(v, float) else f"{k}={v}" for k, v in c.items() if k != "chosen"))
            print(f"auto / default build: {auto['cpu'] / folds['cpu']:.2f} (target <= {TARGET_AUTO_RATIO:g})")
            if reference:
                old = run_cli(base + ["--clusters", "auto"], reference)
                print(_line(f"  at {args.reference_rev}", old) + f"\n    reference / this tree: "
                      f"{old['cpu'] / auto['cpu']:.2f}", flush=True)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
