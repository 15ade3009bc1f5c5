"""The recommender kind on the device at its caps: load time and peak memory, the time of one
release at 1 and at every rated cell, and the memory held after many releases.

Builds signed recommender bundles at the fold-in work cap (m x (rank + 1)^2 <= 2^21) from its
two sides, and one small one, and runs each in a fresh Python process (Linux only: peak memory
is the process's VmHWM, held memory its VmRSS, both less the process before reading the bundle):

- ``rank 64``: rank + 1 = 65, m = 496 columns (the largest rank, as many columns as the cap allows);
- ``4,096 columns``: m = 4,096 (``max_features``), rank + 1 = 22;
- ``small``: m = 100, rank + 1 = 5 (the shape of a typical build's model).

Each has K_in = K_out = 1,024. A release is ``sanitize`` of a row: its fold-in, the nearest of the
inputs, a draw, the decode of the sampled output into m ratings (nothing cached). Times are the
fastest of ``--repeats`` releases of each row, alternated; memory is measured after ``--rows``
/ 10 releases and again after ``--rows``::

    python benchmarks/bench_recommender_device.py --rows 10000
"""
from __future__ import annotations

import argparse
import json
import pathlib
import random
import subprocess
import sys
import tempfile
import time

from bench_load_limits import NOW, REFUSE_MISSING, normalised, payload, sign
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

CHILD = """
import json, sys, time
from privmap.device import Keyring, read_bundle_file

def status_mib(field):  # VmHWM (peak) or VmRSS (now) of this process
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field)) / 1024

path, pub, now, repeats, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
base = status_mib("VmRSS")
started = time.perf_counter()
bundle = read_bundle_file(path, Keyring([bytes.fromhex(pub)]), now=now)
load = time.perf_counter() - started
peak = status_mib("VmHWM") - base
m = len(bundle.features)
one, every = ["3"] + [""] * (m - 1), [str(1 + j % 5) for j in range(m)]
fastest = {"one": 1e9, "every": 1e9}
for _ in range(repeats):
    for name, row in (("one", one), ("every", every)):
        started = time.perf_counter()
        bundle.sanitize(row)
        fastest[name] = min(fastest[name], time.perf_counter() - started)
held = []
for count in (rows // 10, rows - rows // 10):
    for i in range(count):
        bundle.sanitize(every if i % 2 else one)
    held.append(status_mib("VmRSS") - base)
print(json.dumps({"load_s": load, "peak_mib": peak, "one_ms": fastest["one"] * 1e3,
                  "every_ms": fastest["every"] * 1e3, "held_mib": held}))
"""


def recommender(columns: int, k1: int, k: int = 1024) -> dict:
    """A recommender payload: ``columns`` rating columns 1..5, rank + 1 = ``k1``, K_in = K_out = ``k``
    random points of [-3, 3]^k1, input c released as output c."""
    rng = random.Random(columns * 100 + k1)
    space = [{"name": f"factor_{i}", "kind": "numeric", "min": -3.0, "max": 3.0, "integer": False,
              **REFUSE_MISSING} for i in range(k1)]
    points = [[round(rng.uniform(-3, 3), 4) for _ in range(k1)] for _ in range(k)]
    p = payload(space, points, points, [[c] for c in range(k)], [[2]] * k,
                normalised([[rng.random() for _ in range(k)] for _ in range(2)]), 1)
    p["mechanism"] = "recommender"
    p["model"] = {"columns": [f"item{j}" for j in range(columns)], "min": 1, "max": 5, "integer": True,
                  "missing_token": "", "mean": 3.5, "reg": 10.0, "scale_bits": 14,
                  "items": [[rng.randint(-8000, 8000) for _ in range(k1)] for _ in range(columns)],
                  "whiten": [[1.0 if i == j else 0.0 for j in range(k1)] for i in range(k1)], "decimals": 2}
    return p


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10000, help="releases before the second memory reading")
    parser.add_argument("--repeats", type=int, default=20, help="releases of each row timed (the fastest kept)")
    args = parser.parse_args(argv)
    key = Ed25519PrivateKey.generate()
    pub = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
    shapes = [("rank 64", recommender(496, 65)), ("4,096 columns", recommender(4096, 22)),
              ("small", recommender(100, 5))]
    print(f"{'bundle':>14} {'MiB':>5} {'load s':>7} {'peak MiB':>9} {'1 rated ms':>11} {'all rated ms':>13} "
          f"{'held MiB after ' + str(args.rows // 10) + ' / ' + str(args.rows) + ' rows':>30}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, obj in shapes:
            data = sign(key, obj)
            path = pathlib.Path(tmp) / "b.bundle"
            path.write_bytes(data)
            out = subprocess.run([sys.executable, "-c", CHILD, str(path), pub, str(NOW), str(args.repeats),
                                  str(args.rows)], capture_output=True, text=True, check=True)
            r = json.loads(out.stdout)
            held = " / ".join(f"{v:.1f}" for v in r["held_mib"])
            print(f"{name:>14} {len(data) / 2**20:>5.2f} {r['load_s']:>7.2f} {r['peak_mib']:>9.1f} "
                  f"{r['one_ms']:>11.2f} {r['every_ms']:>13.2f} {held:>30}")


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
