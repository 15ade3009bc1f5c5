"""Load time and peak memory of the largest bundles the default device limits admit.

Builds signed bundles shaped to hit the default caps (privmap.device.Limits()) from different
sides, each just inside them, and loads each in a fresh Python process (peak memory is that
process's VmHWM; the baseline is the same process before reading the bundle; Linux only):

- ``leakage-work``: |A| = 8, K_in = 131,072, 8 non-zeros per row: |A| x nnz = 8,388,608, the
  ``max_leakage_work`` cap (the pure-Python recheck is the slowest step);
- ``float-cells``: 8 float features x 160,000 inputs: as many floats as fit the 16 MiB
  ``max_bundle_bytes`` (each float a Python object after decoding);
- ``items``: 4.16 million array items (``max_items`` is 4,194,304) of 1-byte ints.

Also shows that one step over each cap is refused, and how fast, and what the header pre-scan
costs on the SSI example bundle (loads with and without it, alternated in one process).

    python benchmarks/bench_load_limits.py
"""
from __future__ import annotations

import hashlib
import json
import pathlib
import random
import subprocess
import sys
import tempfile
import time

import msgpack
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from privmap.device import Limits
from privmap.device.constants import DOMAIN_TAG, SCHEMA_VERSION
from privmap.device.kinds import table_leakage_bits

CHILD = """
import json, sys, time
from privmap.device import Keyring, PrivmapDeviceError, read_bundle_file

def high_water_mib():  # VmHWM: this process's peak resident memory (reset by exec, unlike ru_maxrss)
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024

keyring = Keyring([bytes.fromhex(sys.argv[2])])
base = high_water_mib()
started = time.perf_counter()
try:
    b = read_bundle_file(sys.argv[1], keyring, now=int(sys.argv[3]))
    outcome = "loaded"
except PrivmapDeviceError as exc:
    outcome = type(exc).__name__ + ": " + str(exc)[:80]
seconds = time.perf_counter() - started
print(json.dumps({"outcome": outcome, "seconds": seconds, "base_mib": base, "peak_mib": high_water_mib()}))
"""
NOW = int(time.time())
#: Feature-map keys of a column that refuses missing answers (docs/bundle-format.md section 3).
REFUSE_MISSING = {"missing": "refuse", "fill": None, "missing_token": ""}


def payload(features, inputs, outputs, index, weight, prior, bits) -> dict:
    p = {"type": "privmap/bundle", "schema_version": SCHEMA_VERSION, "version": 1, "issued_at": NOW - 60,
         "expires": NOW + 86400, "device_class": "generic", "mechanism": "quantized", "metric": "l2", "features": features,
         "private": {"name": "a", "classes": [f"class{i}" for i in range(len(prior))]},
         "inputs": inputs, "outputs": outputs, "table": {"bits": bits, "index": index, "weight": weight},
         "prior": prior, "metrics": {}, "provenance": {"tool_version": "bench", "seed": 0, "data_sha256": "0" * 64}}
    leak = table_leakage_bits(prior, index, weight, bits)
    p["metrics"] = {"leakage_bits": leak + 1e-9, "distortion": 0.0, "delta": 0.0, "r": 0.0, "delta_plus_r": 0.0,
                    "clusters": len(inputs), "n": 1, "perfect_privacy_distortion": 0.0}
    return p


def normalised(rows):
    total = sum(map(sum, rows))
    return [[v / total for v in row] for row in rows]


