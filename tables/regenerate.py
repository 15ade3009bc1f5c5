#!/usr/bin/env python3
"""Rebuild the example bundles in this folder, or check them byte for byte.

    python tables/regenerate.py --key KEYDIR/private.pem   # rebuild, sign, write public.pem and machine.json
    python tables/regenerate.py --check                    # rebuild the payloads, compare, change nothing

Each bundle is built with the ``privmap build`` command given in ``EXAMPLES`` (the commands of
tables/README.md) with ``SOURCE_DATE_EPOCH`` = :data:`ISSUED_AT`. Signing needs the example key,
which is not in the repository; ``--check`` needs no key: it rebuilds every payload and compares
it with the signed payload's bytes (the signature is checked with ``public.pem``).

Byte-identical rebuilds are promised within one *machine class*: the package versions of
constraints.txt and the OpenBLAS kernel the build ran on (``machine.json``, written here from
threadpoolctl). The k-means, solver and attacker figures go through BLAS; its kernels differ by
CPU, and a different kernel moves the last bits of some declared figures beyond the payload's 12
significant digits (tests/test_tables.py says what must still be equal then).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
ISSUED_AT = 1795000000  # 2026-11-18
VALID_DAYS = 3650
#: bundle file -> (data file, options of ``privmap build`` besides --key/--out/--valid-days).
EXAMPLES = {
    "ssi2012-gender-k64.bundle": ("data/ssi2012/tastes_gender.csv", [
        "--private", "gender", "--clusters", "64", "--delta-fraction", "0.5", "--seed", "0"]),
    "census-income-erasures.bundle": ("data/census/census.csv", [
        "--private", "income", "--mechanism", "exact", "--metric", "erasures", "--delta", "1.0"]),
}
MACHINE_FILE = HERE / "machine.json"


def blas_architectures() -> list[str]:
    """The OpenBLAS kernels (threadpoolctl's ``architecture``) numpy and scipy run on, sorted."""
    import numpy  # noqa: F401  (loads its BLAS)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info
    # only numpy's and scipy's own libraries: another package's bundled OpenBLAS (scs, loaded with
    # cvxpy) may name the same CPU differently, and whether it is loaded depends on import order
    return sorted({str(i.get("architecture")) for i in threadpool_info() if i.get("user_api") == "blas"
                   and any(part.startswith(("numpy", "scipy")) for part in pathlib.Path(i["filepath"]).parts[-3:-1])})


def _privmap() -> str:
    exe = pathlib.Path(sys.executable).with_name("privmap")
    return str(exe) if exe.exists() else "privmap"


def build_bundle(name: str, key: pathlib.Path, out: pathlib.Path) -> None:
    """Run the documented ``privmap build`` command for example ``name``."""
    data, options = EXAMPLES[name]
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(ISSUED_AT))
    subprocess.run([_privmap(), "build", str(ROOT / data), *options, "--valid-days", str(VALID_DAYS),
                    "--key", str(key), "--out", str(out)], check=True, env=env, cwd=ROOT,
                   stdout=subprocess.DEVNULL)


def signed_payload(path: pathlib.Path) -> bytes:
    """The payload bytes of a signed bundle, after verifying it with ``public.pem``."""
    import msgpack

    from privmap.device import Keyring, read_bundle_file
    bundle = read_bundle_file(path, Keyring.from_pem_files(HERE / "public.pem"), now=ISSUED_AT + 1)
    return msgpack.unpackb(bundle.data)[-1]


def check() -> int:
    """Rebuild every example with a throw-away key and compare payload bytes; 0 if all equal."""
    import msgpack
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        subprocess.run([_privmap(), "keygen", str(tmp / "key")], check=True, stdout=subprocess.DEVNULL)
        for name in EXAMPLES:
            build_bundle(name, tmp / "key" / "private.pem", tmp / name)
            rebuilt = msgpack.unpackb((tmp / name).read_bytes())[-1]
            same = rebuilt == signed_payload(HERE / name)
            failures += not same
            print(f"{name}: {'payload identical' if same else 'PAYLOAD DIFFERS'}")
    recorded = json.loads(MACHINE_FILE.read_text())["blas_architectures"]
    if failures and recorded != blas_architectures():
        print(f"note: built on OpenBLAS {recorded}, this machine runs {blas_architectures()}")
    return 1 if failures else 0


def regenerate(key: pathlib.Path) -> int:
    """Rebuild and sign every example with ``key``; write public.pem and machine.json."""
    from cryptography.hazmat.primitives import serialization

    from privmap.offline.bundle import load_private_key
    private = load_private_key(key)
    (HERE / "public.pem").write_bytes(private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    with tempfile.TemporaryDirectory() as tmp:
        for name in EXAMPLES:
            build_bundle(name, key, pathlib.Path(tmp) / name)
            shutil.copyfile(pathlib.Path(tmp) / name, HERE / name)
    MACHINE_FILE.write_text(json.dumps({"blas_architectures": blas_architectures()}, indent=1) + "\n")
    return check()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--key", type=pathlib.Path, help="the example signing key (private.pem)")
    group.add_argument("--check", action="store_true", help="rebuild and compare; change nothing")
    args = parser.parse_args(argv)
    return check() if args.check else regenerate(args.key)


if __name__ == "__main__":
    sys.exit(main())
