"""The partitioned build at parity with the in-memory one: the same choices and new-user figures,
and at scale the value a service keeps and what new users leak.

    python benchmarks/bench_partitioned_parity.py --users 20000 --columns 200 --parts 8
    python benchmarks/bench_partitioned_parity.py --users 1000000 --columns 1000 --parts 20 \
        --data /tmp/parity --sample 50000

Both run ``privmap build ... --utility recommender --clusters auto --target-auc 0.55 --seed 1``
(default folds, both codebooks searched, the posteriors prior) in child processes, on users drawn
by ``privmap.offline.data.synthetic_rating_chunks`` (rank 10, density 0.05 unless given) and
written as ``--parts`` CSV files under ``--data`` (kept for the next run; delete them afterwards),
with ``--held`` fresh users of the same population beside them in held.csv.

- **parity** (``--sample`` 0, the default): the parts' users in one file, built in memory, and the
  parts, built on a local Dask cluster of ``--workers`` processes: the choice (K, codebook, budget
  fraction) of each, and their declared new-user figures (the cross-fitted leakage with its
  interval, the strongest attacker's AUC and its upper bound), side by side; then whether the
  partitioned figures lie in the in-memory ones' intervals, and the ratio of their CPU seconds.
- **scale** (``--sample N``): the parts built on Dask, beside the in-memory build of their first N
  users (one file); both audited on the held-out users as a service and an outside attacker judge
  a release (``privmap evaluate B held.csv --train SAMPLE.csv``: the service trained on the N
  users' true rows; the value kept by rating error, the strongest attacker's AUC), with the
  partitioned build's cost (CPU seconds of the process tree, wall seconds, its largest process).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_recommender_scale import PRIVMAP, csv_lines  # noqa: E402
from bench_survey_scale import run  # noqa: E402

#: Users drawn and written at a time.
CHUNK_USERS = 10_000
#: The build every row of the tables runs (beside DATA, the key, --out and --json).
BUILD = ["--private", "private", "--domain", "1:5", "--utility", "recommender", "--clusters", "auto",
         "--target-auc", "0.55", "--seed", "1"]
#: The choices compared, as ``build --json`` gives them under ``auto``.
CHOICES = ("clusters", "class_blind", "delta_fraction")


def write_users(folder: pathlib.Path, users: int, held: int, columns: int, parts: int, density: float,
                rank: int) -> None:
    """``users`` synthetic users as ``parts`` CSV files in ``folder``/parts and ``held`` more of the
    same population in ``folder``/held.csv (skipped when ``folder`` is there)."""
    from privmap.offline.data import synthetic_rating_chunks
    if folder.exists():
        return
    tmp = folder.with_name(folder.name + ".tmp")
    (tmp / "parts").mkdir(parents=True, exist_ok=True)
    per_part = -(-users // parts)
    drawn = synthetic_rating_chunks(users + held, columns, chunk_users=min(CHUNK_USERS, per_part), rank=rank,
                                    density=density, rng=columns)
    first = next(drawn)
    header = (",".join(first.items) + ",private\n").encode()
    pending, written = [first], 0
    targets = [tmp / "parts" / f"part{p:04d}.csv" for p in range(parts)] + [tmp / "held.csv"]
    sizes = [min(per_part, users - p * per_part) for p in range(parts)] + [held]
    for path, size in zip(targets, sizes):
        with open(path, "wb") as f:
            f.write(header)
            left = size
            while left > 0:
                chunk = pending.pop() if pending else next(drawn)
                take = min(left, chunk.ratings.shape[0])
                f.write(csv_lines(chunk.ratings[:take], chunk.private[:take], chunk.classes))
                if take < chunk.ratings.shape[0]:
                    pending.append(type(chunk)(**{**chunk.__dict__, "ratings": chunk.ratings[take:],
                                                  "private": chunk.private[take:]}))
                left -= take
                written += take
    tmp.rename(folder)


def first_users(parts: pathlib.Path, users: int, out: pathlib.Path) -> pathlib.Path:
    """The first ``users`` rows of the parts, in order, as one CSV file ``out``."""
    with open(out, "wb") as f:
        left = users
        for i, part in enumerate(sorted(parts.iterdir())):
            with open(part, "rb") as lines:
                header = lines.readline()
                if i == 0:
                    f.write(header)
                for line in lines:
                    if left == 0:
                        return out
                    f.write(line)
                    left -= 1
    return out


def build(data: pathlib.Path, key: pathlib.Path, out: pathlib.Path, extra=()) -> dict:
    """One build in a child process: its ``--json`` summary with ``cpu``, ``wall`` and ``largest``
    (bytes) of its process tree."""
    summary, wall, cpu, _, largest = run([*PRIVMAP, "build", str(data), *BUILD, "--key", str(key), "--out", str(out),
                                          "--json", *extra])
    return {**summary, "cpu": cpu, "wall": wall, "largest": largest}


def figures(summary: dict) -> str:
    auto = summary["auto"]
    return (f"K {auto['clusters']:>4}, {'class-blind' if auto.get('class_blind') else 'k-means'}, fraction "
            f"{auto.get('delta_fraction', float('nan')):.3f}; leakage {summary['holdout_leakage_bits']:.5f} "
            f"[{summary['holdout_leakage_low_bits']:.5f}, {summary['holdout_leakage_high_bits']:.5f}], attacker AUC "
            f"{summary['holdout_attacker_auc']:.4f} (bound {summary['holdout_attacker_auc_high']:.4f}); "
            f"{summary['cpu']:.1f} CPU-s, {summary['wall']:.1f} s, largest process {summary['largest'] / 2**20:.0f} MiB")


def parity(folder: pathlib.Path, key: pathlib.Path, tmp: pathlib.Path, users: int, workers: int) -> None:
    whole = first_users(folder / "parts", users, tmp / "whole.csv")
    memory = build(whole, key, tmp / "memory.bundle")
    parts = build(folder / "parts", key, tmp / "parts.bundle", ["--workers", str(workers)])
    print("in memory:  ", figures(memory))
    print("partitioned:", figures(parts))
    same = all(memory["auto"].get(c) == parts["auto"].get(c) for c in CHOICES)
    inside = memory["holdout_leakage_low_bits"] <= parts["holdout_leakage_bits"] <= memory["holdout_leakage_high_bits"]
    print(f"same choice: {same}; partitioned leakage inside the in-memory interval: {inside}; attacker AUC "
          f"difference {parts['holdout_attacker_auc'] - memory['holdout_attacker_auc']:+.4f}; CPU partitioned / "
          f"in memory {parts['cpu'] / memory['cpu']:.2f}")


def audit(bundle: pathlib.Path, held: pathlib.Path, train: pathlib.Path) -> dict:
    done = subprocess.run([*PRIVMAP, "evaluate", str(bundle), str(held), "--private", "private", "--train",
                           str(train), "--json"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def scale(folder: pathlib.Path, key: pathlib.Path, tmp: pathlib.Path, sample: int, workers: int) -> None:
    train = first_users(folder / "parts", sample, tmp / "sample.csv")
    rows = []
    for label, data, extra in (("partitioned, all users", folder / "parts", ["--workers", str(workers)]),
                               (f"in memory, first {sample:,}", train, [])):
        summary = build(data, key, tmp / "b.bundle", extra)
        rows.append((label, summary, audit(tmp / "b.bundle", folder / "held.csv", train)))
    print(f"{'build':<26} {'users':>9} {'K':>5} {'new-user bits':>13} {'AUC (bound)':>15} {'held-out AUC':>12} "
          f"{'value kept':>10} {'CPU s':>8} {'wall s':>7} {'largest MiB':>11}")
    for label, s, a in rows:
        print(f"{label:<26} {s['n']:>9,} {s['clusters']:>5} {s['holdout_leakage_bits']:>13.5f} "
              f"{s['holdout_attacker_auc']:>7.4f} ({s['holdout_attacker_auc_high']:.4f}) {a['attacker_auc']:>12.4f} "
              f"{a['value_kept']:>10.3f} {s['cpu']:>8.1f} {s['wall']:>7.1f} {s['largest'] / 2**20:>11.0f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--columns", type=int, default=200)
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--held", type=int, default=2_000, help="fresh users written beside the parts")
    parser.add_argument("--density", type=float, default=0.05)
    parser.add_argument("--rank", type=int, default=10, help="rank of the generator's taste")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sample", type=int, default=0, help="scale mode: users of the in-memory build beside")
    parser.add_argument("--data", default=tempfile.gettempdir(), help="where the users are written")
    args = parser.parse_args()
    folder = pathlib.Path(args.data) / f"parity_u{args.users}_c{args.columns}_p{args.parts}_h{args.held}"
    started = time.perf_counter()
    write_users(folder, args.users, args.held, args.columns, args.parts, args.density, args.rank)
    print(f"users ready in {time.perf_counter() - started:.0f} s: {folder}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        subprocess.run([*PRIVMAP, "keygen", str(tmp / "k")], check=True, capture_output=True)
        key = tmp / "k" / "private.pem"
        if args.sample:
            scale(folder, key, tmp, args.sample, args.workers)
        else:
            parity(folder, key, tmp, args.users, args.workers)


if __name__ == "__main__":
    main()
