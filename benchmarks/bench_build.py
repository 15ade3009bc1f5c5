"""Benchmark: whole `privmap build` runs on UCI Adult at several (n, K), and how their cost grows.

Run from the repository root:

    python benchmarks/bench_build.py --ns 6000 24000 --ks 64 256 1024 [--private race] --reference-rev $(git rev-parse main)

Each point is one `privmap build --json` in a fresh child process (the CLI itself, as an
operator runs it) on the first n rows of a seeded shuffle of UCI Adult's 48,842 rows
(data/adult: age, education-num, capital-gain, capital-loss, hours-per-week; private
attribute sex, or with ``--private`` race (five classes), marital-status (seven), workclass
(nine) or occupation (fifteen)), K clusters, ``--delta-fraction`` of Delta0, ``--holdout-folds`` folds. Per
build it reports the child's wall seconds, CPU seconds (user + system of the child and its
own children, from ``os.wait4``) and peak resident set (the child's ``ru_maxrss``), the wall
seconds of the codebook stage from the build's own ``stage_seconds``, and for this tree the
build's ``stages`` (CPU and wall seconds, peak MiB at each stage's end). Then it fits
cpu_seconds ~ n^a K^b by least squares on the logs and prints a and b.

``--reference-rev REV`` runs the same build with the package as it was at git revision REV
(``git archive`` of the package's sources into a temporary folder put first on
the child's PYTHONPATH), back to back with the current one at each point, and prints the
ratios side by side (timings on a shared machine are noisy; only ratios from the same
moment compare). ``--reference-max-k`` skips the reference above that K (a dense n x K
codebook step can take minutes there).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
COLUMNS = ("age", "education_num", "capital_gain", "capital_loss", "hours_per_week")


def adult_fields() -> list[list[str]]:
    """UCI Adult's 48,842 rows (adult.data, then adult.test), each as its 15 stripped fields; the
    income field without the full stop adult.test writes after it (">50K." is ">50K")."""
    rows = []
    for name in ("adult.data", "adult.test"):
        for line in (ROOT / "data" / "adult" / name).read_text().splitlines():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) == 15:
                fields[14] = fields[14].rstrip(".")
                rows.append(fields)
    return rows


#: UCI Adult's private attributes: their field index (adult.names). Occupation has 14 values and
#: "?" (unknown, 2,809 rows), kept as a fifteenth class; marital-status has seven; workclass eight
#: and "?" (2,799 rows), two of them rare (Never-worked 10 rows, Without-pay 21); income two.
PRIVATE = {"sex": 9, "race": 8, "occupation": 6, "marital-status": 5, "workclass": 1, "income": 14}


def adult_rows(seed: int = 0, private: str = "sex") -> list[list[str]]:
    """UCI Adult's 48,842 rows as [age, education-num, capital-gain, capital-loss, hours-per-week,
    PRIVATE], shuffled by ``seed``."""
    rows = [[fields[i] for i in (0, 4, 10, 11, 12)] + [fields[PRIVATE[private]]] for fields in adult_fields()]
    order = np.random.default_rng(seed).permutation(len(rows))
    return [rows[i] for i in order]


def write_csv(rows, path: pathlib.Path, private: str = "sex") -> pathlib.Path:
    path.write_text(",".join(COLUMNS + (private,)) + "\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


def package_at(rev: str, into: pathlib.Path) -> pathlib.Path:
    """A folder holding the ``privmap`` package as of git revision ``rev``: put it first on PYTHONPATH.

    Revisions with the src layout hold the package at src/privmap; older ones mapped
    src_privmap/, offline/ and device/ onto it (pyproject's package-dir), rebuilt here.
    """
    src_layout = subprocess.run(["git", "cat-file", "-e", f"{rev}:src/privmap"], cwd=ROOT).returncode == 0
    folders = ["src"] if src_layout else ["offline", "device", "src_privmap"]
    archive = into / "rev.tar"
    with archive.open("wb") as fh:
        subprocess.run(["git", "archive", rev, *folders], cwd=ROOT, check=True, stdout=fh)
    tree = into / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree)
    if src_layout:
        return tree / "src"
    package = into / "path" / "privmap"
    package.mkdir(parents=True)
    for item in (tree / "src_privmap").iterdir():
        item.rename(package / item.name)
    (tree / "offline").rename(package / "offline")
    (tree / "device").rename(package / "device")
    return into / "path"


_CHILD = ("import sys, privmap; assert privmap.__file__.startswith(sys.argv[1]), privmap.__file__; "
          "from privmap.offline.cli import main; sys.argv = ['privmap'] + sys.argv[2:]; main()")


def run_build(csv: pathlib.Path, k: int, args, key: pathlib.Path, out: pathlib.Path,
              pythonpath: pathlib.Path | None) -> dict:
    """One `privmap build --json` on Adult in a child process: wall, CPU seconds and peak RSS of the child."""
    return run_cli(["build", str(csv), "--private", args.private, "--clusters", str(k),
                    "--delta-fraction", str(args.delta_fraction), "--holdout-folds", str(args.holdout_folds),
                    "--seed", "0", "--key", str(key), "--out", str(out), "--json"], pythonpath)


class BuildFailed(RuntimeError):
    """A child ``privmap`` command that exited non-zero: its ``wall`` and ``cpu`` seconds (as
    :func:`run_cli` measures them) and the last line of its stderr (``error``)."""

    def __init__(self, returncode: int, stderr: str, wall: float, cpu: float):
        super().__init__(f"build failed ({returncode}): {stderr[-2000:]}")
        self.wall, self.cpu = wall, cpu
        self.error = (stderr.strip().splitlines() or [""])[-1]


def run_cli(cli_args: list[str], pythonpath: pathlib.Path | None = None, env_extra: dict | None = None) -> dict:
    """``privmap CLI_ARGS`` (a ``--json`` command) in a child process, the package from this tree or from
    ``pythonpath``. Returns wall seconds, ``cpu`` (user + system seconds of the child and of every
    descendant it reaped, from ``os.wait4``: the fold workers included, which the pool joins before the
    child exits), ``peak_mib`` (``ru_maxrss`` of wait4: the largest resident set among the child and
    those descendants), the build's figures and ``summary`` (the parsed JSON). Raises
    :class:`BuildFailed` with the child's stderr and costs when it fails."""
    env = dict(os.environ, **(env_extra or {}))
    expect = str(pythonpath) if pythonpath else str(ROOT)
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-c", _CHILD, expect, *cli_args]
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        started = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=so, stderr=se, env=env, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        so.seek(0)
        se.seek(0)
        if child.returncode != 0:
            raise BuildFailed(child.returncode, se.read().decode(), wall, usage.ru_utime + usage.ru_stime)
        text = so.read().decode()
        # the JSON object is the last thing printed; a solver banner may come before it on stdout
        summary = json.loads(text if text.startswith("{") else text[text.rindex("\n{") + 1:])
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024,
            "codebook": summary.get("stage_seconds", {}).get("codebook", math.nan),
            "distortion": summary["distortion"], "leakage": summary["leakage_bits"], "clusters": summary["clusters"],
            "stages": summary.get("stages"), "summary": summary}


