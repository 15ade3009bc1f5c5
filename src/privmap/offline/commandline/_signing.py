"""The step every build command ends with: load the key, sign, check and write.

The operator's key is loaded before the build (so that a wrong key or passphrase fails at
once), the payload signed, loaded back with the device runtime and written atomically.
"""
from __future__ import annotations

import pathlib
import time
from dataclasses import dataclass

from .._files import atomic_write
from ._passphrase import read_passphrase

__all__ = ["Signed", "load_key", "sign_checked", "sign_check_write", "signed_build"]


def load_key(key: pathlib.Path, passphrase_file):
    """The operator's Ed25519 private key from ``--key`` (and ``--passphrase-file``).

    Raises BuildError as ``load_private_key``.
    """
    from ..bundle import load_private_key
    return load_private_key(key, password=read_passphrase(passphrase_file))


def sign_checked(payload: dict, private_key) -> bytes:
    """The bundle's bytes: ``payload`` encoded, signed and loaded back with the device runtime.

    Loaded as of its ``issued_at``. Raises BuildError when the device would refuse the bundle.
    """
    from ..bundle import check_bundle, encode_payload, sign_bundle
    bundle_bytes = sign_bundle(encode_payload(payload), private_key)
    check_bundle(bundle_bytes, private_key.public_key(), now=payload["issued_at"])
    return bundle_bytes


def sign_check_write(payload: dict, private_key, out: pathlib.Path) -> bytes:
    """:func:`sign_checked`, then the bundle written atomically to ``out``; the bundle's bytes.

    Raises BuildError when the device would refuse the bundle (nothing is written then).
    """
    bundle_bytes = sign_checked(payload, private_key)
    atomic_write(out, bundle_bytes)
    return bundle_bytes


@dataclass(frozen=True)
class Signed:
    """A build signed and written.

    Its result, where it went, its bytes and the wall seconds from the start of the build to the
    written file.
    """

    result: object
    out: pathlib.Path
    bundle_bytes: bytes
    seconds: float

    def summary(self) -> dict:
        """``out``, ``bytes`` and ``build_seconds``: the fields every build's ``--json`` starts with."""
        return {"out": str(self.out), "bytes": len(self.bundle_bytes), "build_seconds": round(self.seconds, 3)}


def signed_build(run, *, key: pathlib.Path, passphrase_file, out: pathlib.Path) -> Signed:
    """Load the key, run the build, then sign, check and write its payload.

    ``run()`` returns a :class:`~privmap.offline.mechanisms.Result`.

    Raises
    ------
    BuildError
        A wrong key or passphrase (before the build runs), the build's own errors, or a bundle the
        device would refuse (nothing is written then).
    """
    private_key = load_key(key, passphrase_file)
    started = time.perf_counter()
    result = run()
    bundle_bytes = sign_check_write(result.payload, private_key, out)
    return Signed(result, out, bundle_bytes, time.perf_counter() - started)
