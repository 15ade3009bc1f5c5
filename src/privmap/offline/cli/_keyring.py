"""``privmap keygen``, ``privmap keyring create|rotate`` and ``privmap cosign``: signing keys, and k-of-n keys for devices."""
from __future__ import annotations

import os
import pathlib
import time

import click
from cryptography.hazmat.primitives import serialization

from privmap.device import KeyringChain, load_bundle
from privmap.device.constants import MAX_BUNDLE_BYTES, MAX_KEYRING_BYTES
from privmap.device.errors import KeyringError

from .._errors import BuildError
from .._files import atomic_write
from ..commandline import emit, guard, passphrase_option, read_keyring_chain, read_passphrase, read_small_file

_PATH = click.Path(dir_okay=False, path_type=pathlib.Path)
#: Largest PEM public key file read (a 32-byte key's PEM is 113 bytes).
_MAX_PEM_BYTES = 64 * 1024


def _private_keys(paths, passphrase_file):
    from ..bundle import load_private_key
    password = read_passphrase(passphrase_file)
    return [load_private_key(p, password=password) for p in paths]


def _public_keys(paths):
    keys = []
    for path in paths:
        try:
            keys.append(serialization.load_pem_public_key(read_small_file(path, _MAX_PEM_BYTES, "public key")))
        except ValueError:
            raise BuildError(f"{path}: not a PEM public key") from None
    return keys


def _expires(valid_days: float) -> int:
    issued = int(os.environ.get("SOURCE_DATE_EPOCH", time.time()))
    return issued + int(valid_days * 86400)


@click.group("keyring")
def keyring():
    """Signed, versioned keyrings: which keys a device trusts, and how many must sign.

    \b
    A device pins a version-1 keyring and then accepts only version + 1, signed
    by THRESHOLD of its current keys AND THRESHOLD of the new ones; keys left out
    are revoked. Typical session (2 of 3 keys, then rotating key c out for d):
      privmap keyring create --public a/public.pem --public b/public.pem \\
          --public c/public.pem --threshold 2 --key a/private.pem --key b/private.pem \\
          --out keyring-v1.bin
      privmap keyring rotate keyring-v1.bin --public a/public.pem \\
          --public b/public.pem --public d/public.pem --threshold 2 \\
          --key a/private.pem --key b/private.pem --key d/private.pem --out keyring-v2.bin
    """  # noqa: D301 - click's no-rewrap marker \b must stay a backspace, which a raw string would not make


def _options(fn):
    for option in reversed([
        click.option("--public", "public", multiple=True, required=True, type=_PATH,
                     help="A public key (PEM) of the keyring; repeat for each."),
        click.option("--threshold", type=click.IntRange(min=1), required=True,
                     help="How many distinct keys must sign a bundle."),
        click.option("--valid-days", type=click.FloatRange(min=0, min_open=True), default=365, show_default=True,
                     help="Days until the keyring expires (devices then refuse new bundles)."),
        click.option("--key", "keys", multiple=True, required=True, type=_PATH,
                     help="A private key that signs this document; repeat for each."),
        click.option("--out", required=True, type=_PATH, help="Keyring document to write (atomically)."),
        passphrase_option,
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object."),
    ]):
        fn = option(fn)
    return fn


def _write(document: bytes, chain: KeyringChain, out, as_json) -> None:
    atomic_write(out, document)
    info = {"out": str(out), "version": chain.version, "threshold": chain.keyring.threshold,
            "keys": len(chain.keyring), "expires": chain.expires}
    if as_json:
        emit(info)
    else:
        click.echo(f"wrote {out}: keyring version {info['version']}, {info['threshold']} of {info['keys']} keys")


@keyring.command("create")
@_options
@guard
def create(public, threshold, valid_days, keys, out, passphrase_file, as_json):
    """Write a version-1 keyring (signed by THRESHOLD of its own keys) to provision devices."""
    from ..bundle import keyring_document
    document = keyring_document(_public_keys(public), threshold=threshold, version=1,
                                expires=_expires(valid_days), signing_keys=_private_keys(keys, passphrase_file))
    try:
        chain = KeyringChain(document)
    except KeyringError as exc:
        raise BuildError(f"a device would refuse this keyring: {exc}") from None
    _write(document, chain, out, as_json)


@keyring.command("rotate")
@click.argument("current", type=_PATH)
@_options
@guard
def rotate(current, public, threshold, valid_days, keys, out, passphrase_file, as_json):
    """Write the keyring that follows CURRENT (version + 1), checked as a device would.

    Sign with THRESHOLD keys of CURRENT and THRESHOLD of the new keyring.
    """
    from ..bundle import keyring_document
    chain = KeyringChain(read_small_file(current, MAX_KEYRING_BYTES, "keyring"))
    document = keyring_document(_public_keys(public), threshold=threshold, version=chain.version + 1,
                                expires=_expires(valid_days), signing_keys=_private_keys(keys, passphrase_file))
    try:
        chain.rotate(document)
    except KeyringError as exc:
        raise BuildError(f"a device holding {current} would refuse this rotation: {exc}") from None
    _write(document, chain, out, as_json)


@click.command("cosign")
@click.argument("bundle", type=_PATH)
@click.option("--key", "keys", multiple=True, required=True, type=_PATH,
              help="A private key to add a signature with; repeat for each.")
@click.option("--out", required=True, type=_PATH, help="Bundle to write (atomically).")
@click.option("--keyring", "keyrings", multiple=True, type=_PATH,
              help="Check the result against this keyring document (threshold included); repeat to walk "
                   "rotations, the pinned version first.")
@passphrase_option
@guard
def cosign(bundle, keys, out, keyrings, passphrase_file):
    """Add signatures to BUNDLE (k of n signing): writes a format-2 bundle.

    Every signature already in BUNDLE is kept, whether it is a single-signature
    (format 1) bundle from `privmap build` or a format-2 one, so key holders can
    sign one after another. With --keyring the result is loaded as a device
    holding that keyring would, now; if it would be refused nothing is written.
    """
    from ..bundle import cosign_bundle
    data = cosign_bundle(read_small_file(bundle, MAX_BUNDLE_BYTES, "bundle"), _private_keys(keys, passphrase_file))
    if keyrings:
        now = time.time()
        load_bundle(data, read_keyring_chain(keyrings).current(now), now=now)
    atomic_write(out, data)
    click.echo(f"wrote {out} ({len(data)} bytes)")


@click.command()
@click.argument("keydir", type=click.Path(file_okay=False, path_type=pathlib.Path))
@passphrase_option
@guard
def keygen(keydir, passphrase_file):
    """Create an Ed25519 signing key pair in KEYDIR.

    Writes KEYDIR/private.pem (mode 0600; keep it on the build machine) and
    KEYDIR/public.pem (ship it to devices as their trusted key). Existing keys
    are never overwritten, and a KEYDIR writable by group or others is refused.
    With --passphrase-file the private key is encrypted (PKCS#8, best available).
    """
    from ..bundle import generate_keypair
    generate_keypair(keydir, password=read_passphrase(passphrase_file))
    click.echo(f"wrote {keydir / 'private.pem'} (mode 0600) and {keydir / 'public.pem'}")