def fit_exponents(points: list[tuple[int, int, float]]) -> tuple[float, float]:
    """(a, b) of cost ~ c n^a K^b, least squares on logs; NaN where the grid does not vary."""
    n = np.log([p[0] for p in points])
    k = np.log([p[1] for p in points])
    y = np.log([p[2] for p in points])
    cols = [np.ones_like(n)]
    names = []
    for name, v in (("n", n), ("K", k)):
        if np.ptp(v) > 0:
            cols.append(v)
            names.append(name)
    coef = np.linalg.lstsq(np.stack(cols, axis=1), y, rcond=None)[0]
    got = dict(zip(names, coef[1:]))
    return got.get("n", math.nan), got.get("K", math.nan)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[6000, 24000])
    ap.add_argument("--ks", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--delta-fraction", type=float, default=0.5)
    ap.add_argument("--holdout-folds", type=int, default=0)
    ap.add_argument("--reference-rev", default=None, help="also build with the package at this git revision")
    ap.add_argument("--reference-max-k", type=int, default=None, help="skip the reference above this K")
    ap.add_argument("--private", choices=sorted(PRIVATE), default="sex", help="the private attribute")
    args = ap.parse_args(argv)
    rows = adult_rows(private=args.private)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        subprocess.run([sys.executable, "-c", "from privmap.offline.cli import main; main()", "keygen",
                        str(tmp / "keys")], check=True, capture_output=True)
        key = tmp / "keys" / "private.pem"
        reference = None
        if args.reference_rev:
            (tmp / "ref").mkdir()
            reference = package_at(args.reference_rev, tmp / "ref")
        print(f"UCI Adult (5 numeric columns, {args.private} private), {args.delta_fraction} x Delta0, "
              f"--holdout-folds {args.holdout_folds}; one child process per build" +
              (f"; reference {args.reference_rev[:12]}" if reference else ""))
        head = f"{'n':>6} {'K':>5} | {'wall s':>7} {'cpu s':>7} {'peak MiB':>8} {'codebook s':>10} {'distortion':>10}"
        if reference:
            head += (f" | {'ref wall s':>10} {'ref cpu s':>9} {'ref MiB':>8} {'ref cb s':>8} {'ref dist':>9} | "
                     f"{'wall x':>6} {'cpu x':>6} {'MiB x':>6}")
        print(head, flush=True)
        ours, theirs = [], []
        for n in args.ns:
            csv = write_csv(rows[:n], tmp / f"adult_{n}.csv", args.private)
            for k in args.ks:
                now = run_build(csv, k, args, key, tmp / "b.bundle", None)
                ours.append((n, k, now["cpu"]))
                line = (f"{n:>6} {now['clusters']:>5} | {now['wall']:>7.1f} {now['cpu']:>7.1f} {now['peak_mib']:>8.0f} "
                        f"{now['codebook']:>10.1f} {now['distortion']:>10.4f}")
                ref = None
                if reference and (args.reference_max_k is None or k <= args.reference_max_k):
                    try:
                        ref = run_build(csv, k, args, key, tmp / "r.bundle", reference)
                    except BuildFailed as failed:   # where this tree builds and the reference cannot
                        ref = None
                        line += f" | reference failed after {failed.wall:.1f} s wall, {failed.cpu:.1f} CPU-s: {failed.error}"
                if reference and ref is not None:
                    theirs.append((n, k, ref["cpu"]))
                    line += (f" | {ref['wall']:>10.1f} {ref['cpu']:>9.1f} {ref['peak_mib']:>8.0f} {ref['codebook']:>8.1f} "
                             f"{ref['distortion']:>9.4f} | {ref['wall'] / now['wall']:>6.2f} {ref['cpu'] / now['cpu']:>6.2f} "
                             f"{ref['peak_mib'] / now['peak_mib']:>6.2f}")
                print(line, flush=True)
                if now["stages"]:
                    print("       stages (cpu s / wall s / peak MiB): " + ", ".join(
                        f"{s['stage']} {s['cpu_seconds']:.1f}/{s['seconds']:.1f}/{s['peak_rss_bytes'] / 2 ** 20:.0f}"
                        for s in now["stages"]), flush=True)
        for name, points in (("this tree", ours), ("reference", theirs)):
            if len(points) >= 2:
                a, b = fit_exponents(points)
                print(f"{name}: cpu seconds ~ n^{a:.2f} K^{b:.2f} (least squares on logs, {len(points)} builds)")


if __name__ == "__main__":
    main()
