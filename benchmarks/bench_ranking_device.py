"""Benchmark: a ranking bundle on the device: its size, its load time, and the time of one release,
at 1 rated cell and at many, in pure Python (the device's numpy fast path for the nearest centre
switched off).

Run from the repository root:

    python benchmarks/bench_ranking_device.py [--columns 1000 3000] [--clusters 256] [--rank 32] [--rows 200]

For each column count m: a seeded synthetic watch set (:func:`privmap.offline.data.synthetic_ratings`,
3,000 users, taste 1, popularity 1.5) is built with ``--utility ranking`` at K clusters and half
the perfect-privacy distortion (no folds: the device's cost does not depend on them), signed, and
loaded back by :func:`privmap.device.load_bundle`; then ``rows`` releases of rows with 1 rated cell
and with m / 2 rated cells are timed, interleaved, and the median CPU milliseconds of each
printed with their ratio (the embedding adds every column's row whatever is rated; what still
grows with the rated cells is parsing their text). CPU time (``time.process_time``), not wall
time: on a shared machine the wall time of one release is mostly other work's.
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

from privmap.device import Keyring, Limits, load_bundle  # noqa: E402
from privmap.device.kinds import table  # noqa: E402
from privmap.offline import Dataset, QuantizedOptions, declare  # noqa: E402
from privmap.offline.bundle import encode_payload, sign_bundle  # noqa: E402
from privmap.offline.data import synthetic_ratings  # noqa: E402
from privmap.offline.mechanisms import ranking  # noqa: E402

NOW = 1_800_000_000


def bundle_bytes(m: int, clusters: int, rank: int) -> tuple[bytes, Ed25519PrivateKey, float]:
    """A signed ranking bundle over ``m`` columns, its key, and the build's CPU seconds."""
    drawn = synthetic_ratings(3000, m, density=min(0.1, 30 / m), rng=0, taste=1.0, popularity=1.5)
    data = Dataset(features=drawn.items, public=drawn.ratings, private=drawn.private, classes=drawn.classes,
                   private_name="group", categorical=False, sha256="0" * 64)
    mapping = QuantizedOptions(clusters=clusters, delta_fraction=0.5, issued_at=NOW, cross_fitting=None,
                               declared=declare(None, ["1:5"], None))
    started = time.process_time()
    built = ranking.build(data, ranking.RankingOptions(mapping=mapping, rank=rank))
    seconds = time.process_time() - started
    key = Ed25519PrivateKey.from_private_bytes(bytes(32))
    return sign_bundle(encode_payload(built.payload), key), key, seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--columns", type=int, nargs="+", default=[1000, 3000])
    ap.add_argument("--clusters", type=int, default=256)
    ap.add_argument("--rank", type=int, default=32)
    ap.add_argument("--rows", type=int, default=200)
    args = ap.parse_args(argv)
    table.FAST_PATH_MIN_WORK = 1 << 62           # the nearest centre in pure Python, as on a device without numpy
    print("| columns | K | rank | bundle bytes | build CPU-s | load CPU-ms | release CPU-ms, 1 rated | "
          "release CPU-ms, m/2 rated | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    for m in args.columns:
        data, key, build_seconds = bundle_bytes(m, args.clusters, args.rank)
        keyring = Keyring([key.public_key().public_bytes_raw()])
        started = time.process_time()
        bundle = load_bundle(data, keyring, now=NOW, limits=Limits())
        load_ms = 1e3 * (time.process_time() - started)
        few = [""] * m
        few[0] = "4"
        many = ["" if rng.random() < 0.5 else str(int(rng.integers(1, 6))) for _ in range(m)]
        times: dict[str, list[float]] = {"few": [], "many": []}
        for _ in range(args.rows):
            for name, row in (("few", few), ("many", many)):
                started = time.process_time()
                bundle.sanitize(row)
                times[name].append(1e3 * (time.process_time() - started))
        one, half = statistics.median(times["few"]), statistics.median(times["many"])
        print(f"| {m} | {args.clusters} | {args.rank} | {len(data):,} | {build_seconds:.1f} | {load_ms:.0f} | "
              f"{one:.2f} | {half:.2f} | {half / one:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