def leakage_work(classes=8, k_in=131072, nnz=8) -> dict:
    rng = random.Random(1)
    w = [(1 << 16) // nnz] * nnz
    return payload([{"name": "x", "kind": "numeric", "min": 0, "max": k_in, "integer": True, **REFUSE_MISSING}],
                   [[i] for i in range(k_in)], [[i] for i in range(nnz)],
                   [list(range(nnz))] * k_in, [w] * k_in,
                   normalised([[rng.random() for _ in range(k_in)] for _ in range(classes)]), 16)


def float_cells(k_in=160000, d=8) -> dict:
    rng = random.Random(2)
    feats = [{"name": f"f{i}", "kind": "numeric", "min": 0.0, "max": 1.0, "integer": False, **REFUSE_MISSING} for i in range(d)]
    return payload(feats, [[rng.random() for _ in range(d)] for _ in range(k_in)], [[0.5] * d],
                   [[0]] * k_in, [[1 << 16]] * k_in, normalised([[1.0] * k_in, [1.0] * k_in]), 16)


def items(k_in=462_000) -> dict:
    """About 9 array items per input (inputs row and cell, two index and two weight entries and
    their rows, a prior entry): as many items as the cap allows, each a cached small int."""
    return payload([{"name": "x", "kind": "numeric", "min": 0, "max": 1, "integer": True, **REFUSE_MISSING}],
                   [[0]] * k_in, [[0], [1]], [[0, 1]] * k_in, [[1, 1]] * k_in, normalised([[1.0] * k_in]), 1)


def sign(key, obj) -> bytes:
    body = msgpack.packb(obj, use_bin_type=True)
    pub = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return msgpack.packb([1, "ed25519", hashlib.sha256(pub).digest(), key.sign(DOMAIN_TAG + body), body],
                         use_bin_type=True)


def count_items(obj) -> int:
    if isinstance(obj, list):
        return len(obj) + sum(count_items(v) for v in obj)
    if isinstance(obj, dict):
        return len(obj) + sum(count_items(v) for v in obj.values())
    return 0


def main() -> None:
    key = Ed25519PrivateKey.generate()
    pub = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
    limits = Limits()
    print(f"default limits: max_bundle_bytes {limits.max_bundle_bytes}, max_items {limits.max_items}, "
          f"max_nonzeros {limits.max_nonzeros}, max_leakage_work {limits.max_leakage_work}")
    shapes = [("leakage-work", leakage_work()), ("float-cells", float_cells()), ("items", items()),
              ("leakage-work +1 row", leakage_work(k_in=131073)), ("items +1 %", items(467_000))]
    print(f"{'bundle':>22} {'MiB':>6} {'items':>9} {'nnz':>9} {'|A|xnnz':>9} {'load s':>7} {'peak MiB':>9} "
          f"{'(base)':>7}  outcome")
    with tempfile.TemporaryDirectory() as tmp:
        for name, obj in shapes:
            data = sign(key, obj)
            path = pathlib.Path(tmp) / "b.bundle"
            path.write_bytes(data)
            nnz = sum(len(r) for r in obj["table"]["index"])
            out = subprocess.run([sys.executable, "-c", CHILD, str(path), pub, str(NOW)],
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout)
            print(f"{name:>22} {len(data) / 2**20:>6.2f} {count_items(obj):>9} {nnz:>9} "
                  f"{nnz * len(obj['prior']):>9} {r['seconds']:>7.2f} {r['peak_mib']:>9.1f} {r['base_mib']:>7.1f}  "
                  f"{r['outcome']}")


def prescan_cost(repeats: int = 3, loads: int = 200) -> None:
    """Load tables/ssi2012-gender-k64.bundle with and without the pre-scan, alternating."""
    import privmap.device.load as device_bundle
    from privmap.device import Keyring, load_bundle
    root = pathlib.Path(__file__).resolve().parent.parent / "tables"
    keyring = Keyring.from_pem_files(root / "public.pem")
    data = (root / "ssi2012-gender-k64.bundle").read_bytes()
    real = device_bundle.prescan

    def per_load() -> float:
        started = time.perf_counter()
        for _ in range(loads):
            load_bundle(data, keyring, now=1795000001)
        return (time.perf_counter() - started) / loads
    with_scan, without = [], []
    try:
        for _ in range(repeats):
            device_bundle.prescan = real
            with_scan.append(per_load())
            device_bundle.prescan = lambda payload, limits: None
            without.append(per_load())
    finally:
        device_bundle.prescan = real
    a, b = min(with_scan), min(without)
    print(f"ssi2012-gender-k64 load: {a * 1e3:.2f} ms with the pre-scan, {b * 1e3:.2f} ms without, ratio {a / b:.2f}")


if __name__ == "__main__":
    main()
    prescan_cost()
