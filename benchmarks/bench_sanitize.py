"""Device latency: sanitize() per row, pure-Python lookup vs the numpy fast path, same bundle.

Builds one bundle per K from the bundled SSI-2012 ratings (20 features), then
times ``Bundle.sanitize`` on the data's rows with the fast path switched off and
on, alternating the two in the same process (shared machines drift; the ratio
is the figure to trust). Also checks that both paths pick the same representative
on every row.

    python benchmarks/bench_sanitize.py [--clusters 64 256 1024] [--rows 2000]
"""
from __future__ import annotations

import argparse
import csv
import pathlib
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import privmap.device.kinds.table as device_bundle
from privmap.device import Keyring, load_bundle
from privmap.offline import Dataset, QuantizedOptions
from privmap.offline.bundle import encode_payload, sign_bundle
from privmap.offline.mechanisms.quantized import build

DATA = pathlib.Path(__file__).resolve().parent.parent / "data" / "ssi2012" / "tastes_gender.csv"


def timed(bundle, rows, fast: bool) -> float:
    device_bundle.FAST_PATH_MIN_WORK = 0 if fast else float("inf")
    start = time.perf_counter()
    for row in rows:
        bundle.sanitize(row)
    return (time.perf_counter() - start) / len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with DATA.open() as f:
        reader = csv.reader(f)
        next(reader)
        rows = [row[:20] for row in reader][: args.rows]
    key = Ed25519PrivateKey.generate()
    keyring = Keyring([key.public_key()])
    print(f"{'K':>6} {'pure us/row':>12} {'numpy us/row':>13} {'pure/numpy':>11} {'same lookup':>12}")
    dataset = Dataset.from_csv(DATA, private="gender")
    for k in args.clusters:
        result = build(dataset, QuantizedOptions(clusters=k, delta_fraction=0.5, issued_at=int(time.time())))
        bundle = load_bundle(sign_bundle(encode_payload(result.payload), key), keyring)
        device_bundle.FAST_PATH_MIN_WORK = float("inf")
        pure_lookup = [bundle.lookup(r) for r in rows]
        device_bundle.FAST_PATH_MIN_WORK = 0
        same = pure_lookup == [bundle.lookup(r) for r in rows]
        pure, fast = [], []
        for _ in range(args.repeats):
            pure.append(timed(bundle, rows, fast=False))
            fast.append(timed(bundle, rows, fast=True))
        p, n = min(pure), min(fast)
        print(f"{k:>6} {p * 1e6:>12.1f} {n * 1e6:>13.1f} {p / n:>11.2f} {str(same):>12}")


if __name__ == "__main__":
    main()
